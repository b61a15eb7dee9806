"""Positions per second of the label stage and of the evaluator: 1 local worker, 2 local workers
and Ray tasks on a local cluster with 2 CPUs, side by side (issue 21, item 1).

Every configuration starts from an empty cache, so every pass is searched; each publishes its
directory, and the script checks that all of them published the same bytes before it prints a
rate. Ray's cluster start-up is measured once and reported apart (a lab keeps its cluster up).
The bench signature is measured once and shared, as the workspace cache would.

Ideal on this host: 2 workers ≈ 2× one worker if two cores are free (they are shared here, so
the ratio shows what the host gave); Ray should match the 2 local workers less its per-task
round trip (one search per task, two in flight per worker). The first Ray row includes starting
the worker processes and their engines; the warm row is the steady state a long run sees.

Usage: .venv/bin/python benchmarks/ray_executor.py [--puzzles 8] [--games 2] [--nodes 20000]
       [--depth 8]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rungbench.chess.engine import EngineConfig, bench_signature, engine_sha256
from rungbench.chess.labels.cohort import freeze_cohort
from rungbench.chess.labels.config import LabelConfig
from rungbench.chess.labels.idle import IdleGate
from rungbench.chess.labels.label import run_label_stage
from rungbench.chess.labels.pool import PoolConfig, PoolSource, bundled_data_dir, freeze_pool
from rungbench.chess.labels.qualify import qualify
from rungbench.chess.labels.stage_records import read_stage
from rungbench.chess.reference_agents import RandomMover, validate_move
from rungbench.chess.studies.evaluation import StageOptions, evaluate_run
from rungbench.chess.studies.evaluator import EvaluatorConfig
from rungbench.chess.studies.move_choice import fen_schedule
from rungbench.chess.workspace import Workspace
from rungbench.execute.executors import RayExecutor, ray_session
from rungbench.execute.runner import create_run, execute_run

OPEN = IdleGate(max_load=1e9)
"""The benchmark shares its host; the gate is the stage's, not what is measured."""
CONFIGS = (("local, 1 worker", 1, False), ("local, 2 workers", 2, False),
           ("Ray, 2 CPUs", 2, True), ("Ray, warm workers", 2, True))
"""(name, workers, on Ray). The first Ray row starts the workers' processes and engines
(each engine identified in its worker); the second reuses them, from another empty cache."""


def workspace(root: Path, puzzles: int, games: int, bench_from: Path | None) -> Workspace:
    """A qualified workspace over the bundled data, with the shared bench signature."""
    data = bundled_data_dir()
    llm = data / "llm_chess"
    ws = Workspace(root)
    freeze_pool(ws, [PoolSource("lichess_puzzles", data / "lichess_puzzles" / "puzzles.csv",
                                puzzles),
                     PoolSource("pgn_jsonl", data / "kaggle_chess_positions"
                                / "filtered_chess_positions.jsonl", games)], PoolConfig(reserve=0))
    freeze_cohort(ws, "pilot", sorted((llm / "gpt-oss-20b-low_2025-08-12-15-06-46")
                                      .glob("2025*.json")), terminal=True)
    freeze_cohort(ws, "replication", [llm / "gpt-35-turbo-0301_2025-01-22" / "output.txt"],
                  terminal=True)
    qualify(ws)
    if bench_from is not None:
        shutil.copytree(bench_from, ws.root / "cache" / "bench")
    return ws


