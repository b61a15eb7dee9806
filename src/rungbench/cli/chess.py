"""`rungbench chess ...` commands: pool freeze, cohort freeze, label qualify/preflight/run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from rungbench.chess.engine import (
    DEFAULT_NODES,
    MAX_HASH_MB,
    MAX_NODES,
    EngineConfig,
)
from rungbench.chess.engine_builds import BUILD_KEYS, REGISTERED_BUILD, default_build
from rungbench.chess.labels.cohort import freeze_cohort
from rungbench.chess.labels.config import MAX_WORKERS, LabelConfig
from rungbench.chess.labels.idle import IdleGate, default_max_load, valid_max_load
from rungbench.chess.labels.label import run_label_stage
from rungbench.chess.labels.pool import (
    MAX_LEGAL_MOVES,
    PlySampling,
    PoolConfig,
    PoolSource,
    bundled_data_dir,
    freeze_pool,
)
from rungbench.chess.labels.qualify import DEFAULT_COHORTS, preflight, qualify
from rungbench.chess.labels.stability import MIN_LINES
from rungbench.chess.workspace import Workspace
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
from rungbench.cli._executor import EXECUTOR_OPTION, RAY_ADDRESS_OPTION, executor_kind

app = command_group(
    "Chess (seeds 000-002): A104 transcript census, recorded games, engine-blind pool, "
    "leakage gate, two-pass labels.")
pool_app = command_group("The engine-blind position pool.")
cohort_app = command_group("Frozen game cohorts for the leakage gate.")
label_app = command_group("Two-pass fixed-node Stockfish labelling.")
app.add_typer(pool_app, name="pool")
app.add_typer(cohort_app, name="cohort")
app.add_typer(label_app, name="label")

WORK_OPTION = typer.Option(..., "--work", help="Label workspace directory.")
COHORT_OPTION = typer.Option(list(DEFAULT_COHORTS), "--cohort",
                             help="Cohort the pool is cleared against (repeatable).")
PUZZLES_OPTION = typer.Option(None, help="Lichess puzzle CSV (default: bundled).")
GAMES_OPTION = typer.Option(None, help="JSON Lines of PGN games (default: bundled).")
PATHS_ARGUMENT = typer.Argument(..., help="PGN, game JSON, JSONL or transcript files.")
ENGINE_OPTION = typer.Option(None, help="Engine file of the build (default: the build's "
                             "installed file).")
ENGINE_BUILD_OPTION = typer.Option(
    None, "--engine-build", callback=lambda v: v if v is None else choice(BUILD_KEYS)(v),
    help=f"Registered engine build: {', '.join(BUILD_KEYS)} (default: {REGISTERED_BUILD}, "
    "seed 002's registration, where installed; else Debian's Stockfish 15.1).")
GAME_KINDS = ("pgn_jsonl", "pgn_plies")
"""How the games file enters the pool (:data:`rungbench.chess.labels.pool.SourceKind`)."""


def _max_load(value: float) -> float:
    """Typer callback: a load threshold must be finite and >= 0 (nan would disable the gate)."""
    if not valid_max_load(value):
        raise typer.BadParameter(f"{value!r} is not a finite load average >= 0")
    return value


def _show(title: str, summary: dict[str, Any]) -> None:
    table = Table(title=title, show_header=False)
    for key, value in summary.items():
        if not isinstance(value, dict | list):
            table.add_row(str(key), str(value))
    console.print(table)


@pool_app.command("freeze")
def pool_freeze(
    work: Path = WORK_OPTION,
    puzzles: Path | None = PUZZLES_OPTION,
    games: Path | None = GAMES_OPTION,
    puzzle_limit: int | None = typer.Option(None, min=1,
                                            help="Read only the first N puzzles."),
    games_limit: int | None = typer.Option(None, min=1,
                                           help="Read only the first N game lines."),
    reserve: int = typer.Option(1, min=0, help="Reserve quota per split × phase × colour cell."),
    seed: int = typer.Option(0, min=0, max=SEED_MAX, help="Seed of the split hash."),
    min_width: int = typer.Option(10, min=MIN_LINES, max=MAX_LEGAL_MOVES,
                                  help="Minimum legal root moves (top-10 needs at least 10)."),
    source_kind: str = typer.Option("pgn_jsonl", "--source-kind",
                                    callback=choice(GAME_KINDS),
                                    help="Games as final positions (pgn_jsonl) or every "
                                    "sampled ply along them (pgn_plies)."),
    from_move: int | None = typer.Option(None, "--from-move", min=1,
                                         help="pgn_plies: first full-move number kept "
                                         "(default 8)."),
    stride: int | None = typer.Option(None, "--stride", min=1,
                                      help="pgn_plies: keep every N-th ply (default 1)."),
    force: bool = typer.Option(False, "--force", help="Replace an existing pool."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Freeze the engine-blind pool (no engine is opened); an existing pool needs --force."""
    if source_kind != "pgn_plies" and (from_move is not None or stride is not None):
        raise typer.BadParameter("--from-move and --stride apply only to --source-kind "
                                 "pgn_plies", param_hint="--source-kind")
    default = PlySampling()
    sampling = PlySampling(from_move=default.from_move if from_move is None else from_move,
                           stride=default.stride if stride is None else stride)

    def action() -> dict[str, Any]:
        data = bundled_data_dir()
        sources = [
            PoolSource("lichess_puzzles", puzzles or data / "lichess_puzzles" / "puzzles.csv",
                       puzzle_limit),
            PoolSource("pgn_plies" if source_kind == "pgn_plies" else "pgn_jsonl",
                       games or data / "kaggle_chess_positions"
                       / "filtered_chess_positions.jsonl", games_limit, sampling=sampling),
        ]
        config = PoolConfig(seed=seed, min_width=min_width, reserve=reserve)
        return freeze_pool(Workspace(work), sources, config, force=force)

    summary = run(action, as_json=as_json)
    emit_json(summary) if as_json else _show("pool frozen", summary)


