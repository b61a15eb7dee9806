"""``rungbench demo [--out DIR]``: one study on the bundled data, ending in the HTML report.

The stages are :mod:`rungbench.demo`; this module runs them, shows each stage's result on
a terminal (or prints one JSON document under ``--json``) and prints the report's path.
The folder (default ``./rungbench-demo``) is reused: a second run verifies and reuses
every frozen object.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from rungbench.cli._common import EXIT_ERROR, JSON_OPTION, console, emit_json, run
from rungbench.demo import (
    Stage,
    StageOutcome,
    StageResult,
    demo_document,
    publish_report,
    run_demo,
)
from rungbench.errors import InputError

DEFAULT_OUT = Path("rungbench-demo")
"""The demo's folder when ``--out`` is not given (relative to the working directory)."""
OUT_OPTION = typer.Option(DEFAULT_OUT, "--out", "--workdir",
                          help="The demo's folder (created; reused and verified on a re-run).")


def _evidence(result: StageResult) -> None:
    summary = result.summary
    table = Table(title="evidence", show_header=False)
    for key in ("files", "digests_matching_sources_md", "objects", "bad_objects", "frozen",
                "stale_check_refused_with", "ledger_events", "ledger_ok", "manifest",
                "manifest_reread_matches"):
        table.add_row(key, str(summary[key]))
    console.print(table)
    if sys.stdout.isatty():
        for name, found in summary["input_digests"].items():
            console.print(f"  {found}  {name}", highlight=False, soft_wrap=True)


def _stats(result: StageResult) -> None:
    from rungbench.cli.stats import figure_table

    console.print(figure_table(result.detail))


def _validation(result: StageResult) -> None:
    from rungbench.cli.causal import report_table, verdict_line

    console.print(report_table(result.detail))
    console.print(verdict_line(result.detail), highlight=False)


def _causal_bench(result: StageResult) -> None:
    s = result.summary
    console.print(
        f"[bold]causal bench[/]: {s['cases']} cases from {s['worlds']} dev worlds; "
        f"oracle {s['oracle_accuracy']:.3f}, rung-1 answerer {s['rung1_accuracy']:.3f} "
        f"(signature label on {s['rung1_signature']['hits']}/{s['rung1_signature']['failed']} "
        f"failures); listing-order agreement {s['listing_order_after']:.3f}."
    )


def _ablations(result: StageResult) -> None:
    from rungbench.causal.ablations.analysis import to_markdown

    s = result.summary
    console.print(f"[bold]ablations[/]: {s['arms']} arms, {s['cells']} cells on {s['worlds']} "
                  f"worlds, agent {s['agent']}" + (" (verified and reused)" if s["reused"]
                                                  else ""))
    console.print(to_markdown(result.detail), markup=False, highlight=False, soft_wrap=True)


def _instrument(result: StageResult) -> None:
    table = Table(title="C1 recovered / C5 reversed / C5 sign-flip false accepts (of 40)")
    for column in ("query x scorer", "ours", "seed"):
        table.add_column(column)
    for key, row in result.summary["table"].items():
        table.add_row(key, " / ".join(map(str, row["ours"])), " / ".join(map(str, row["seed"])))
    console.print(table)
    console.print(result.summary["verdict"], highlight=False)


def _decisions(result: StageResult) -> None:
    s = result.summary
    for key in ("a", "b"):
        o = s["outcomes"][key]
        console.print(f"{key} {s['agents'][key]}: {o['n']} incidents, mean expected repair loss "
                      f"{o['mean_expected_loss']:.3f}, sandbox success {o['success_rate']:.3f}, "
                      f"${o['usd_per_incident']:.6f} per incident, success per $ "
                      f"{o['success_per_usd']:.1f}", highlight=False)
    d, q = s["loss_delta"], s["question_3"]
    console.print(f"expected loss a − b {d['mean']:+.3f} (95% {d['low']:.3f} to {d['high']:.3f}, "
                  f"{d['n_clusters']} worlds); question 3: [bold]{q['answer']}[/] ({q['why']})",
                  highlight=False)


def _cladder(result: StageResult) -> None:
    s = result.summary
    console.print(f"CLadder: {s['models']} models, {s['questions']} questions; "
                  f"{s['quantities_wrong']} of {s['quantities']} stored quantities differ from "
                  f"the exact oracle; {s['numeric_labels_flipped']} yes/no labels flip")


def _census(result: StageResult) -> None:
    from rungbench.cli.chess_census import print_census

    for name, doc in result.detail.items():
        console.rule("harness (scripted agent vs random mover)" if name == "harness" else name)
        print_census(doc)


