"""Replay benchmark for the A104 census (seed 000) on the whole real LLM Chess corpus.

Times the full census of the frozen bundled corpus (``data/llm_chess``): the
freeze check of every run file's sha256, program-version detection, the replay
of every game with byte-exact regeneration of each dispatcher reply, game-level
eligibility, verification of every eligible attempt (byte ranges, verdicts,
positions, chronology) and counting. Each repetition starts with the rendering
and FEN memos cleared, so every repetition is a cold census. Prints attempts per
second beside the target (10,000) and the earlier synthetic-corpus range
(6,600-9,500), and the corpus figures beside A104's reference counts.
``census_path`` pauses the cyclic garbage collector while it works; the collection
deferred to its end (the first allocation after it) falls inside the timing.

``--synthetic N`` instead times a native corpus of at least N attempts played by
the game harness (scripted agent against a seeded random mover), as before.

    .venv/bin/python benchmarks/census_replay.py [--repeat 20] [--synthetic 27218]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from rungbench.chess.transcripts.census import census_path
from rungbench.chess.transcripts.corpus import load_corpus
from rungbench.chess.transcripts.dispatch import clear_render_cache, version
from rungbench.chess.transcripts.harness import (
    REFERENCE_SCRIPT,
    HarnessConfig,
    RandomOpponent,
    ScriptedAgent,
    play_corpus,
)
from rungbench.evidence.paths import shared_data_dir

A104 = {"eligible_attempts": 27218, "same_position_transitions": 13715, "position_chains": 13503,
        "source_games": 220, "run_groups": 22}
"""Frozen A104 quantities (seed 000, first table)."""
TARGET = 10_000
"""Attempts per second the census should reach (issue 15)."""
EARLIER = (6_600, 9_500)
"""Attempts per second measured before, on the synthetic corpus."""


def _attempt_records(doc: dict[str, Any]) -> int:
    """Attempt records verified: eligible ones plus the opponent's and undispatched ones."""
    counts = doc["counts"]
    return int(counts["eligible_attempts"] + sum(counts["excluded_attempts"].values()))


def _time(folder: Path, repeat: int) -> tuple[dict[str, Any], list[float], list[float]]:
    """The census document, wall times and CPU times of ``repeat`` cold censuses."""
    census_path(folder)  # imports and regex compilation out of the timing
    times, cpu, doc = [], [], {}
    for _ in range(repeat):
        clear_render_cache()
        start, start_cpu = time.perf_counter(), time.process_time()
        doc = census_path(folder)
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return doc, times, cpu


def _synthetic(attempts: int, seed: int, folder: Path) -> int:
    per_game = 100  # about 2.5 attempts per agent turn, 40 agent turns per 80-ply game
    games = attempts // per_game + 1
    cfg = HarnessConfig(dispatcher=version("llmchess-2025-08"), max_plies=80)
    while True:
        play_corpus(folder, ScriptedAgent(REFERENCE_SCRIPT, seed=seed), RandomOpponent(seed),
                    cfg, games=games)
        n = len(load_corpus(folder).attempts)
        if n >= attempts:
            return n
        games = int(games * attempts / max(n, 1)) + 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--synthetic", type=int, default=0,
                        help="time a harness corpus of at least this many attempts instead")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.synthetic:
            folder = Path(tmp) / "corpus"
            _synthetic(args.synthetic, args.seed, folder)
            label = f"synthetic harness corpus ({args.synthetic}+ attempts)"
        else:
            folder = shared_data_dir() / "llm_chess"
            label = f"real frozen corpus {folder}"
        doc, times, cpu = _time(folder, max(args.repeat, 1))
    records, eligible = _attempt_records(doc), doc["counts"]["eligible_attempts"]
    best, median = min(times), statistics.median(times)
    print(label)
    print(f"{'quantity':<28}{'measured':>12}{'A104':>12}")
    for key, ref in A104.items():
        print(f"{key:<28}{doc['counts'][key]:>12}{ref:>12}")
    for row in doc.get("runs", []):
        print(f"  run {row['run_group']:<62} games {row.get('eligible_games', '-')}/"
              f"{row.get('games', '-')} eligible, excluded {row.get('excluded_games', {})}, "
              f"attempts {row['eligible_attempts']}, transitions "
              f"{row['same_position_transitions']}")
    for row in doc["transition_table"]:
        print(f"  {row['prior']:<20} {row['accepted']:>6}/{row['transitions']:<6}")
    rate = records / median
    cpu_median = statistics.median(cpu)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"census wall time over {len(times)} cold repetitions: median {median * 1e3:.1f} ms, "
          f"best {best * 1e3:.1f} ms; CPU time median {cpu_median * 1e3:.1f} ms, "
          f"best {min(cpu) * 1e3:.1f} ms")
    print(f"{records} attempt records ({eligible} eligible) -> {rate:,.0f} attempts/s median, "
          f"{records / best:,.0f} best; eligible only {eligible / median:,.0f}/s; per CPU "
          f"second {records / cpu_median:,.0f} median, {records / min(cpu):,.0f} best")
    print(f"target {TARGET:,} attempts/s: best {records / best:,.0f} (ratio "
          f"{records / best / TARGET:.2f}), median {rate:,.0f} (ratio {rate / TARGET:.2f}), "
          f"best per CPU second {records / min(cpu):,.0f} (ratio "
          f"{records / min(cpu) / TARGET:.2f}); to the earlier synthetic "
          f"{EARLIER[0]:,}-{EARLIER[1]:,}: {rate / EARLIER[1]:.2f}-{rate / EARLIER[0]:.2f}")


if __name__ == "__main__":
    main()
