"""Seed 003 pilot volume through the real runner, loopback server and openai client.

60 dev worlds × 5 items × 3 arms (A0, A2, A9) × 2 samples = 1,800 cells, answered by the
planted reader agent over HTTP on 127.0.0.1; A2's cells are multi-turn (causal() calls).
Prints calls per second (cells and HTTP requests) and the token accounting beside the
seed's planning estimate (2k tokens per call, ~3.6M for the pilot).

Run: .venv/bin/python benchmarks/causal_ablations.py [--concurrency 2]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from rungbench.causal.ablations.analysis import ablation_report
from rungbench.causal.ablations.arms import load_matrix
from rungbench.causal.ablations.planted import planted_agent
from rungbench.causal.ablations.runs import run_arms
from rungbench.causal.bench.build import build_split
from rungbench.execute.events import read_events

SEED_CALLS = 1800
SEED_TOKENS_PER_CALL = 2000


def main() -> None:
    """Build the dev split, run the pilot volume, print throughput and tokens."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--worlds", type=int, default=60)
    args = parser.parse_args()
    from rungbench.agents.providers import serve_on_loopback

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        start = time.perf_counter()
        build_split("dev", args.worlds, 2026, root / "dev")
        print(f"built {args.worlds} dev worlds in {time.perf_counter() - start:.1f}s")
        matrix = load_matrix()
        with serve_on_loopback(planted_agent("reader")) as provider:
            start = time.perf_counter()
            runs = run_arms(matrix, ["A0", "A2", "A9"], root / "dev", root / "runs", provider,
                            samples=2, per_world=5, concurrency=args.concurrency)
            elapsed = time.perf_counter() - start
        http = sum(e["turns"] for r in runs for e in read_events(r.run_dir / "events.jsonl")
                   if e["kind"] == "tool_event")
        cells = sum(len(r.rows) for r in runs)
        tokens_in = sum(r.summary.tokens_in for r in runs)
        tokens_out = sum(r.summary.tokens_out for r in runs)
        tool_calls = sum(row["tool_calls"] for r in runs for row in r.rows)
        print(f"cells {cells} (seed pilot volume {SEED_CALLS}; ratio {cells / SEED_CALLS:.2f})")
        print(f"chat turns {http} (multi-turn A2 adds {http - cells}); "
              f"causal() tool calls {tool_calls}")
        print(f"elapsed {elapsed:.1f}s: {cells / elapsed:.1f} cells/s, {http / elapsed:.1f} "
              f"turns/s at concurrency {args.concurrency}")
        total = tokens_in + tokens_out
        print(f"tokens in {tokens_in:,} out {tokens_out:,} total {total:,}; per cell "
              f"{total / cells:.0f} vs seed estimate {SEED_TOKENS_PER_CALL} "
              f"(ratio {total / cells / SEED_TOKENS_PER_CALL:.2f}); seed pilot estimate "
              f"~3.6M vs measured {total / 1e6:.2f}M (loopback counts bytes/4)")
        for r in runs:
            t = r.summary.tokens_in + r.summary.tokens_out
            print(f"  {r.arm}: {len(r.rows)} cells, {t:,} tokens ({t / len(r.rows):.0f}/cell), "
                  f"{r.summary.cells_per_s:.1f} cells/s")
        report = ablation_report(matrix, {r.arm: r.rows for r in runs})
        for q in report["isolation"]:
            mean = "—" if q["mean"] is None else f"{q['mean']:.3f}"
            print(f"  {q['a']} − {q['b']}: {mean} {q['ci95']} {q['verdict']}")


if __name__ == "__main__":
    main()
