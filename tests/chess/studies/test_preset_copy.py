"""Tests for rungbench.chess.studies.preset_copy and ``rungbench design new``: a bundled preset
copied for one's own models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rungbench.chess.studies.preset_copy import for_models
from rungbench.cli import app
from rungbench.design.presets import factorial_design
from rungbench.design.registry import bundled_text, load_design, load_design_file, parse_design
from rungbench.errors import InputError


def test_a105_for_one_model_rescales_what_follows_from_the_models() -> None:
    """demo_a105 (2 models, 384 cells, 4 Holm tests) for one label: 192 cells, the label's
    board and legal-list tests, a family of 2; nothing else changes."""
    text = bundled_text("demo_a105")
    copy = for_models(text, ["my-model"], source="demo_a105")
    reg = parse_design(copy, name="mine", source="mine.toml")
    schedule, analysis = reg.section("schedule"), reg.section("analysis")
    assert schedule["models"] == ["my-model"] and schedule["planned_cells"] == 192
    assert analysis["primary_tests"] == ["my-model:board", "my-model:legal_list"]
    assert analysis["family_size"] == 2
    changed = [a for a, b in zip(text.splitlines(), copy.splitlines(), strict=True) if a != b]
    assert len(changed) == 4
    assert factorial_design(reg).models == ("my-model",)


def test_the_ladder_for_three_models_scales_its_cell_total() -> None:
    """demo_e020_e021's [cells] total (2 models) is scaled to three labels."""
    original = load_design("demo_e020_e021").section("cells")["total"]
    copy = for_models(bundled_text("demo_e020_e021"), ["a", "b", "c"], source="x")
    reg = parse_design(copy, name="x", source="x.toml")
    assert reg.section("cells")["total"] == original * 3 // 2
    assert reg.section("schedule")["models"] == ["a", "b", "c"]


@pytest.mark.parametrize(("preset", "labels", "field"), [
    ("demo_e023", ["m"], "schedule.models"),
    ("demo_a105", [], "model"),
    ("demo_a105", ["a", "a"], "model"),
    ("demo_a105", ["bad:label"], "label"),
])
def test_a_copy_that_cannot_be_made_is_refused(preset: str, labels: list[str], field: str
                                              ) -> None:
    """A preset without models, no label, a repeated or an invalid label: refused naming
    the field."""
    with pytest.raises(InputError) as caught:
        for_models(bundled_text(preset), labels, source=preset)
    assert caught.value.field == field


def test_design_new_writes_the_copy_and_refuses_to_overwrite(tmp_path: Path) -> None:
    """`design new demo_a105 --out F --model L` writes a preset that reads back with the
    label; a second write without --force exits 1 and leaves the file as it was."""
    out = tmp_path / "mine.toml"
    first = CliRunner().invoke(app, ["design", "new", "demo_a105", "--out", str(out),
                                     "--model", "my-model", "--json"])
    assert first.exit_code == 0, first.output
    doc = json.loads(first.stdout)
    assert doc["models"] == ["my-model"] and doc["digest"] == load_design_file(out).digest
    before = out.read_bytes()
    again = CliRunner().invoke(app, ["design", "new", "demo_e023", "--out", str(out)])
    assert again.exit_code == 1 and "--force" in again.stderr and out.read_bytes() == before
    plain = CliRunner().invoke(app, ["design", "new", "demo_e023", "--out", str(out),
                                     "--force"])
    assert plain.exit_code == 0 and out.read_text() == bundled_text("demo_e023")
    unknown = CliRunner().invoke(app, ["design", "new", "nope", "--out", str(tmp_path / "n.toml")])
    assert unknown.exit_code == 1 and "unknown design 'nope'" in unknown.stderr
