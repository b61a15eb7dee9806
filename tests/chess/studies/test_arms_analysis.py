"""Tests of the E020/E021 stage profile and the E023 contrasts on planted cell tables."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from rungbench.chess.studies.analysis import Settings
from rungbench.chess.studies.analysis_report import analyze_table
from rungbench.chess.studies.arms_analysis import analyze_e023, stage_profile
from rungbench.chess.studies.bindings import binding_document
from rungbench.chess.studies.cells import build_table
from rungbench.chess.studies.manifest import FrozenManifest
from rungbench.chess.studies.plan import registered_plan
from rungbench.chess.studies.planted_tables import PlantedStages, e020_table, e023_table
from rungbench.design.presets import arms_design
from rungbench.design.registry import RegisteredDesign, bundled_text, load_design, parse_design
from rungbench.errors import Refusal
from rungbench.evidence.canonical import digest

SETTINGS = Settings(n_boot=600, seed=7)
E020 = load_design("e020_e021").digest


def test_seed_001_pair_is_coverage_limited_versus_selection_limited() -> None:
    """C 0.35·S 0.90 and C 0.90·S 0.35 share a 0.315 product but opposite profile labels."""
    header, rows = e020_table({"ideas": PlantedStages(0.35, 0.90),
                               "vision": PlantedStages(0.90, 0.35)}, seed=5,
                              positions=800, games=200, design_digest=E020)
    table = build_table(header, list(enumerate(rows, start=2)))
    # six intervals checked at once: the plan at alpha 0.01
    wide = Settings(n_boot=600, seed=7, plan=replace(registered_plan("E020_E021"), alpha=0.01))
    a = stage_profile(table, "ideas", "held_out", wide)
    b = stage_profile(table, "vision", "held_out", wide)
    assert a.label == "coverage-limited" and b.label == "selection-limited"
    for p, (c, s) in ((a, (0.35, 0.90)), (b, (0.90, 0.35))):
        f = p.figures
        assert f["coverage"]["low"] < c < f["coverage"]["high"]
        for arm in ("oracle_top2", "oracle_top5"):
            assert f[f"selection:{arm}"]["low"] < s < f[f"selection:{arm}"]["high"]
            assert f[f"product:{arm}"]["low"] < 0.315 < f[f"product:{arm}"]["high"]
        rate = f["unaided_best_rate"]["proportion_interval"]
        assert rate["method"] == "wilson" and rate["low"] < 0.315 < rate["high"]
    assert set(a.contrasts) == {"oracle_top2-unaided", "oracle_top5-oracle_top2"}
    assert all(c["adjusted_p"] >= c["p"] for c in a.contrasts.values())
    # ideas: the oracle list repairs a missing candidate, so top-2 lowers paired regret.
    assert a.contrasts["oracle_top2-unaided"]["low"] > 0


def test_a_single_cell_cannot_receive_a_profile_label() -> None:
    """With only the unaided arm there is no decomposition: single_cell_label refusal."""
    header, rows = e020_table({"ideas": PlantedStages(0.35, 0.90)}, seed=5, positions=40,
                              games=10, arms=("unaided",), design_digest=E020)
    table = build_table(header, list(enumerate(rows, start=2)))
    with pytest.raises(Refusal) as info:
        stage_profile(table, "ideas", "held_out", SETTINGS)
    assert info.value.codes == ("single_cell_label",)


def test_e023_reports_the_planted_direction_with_bh_secondaries() -> None:
    """A diffuse selector picks rank 1 less among strong distractors, but their regret is
    small (0.12·log rank): near_strong − far_tail regret is negative, an awkward result the
    analysis reports as it is; secondaries carry BH q-values."""
    header, rows = e023_table({"diffuse": 1.0}, design_digest=arms_design().digest, seed=2)
    table = build_table(header, list(enumerate(rows, start=2)))
    r = analyze_e023(table, "diffuse", "held_out", SETTINGS)
    regret = r.primaries["wdl_regret"]
    assert regret["rejected"] and regret["high"] < 0
    assert r.secondaries["rank1_selection:near_strong-far_tail"]["high"] < 0
    assert regret["contrast"] == "near_strong-far_tail" and regret["endpoint"] == "wdl_regret"
    assert all(s["adjusted_p"] >= s["p"] for s in r.secondaries.values())
    assert "order_disagreement:near_strong-far_tail" in r.secondaries
    assert 0 < r.arms["near_strong"]["order_disagreement"] <= 1


def test_stage_document_carries_labels_and_refuses_a_wrong_preset() -> None:
    """analyze_table labels both profiles; a table of another E020/E021 preset is refused."""
    header, rows = e020_table({"ideas": PlantedStages(0.35, 0.90),
                               "vision": PlantedStages(0.90, 0.35)}, seed=6,
                              positions=300, games=75, design_digest=E020)
    d = analyze_table(build_table(header, list(enumerate(rows, start=2))), SETTINGS)
    assert {s["model"]: s["label"] for s in d["stages"]} == {
        "ideas": "coverage-limited", "vision": "selection-limited"}
    header, rows = e020_table({"ideas": PlantedStages(0.35, 0.90)}, seed=6, positions=20,
                              games=5, design_digest=digest({"other": "preset"}))
    with pytest.raises(Refusal, match="manifest_mismatch"):
        analyze_table(build_table(header, list(enumerate(rows, start=2))), SETTINGS)


def test_e022_successor_arm_that_repairs_selection_is_seen() -> None:
    """E022: a successor arm that lifts S from 0.35 to 0.80 shows S and regret gains over
    the bare top-5; a reply arm equal to the control shows none."""
    from rungbench.chess.studies.planted_tables import e022_table

    e022 = load_design("e022").digest
    header, rows = e022_table({"oracle_top5": 0.35, "successor_top5": 0.80,
                               "reply_top5": 0.35}, seed=3, design_digest=e022)
    doc = analyze_table(build_table(header, list(enumerate(rows, start=2))), SETTINGS)
    (profile,) = doc["stages"]
    f = profile["figures"]
    assert profile["label"] == "falsifier arms (no stage label)"
    assert f["coverage:oracle_top5"]["estimate"] == 1.0
    lift = f["selection_minus_control:successor_top5"]
    assert lift["low"] < 0.45 < lift["high"] and lift["low"] > 0
    reply = f["selection_minus_control:reply_top5"]
    assert reply["low"] < 0 < reply["high"]
    contrasts = profile["paired_regret_contrasts"]
    assert set(contrasts) == {"successor_top5-oracle_top5", "reply_top5-oracle_top5"}
    assert contrasts["successor_top5-oracle_top5"]["low"] > 0


def _own(replacements: dict[str, str]) -> RegisteredDesign:
    """A user's copy of e020_e021.toml with ``replacements`` made (each must occur)."""
    text = bundled_text("e020_e021")
    for old, new in replacements.items():
        assert old in text, old
        text = text.replace(old, new)
    return parse_design(text, name="mine", source="mine.toml")


