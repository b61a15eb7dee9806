"""Demo stage: the full causal oracle validation (``detail``: the validation report)."""

from __future__ import annotations

import json
from pathlib import Path

from rungbench.causal.checks.validate import run_validation
from rungbench.demo import StageResult


def run(workdir: Path) -> StageResult:
    """Run the validation (≈ 2–3 s) and write it to ``causal_validation.json``."""
    report = run_validation(draws=200_000, seed=3)
    out = workdir / "causal_validation.json"
    out.write_text(json.dumps(report.to_json(), indent=2, sort_keys=True) + "\n")
    failure = None if report.all_pass else "causal validation failed: " + "; ".join(
        report.failures)
    return StageResult({"validation": report.to_json(), "written": str(out)}, report, failure)
