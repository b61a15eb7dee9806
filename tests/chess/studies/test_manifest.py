"""The final study manifest: registered quotas, whole games per partition, fail-closed reads."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tests.chess.studies import study_fixtures as fx  # one label stage per process

from rungbench.chess.studies.manifest import (
    freeze_manifest,
    load_manifest,
    quota_rule,
    quota_table,
    stale_reasons,
)
from rungbench.design.registry import load_design
from rungbench.errors import InputError, IntegrityError, Refusal

small_preset, small_stage = fx.small_preset, fx.small_stage


@pytest.fixture(scope="module")
def stage() -> Path:
    """A small published label stage."""
    return Path(small_stage())


def test_registered_quota_table() -> None:
    """The registered preset asks 600 = 300 / 150 / 150 over 3 classes x 2 colours."""
    rule = quota_rule(load_design("e020_e021"))
    assert rule.positions == 600
    assert {p: q * len(rule.strata) for p, q in rule.quota.items()} == {
        "training": 300, "development": 150, "held_out": 150}


def test_two_freezes_are_byte_identical(stage: Path, tmp_path: Path) -> None:
    """Freezing one stage twice gives the same bytes and the registered counts."""
    a = freeze_manifest(stage, tmp_path / "a", small_preset())
    b = freeze_manifest(stage, tmp_path / "b", small_preset())
    assert a["digest"] == b["digest"]
    assert (tmp_path / "a" / "manifest.json").read_bytes() == \
        (tmp_path / "b" / "manifest.json").read_bytes()
    assert a["counts"] == {"training": 12, "development": 6, "held_out": 6}
    frozen = load_manifest(tmp_path / "a")
    assert frozen.digest == a["digest"]
    games: dict[str, set[str]] = {}
    for p in frozen.positions():
        games.setdefault(p["game"], set()).add(p["partition"])
        assert p["phase"] in ("opening", "middlegame", "endgame")
    assert all(len(parts) == 1 for parts in games.values())
    assert not stale_reasons(frozen, stage)


def test_quota_shortfall_refuses_naming_the_cell(stage: Path, tmp_path: Path) -> None:
    """A cell below its quota refuses with quota_short, the cell and its count."""
    table = {r["cell"]: r for r in quota_table(stage, small_preset())}
    need = table["training/quiet/white"]["available"] + 1
    preset = small_preset({"training": need, "development": 1, "held_out": 1})
    with pytest.raises(Refusal) as err:
        freeze_manifest(stage, tmp_path / "m", preset)
    reasons = {r.subject: r for r in err.value.reasons}
    assert {r.code for r in err.value.reasons} == {"quota_short"}
    assert reasons["training/quiet/white"].data == {"have": need - 1, "quota": need, "short": 1}
    assert not (tmp_path / "m").exists()


def test_existing_manifest_needs_force(stage: Path, tmp_path: Path) -> None:
    """A frozen manifest is never overwritten without force."""
    freeze_manifest(stage, tmp_path / "m", small_preset())
    with pytest.raises(Refusal) as err:
        freeze_manifest(stage, tmp_path / "m", small_preset())
    assert err.value.reasons[0].code == "exists"
    freeze_manifest(stage, tmp_path / "m", small_preset(), force=True)


def test_tampered_candidate_list_fails_closed(stage: Path, tmp_path: Path) -> None:
    """A changed candidate file is an integrity error on read."""
    freeze_manifest(stage, tmp_path / "m", small_preset())
    victim = sorted((tmp_path / "m" / "candidates").glob("*.json"))[0]
    victim.write_bytes(victim.read_bytes().replace(b'"rank":1', b'"rank":2', 1))
    with pytest.raises(IntegrityError):
        load_manifest(tmp_path / "m")


def test_missing_manifest_is_an_input_error(tmp_path: Path) -> None:
    """Reading a study without a manifest names the directory."""
    with pytest.raises(InputError):
        load_manifest(tmp_path / "nothing")


def test_changed_stage_makes_the_manifest_stale(stage: Path, tmp_path: Path) -> None:
    """A stage republished from other labels is reported stale by digest."""
    frozen_dir = tmp_path / "m"
    freeze_manifest(stage, frozen_dir, small_preset())
    frozen = load_manifest(frozen_dir)
    copy = tmp_path / "stage"
    shutil.copytree(stage, copy)
    doc = dict(frozen.document)
    doc["stage"] = {**doc["stage"], "labels": "sha256:" + "0" * 64}
    fake = type(frozen)(frozen.path, frozen.digest, doc, frozen.lists)
    assert [r.code for r in stale_reasons(fake, copy)] == ["manifest_stale"]
