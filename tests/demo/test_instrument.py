"""The instrument demo stage (rungbench.demo.instrument): the seed's demonstration table."""

from __future__ import annotations

import json
from pathlib import Path

from rungbench.demo.instrument import SEED_TABLE, run


def test_stage_reproduces_the_seed_demonstration_table(tmp_path: Path) -> None:
    """All twelve numbers of the seed's table reproduce, and the audit is written."""
    result = run(tmp_path)
    assert result.failure is None
    assert {k: tuple(v["ours"]) for k, v in result.summary["table"].items()} == {
        f"{q} x {s}": v for (q, s), v in SEED_TABLE.items()}
    assert json.loads((tmp_path / "causal_controls.json").read_text())["n"] == 40
