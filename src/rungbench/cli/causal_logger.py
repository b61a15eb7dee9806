"""`rungbench causal logger start|stop|status|verify|bench`, `causal weekly-report`,
`causal detector-quality`: the runtime instrumentation CLI (seed 003).

Thin: parse, call one library function, print (plain lines or one JSON document). The
library loads inside each command, so that ``rungbench --help`` stays fast.
"""

from __future__ import annotations

import functools
import pathlib
from typing import Annotated, Any

import typer

from rungbench.cli._common import command_group, console, emit_json, run
from rungbench.errors import IntegrityError

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document.")]
StateOpt = Annotated[pathlib.Path, typer.Option(
    "--state-dir", help="Logger directory (claims.sqlite, logger.sock, logger.pid).")]

DbUrlOpt = Annotated[str | None, typer.Option(
    "--db", help="Keep the claim store in this postgresql:// database (default: "
    "claims.sqlite in --state-dir).")]

logger_app = command_group(
    "The claim-store logger: sole owner of the database, insert-only over a Unix socket.")


def _config(state_dir: pathlib.Path, user: str | None = None, allow_root: bool = False,
            namespace: str | None = None, resolver_uids: list[int] | None = None,
            db_url: str | None = None, as_json: bool = False) -> Any:
    from rungbench.causal.instrument.logger import BENCH_NAMESPACE, LoggerConfig

    reserved = () if namespace is not None else (BENCH_NAMESPACE,)
    return run(lambda: LoggerConfig(str(state_dir.resolve()), user, allow_root, namespace,
                                    reserved, tuple(resolver_uids) if resolver_uids else None,
                                    db_url), as_json=as_json)


