"""Seed 002 class counts on the bundled puzzles, side by side with SOURCES.md's measured table.

SOURCES.md ("Measured on the puzzles with the seed-002 label rules") reports, for Stockfish
15.1, Threads 1, Hash 256, MultiPV 10, 50,000 nodes, cleared hash, two passes:

* first 40 puzzles after the setup move: 37 tactical, 0 ambiguous, 0 quiet, 2 unclassified,
  1 under 10 legal moves;
* first 60 puzzles before the setup move: 15 tactical, 21 ambiguous, 3 quiet, 8 unclassified,
  13 under 10 legal moves; passes A and B agreed on every position.

This script recomputes both rows with this package's engine contract and rules, on Debian's
15.1 by default (the reference's engine); ``--build stockfish-18-wasm`` counts Stockfish 18's.
Usage: .venv/bin/python benchmarks/label_classes.py [--nodes 50000] [--build stockfish-15-debian]
"""

from __future__ import annotations

import argparse
import csv
import time
from collections import Counter

import chess
from rungbench.chess.engine import EngineConfig, lines_json, search, start_uci
from rungbench.chess.labels.label import pass_view
from rungbench.chess.labels.pool import bundled_data_dir
from rungbench.chess.labels.stability import CLASSES, classify, stability_reasons

REFERENCE = {
    "after setup move (40)": {"tactical": 37, "ambiguous": 0, "quiet": 0, "unclassified": 2,
                              "under_10": 1, "unstable": 0},
    "before setup move (60)": {"tactical": 15, "ambiguous": 21, "quiet": 3, "unclassified": 8,
                               "under_10": 13, "unstable": 0},
}


def puzzle_boards(count: int, *, after_setup: bool) -> list[chess.Board]:
    """Return the first ``count`` puzzle boards, before or after the setup move."""
    path = bundled_data_dir() / "lichess_puzzles" / "puzzles.csv"
    boards = []
    with path.open(newline="") as fh:
        for row in list(csv.DictReader(fh))[:count]:
            board = chess.Board(row["FEN"])
            if after_setup:
                board.push_uci(row["Moves"].split()[0])
            boards.append(board)
    return boards


def count_classes(engine: chess.engine.SimpleEngine, boards: list[chess.Board],
                  config: EngineConfig) -> Counter[str]:
    """Label each board with two cleared-hash passes and count the outcomes."""
    counts: Counter[str] = Counter()
    for board in boards:
        if board.legal_moves.count() < 10:
            counts["under_10"] += 1
            continue
        a = pass_view(lines_json(board, search(engine, board, config)))
        b = pass_view(lines_json(board, search(engine, board, config)))
        counts["unstable" if stability_reasons(a, b) else classify(a)] += 1
    return counts


def main() -> None:
    """Recompute and print both rows next to the reference."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=50_000)
    parser.add_argument("--build", default="stockfish-15-debian",
                        help="Engine build (the reference was measured on stockfish-15-debian).")
    args = parser.parse_args()
    config = EngineConfig(build=args.build, nodes=args.nodes)
    engine = start_uci(config)
    start = time.perf_counter()
    rows = {
        "after setup move (40)": count_classes(engine, puzzle_boards(40, after_setup=True), config),
        "before setup move (60)": count_classes(engine, puzzle_boards(60, after_setup=False),
                                                config),
    }
    engine.quit()
    columns = (*CLASSES, "under_10", "unstable")
    print(f"seed 002 classes, {args.build}, at {args.nodes} nodes "
          f"({time.perf_counter() - start:.1f} s); measured / SOURCES.md reference")
    print(f"  {'positions':<24}" + "".join(f"{c:>15}" for c in columns))
    for name, counts in rows.items():
        cells = "".join(f"{counts[c]:>8} / {REFERENCE[name][c]:<4}" for c in columns)
        print(f"  {name:<24}{cells}")


if __name__ == "__main__":
    main()
