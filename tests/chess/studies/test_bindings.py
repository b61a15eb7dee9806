"""Bindings: content-addressed, frozen before any call, refusing a mismatched manifest."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tests.chess.studies import study_fixtures as fx  # one label stage per process

from rungbench.chess.studies import study as st
from rungbench.chess.studies.bindings import (
    binding_document,
    freeze_binding,
    list_bindings,
    load_binding,
)
from rungbench.chess.studies.manifest import FrozenManifest, load_manifest
from rungbench.design.orders import rank_slot_counts
from rungbench.design.registry import load_design
from rungbench.errors import IntegrityError, Refusal


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A study with its small manifest frozen."""
    study = tmp_path_factory.mktemp("bind") / "study"
    st.freeze(study, fx.small_stage(), fx.small_preset())
    return study


def test_binding_is_content_addressed_and_idempotent(root: Path) -> None:
    """Binding twice writes one file named by the digest of its bytes."""
    manifest = load_manifest(root / "manifest")
    a = freeze_binding(root, fx.a105_small(), manifest)
    b = freeze_binding(root, fx.a105_small(), manifest)
    assert a.digest == b.digest and len(list_bindings(root)) >= 1
    assert load_binding(root, a.digest[7:19], manifest).document == a.document
    doc = a.document
    assert doc["manifest"] == manifest.digest and len(doc["positions"]) == 12
    assert len(doc["cells"]) == 12 * 4 * 2 * 2
    ordinals: dict[str, list[int]] = {}
    for _, _, condition, _, _, _, ordinal in doc["cells"]:
        ordinals.setdefault(condition, [0, 0, 0, 0])[ordinal] += 1
    assert all(counts == [12, 12, 12, 12] for counts in ordinals.values())


def test_registered_a105_needs_150_and_150(root: Path) -> None:
    """The registered A105 refuses a manifest without 150 development positions."""
    with pytest.raises(Refusal) as err:
        binding_document(load_design("a105"), load_manifest(root / "manifest"))
    assert err.value.reasons[0].code == "binding_size_mismatch"
    assert err.value.reasons[0].data == {"registered": 150, "manifest": 6}


def test_e023_binding_freezes_balanced_cyclic_orders(root: Path) -> None:
    """Every E023 arm's A/B orders differ everywhere; ranks sit in slots equally often."""
    binding = freeze_binding(root, fx.e023_small(), load_manifest(root / "manifest"))
    for arm, rows in binding.document["ranks_by_slot"].items():
        a = np.array([r[0] for r in rows])
        b = np.array([r[1] for r in rows])
        assert (a != b).all(), arm
        assert 1 in a[0]
        ranks = sorted(set(a[0]))
        index = {r: i for i, r in enumerate(ranks)}
        counts = rank_slot_counts(np.vectorize(index.get)(a), np.vectorize(index.get)(b))
        assert counts.max() - counts.min() <= 2


def test_tampered_binding_fails_closed(root: Path) -> None:
    """A binding whose bytes no longer match its name is an integrity error."""
    manifest = load_manifest(root / "manifest")
    binding = freeze_binding(root, fx.small_preset(), manifest)
    path = root / "bindings" / f"{binding.digest[7:]}.json"
    path.write_bytes(path.read_bytes().replace(b'"E020_E021"', b'"E020_E02X"'))
    with pytest.raises(IntegrityError):
        load_binding(root, binding.digest, manifest)


def test_e022_falsifiers_show_the_control_list(root: Path) -> None:
    """E022's successor and reply arms show the control's five moves in its order."""
    from rungbench.chess.studies.ladder import schedule_for

    manifest = load_manifest(root / "manifest")
    preset = fx.variant("e022", {'partitions = ["development", "held_out"]':
                                 'partitions = ["development", "held_out"]'}, name="e022")
    binding = freeze_binding(root, preset, manifest)
    schedule = schedule_for(binding, manifest, "luna", "loop-a")
    assert len(schedule) == 12 * 3
    by_pos: dict[str, dict[str, object]] = {}
    for cell in schedule:
        meta = cell.request.metadata
        by_pos.setdefault(meta["key"], {})[meta["condition"]] = (meta["candidates"],
                                                                 cell.request.messages[-1].content)
    for arms in by_pos.values():
        control = arms["oracle_top5"][0]  # type: ignore[index]
        assert arms["successor_top5"][0] == control == arms["reply_top5"][0]  # type: ignore[index]
        assert "resulting position (FEN)" in arms["successor_top5"][1]  # type: ignore[index]
        assert "best reply" in arms["reply_top5"][1]  # type: ignore[index]


def test_e023_binding_records_endpoint_validity_from_pass_a(root: Path) -> None:
    """An E023 binding's endpoint_validity block recomputes the WDL regret profile from the
    bound positions' pass A expectations (mean of E(rank 1) − E(rank r)) and carries the
    warnings of design/endpoint_validity.py on the bound orders; `bind` returns the block."""
    manifest = load_manifest(root / "manifest")
    binding = freeze_binding(root, fx.e023_small(), manifest)
    block = binding.document["endpoint_validity"]
    keys = binding.document["positions"]
    rows = [[c.expectation for c in manifest.lists[k].candidates] for k in keys]
    expected = [sum(row[0] - row[r] for row in rows) / len(rows) for r in range(10)]
    assert block["profile"]["source"] == "pass_a" and block["profile"]["positions"] == 12
    assert block["profile"]["regret_by_rank"] == pytest.approx(expected, abs=1e-12)
    assert {w["code"] for w in block["warnings"]} <= {
        "primary_endpoint_inconsistent_with_mechanism", "primary_endpoint_blind_to_mechanism"}
    assert all(w["selector"] == "diffuse" for w in block["warnings"])
    summary = st.bind(root, fx.e023_small(), fx.small_stage())
    assert summary["endpoint_validity"] == block
    assert summary["endpoint_profile"] == "pass_a (12 positions)"
    assert all(w["code"] in summary["endpoint_warnings"] for w in block["warnings"])


def test_e023_binding_without_candidate_lists_states_the_registered_profile() -> None:
    """A manifest of positions only (no pass A lists) binds with the registered profile,
    stated as such, and the registered-profile warning on wdl_regret."""
    manifest = FrozenManifest(Path("/nonexistent"), "sha256:" + "0" * 64, {"positions": [
        {"key": f"{p}-{i}", "partition": p} for p in ("development", "held_out")
        for i in range(100)]}, {})
    block = binding_document(load_design("e023"), manifest)["endpoint_validity"]
    assert block["profile"]["source"] == "registered" and block["profile"]["positions"] == 0
    assert block["warnings"][0]["endpoint"] == "wdl_regret"
    assert block["warnings"][0]["code"] == "primary_endpoint_inconsistent_with_mechanism"


def test_e023_binding_refuses_a_manifest_missing_some_pass_a_lists(root: Path) -> None:
    """A manifest holding the pass A list of one bound position but not the others is an
    integrity error naming a position without one (never a silently mixed profile)."""
    full = load_manifest(root / "manifest")
    first = str(full.positions(("held_out",))[0]["key"])  # E023 binds held-out first
    partial = FrozenManifest(full.path, full.digest, full.document, {first: full.lists[first]})
    with pytest.raises(IntegrityError, match="no pass A candidate list"):
        binding_document(fx.e023_small(), partial)
