"""Demo stage: the A105 and E023 audits on the bundled puzzles (``detail``: the reports)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rungbench.chess.studies.audits import AUDITS, audit_design
from rungbench.demo import StageResult
from rungbench.evidence.canonical import canonical_bytes


def run(workdir: Path) -> StageResult:
    """Run both audits, write each report as canonical JSON; fail on a failed check."""
    out = workdir / "design"
    out.mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {}
    reports = []
    for name in AUDITS:
        report = audit_design(name)
        reports.append(report)
        (out / f"{name}_audit.json").write_bytes(canonical_bytes(report.to_json()))
        figures = {f.key: {"ours": f.ours, "seed": f.seed} for f in report.figures}
        summary[name] = {"ok": report.ok, "digest": report.digest, "failed": report.failed(),
                         "checks": len(report.checks), "figures": figures,
                         "report": str(out / f"{name}_audit.json")}
        if not report.ok:
            failure = f"{name} audit failed: {', '.join(report.failed())}"
            return StageResult(summary, reports, failure)
    return StageResult(summary, reports)
