"""The stats demo stage (rungbench.demo.stats) on the bundled data."""

from __future__ import annotations

import json
from pathlib import Path

from rungbench.demo.stats import run


def test_stage_returns_seed_figures(tmp_path: Path) -> None:
    """The stage recomputes every seed figure and reports 9/9 matched."""
    summary = run(tmp_path).summary
    assert (summary["matched"], summary["total"], summary["all_match"]) == (9, 9, True)
    json.dumps(summary, allow_nan=False)
