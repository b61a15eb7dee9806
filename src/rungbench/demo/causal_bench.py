"""Demo stage: build a small dev split, evaluate the oracle and the rung-1 agent, report.

The bench and both scored runs are sealed directories: built once, then verified
(:func:`~rungbench.causal.bench.verified.open_bench`, :func:`~rungbench.causal.bench.
verified.open_run`) and reused on a later run. The two run reports (accuracy per rung
with cluster intervals, the identification table, failure labels) go to the HTML report.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from rungbench.causal.bench.audit import audit_bench
from rungbench.causal.bench.build import build_split
from rungbench.causal.bench.evaluate import evaluate
from rungbench.causal.bench.leaks import scan_bench
from rungbench.causal.bench.report import build_report
from rungbench.causal.bench.verified import PUBLIC_MANIFEST, bench_cases, open_bench, open_run
from rungbench.demo import StageResult

WORLDS = 26
"""Dev worlds of the demo bench."""
SEED = 20261003
"""Seed of the demo bench."""
AGENTS = {"reference:oracle": "run_oracle", "reference:rung1": "run_rung1"}
"""Reference agent → its run folder under ``<workdir>/causal``."""


def _bench(bench: Path) -> tuple[dict[str, Any], bool]:
    if bench.exists():
        # Generated worlds, as the build counted them: a twin is a public world of its own
        # but belongs to its parent's (causal.bench.variants).
        verified = open_bench(bench)
        manifest = verified.json(PUBLIC_MANIFEST)
        return {"n_worlds": int(manifest["n_worlds"]), "n_cases": len(bench_cases(verified)),
                "leak_scan_ok": scan_bench(bench).ok}, True
    built = build_split("dev", WORLDS, SEED, bench, twins=True)
    return {"n_worlds": built["n_worlds"], "n_cases": built["n_cases"],
            "leak_scan_ok": built["leak_scan"]["ok"]}, False


def _run(bench: Path, agent: str, run: Path) -> tuple[dict[str, Any], bool]:
    if run.exists():
        sealed = open_run(run)
        summary: dict[str, Any] = json.loads(sealed.read("summary.json"))
        return summary, True
    return evaluate(bench, agent, run), False


def report_document(run: Path, agent: str) -> dict[str, Any]:
    """The run report as the HTML report stores it (the run named by agent, not by path)."""
    report = build_report(run)
    report["run"] = agent
    return report


def run(workdir: Path) -> StageResult:
    """Build (or verify) 26 dev worlds, score two reference agents, compare, audit."""
    start = time.perf_counter()
    root = workdir / "causal"
    bench = root / "bench"
    built, bench_reused = _bench(bench)
    summaries, reused = {}, {"bench": bench_reused}
    for agent, folder in AGENTS.items():
        summaries[agent], reused[agent] = _run(bench, agent, root / folder)
    paired = build_report(root / AGENTS["reference:rung1"], root / AGENTS["reference:oracle"])
    audits = audit_bench(bench)
    rung1 = summaries["reference:rung1"]
    summary = {
        "worlds": built["n_worlds"], "cases": built["n_cases"],
        "leak_scan_ok": built["leak_scan_ok"],
        "oracle_accuracy": accuracy(summaries["reference:oracle"]),
        "rung1_accuracy": accuracy(rung1),
        "rung1_signature": rung1.get("signature"),
        "rung1_minus_oracle": paired["paired"]["delta"],
        "listing_order_after": audits["listing_order"]["after"]["rate"],
        "skin_pairs_mismatched": audits["skin_structure"]["mismatched"],
        "reused": reused,
        "seconds": round(time.perf_counter() - start, 2),
    }
    documents = {f"causal:{agent}": report_document(root / folder, agent)
                 for agent, folder in AGENTS.items()}
    return StageResult(summary, report=documents)


def accuracy(summary: dict[str, Any]) -> float:
    """Share of right outcomes in an evaluation summary."""
    o = summary["outcomes"]
    return float((o["correct"] + o["correct_non_id"]) / summary["n"])
