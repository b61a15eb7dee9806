"""How much the labelling engine matters: the demo's bundled pool labelled by both builds.

The pool is the demo's (src/rungbench/demo/labels.py: the first 80 bundled puzzles plus
every third ply from move 8 of the first 30 bundled games), labelled with the same contract
(two cleared-hash passes, MultiPV 10, Threads 1, Hash 256 MB, ``--nodes`` per search) by
``stockfish-18-wasm`` (seed 002's Stockfish 18) and by ``stockfish-15-debian`` (Debian's
15.1). Per position, four decisions are compared:

* pass A rank 1 — the same top move;
* best set — pass A's rank 1 and every line tied with it in WDL expectation (the rule of
  ``best_set`` in src/rungbench/chess/studies/ladder.py), as a set;
* class — pass A's class under the seed's rules (src/rungbench/chess/labels/stability.py);
* exclusion — both published a label, or both excluded the position.

Printed: agreement counts of each, the class cross-table (rows 15.1, columns 18), the
exclusion 2×2, and each engine's labels and exclusions.

Usage: .venv/bin/python benchmarks/engine_agreement.py [--nodes 50000] [--workers 2]
       [--out per_position.csv]
"""

from __future__ import annotations

import argparse
import csv
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from rungbench.chess.engine import EngineConfig
from rungbench.chess.engine_builds import FALLBACK_BUILD, REGISTERED_BUILD
from rungbench.chess.labels.cohort import freeze_cohort
from rungbench.chess.labels.config import LabelConfig
from rungbench.chess.labels.idle import IdleGate
from rungbench.chess.labels.label import run_label_stage
from rungbench.chess.labels.pool import (
    PlySampling,
    PoolConfig,
    PoolSource,
    bundled_data_dir,
    freeze_pool,
    load_pool,
)
from rungbench.chess.labels.qualify import qualify
from rungbench.chess.labels.stability import CLASSES, expectation_units
from rungbench.chess.workspace import Workspace
from rungbench.demo.labels import GAMES, PILOT, PUZZLES, REPLICATION
from rungbench.evidence.canonical import loads_canonical

BUILDS = (FALLBACK_BUILD, REGISTERED_BUILD)
"""The two engines compared (rows, then columns)."""


def demo_pool_workspace(root: Path) -> Workspace:
    """Freeze the demo's pool and both terminal cohorts in ``root`` and qualify it."""
    data = bundled_data_dir()
    ws = Workspace(root)
    games = data / "kaggle_chess_positions" / "filtered_chess_positions.jsonl"
    freeze_pool(ws, [PoolSource("lichess_puzzles", data / "lichess_puzzles" / "puzzles.csv",
                                PUZZLES),
                     PoolSource("pgn_plies", games, GAMES,
                                sampling=PlySampling(from_move=8, stride=3))],
                PoolConfig(reserve=0))
    llm = data / "llm_chess"
    freeze_cohort(ws, "pilot", sorted((llm / PILOT).glob("2025*.json")), terminal=True)
    freeze_cohort(ws, "replication", [llm / REPLICATION / "output.txt"], terminal=True)
    qualify(ws)
    return ws


def best_set(lines: list[dict[str, Any]]) -> frozenset[str]:
    """Pass A's rank 1 and every line tied with it in WDL expectation."""
    top = expectation_units(*lines[0]["wdl"])
    return frozenset(line["uci"] for line in lines if expectation_units(*line["wdl"]) == top)


def decisions(ws: Workspace) -> dict[str, dict[str, Any]]:
    """Per position key: pass A rank 1, best set, pass A class, excluded, published label."""
    rows = loads_canonical((ws.stage / "labels.json").read_bytes())
    out = {}
    for row in rows:
        lines = ws.store.get_json(row["records"]["A"])["payload"]["lines"]
        out[row["key"]] = {"rank1": lines[0]["uci"], "best": best_set(lines),
                           "class": row["classes"][0], "excluded": row["excluded"],
                           "label": row["label"], "reasons": row["reasons"]}
    return out


