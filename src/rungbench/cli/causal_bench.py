"""`rungbench causal build|eval|score|report|audit|scorer-agreement|episodes|decisions`: the
bench CLI.

Thin: parse, call one library function, print (Rich tables or one JSON document).
The causal library loads inside each command, so that ``rungbench --help`` stays fast.
"""

from __future__ import annotations

import pathlib
from typing import Annotated, Any

import typer
from rich.table import Table

from rungbench.cli._common import SEED_MAX, console, emit_json, progress_bar, run
from rungbench.errors import Reason, Refusal

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document instead of tables.")]
BenchOpt = Annotated[pathlib.Path, typer.Option("--bench", help="Built bench directory.")]
ForceOpt = Annotated[bool, typer.Option("--force", help="Replace an existing output directory.")]


def _worlds_in_range(value: int) -> int:
    """``--worlds`` outside [1, MAX_WORLDS] is a usage error (exit 2) naming the maximum."""
    from rungbench.causal.bench.build import MAX_WORLDS

    if not 1 <= value <= MAX_WORLDS:
        raise typer.BadParameter(f"{value} is not in [1, {MAX_WORLDS}] (the registered maximum)")
    return value


def _paraphrases_in_range(value: int) -> int:
    """``--paraphrases`` outside [0, MAX_PARAPHRASES] is a usage error (exit 2)."""
    from rungbench.causal.bench.paraphrases import MAX_PARAPHRASES

    if not 0 <= value <= MAX_PARAPHRASES:
        raise typer.BadParameter(f"{value} is not in [0, {MAX_PARAPHRASES}] (one per template "
                                 "of the paraphrase table)")
    return value


def _n_in_range(value: int) -> int:
    """``--n`` outside [1, MAX_GENERATED] is a usage error (exit 2)."""
    from rungbench.causal.checks.agreement import MAX_GENERATED

    if not 1 <= value <= MAX_GENERATED:
        raise typer.BadParameter(f"{value} is not in [1, {MAX_GENERATED}]")
    return value


