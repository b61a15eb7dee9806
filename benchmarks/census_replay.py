"""Replay benchmark for the A104 census (seed 000): at least 27,218 attempts, A104's size.

Generates a native corpus with the game harness (scripted agent against a seeded
random mover), then times the full census: freeze check of every file digest,
record parsing, byte-range and response checks, dispatcher replay, state
reconstruction, chronology reconciliation and counting. Prints measured figures
beside A104's reference counts.

    .venv/bin/python benchmarks/census_replay.py [--attempts 27218] [--seed 0]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from rungbench.chess.transcripts.census import census_path
from rungbench.chess.transcripts.corpus import load_corpus
from rungbench.chess.transcripts.dispatch import version
from rungbench.chess.transcripts.harness import (
    REFERENCE_SCRIPT,
    HarnessConfig,
    RandomOpponent,
    ScriptedAgent,
    play_corpus,
)

A104 = {"eligible_attempts": 27218, "same_position_transitions": 13715, "position_chains": 13503,
        "source_games": 220, "run_groups": 22}
"""Frozen A104 quantities (seed 000, first table)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--attempts", type=int, default=A104["eligible_attempts"])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    per_game = 100  # about 2.5 attempts per agent turn, 40 agent turns per 80-ply game
    games = args.attempts // per_game + 1
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "corpus"
        cfg = HarnessConfig(dispatcher=version("llmchess-2025-08"), max_plies=80)
        while True:
            start = time.perf_counter()
            play_corpus(folder, ScriptedAgent(REFERENCE_SCRIPT, seed=args.seed),
                        RandomOpponent(args.seed), cfg, games=games)
            generate = time.perf_counter() - start
            n = len(load_corpus(folder).attempts)
            if n >= args.attempts:
                break
            games = int(games * args.attempts / max(n, 1)) + 1
        start = time.perf_counter()
        doc = census_path(folder)
        elapsed = time.perf_counter() - start
    counts = doc["counts"]
    print(f"generated {n} attempts in {games} games in {generate:.1f} s")
    print(f"{'quantity':<28}{'measured':>12}{'A104':>12}")
    for key, ref in A104.items():
        print(f"{key:<28}{counts[key]:>12}{ref:>12}")
    print(f"census wall time {elapsed:.2f} s; {n / elapsed:,.0f} attempts per second "
          "(verify + replay + count, one process)")
    for row in doc["transition_table"]:
        print(f"  {row['prior']:<20} {row['accepted']:>6}/{row['transitions']:<6}")


if __name__ == "__main__":
    main()
