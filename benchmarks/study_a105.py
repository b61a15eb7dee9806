"""Full A105 study run against the loopback OpenAI server: cells per second.

Freezes the registered 600-position manifest from a published label stage (``--stage``),
binds A105 (150 development + 150 held-out positions × 4 conditions × 2 panel orders ×
2 models = 4,800 cells), authorizes the budget and runs both models — planted
board-limited "luna" on route loop-a, planted complementary "deepseek-v4-flash" on
route loop-b — through the real ``openai`` client at concurrency 16, once with zero
and once with 50 ms server latency. Prints cells/s beside the ideal ceiling
(concurrency / latency) and checks one schema and one action universe across arms.

    .venv/bin/python benchmarks/study_a105.py --stage /tmp/ws/label-stage
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from rungbench.agents.openai_provider import Pricing
from rungbench.chess.studies import budget as bud
from rungbench.chess.studies import study as st
from rungbench.chess.studies.bindings import load_binding
from rungbench.chess.studies.ladder import final_calls, schedule_for
from rungbench.chess.studies.manifest import load_manifest
from rungbench.chess.studies.planted import loopback_provider, planted_agent

ROUTES = {"luna": ("loop-a", "a105:board_limited"),
          "deepseek-v4-flash": ("loop-b", "a105:complementary")}


def one(stage: Path, latency: float, concurrency: int, root: Path) -> dict[str, object]:
    """Freeze, bind, authorize and run all 4,800 cells at one server latency."""
    st.freeze(root, stage)
    bound = st.bind(root, "a105", stage)
    auth = bud.freeze_authorization(root, bud.Authorization(
        4_800, 10**9, 1_000.0, tuple(ROUTES), tuple(r for r, _ in ROUTES.values()),
        "benchmark"))
    manifest = load_manifest(root / "manifest")
    binding = load_binding(root, bound["binding"], manifest)
    cells, elapsed = 0, 0.0
    rates: dict[tuple[str, str], list[int]] = defaultdict(list)
    schemas, universes = set(), defaultdict(set)
    for model, (route, agent) in ROUTES.items():
        schedule = schedule_for(binding, manifest, model, route)
        with loopback_provider(planted_agent(agent), [c.request for c in schedule], model=model,
                               delay_s=latency, pricing=Pricing(0.1, 0.4)) as provider:
            t0 = time.perf_counter()
            result = st.run_study(root, stage, bound["binding"], model=model, route=route,
                                  agent=provider, authorization=auth, concurrency=concurrency,
                                  chunk_cap=4_800)
            elapsed += time.perf_counter() - t0
        assert result["complete"], result
        cells += int(str(result["final"]))
        for meta, _, args in final_calls(Path(str(result["run"]))):
            schemas.add(meta["schema_digest"])
            universes[meta["key"]].add(meta["universe_digest"])
            rates[(model, meta["condition"])].append(
                int(args is not None and args.get("move") in meta["best_moves"]))
    return {"cells": cells, "seconds": elapsed, "cells_per_s": cells / elapsed,
            "schemas": len(schemas),
            "universe_mismatches": sum(len(v) != 1 for v in universes.values()),
            "rates": {f"{m}/{c}": round(sum(v) / len(v), 3) for (m, c), v in rates.items()},
            "spend": bud.total_spend(root / "runs", auth).to_json()}


def main() -> None:
    """Run the benchmark at 0 and 50 ms latency and print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--stage", type=Path, required=True)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    for latency in (0.0, 0.05):
        root = Path(tempfile.mkdtemp(prefix="rungbench-a105-bench-")) / "study"
        try:
            r = one(args.stage, latency, args.concurrency, root)
        finally:
            shutil.rmtree(root.parent, ignore_errors=True)
        ideal = args.concurrency / latency if latency else float("inf")
        print(f"latency {latency * 1000:.0f} ms, concurrency {args.concurrency}: "
              f"{r['cells']} cells in {r['seconds']:.1f} s = {r['cells_per_s']:.1f} cells/s "
              f"(ideal ceiling {ideal:.0f} cells/s, ratio "
              f"{r['cells_per_s'] / ideal if latency else float('nan'):.2f}); "  # type: ignore[operator]
              f"schemas {r['schemas']}, universe mismatches {r['universe_mismatches']}, "
              f"spend {r['spend']}")
        print("  best-move rate by model/condition:", r["rates"])


if __name__ == "__main__":
    main()
