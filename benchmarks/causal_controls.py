"""Control matrix speed: 8 conditions × 40 cases, against seed 003's 0.5 s reference.

Run: ``.venv/bin/python benchmarks/causal_controls.py``. Prints, per query, the median of
five runs of the eight instrument conditions (C1–C5; both scorers scoring every case,
four logged stages per case) and its ratio to the seed's measured 0.5 s, plus the time
to write the nine condition stores and the 200-case generated set.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from rungbench.causal.instrument.cases import build_world
from rungbench.causal.instrument.controls import condition_graphs, run_tool, write_conditions
from rungbench.causal.instrument.query import fixed, naive
from rungbench.causal.instrument.scorers import lenient, strict

SEED_SECONDS = 0.5


def main() -> None:
    """Time the matrix and print ratios beside the seed's reference."""
    scorers = {"lenient": lenient, "strict": strict}
    for case_set in ("standard", "generated"):
        world = build_world(case_set)
        graphs = condition_graphs(world)
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            stores = write_conditions(graphs, Path(tmp))
            build = time.perf_counter() - start
            print(f"[{case_set}] {len(world.cases)} cases; writing 9 stores: {build:.3f} s")
            for name, tool in (("naive", naive), ("fixed", fixed)):
                times = [run_tool(name, tool, world, graphs, stores, scorers).seconds
                         for _ in range(5)]
                median = statistics.median(times)
                ref = SEED_SECONDS * len(world.cases) / 40
                print(f"  {name:5s}: 8 conditions x {len(world.cases)} cases = "
                      f"{median:.3f} s median of 5 (seed reference {ref:.2f} s; ratio "
                      f"{median / ref:.2f})")


if __name__ == "__main__":
    main()
