"""Demo stage: import CLadder's bundled test set and re-grade every stored quantity exactly.

The stage fails unless the counts measured in data/SOURCES.md reproduce: 396 models, 4,164
questions, 578 stored quantities that disagree with the exact oracle.
"""

from __future__ import annotations

from pathlib import Path

from rungbench.causal.interop.cladder import load_cladder, regrade
from rungbench.demo import StageResult
from rungbench.evidence.paths import shared_data_dir

EXPECTED = {"models": 396, "questions": 4164, "quantities_wrong": 578}
"""What data/SOURCES.md records for CLadder's in-repo test set."""


def run(workdir: Path) -> StageResult:
    """Load, re-grade, and compare the counts to the recorded ones."""
    del workdir  # reads the bundled data only
    data = load_cladder(shared_data_dir() / "cladder")
    counts = regrade(data).counts()
    models = len(data.models)
    ours = {"models": models, "questions": counts["questions"],
            "quantities_wrong": counts["quantities_wrong"]}
    failure = None if ours == EXPECTED else f"CLadder counts {ours} differ from {EXPECTED}"
    return StageResult({**counts, "models": models, "expected": EXPECTED}, None, failure)