@logger_app.command("start")
def start_command(
    state_dir: StateOpt,
    user: Annotated[str | None, typer.Option(
        "--user", help="Unprivileged user to drop to after binding (required as root).")] = None,
    allow_root: Annotated[bool, typer.Option(
        "--allow-root", help="Run as root without dropping privileges (development).")] = False,
    namespace: Annotated[str | None, typer.Option(
        "--namespace", help="Accept only episode ids with this prefix (benchmark logger, "
        "e.g. 'bench:').")] = None,
    resolver_uid: Annotated[list[int] | None, typer.Option(
        "--resolver-uid", min=0, help="Only this uid (repeatable) may write resolution "
        "events.")] = None,
    foreground: Annotated[bool, typer.Option(
        "--foreground", help="Run in this process until SIGTERM/SIGINT.")] = False,
    db: DbUrlOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Start the logger (detached unless --foreground); returns once it answers."""
    from rungbench.causal.instrument import logger

    config = _config(state_dir, user, allow_root, namespace, resolver_uid, db, as_json)
    if foreground:
        run(lambda: logger.serve(config), as_json=as_json)
        if as_json:
            emit_json({"ok": True, "stopped": True})
        return
    result = run(lambda: logger.start(config), as_json=as_json)
    if as_json:
        emit_json({"ok": True, **result})
    else:
        console.print(f"logger pid {result['pid']} on {result['socket']}; store "
                      f"{result['db']} (owner {result.get('db_owner')}, mode "
                      f"{result.get('db_mode')})", highlight=False)


@logger_app.command("stop")
def stop_command(state_dir: StateOpt, as_json: JsonOpt = False) -> None:
    """Stop the logger cleanly (SIGTERM: it writes everything queued, then exits)."""
    from rungbench.causal.instrument import logger

    result = run(lambda: logger.stop(_config(state_dir, allow_root=True)), as_json=as_json)
    if as_json:
        emit_json({"ok": True, **result})
    else:
        console.print(f"logger pid {result['pid']} stopped", highlight=False)


@logger_app.command("status")
def status_command(state_dir: StateOpt, db: DbUrlOpt = None, as_json: JsonOpt = False) -> None:
    """Pid, whether the socket answers, and the store (a file's owner and mode)."""
    from rungbench.causal.instrument import logger

    config = _config(state_dir, allow_root=True, db_url=db, as_json=as_json)
    result = run(lambda: logger.status(config), as_json=as_json)
    if as_json:
        emit_json({"ok": True, **result})
    else:
        for k, v in result.items():
            console.print(f"{k}: {v}", highlight=False)


@logger_app.command("verify")
def verify_command(
    state_dir: Annotated[pathlib.Path | None, typer.Option(
        "--state-dir", help="Logger directory whose store to verify.")] = None,
    db: Annotated[str | None, typer.Option(
        "--db", help="A claim store file or postgresql:// URL (instead of --state-dir).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Verify every hash chain; name each edited, deleted or reordered row (exit 1 if any)."""
    from rungbench.causal.instrument.claims import verify_store
    from rungbench.causal.instrument.logger import DB_NAME

    if (state_dir is None) == (db is None):
        raise typer.BadParameter("give exactly one of --state-dir or --db", param_hint="--db")
    path = db if db is not None else str(state_dir / DB_NAME)  # type: ignore[operator]
    report = run(lambda: verify_store(path), as_json=as_json)
    if as_json:
        emit_json(report.to_json())
    else:
        for t, n in report.rows.items():
            console.print(f"{t}: {n} rows", highlight=False)
        for p in report.problems:
            console.print(f"{p.table} row {p.log_seq}: {p.code} — {p.detail}", markup=False,
                          highlight=False)
        console.print("chains intact" if report.ok else
                      f"BROKEN: {len(report.problems)} problem(s)", highlight=False)
    if not report.ok:
        if as_json:
            raise typer.Exit(1)
        run(report.require_ok, as_json=False)


@logger_app.command("bench")
def bench_command(
    state_dir: StateOpt,
    clients: Annotated[list[int], typer.Option("--clients", min=1, max=64,
                                               help="Client counts to measure.")] = [1, 8],  # noqa: B006
    events: Annotated[int, typer.Option("--events", min=1, max=1_000_000,
                                        help="Events per client.")] = 500,
    db: DbUrlOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Events per second through the socket of a running benchmark logger (namespace bench:)."""
    from rungbench.causal.instrument import client, logger

    config = _config(state_dir, allow_root=True, db_url=db, as_json=as_json)
    def measure(n: int) -> dict[str, Any]:
        return client.throughput(config.socket_path, n, events)

    rows = [run(functools.partial(measure, n), as_json=as_json) for n in clients]
    base = rows[0]["events_per_second"]
    for r in rows:
        r["ratio_vs_first"] = round(r["events_per_second"] / base, 3)
    rep = run(lambda: logger.verify(config), as_json=as_json)
    if as_json:
        emit_json({"ok": rep.ok, "runs": rows})
        return
    for r in rows:
        console.print(f"{r['clients']} client(s): {r['events']} events in {r['seconds']} s = "
                      f"{r['events_per_second']} events/s (×{r['ratio_vs_first']})",
                      highlight=False)
    console.print("chains intact" if rep.ok else "chains BROKEN", highlight=False)


def weekly_command(
    db: Annotated[str, typer.Option(
        "--db", help="Claim store: an SQLite file or a postgresql:// URL.")],
    week: Annotated[str, typer.Option("--week", help="First day of the week, YYYY-MM-DD.")],
    bench: Annotated[pathlib.Path | None, typer.Option(
        "--bench", help="`causal report --json` with a paired delta (question 1).")] = None,
    graph_vs_text: Annotated[pathlib.Path | None, typer.Option(
        "--graph-vs-text", help="Report with the graph vs text-equivalent delta (q. 2).")] = None,
    controls: Annotated[pathlib.Path | None, typer.Option(
        "--controls", help="Control-matrix summary JSON.")] = None,
    decisions: Annotated[pathlib.Path | None, typer.Option(
        "--decisions", help="Sandbox expected-repair-loss comparison JSON (q. 3), as "
        "`causal decisions --out` writes it.")] = None,
    decisions_from: Annotated[tuple[pathlib.Path, pathlib.Path] | None, typer.Option(
        "--decisions-from", metavar="RUN_A RUN_B", help="Two episode runs, candidate then "
        "baseline: compute question 3 from them (with --episode-bench).")] = None,
    episode_bench: Annotated[pathlib.Path | None, typer.Option(
        "--episode-bench", help="The bench both --decisions-from runs were made on.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """The one-page weekly report (Markdown) from the verified store and the latest runs."""
    from rungbench.causal.instrument import detector, weekly

    if decisions_from is not None and decisions is not None:
        raise typer.BadParameter("give --decisions or --decisions-from, not both",
                                 param_hint="--decisions-from")
    if decisions_from is not None and episode_bench is None:
        raise typer.BadParameter("--decisions-from needs the runs' bench (--episode-bench)",
                                 param_hint="--episode-bench")

    def build() -> dict[str, Any]:
        docs = weekly.load_optional([bench, graph_vs_text, controls, decisions])
        if decisions is not None and docs[3] is not None:
            from rungbench.causal.bench.decisions import DECISIONS_SCHEMA, verify_decisions

            if docs[3].get("schema") == DECISIONS_SCHEMA:
                verify_decisions(docs[3], decisions)
        if decisions_from is not None and episode_bench is not None:
            from rungbench.causal.bench.decisions import decisions_document

            docs[3] = decisions_document(episode_bench, *decisions_from)
        inputs = weekly.Inputs(docs[0], docs[1], docs[2], docs[3],
                               detector.coverage_quality().to_json())
        return weekly.weekly_report(db, weekly.parse_window(week), inputs)

    doc = run(build, as_json=as_json)
    if as_json:
        emit_json(doc)
    else:
        console.print(weekly.to_markdown(doc), markup=False, highlight=False)


def detector_command(as_json: JsonOpt = False) -> None:
    """Precision and recall of the frozen opportunity detector on each committed turn set."""
    from rungbench.causal.instrument import detector

    def measure() -> dict[str, Any]:
        out = {}
        for name, quality in detector.measure_all().items():
            q, committed = quality.to_json(), detector.committed_quality(name)
            if q["precision"] < committed["precision"] or q["recall"] < committed["recall"]:
                raise IntegrityError(f"{name}: detector quality {q['precision']}/{q['recall']}"
                                     f" is below the committed {committed['precision']}/"
                                     f"{committed['recall']}")
            out[name] = q
        return out

    result = run(measure, as_json=as_json)
    if as_json:
        emit_json(result)
        return
    for name, q in result.items():
        console.print(f"detector {q['version']} on {name} ({q['n']} turns): precision "
                      f"{q['precision']:.3f}, recall {q['recall']:.3f} (regex pass alone "
                      f"{q['regex_recall']:.3f})" + (f"; {q['caveat']}" if q["caveat"] else ""),
                      highlight=False)


def register(app: typer.Typer) -> None:
    """Add the instrumentation commands to the ``rungbench causal`` app."""
    app.add_typer(logger_app, name="logger")
    app.command("weekly-report")(weekly_command)
    app.command("detector-quality")(detector_command)
