"""`rungbench causal controls` and `rungbench causal graph ...`: the instrument audit (seed 003).

``controls`` runs the probes, the C0–C5 matrix, the four separate numbers and the one-line
verdict against any ``causal()`` (``naive``, ``fixed``, ``module:function`` or an HTTP
endpoint on loopback) and any scorer. ``graph build`` writes the committed synthetic
production store; ``graph census sample|score`` is the two-rater edge census; ``graph
leakage`` lists co-occurrences of withheld edges; ``graph migrate`` types a legacy table.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from rungbench.cli._agents import (
    BaseUrlOpt,
    KeyEnvOpt,
    ModelOpt,
    ModelsOpt,
    NoKeyOpt,
    ParamOpt,
    agent_spec,
)
from rungbench.cli._common import (
    JSON_OPTION,
    SEED_MAX,
    choice,
    command_group,
    console,
    emit_json,
    progress_bar,
    run,
)
from rungbench.errors import InputError, Reason, Refusal

graph_app = command_group("The typed graph store: build, census, leakage, migrate.")
census_app = command_group("Two-rater edge census (seed 003 section B).")
SETS = ("standard", "generated")


def _table(title: str, head: list[str], rows: list[list[str]]) -> Table:
    table = Table(title=title)
    for h in head:
        table.add_column(h)
    for r in rows:
        table.add_row(*r)
    return table


def _render(doc: dict[str, Any]) -> None:
    console.print(_table(f"control matrix ({doc['case_set']}, n = {doc['n']})",
                         ["query × scorer", "C1 recovered", "C5 reversed FA", "C5 sign FA",
                          "C5 sibling FA", "C4 FP (empty/unrelated)", "valid"],
                         [[f"{t['query']} × {t['scorer']}", f"{t['C1_recovered']}/{doc['n']}",
                           str(t["C5_false_accepts"]["reversed"]),
                           str(t["C5_false_accepts"]["sign"]),
                           str(t["C5_false_accepts"]["sibling"]),
                           f"{t['C4_false_positives']['empty']}/"
                           f"{t['C4_false_positives']['unrelated']}",
                           "yes" if t["instrument_valid"] else "NO"] for t in doc["table"]]))
    for row in doc["rows"]:
        conds = list(next(iter(row["per_tag"].values())))
        console.print(_table(f"per tag: {row['query']} × {row['scorer']} "
                             "(C0–C3 hits, C4/C5 false accepts)", ["tag", *conds],
                             [[tag, *cells.values()] for tag, cells in row["per_tag"].items()]))
    console.print(_table("four numbers (never blended)", ["number", "value"],
                         [[k, json.dumps(v, sort_keys=True)[:160]]
                          for k, v in doc["four_numbers"].items()]))
    console.print(doc["verdict"], highlight=False, soft_wrap=True)


def controls_command(
    query: Annotated[list[str] | None, typer.Option(
        "--query", help="naive | fixed | module:function | http://127.0.0.1:PORT[/path] | "
        "model (the agent --model names answers each call); repeatable.")] = None,
    scorer: Annotated[list[str] | None, typer.Option(
        "--scorer", help="strict | lenient | module:function; repeatable.")] = None,
    case_set: str = typer.Option("standard", "--set", callback=choice(SETS),
                                 help="standard (40 cases) or generated (200)."),
    demo: bool = typer.Option(False, "--demo", help="The seed's demonstration: naive and fixed "
                              "× lenient and strict, probes reported but not gating."),
    ungated: bool = typer.Option(False, "--past-probes", help="Run the matrix even when probe "
                                 "C.3 or C.6 fails (the verdict then reads 'instrument')."),
    timeout: float = typer.Option(5.0, "--timeout", min=0.01, max=600.0,
                                  help="Seconds per causal() call before it is a timeout."),
    allow_remote: bool = typer.Option(False, "--allow-remote",
                                      help="Allow a non-loopback HTTP endpoint."),
    census: Annotated[Path | None, typer.Option(
        "--census", help="JSON of 'graph census score --json'.")] = None,
    model: ModelOpt = None, models: ModelsOpt = None, base_url: BaseUrlOpt = None,
    api_key_env: KeyEnvOpt = None, no_api_key: NoKeyOpt = False, param: ParamOpt = None,
    as_json: bool = JSON_OPTION,
) -> None:
    """Audit a causal() tool: probes, C0–C5 matrix, four numbers, one-line verdict."""
    from rungbench.agents.providers import provider_for
    from rungbench.causal.instrument.report import MODEL_QUERY, audit

    queries = ["naive", "fixed"] if demo else (query or ["fixed"])
    scorers = ["lenient", "strict"] if demo else (scorer or ["strict"])

    spec = agent_spec(model, models, base_url=base_url, api_key_env=api_key_env,
                      no_api_key=no_api_key, params=param, as_json=as_json) \
        if MODEL_QUERY in queries else None

    def action() -> dict[str, Any]:
        validity = None
        if census is not None:
            try:
                validity = json.loads(census.read_text(encoding="utf-8"))
            except ValueError as exc:
                raise InputError(f"not JSON: {exc}", path=str(census)) from exc
        with progress_bar("control matrix", quiet=as_json) as tick, \
                provider_for(spec) as agent:
            return audit(queries, scorers, case_set=case_set, timeout=timeout,
                         allow_remote=allow_remote, gated=not (demo or ungated),
                         census=validity, tick=tick, agent=agent)

    doc = run(action, as_json=as_json)
    if as_json:
        emit_json(doc)
    else:
        _render(doc)


@graph_app.command("build")
def build_command(out: Annotated[Path, typer.Option("--out", help="New .sqlite file.")],
                  case_set: str = typer.Option("standard", "--set", callback=choice(SETS)),
                  force: bool = typer.Option(False, "--force", help="Replace an existing file."),
                  as_json: bool = JSON_OPTION) -> None:
    """Write the committed synthetic production store (C1 graph) with sources."""
    from rungbench.causal.instrument.cases import build_world
    from rungbench.causal.instrument.graph_store import write_store
    def action() -> dict[str, Any]:
        if out.exists() and not force:
            raise Refusal([Reason("exists", f"{out} exists; pass --force to replace it",
                                  subject=str(out))], gate="graph build")
        tmp = out.with_name(f".{out.name}.tmp")
        tmp.unlink(missing_ok=True)
        world = build_world(case_set)
        write_store(tmp, world.edges, world.aliases, world.sources).close()
        tmp.replace(out)
        return {"ok": True, "store": str(out), "edges": len(world.edges),
                "withheld": [e.edge_id for c in world.cases for e in c.target]}

    doc = run(action, as_json=as_json)
    emit_json(doc) if as_json else console.print(f"wrote {doc['store']} ({doc['edges']} edges)")


@census_app.command("sample")
def census_sample(store: Annotated[Path, typer.Option("--store", help="Typed graph store.")],
                  out: Annotated[Path, typer.Option("--out", help="New folder for the sheets.")],
                  seed: int = typer.Option(..., "--seed", min=0, max=SEED_MAX),
                  n: int = typer.Option(100, "--n", min=1, max=100_000),
                  force: bool = typer.Option(False, "--force"),
                  as_json: bool = JSON_OPTION) -> None:
    """Sample n edges uniformly (seed logged) into two blank rater sheets (sealed folder)."""
    from rungbench.causal.instrument.census import sample_edges
    from rungbench.causal.instrument.graph_store import GraphStore
    from rungbench.evidence.sealed import publish_dir

    def action() -> dict[str, Any]:
        graph = GraphStore.open(store)
        with publish_dir(out, kind="causal-census-sample", force=force) as tmp:
            log = sample_edges(graph, tmp, n=n, seed=seed)
        graph.close()
        return {"ok": True, "folder": str(out), **log}

    doc = run(action, as_json=as_json)
    emit_json(doc) if as_json else console.print(
        f"sampled {doc['n']} of {doc['population']} edges (seed {doc['seed']}) into {out}; "
        "copy rater_a.csv / rater_b.csv out of the sealed folder to fill them")


@census_app.command("score")
def census_score(sample: Annotated[Path, typer.Option("--sample", help="Folder from 'sample'.")],
                 sheet_a: Annotated[Path, typer.Option("--a", help="Rater A's filled sheet.")],
                 sheet_b: Annotated[Path, typer.Option("--b", help="Rater B's filled sheet.")],
                 as_json: bool = JSON_OPTION) -> None:
    """Cohen's κ per field and the mixed-store flag (> 20% not causal claims)."""
    from rungbench.causal.instrument.census import score_sheets
    from rungbench.evidence.sealed import verify_sealed

    def action() -> dict[str, Any]:
        verify_sealed(sample, kind="causal-census-sample")
        return {"ok": True, **score_sheets(sample / "sample.json", sheet_a, sheet_b).to_json()}

    doc = run(action, as_json=as_json)
    if as_json:
        emit_json(doc)
        return
    console.print(_table(f"census κ (n = {doc['n']})", ["field", "κ"],
                         [[k, "undefined" if v is None else f"{v:.3f}"]
                          for k, v in doc["kappa"].items()]))
    share = doc["not_causal_share"]["mean"]
    console.print(f"not causal claims: {share:.1%} — "
                  + ("MIXED relation store: causal recall is the wrong metric"
                     if doc["mixed_store"] else "causal store"), highlight=False)