def label(build: str, args: argparse.Namespace, base: Path) -> tuple[dict[str, Any], float,
                                                                     dict[str, Any]]:
    """Label the demo pool with ``build``; return (decisions, wall seconds, summary)."""
    ws = demo_pool_workspace(base / build)
    config = LabelConfig(engine=EngineConfig(build=build, nodes=args.nodes),
                         workers=args.workers)
    start = time.perf_counter()
    summary = run_label_stage(ws, config, IdleGate(max_load=1e9))
    return decisions(ws), time.perf_counter() - start, summary


def main() -> None:
    """Label the pool with both engines and print the agreement tables."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--nodes", type=int, default=50_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None, help="Per-position CSV.")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="rungbench-engine-agreement-"))
    runs = {build: label(build, args, base) for build in BUILDS}
    old, new = (runs[b][0] for b in BUILDS)
    keys = [p.key for p in load_pool(base / BUILDS[0] / "pool.json").positions]
    print(f"engine agreement: {len(keys)} positions of the demo pool, two passes each, "
          f"{args.nodes} nodes, MultiPV 10, Threads 1, Hash 256 MB, {args.workers} workers")
    for build in BUILDS:
        _, wall, summary = runs[build]
        name = summary["flow_report"]["engine"]["name"]
        exclusions = {k: v for k, v in summary["exclusions"].items() if v}
        print(f"  {build} ({name}): {summary['labelled']} labelled {summary['labels']}, "
              f"{summary['excluded']} excluded {exclusions}; wall {wall:.1f} s")
    print(f"  {'decision':<26}{'agree':>7}{'disagree':>10}{'share':>8}")
    for what, same in (
            ("pass A rank 1", lambda k: old[k]["rank1"] == new[k]["rank1"]),
            ("best set (ties with rank 1)", lambda k: old[k]["best"] == new[k]["best"]),
            ("class (pass A)", lambda k: old[k]["class"] == new[k]["class"]),
            ("exclusion decision", lambda k: old[k]["excluded"] == new[k]["excluded"])):
        agree = sum(bool(same(k)) for k in keys)
        print(f"  {what:<26}{agree:>7}{len(keys) - agree:>10}{agree / len(keys):>8.3f}")
    both = [k for k in keys if not old[k]["excluded"] and not new[k]["excluded"]]
    same_label = sum(old[k]["label"] == new[k]["label"] for k in both)
    print(f"  published class, both labelled: {same_label}/{len(both)} agree")
    cross = Counter((old[k]["class"], new[k]["class"]) for k in keys)
    print(f"  class cross-table, pass A (rows {BUILDS[0]}, columns {BUILDS[1]}):")
    print("  " + " " * 14 + "".join(f"{c:>14}" for c in CLASSES))
    for row in CLASSES:
        print(f"  {row:<14}" + "".join(f"{cross[(row, col)]:>14}" for col in CLASSES))
    excl = Counter((old[k]["excluded"], new[k]["excluded"]) for k in keys)
    print(f"  exclusion 2×2 ({BUILDS[0]} / {BUILDS[1]}): labelled/labelled "
          f"{excl[(False, False)]}, labelled/excluded {excl[(False, True)]}, "
          f"excluded/labelled {excl[(True, False)]}, excluded/excluded {excl[(True, True)]}")
    if args.out is not None:
        with args.out.open("w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(["key", *(f"{b}:{f}" for b in BUILDS
                                      for f in ("rank1", "best", "class", "excluded"))])
            for k in keys:
                writer.writerow([k, *(v for d in (old[k], new[k]) for v in (
                    d["rank1"], " ".join(sorted(d["best"])), d["class"], d["excluded"]))])
        print(f"  per-position table: {args.out}")


if __name__ == "__main__":
    main()
