"""``rungbench demo``: run every finished capability as a stage on the bundled data.

Each stage is a function ``(workdir, as_json) -> dict`` that does real work and
returns a JSON-ready summary. A capability joins the demo when it is finished.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from rungbench.cli._common import EXIT_ERROR, JSON_OPTION, console, emit_json
from rungbench.errors import RungbenchError

Stage = Callable[[Path, bool], dict[str, Any]]


def _stages() -> list[tuple[str, Stage]]:
    from rungbench.cli.causal import demo_stage as causal_stage
    from rungbench.cli.causal_bench import demo_stage as causal_bench_stage
    from rungbench.cli.chess import demo_stage as label_stage
    from rungbench.cli.chess_census import demo_stage as census_stage
    from rungbench.cli.design import demo_stage as design_stage
    from rungbench.cli.evidence import demo_stage as evidence_stage
    from rungbench.cli.run import demo_stage as run_stage
    from rungbench.cli.stats import demo_stage as stats_stage

    return [
        ("evidence store, freeze/check, ledger (evidence)", evidence_stage),
        ("seed figures (stats)", stats_stage),
        ("causal oracle validation (causal)", causal_stage),
        ("causal benchmark build, eval, report (causal)", causal_bench_stage),
        ("LLM Chess replay and A104 census (chess)", census_stage),
        ("engine-blind pool, leakage gate, two-pass Stockfish labels (chess)", label_stage),
        ("A105 byte-matched panels and E023 counterbalanced orders (design)", design_stage),
        ("resumable runner through the real openai client on loopback (execute)", run_stage),
    ]


WORKDIR_OPTION = typer.Option(None, help="Where stage outputs go (default: a temp dir).")


def demo(
    workdir: Path | None = WORKDIR_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Run the main job, as far as it is built, on the bundled data."""
    base = workdir or Path(tempfile.mkdtemp(prefix="rungbench-demo-"))
    base.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {}
    failed = False
    for name, stage in _stages():
        if not as_json:
            console.rule(f"[bold]{name}")
        start = time.perf_counter()
        try:
            summary = stage(base, as_json)
            seconds = round(time.perf_counter() - start, 3)
            results[name] = {"ok": True, "seconds": seconds, **summary}
        except RungbenchError as exc:
            failed = True
            results[name] = {"ok": False, "error": str(exc)}
            if not as_json:
                console.print(f"[bold red]stage failed[/] {exc}")
    if as_json:
        emit_json({"workdir": str(base), "stages": results, "ok": not failed})
    else:
        console.rule()
        console.print(f"demo outputs in {base}; {'FAILED' if failed else 'all stages ok'}")
    if failed:
        raise typer.Exit(EXIT_ERROR)
