"""`rungbench design keys`: the preset key tables, generated from the schemas the code parses
(docs/presets.md cannot drift from them)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from rungbench.cli import app

DOC = Path(__file__).resolve().parents[2] / "docs" / "presets.md"


def test_docs_presets_is_the_generated_table() -> None:
    """docs/presets.md is byte for byte what `design keys --markdown` prints."""
    result = CliRunner().invoke(app, ["design", "keys", "--markdown"])
    assert result.exit_code == 0, result.output
    assert DOC.read_text(encoding="utf-8") == result.stdout


def test_a_preset_name_lists_its_kinds_keys_with_allowed_values() -> None:
    """`design keys e020_e021 --json` lists the ladder's keys: the interval method with its
    allowed values, what it drives, and nothing of another kind."""
    result = CliRunner().invoke(app, ["design", "keys", "e020_e021", "--json"])
    assert result.exit_code == 0, result.output
    found = json.loads(result.stdout)
    assert list(found) == ["intervention_ladder"]
    rows = {r["key"]: r for r in found["intervention_ladder"]}
    assert rows["analysis.interval"]["allowed"] == "'wilson', 'clopper_pearson'"
    assert rows["analysis.interval"]["drives"] == "analysis"
    assert rows["schedule.max_retries"]["drives"] == "retry"
    assert "factors.names" not in rows and "design.lower_is_better" not in rows


def test_an_unknown_kind_is_one_line_naming_the_known_ones() -> None:
    """A kind that is neither a kind nor a preset: exit 1, the known kinds listed."""
    result = CliRunner().invoke(app, ["design", "keys", "e999"])
    assert result.exit_code == 1
    assert "intervention_ladder" in result.output and "Traceback" not in result.output
