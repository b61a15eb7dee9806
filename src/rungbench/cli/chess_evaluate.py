"""`rungbench chess evaluate RUN --manifest MANIFEST`: WDL regret by a different-family engine.

Seed 002: the labeller (Stockfish) cannot grade its own exam. ``--evaluator ethereal``
(default, primary) or ``toga2`` (secondary); ``--proxy stockfish`` runs Stockfish as the
internal proxy, and every output is then labelled "internal proxy (same family as the
labeller)". Exit 3 with ``evaluator_same_family`` for a same-family evaluator without it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from rungbench.cli._common import JSON_OPTION, choice, console, emit_json, progress_bar, run
from rungbench.cli._executor import EXECUTOR_OPTION, RAY_ADDRESS_OPTION, executor_kind

EVALUATOR_KEYS = ("ethereal", "toga2", "stockfish")
"""Registered evaluators (:data:`rungbench.chess.studies.evaluator.EVALUATORS`)."""

MANIFEST_OPTION = typer.Option(..., "--manifest", help="Published label stage directory "
                               "(or its manifest.json).")
OUT_OPTION = typer.Option(None, "--out", help="Where to publish (default: "
                          "evaluations/<run id>-<evaluator> beside runs/).")
CACHE_OPTION = typer.Option(None, "--cache", help="Successor cache (default: "
                            "evaluation-cache beside runs/).")
MODEL_OPTION = typer.Option(None, "--conversion-model", help="cp→WDL conversion-model "
                            "file (must be the registered one).")


def register(app: typer.Typer) -> None:
    """Add ``evaluate`` to the ``rungbench chess`` app."""
    app.command("evaluate")(evaluate_cmd)


def default_out(run_dir: Path, evaluator: str, proxy: bool) -> Path:
    """Return ``<out>/evaluations/<run id>-<evaluator>[-proxy]`` beside the run's ``runs/``."""
    suffix = "-proxy" if proxy else ""
    return run_dir.resolve().parent.parent / "evaluations" / f"{run_dir.name}-{evaluator}{suffix}"


def default_cache(run_dir: Path) -> Path:
    """Return the successor cache shared by every run of one output folder."""
    return run_dir.resolve().parent.parent / "evaluation-cache"


def evaluate_cmd(
    run_dir: Annotated[Path, typer.Argument(metavar="RUN", help="Run directory made by "
                                            "`rungbench run` over a move-choice schedule.")],
    manifest: Path = MANIFEST_OPTION,
    evaluator: str = typer.Option("ethereal", callback=choice(EVALUATOR_KEYS),
                                  help="ethereal (primary), toga2 (secondary) or stockfish."),
    proxy: str | None = typer.Option(None, "--proxy", callback=lambda v: v and choice(
        ("stockfish",))(v), help="stockfish: the labeller-family internal proxy."),
    depth: int | None = typer.Option(None, min=1, max=40,
                                     help="Search depth (default: the registered one)."),
    workers: int = typer.Option(1, min=1, help="Evaluator processes searching in parallel."),
    hash_mb: int = typer.Option(16, "--hash-mb", min=1, help="UCI hash in MB."),
    timeout: float = typer.Option(60.0, "--timeout", min=0.001,
                                  help="Seconds allowed for every engine call."),
    out: Path | None = OUT_OPTION,
    cache: Path | None = CACHE_OPTION,
    model: Path | None = MODEL_OPTION,
    max_load: float | None = typer.Option(None, help="Idle gate: max 1-minute load."),
    force: bool = typer.Option(False, "--force", help="Replace an existing evaluation."),
    executor: str = EXECUTOR_OPTION,
    ray_address: str | None = RAY_ADDRESS_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Score every cell of RUN: WDL regret of legal moves, 1.0 for model failures."""
    from rungbench.chess.labels.idle import IdleGate, default_max_load
    from rungbench.chess.studies.evaluation import StageOptions, evaluate_run
    from rungbench.chess.studies.evaluator import EvaluatorConfig
    from rungbench.execute.executors import executor_for

    if proxy is not None and evaluator not in ("ethereal", proxy):
        raise typer.BadParameter(f"--proxy {proxy} conflicts with --evaluator {evaluator}")
    key = proxy or evaluator
    kind = executor_kind(executor, ray_address)

    def action() -> dict[str, Any]:
        config = EvaluatorConfig(evaluator=key, depth=depth, hash_mb=hash_mb, timeout_s=timeout,
                                 model_path=model, proxy=proxy is not None)
        options = StageOptions(cache=cache or default_cache(run_dir),
                               out=out or default_out(run_dir, key, proxy is not None),
                               workers=workers, force=force)
        gate = IdleGate(max_load=default_max_load() if max_load is None else max_load)
        with progress_bar("evaluating", quiet=as_json) as tick, executor_for(
                kind, address=ray_address, workers=workers) as pool:
            return evaluate_run(run_dir, manifest, config, options, gate, tick, executor=pool)

    summary = run(action, as_json=as_json)
    if as_json:
        emit_json({"ok": True, **summary})
        return
    body = summary["summary"]
    console.print(f"[bold]{summary['role']}[/]: {summary['evaluator']} "
                  f"(family {summary['evaluator_family']}), labeller {summary['labeller']} "
                  f"(family {summary['labeller_family']}), depth {summary['depth']}")
    console.print(f"cells {body['cells']}: {body['classes']}")
    console.print(f"mean WDL regret {body['mean_wdl_regret']}, catastrophic rate "
                  f"{body['catastrophic_rate']} (threshold {body['catastrophic_threshold']})")
    for row in body["hazard"]:
        console.print(f"hazard {row['condition']} / {row['route']}: {row['missing']} of "
                      f"{row['cells']} missing")
    console.print(f"published {summary['out']} ({summary['evaluation']})")