def build_command(
    split: Annotated[str, typer.Option("--split", help="dev, validation or test.")],
    seed: Annotated[int, typer.Option("--seed", min=0, max=SEED_MAX,
                                      help="Build seed (kept private).")],
    out: Annotated[pathlib.Path, typer.Option("--out", help="Output directory.")],
    worlds: Annotated[int, typer.Option("--worlds", help="Number of worlds (at most 2000).",
                                        callback=_worlds_in_range)] = 60,
    families: Annotated[str | None, typer.Option(
        "--families", help="Also build next-stage families as records/2 files: any of "
        "incident,active,revision,provenance,negative (comma-separated).")] = None,
    twins: Annotated[bool, typer.Option(
        "--twins", help="Also build the matched diagnostic twins the twin-licensed failure "
        "labels need (correlation-as-causation, confounding neglect, ...).")] = False,
    networks: Annotated[str | None, typer.Option(
        "--networks", help="Also build the network family over imported bnlearn networks: "
        "bundled names (alarm,child,insurance,...) or .bif paths, comma-separated.")] = None,
    paraphrases: Annotated[int, typer.Option(
        "--paraphrases", help="Also build N paraphrase variants of every item, each worded "
        "by a different template of the paraphrase table (at most 3).",
        callback=_paraphrases_in_range)] = 0,
    skin_swap: Annotated[bool, typer.Option(
        "--skin-swap", help="Also build each item under another domain skin's names.")] = False,
    renaming: Annotated[bool, typer.Option(
        "--renaming", help="Also build each item under fresh names of its own skin.")] = False,
    force: ForceOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Build a split: DIR/public (cases), DIR/private (oracle, mode 0700), DIR/SEAL.json.

    The bench appears at DIR only complete and sealed; an existing DIR is refused
    (exit 3, ``exists``) unless --force. Without --families the bench is what it always
    was; with it, the next-stage families are added as cases.v2/oracle.v2 files. With
    --twins, each item that has a matched diagnostic variant gets it as a case of its own.
    With --networks, each named network is one more world of the "network" family (rung 1-3
    items in its own variable and state names; counterfactuals under a named coupling).

    With --paraphrases N, each item gets N cases of its own asking the same question in
    other words; with --skin-swap and --renaming, one with the names of another domain skin
    and one with fresh names of its own (the report's transfer table compares each with the
    originals).
    """
    from rungbench.causal.bench.build import build_split

    if split not in ("dev", "validation", "test"):
        run(lambda: _refuse(f"unknown split {split!r}"), as_json=as_json)
    with progress_bar("building worlds", quiet=as_json, total=worlds) as progress:
        summary = run(lambda: build_split(split, worlds, seed, out, progress, force=force,
                                          families=families, twins=twins,
                                          networks=networks, paraphrases=paraphrases,
                                          skin_swap=skin_swap, renaming=renaming),
                                  as_json=as_json)
    if as_json:
        emit_json(summary)
        return
    table = Table(title=f"causal bench {split} → {out}")
    table.add_column("family / item type")
    table.add_column("cases", justify="right")
    for key, n in summary["counts"].items():
        table.add_row(key, str(n))
    for key, n in summary.get("records_v2", {}).get("counts", {}).items():
        table.add_row(f"{key} (records/2)", str(n))
    console.print(table)
    scan = summary["leak_scan"]
    v2 = summary.get("records_v2") or {}
    episodes = (f" + {v2['n_cases']} episode cases over {v2['n_worlds']} worlds (records/2)"
                if v2 else "")
    console.print(f"{summary['n_worlds']} worlds, {summary['n_cases']} cases{episodes}; leak "
                  f"scan {'clean' if scan['ok'] else 'FAILED'} over {scan['files']} public "
                  "files.", highlight=False)


def _refuse(detail: str) -> None:
    raise Refusal([Reason("bad_request", detail)], gate="causal build")


def eval_command(
    bench: BenchOpt,
    out: Annotated[pathlib.Path, typer.Option("--out", help="Run directory.")],
    model: Annotated[str, typer.Option(
        "--model", "--agent", help="A calibrating reference agent: reference:NAME "
        "(a model of your own runs with rungbench run BENCH, then causal score).")],
    force: ForceOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Run a reference agent on every public case, score it, label its failures (sealed run
    dir)."""
    from rungbench.causal.bench.evaluate import evaluate

    agent = model
    summary = run(lambda: evaluate(bench, agent, out, force=force), as_json=as_json)
    if as_json:
        emit_json(summary)
        return
    _print_outcomes(summary, f"{agent} on {bench}")
    if "signature" in summary:
        s = summary["signature"]
        console.print(f"signature {s['label']}: {s['hits']}/{s['failed']} failed items")


def score_command(
    bench: BenchOpt,
    responses: Annotated[pathlib.Path, typer.Option("--responses", help="agent_response JSONL.")],
    out: Annotated[pathlib.Path, typer.Option("--out", help="Run directory.")],
    arm: Annotated[str | None, typer.Option(
        "--arm", help="Agent name for the run manifest (default: the label the responses "
        "name, else external).")] = None,
    force: ForceOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Score an external agent's responses; bad lines are counted invalid and named.

    Responses naming mostly case ids of another bench are refused (exit 3,
    ``foreign_cases``); a repeated case id is an invalid line.
    """
    from rungbench.causal.bench.evaluate import score_responses

    summary = run(lambda: score_responses(bench, responses, out, arm, force=force),
                  as_json=as_json)
    if as_json:
        emit_json(summary)
        return
    _print_outcomes(summary, f"{summary.get('agent', arm)} on {bench}")
    for bad in summary["invalid_lines"]:
        console.print(f"  invalid line {bad['line']}: {bad['error']}", markup=False,
                      highlight=False)


def _print_outcomes(summary: dict[str, Any], title: str) -> None:
    table = Table(title=title)
    table.add_column("outcome")
    table.add_column("n", justify="right")
    for k, n in summary["outcomes"].items():
        table.add_row(k, str(n))
    table.add_row("missing (no response)", str(summary["missing"]))
    console.print(table)
    console.print(f"{summary['n']} bench cases (the denominator); "
                  f"{len(summary['invalid_lines'])} invalid lines", highlight=False)
    for label, n in summary["labels"].items():
        console.print(f"  {label}: {n}")


def report_command(
    run_dir: Annotated[pathlib.Path, typer.Option("--run", help="Scored run directory.")],
    other: Annotated[
        pathlib.Path | None, typer.Option("--vs", help="Second run for a paired delta.")
    ] = None,
    seed: Annotated[int, typer.Option("--seed", min=0, max=SEED_MAX, help="Bootstrap seed.")] = 0,
    as_json: JsonOpt = False,
) -> None:
    """Accuracy by family and rung, identification table, calibration, paired delta.

    Reads the run's private verdicts after verifying its seal; each accuracy carries a
    per-case Clopper–Pearson and a cluster-bootstrap-over-worlds interval.
    """
    from rungbench.causal.bench.report import build_report, to_markdown

    report = run(lambda: build_report(run_dir, other, seed=seed), as_json=as_json)
    if as_json:
        emit_json(report)
    else:
        console.print(to_markdown(report), markup=False, highlight=False, soft_wrap=True)


def audit_command(
    bench: BenchOpt,
    run_dir: Annotated[
        pathlib.Path | None, typer.Option("--run", help="Scored run (skin behaviour).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Listing-order shortcut, nonsense-skin invariance, varsortability."""
    from rungbench.causal.bench.audit import audit_bench

    result = run(lambda: audit_bench(bench, run_dir), as_json=as_json)
    if as_json:
        emit_json(result)
    else:
        lo = result["listing_order"]
        console.print(f"listing order: before {lo['before']['rate']:.3f}, after "
                      f"{lo['after']['rate']:.3f} (gate ≤ {lo['gate']})")
        sk = result["skin_structure"]
        console.print(f"skin structure: {sk['mismatched']} of {sk['pairs']} twin pairs differ")
        v = result["varsortability"]
        if v["items"]:
            console.print(
                f"varsortability over {v['items']} sample-bearing items: raw "
                f"{v['varsortability_raw']:.3f}, standardized "
                f"{v['varsortability_standardized']:.3f}; sort-by-variance baseline raw "
                f"{v['sort_by_variance_accuracy_raw']:.3f}, standardized "
                f"{v['sort_by_variance_accuracy_standardized']:.3f}")
        if "skin_structure_v2" in result:
            sv, lv = result["skin_structure_v2"], result["listing_order_v2"]
            console.print(f"records/2: {sv['mismatched']} of {sv['pairs']} twin pairs differ; "
                          f"listing agreement {lv['rate']:.3f} (gate ≤ {lv['gate']})")
        if result.get("skin_behaviour", {}).get("pairs"):
            sb = result["skin_behaviour"]
            console.print(f"skin behaviour: domain {sb['domain_accuracy']:.3f} vs nonsense "
                          f"{sb['nonsense_accuracy']:.3f} over {sb['pairs']} twin pairs")
        console.print("audit " + ("PASS" if result["pass"] else "FAIL"))
    if not result["pass"]:
        raise typer.Exit(3)


def agreement_command(
    n: Annotated[int, typer.Option("--n", help="Generated responses (1 to 1,000,000).",
                                   callback=_n_in_range)] = 1000,
    seed: Annotated[int, typer.Option("--seed", min=0, max=SEED_MAX,
                                      help="Generation seed.")] = 20261003,
    networks: Annotated[str | None, typer.Option(
        "--networks", help="Also compare on N responses over the network family of these "
        "imported networks (as causal build --networks).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Compare the two independent scorers on hand cases and generated responses."""
    from rungbench.causal.checks.agreement import scorer_agreement

    result = run(lambda: scorer_agreement(n, seed, networks=networks), as_json=as_json)
    if as_json:
        emit_json(result)
    else:
        for name in ("hand", "generated", "networks"):
            if name not in result:
                continue
            r = result[name]
            console.print(f"{name}: {r['agree']}/{r['n']} agree ({r['rate']:.4f})")
            for d in r["disagreements"]:
                console.print(f"  {d['case_id']}: first={d['first']} second={d['second']}",
                              markup=False, highlight=False)
        console.print("agreement " + ("PASS" if result["pass"] else "FAIL"))
    if not result["pass"]:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add the benchmark commands to the ``rungbench causal`` app."""
    app.command("build")(build_command)
    app.command("eval")(eval_command)
    app.command("score")(score_command)
    app.command("report")(report_command)
    app.command("audit")(audit_command)
    app.command("scorer-agreement")(agreement_command)
    from rungbench.cli.causal_episodes import decisions_command, episodes_command

    app.command("episodes")(episodes_command)
    app.command("decisions")(decisions_command)
    from rungbench.cli import causal_logger

    causal_logger.register(app)