@graph_app.command("leakage")
def leakage_command(store: Annotated[Path, typer.Option("--store", help="Typed graph store.")],
                    withheld: str = typer.Option(None, "--withheld", help="Comma-separated "
                                                 "edge ids (default: the committed targets)."),
                    as_json: bool = JSON_OPTION) -> None:
    """List every co-occurrence of a withheld edge's endpoints in the declared stores."""
    from rungbench.causal.instrument.cases import build_world
    from rungbench.causal.instrument.census import coverage, leakage_scan
    from rungbench.causal.instrument.graph_store import GraphStore

    def action() -> dict[str, Any]:
        graph = GraphStore.open(store)
        ids = withheld.split(",") if withheld else [
            e.edge_id for c in build_world().cases for e in c.target]
        by_id = {e.edge_id: e for e in graph.edges()}
        unknown = [i for i in ids if i not in by_id]
        if unknown:
            raise InputError(f"no such edge ids: {unknown[:5]}", path=str(store),
                             field="--withheld")
        targets = [by_id[i] for i in ids]
        leaks = leakage_scan(graph, targets)
        graph.close()
        return {"ok": True, "coverage": dict(coverage(targets, leaks)),
                "leaks": [leak.__dict__ for leak in leaks]}

    doc = run(action, as_json=as_json)
    if as_json:
        emit_json(doc)
        return
    console.print(_table("leak paths", ["withheld", "store", "where", "excerpt"],
                         [[x["target"], x["store"], x["where"], x["excerpt"]]
                          for x in doc["leaks"]]))