def _labels(result: StageResult) -> None:
    s = result.summary
    console.print(f"pool: {s['pool_positions']} positions frozen ({s['pool'][:19]}…)")
    console.print("preflight without the replication cohort refused: "
                  f"{s['refused_without_cohort']}")
    console.print("qualified against pilot + replication; "
                  f"preflight cleared={s['preflight_cleared']}")
    console.print(f"labelled {s['labelled']}, excluded {s['excluded']} at {s['nodes']} nodes "
                  f"(reduced for the demo; registered {s['registered_nodes']:,}); "
                  f"classes {s['labels']}")
    console.print(f"label manifest {s['manifest']}; reused {s['reused']}; searches this run "
                  f"{s['searches_this_run']}")


def _study(result: StageResult) -> None:
    s = result.summary
    console.print(f"manifest {s['manifest'][:19]}… {s['manifest_counts']} "
                  f"({'verified, reused' if s['manifest_reused'] else 'frozen'}); "
                  f"authorization {s['authorization'][:19]}…; {s['cells']} cells on {s['route']}")
    table = Table(title="study runs (planted agents through the real openai client)")
    for column in ("binding", "model", "cells", "sent now", "evaluation", "reused"):
        table.add_column(column)
    for preset, b in s["bindings"].items():
        for r in b["runs"]:
            ev = r.get("evaluation") or {}
            part = "" if r["part"] == "cells" else f" ({r['part']})"
            table.add_row(preset, r["model"] + part,
                          str(r["cells"]), str(r["sent_now"]),
                          (ev.get("evaluation") or "—")[:19], str(ev.get("reused", "—")))
    console.print(table)
    for preset, b in s["bindings"].items():
        for key, value in b["analysis"].items():
            if isinstance(value, dict):
                console.print(f"  {preset} {key}: {value}", highlight=False)


def _designs(result: StageResult) -> None:
    from rungbench.cli.design import print_report

    for report in result.detail:
        print_report(report)


def _runner(result: StageResult) -> None:
    from rungbench.cli.run import print_summary

    s = result.summary
    if s.get("reused"):
        console.print(f"verified the finished run of an earlier demo ({s['cells']} cells, "
                      f"one final each): {s['run_dir']}")
        return
    print_summary(result.detail)
    console.print(
        f"session 1 finalized {s['session1_finalized']} cells; resume finalized "
        f"{s['session2_finalized']}; completed cells re-sent: {s['completed_cells_resent']}; "
        f"key found in files: {s['api_key_in_files']}"
    )


VIEWS: dict[str, Callable[[StageResult], None]] = {
    "evidence": _evidence, "stats": _stats, "causal_validation": _validation,
    "causal_bench": _causal_bench, "ablations": _ablations, "instrument": _instrument,
    "decisions": _decisions, "cladder": _cladder,
    "census": _census, "labels": _labels, "designs": _designs,
    "runner": _runner, "study": _study,
}
"""How each stage's result is shown on a terminal, by stage key."""


def _start(stage: Stage) -> None:
    console.rule(f"[bold]{stage.title}")


def _done(outcome: StageOutcome) -> None:
    if outcome.result is not None:
        VIEWS[outcome.stage.key](outcome.result)
    if outcome.error is not None:
        console.print(f"[bold red]stage failed[/] {outcome.error}")


def _workdir(workdir: Path) -> Path:
    """The demo's output folder, created; :class:`InputError` naming the first path on the
    way that is a file (the folder itself or one above it)."""
    base = workdir.resolve()
    for path in (base, *base.parents):
        if path.exists() and not path.is_dir():
            raise InputError("--workdir is not a directory (a file is here)", path=str(path))
    base.mkdir(parents=True, exist_ok=True)
    return base


def demo(
    workdir: Path = OUT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Run the main job on the bundled data and write its HTML report."""
    base = run(lambda: _workdir(workdir), as_json=as_json)
    outcomes = run_demo(base, on_start=None if as_json else _start,
                        on_done=None if as_json else _done)
    report = run(lambda: publish_report(base, outcomes), as_json=as_json)
    document: dict[str, Any] = demo_document(base, outcomes, report)
    if as_json:
        emit_json(document)
    else:
        console.rule()
        console.print(f"demo outputs in {base}; "
                      f"{'all stages ok' if document['ok'] else 'FAILED'}")
        console.print(f"report: {report['report']}", highlight=False, soft_wrap=True)
    if not document["ok"]:
        raise typer.Exit(EXIT_ERROR)
