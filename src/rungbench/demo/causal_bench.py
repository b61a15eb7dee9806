"""Demo stage: build a small dev split, evaluate the oracle and the rung-1 agent, report."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from rungbench.causal.bench.audit import audit_bench
from rungbench.causal.bench.build import build_split
from rungbench.causal.bench.evaluate import evaluate
from rungbench.causal.bench.report import build_report
from rungbench.demo import StageResult


def run(workdir: Path) -> StageResult:
    """Build 26 dev worlds, score two reference agents, compare them, audit the bench."""
    start = time.perf_counter()
    bench = workdir / "causal_bench"
    # The demo owns its workdir: re-running it there replaces its own bench and runs.
    built = build_split("dev", 26, 20261003, bench, force=True)
    oracle = evaluate(bench, "reference:oracle", workdir / "run_oracle", force=True)
    rung1 = evaluate(bench, "reference:rung1", workdir / "run_rung1", force=True)
    report = build_report(workdir / "run_rung1", workdir / "run_oracle")
    audits = audit_bench(bench)
    summary = {
        "worlds": built["n_worlds"], "cases": built["n_cases"],
        "leak_scan_ok": built["leak_scan"]["ok"],
        "oracle_accuracy": accuracy(oracle),
        "rung1_accuracy": accuracy(rung1),
        "rung1_signature": rung1.get("signature"),
        "rung1_minus_oracle": report["paired"]["delta"],
        "listing_order_after": audits["listing_order"]["after"]["rate"],
        "skin_pairs_mismatched": audits["skin_structure"]["mismatched"],
        "seconds": round(time.perf_counter() - start, 2),
    }
    return StageResult(summary)


def accuracy(summary: dict[str, Any]) -> float:
    """Share of right outcomes in an evaluation summary."""
    o = summary["outcomes"]
    return float((o["correct"] + o["correct_non_id"]) / summary["n"])