@graph_app.command("migrate")
def migrate_command(path: Annotated[Path, typer.Argument(help="SQLite file with causal_edges.")],
                    seed: int = typer.Option(0, "--seed", min=0, max=SEED_MAX),
                    as_json: bool = JSON_OPTION) -> None:
    """Type a legacy causal_edges(cause, effect) table in place; row counts checked."""
    from rungbench.causal.instrument.graph_store import migrate_legacy

    def action() -> dict[str, Any]:
        if not path.is_file():
            raise InputError("no such file", path=str(path))
        conn = sqlite3.connect(path)
        try:
            report = migrate_legacy(conn, seed=seed)
        except sqlite3.Error as exc:
            raise InputError(f"cannot migrate: {exc}", path=str(path)) from exc
        finally:
            conn.close()
        return {"ok": True, **report.__dict__}

    doc = run(action, as_json=as_json)
    emit_json(doc) if as_json else console.print(
        f"migrated {doc['rows_before']} rows → {doc['rows_after']}; sample of "
        f"{len(doc['sample'])} rows identical")


def register(app: typer.Typer) -> None:
    """Add ``controls`` and the ``graph`` group to the ``rungbench causal`` app."""
    app.command("controls")(controls_command)
    graph_app.add_typer(census_app, name="census")
    app.add_typer(graph_app, name="graph")