def _ladder_doc(preset: RegisteredDesign) -> dict[str, Any]:
    header, rows = e020_table({"ideas": PlantedStages(0.35, 0.90)}, seed=3, positions=200,
                              games=50, design_digest=preset.digest,
                              arms=("unaided", "self_shortlist", "oracle_top2", "oracle_top5",
                                    "oracle_top10", "best_omitted"))
    return analyze_table(build_table(header, list(enumerate(rows, start=2))), SETTINGS,
                         preset=preset)


def _proportions(doc: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """Every proportion interval of a ladder analysis: coverage, the unaided best-move rate
    and each arm's catastrophic rate."""
    out = {}
    for stage in doc["stages"]:
        for name, figure in stage["figures"].items():
            if "proportion_interval" in figure:
                shown = figure["proportion_interval"]
                out[name] = (shown["low"], shown["high"])
        for arm, rate in stage["catastrophic"].items():
            out[f"catastrophic:{arm}"] = tuple(rate["all"]["interval"])
    return out


def _bootstrap(doc: dict[str, Any]) -> dict[str, tuple[float, float]]:
    return {name: (f["low"], f["high"]) for stage in doc["stages"]
            for name, f in stage["figures"].items() if "low" in f}


def test_the_registered_interval_method_and_confidence_drive_every_interval() -> None:
    """In a user's copy, interval = "clopper_pearson" instead of "wilson" changes the binding
    digest and every proportion interval; confidence = 0.9 narrows every interval (the
    proportions' and the bootstrap's)."""
    wilson = _own({})
    exact = _own({'interval = "wilson"': 'interval = "clopper_pearson"'})
    narrow = _own({"confidence = 0.95": "confidence = 0.9"})
    manifest = FrozenManifest(Path("/nonexistent"), "sha256:" + "0" * 64, {"positions": [
        {"key": f"{p}-{i}", "partition": p}
        for p in ("training", "development", "held_out") for i in range(300)]}, {})
    bindings = {digest(binding_document(r, manifest)) for r in (wilson, exact, narrow)}
    assert len(bindings) == 3
    base, cp, nine = _ladder_doc(wilson), _ladder_doc(exact), _ladder_doc(narrow)
    assert base["plan"]["interval"] == "wilson" and cp["plan"]["interval"] == "clopper_pearson"
    a, b = _proportions(base), _proportions(cp)
    assert len(a) == 7 and a.keys() == b.keys()  # coverage, unaided, 5 catastrophic rates
    assert all(a[k] != b[k] for k in a), [k for k in a if a[k] == b[k]]
    c = _proportions(nine)
    assert all(c[k][1] - c[k][0] < a[k][1] - a[k][0] for k in a)
    boot, boot9 = _bootstrap(base), _bootstrap(nine)
    assert len(boot) >= 5
    assert all(boot9[k][1] - boot9[k][0] < boot[k][1] - boot[k][0] for k in boot)