def files(root: Path) -> dict[str, bytes]:
    """Every published file by relative path."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


Row = tuple[str, int, float, float]
"""(executor, positions, seconds, host load average when the row started)."""


def timed(action: Callable[[], dict[str, Any]]) -> tuple[float, float, dict[str, Any]]:
    """Wall seconds of ``action``, the 1-minute load before it, and its result."""
    load = os.getloadavg()[0]
    start = time.perf_counter()
    result = action()
    return time.perf_counter() - start, load, result


def label_rows(tmp: Path, args: argparse.Namespace) -> tuple[list[Row], Path]:
    """Label the pool under each configuration; return (name, positions, seconds) rows."""
    warm = Workspace(tmp / "warm")  # the bench signature of a native build, measured once
    engine = EngineConfig()
    if engine.engine_build.has_bench:
        bench_signature(engine.file, engine_sha256(engine), warm)
    bench: Path | None = warm.root / "cache" / "bench"
    if bench is not None and not bench.is_dir():
        bench = None
    rows, published = [], []
    for name, workers, on_ray in CONFIGS:
        ws = workspace(tmp / f"label-{len(rows)}", args.puzzles, args.games, bench)
        config = LabelConfig(engine=EngineConfig(nodes=args.nodes), workers=workers)
        pool = RayExecutor() if on_ray else None
        seconds, load, result = timed(lambda ws=ws, c=config, p=pool: run_label_stage(
            ws, c, OPEN, executor=p))
        rows.append((name, result["run"]["searches"] // 2, seconds, load))
        published.append(files(ws.stage))
    if any(p != published[0] for p in published):
        raise SystemExit("the label stages differ: a rate of a wrong result is no rate")
    return rows, ws.stage


def evaluator_rows(tmp: Path, stage: Path, depth: int) -> list[Row]:
    """Evaluate one random-mover run over the stage's positions under each configuration."""
    manifest, lists = read_stage(stage)
    source = tmp / "positions.jsonl"
    source.write_text("".join(json.dumps({"fen": lists[key].fen, "id": f"c{i}"}) + "\n"
                              for i, (key, _) in enumerate(manifest.entries)))
    run_dir = create_run(tmp / "out", fen_schedule(source), {"name": "reference:random"})
    execute_run(run_dir, RandomMover(), validator=validate_move)
    config = EvaluatorConfig(depth=depth)
    rows, published = [], []
    for name, workers, on_ray in CONFIGS:
        out = tmp / f"eval-{len(rows)}"
        options = StageOptions(cache=out / "cache", out=out / "out", workers=workers)
        pool = RayExecutor() if on_ray else None
        seconds, load, _ = timed(lambda o=options, p=pool: evaluate_run(
            run_dir, stage, config, o, OPEN, executor=p))
        rows.append((name, len(manifest.entries), seconds, load))
        published.append(files(out / "out"))
    if any(p != published[0] for p in published):
        raise SystemExit("the evaluations differ: a rate of a wrong result is no rate")
    return rows


def show(title: str, rows: list[Row]) -> None:
    """Print positions per second side by side, with the ratio to one local worker (ideal for
    two workers: 2.00 on two free cores) and the host's load when each row started."""
    print(f"\n{title}")
    print(f"{'executor':<18}{'positions':>10}{'seconds':>10}{'pos/s':>10}{'× 1 local':>11}"
          f"{'load 1m':>9}")
    base = rows[0][1] / rows[0][2]
    for name, positions, seconds, load in rows:
        rate = positions / seconds
        print(f"{name:<18}{positions:>10}{seconds:>10.2f}{rate:>10.2f}{rate / base:>11.2f}"
              f"{load:>9.1f}")


def main() -> None:
    """Run both stages under the three executors and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--puzzles", type=int, default=8)
    parser.add_argument("--games", type=int, default=2)
    parser.add_argument("--nodes", type=int, default=20_000)
    parser.add_argument("--depth", type=int, default=8)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="rungbench-ray-bench-"))
    try:
        start = time.perf_counter()
        with ray_session(num_cpus=2):
            print(f"Ray local cluster start-up: {time.perf_counter() - start:.1f} s "
                  "(not in the rates below)")
            rows, stage = label_rows(tmp, args)
            show(f"label stage, {args.nodes:,} nodes, MultiPV 10, two passes "
                 "(published stages byte-identical)", rows)
            show(f"evaluator (Ethereal), depth {args.depth}, every legal successor "
                 "(published evaluations byte-identical)", evaluator_rows(tmp, stage, args.depth))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