@cohort_app.command("freeze")
def cohort_freeze(
    name: str = typer.Argument(..., help="Cohort name, e.g. pilot or replication."),
    paths: list[Path] = PATHS_ARGUMENT,
    work: Path = WORK_OPTION,
    terminal: bool = typer.Option(False, "--terminal/--live",
                                  help="Mark the cohort terminal (its run has ended)."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Freeze a cohort of games with every board state they reached.

    A terminal cohort is never replaced; a live one may be re-frozen.
    """
    summary = run(lambda: freeze_cohort(Workspace(work), name, paths, terminal=terminal),
                  as_json=as_json)
    emit_json(summary) if as_json else _show(f"cohort {name} frozen", summary)


@label_app.command("qualify")
def label_qualify(work: Path = WORK_OPTION, cohort: list[str] = COHORT_OPTION,
                  as_json: bool = JSON_OPTION) -> None:
    """Build and persist the qualification of the pool against terminal cohorts."""
    summary = run(lambda: qualify(Workspace(work), cohort), as_json=as_json)
    emit_json(summary) if as_json else _show("qualification", summary)


@label_app.command("preflight")
def label_preflight(work: Path = WORK_OPTION, cohort: list[str] = COHORT_OPTION,
                    as_json: bool = JSON_OPTION) -> None:
    """Check terminal qualification and pool eligibility; opens no engine."""
    summary = run(lambda: preflight(Workspace(work), cohort), as_json=as_json)
    emit_json({"ok": True, **summary}) if as_json else _show("preflight passed", summary)


@label_app.command("run")
def label_run(
    work: Path = WORK_OPTION,
    cohort: list[str] = COHORT_OPTION,
    workers: int = typer.Option(1, min=1, max=MAX_WORKERS,
                                help="Engine processes searching in parallel."),
    nodes: int = typer.Option(DEFAULT_NODES, min=1, max=MAX_NODES, help="Node limit per search."),
    hash_mb: int = typer.Option(256, min=1, max=MAX_HASH_MB,
                                help="UCI Hash in MB (registered: 256; at most what the engine "
                                "declares and this host holds)."),
    engine: Path | None = ENGINE_OPTION,
    engine_build: str | None = ENGINE_BUILD_OPTION,
    max_load: float = typer.Option(default_max_load(), callback=_max_load,
                                   help="Idle gate: max 1-minute load (finite, >= 0)."),
    executor: str = EXECUTOR_OPTION,
    ray_address: str | None = RAY_ADDRESS_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Run or resume the two-pass label stage and publish it all or nothing."""
    build = default_build() if engine_build is None else engine_build
    config = LabelConfig(engine=EngineConfig(build=build, path=engine, nodes=nodes,
                                             hash_mb=hash_mb),
                         cohorts=tuple(cohort),
                         workers=workers)
    kind = executor_kind(executor, ray_address)

    def action() -> dict[str, Any]:
        from rungbench.execute.executors import executor_for

        with executor_for(kind, address=ray_address, workers=workers) as pool:
            return run_label_stage(Workspace(work), config, IdleGate(max_load=max_load),
                                   progress, executor=pool)

    with progress_bar("labelling", quiet=as_json) as progress:
        summary = run(action, as_json=as_json)
    if as_json:
        emit_json(summary)
    else:
        _show("label stage published", {**summary, **summary["labels"]})
