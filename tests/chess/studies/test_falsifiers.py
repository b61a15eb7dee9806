"""Seed 001's falsifiers on planted cell tables with known mechanisms: each planted mechanism
gives the verdict the seed's sentence predicts, and its absence does not."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from rungbench.chess.studies.analysis import Settings
from rungbench.chess.studies.analysis_report import analyze_table, markdown
from rungbench.chess.studies.cells import build_table
from rungbench.chess.studies.falsifiers import (
    ALL_MODELS,
    DESIGN_FALSIFIERS,
    FALSIFIERS,
    gap_stratum,
    order_instability,
)
from rungbench.chess.studies.plan import plan_of, registered_plan
from rungbench.chess.studies.planted_tables import (
    PlantedStages,
    e020_table,
    e022_table,
    e023_table,
    planted_strata,
)
from rungbench.design.registry import load_design

SETTINGS = Settings(n_boot=400, seed=11)
LADDER_ARMS = ("unaided", "self_shortlist", "oracle_top2", "oracle_top5", "oracle_top10")


def _doc(preset: str, header: Any, rows: list[dict[str, Any]]) -> dict[str, Any]:
    reg = load_design(preset)
    return analyze_table(build_table(header, list(enumerate(rows, start=2))), SETTINGS,
                         preset=reg)


def _ladder(agents: dict[str, PlantedStages], positions: int = 600,
            seed: int = 4) -> dict[str, Any]:
    header, rows = e020_table(agents, positions=positions, games=positions // 4, seed=seed,
                              design_digest=load_design("e020_e021").digest, arms=LADDER_ARMS)
    return _doc("e020_e021", header, rows)


def _verdicts(doc: dict[str, Any], name: str, model: str) -> list[dict[str, Any]]:
    return [v for v in doc["falsifiers"] if v["falsifier"] == name and v["model"] == model]


def _reversal(doc: dict[str, Any], model: str, factor: str) -> dict[str, Any]:
    return next(v for v in _verdicts(doc, "reversal", model)
                if v["detail"].get("factor", factor) == factor and factor in v["estimand"])


def test_every_seed_bullet_is_one_named_falsifier_of_some_design() -> None:
    """Six seed-001 bullets, six falsifiers, each computed by at least one design."""
    assert len(FALSIFIERS) == 6
    computed = {f for names in DESIGN_FALSIFIERS.values() for f in names}
    assert computed == set(FALSIFIERS)
    assert all(text.startswith("If ") for text, _ in FALSIFIERS.values())


def test_value_gap_strata_follow_the_registered_edges() -> None:
    """Edges [0.05, 0.20] cut three strata; a position pass A ranked alone has none."""
    edges = registered_plan("E020_E021").value_gap_edges
    assert edges == (0.05, 0.2)
    assert [gap_stratum(g, edges) for g in (0.0, 0.049, 0.05, 0.19, 0.2, 0.9)] == [
        "<0.05", "<0.05", "0.05–0.2", "0.05–0.2", "≥0.2", "≥0.2"]
    assert gap_stratum(None, edges) is None


def test_width_effect_confined_to_small_value_gaps_vanishes_after_conditioning() -> None:
    """A selector that loses S 0.5 in lists wider than two only where the value gap is below
    0.20 shows a pooled width effect that is absent in the clear stratum (≥ 0.20) and present
    at the smallest gap: generic overload weakens (fails); the same cost everywhere survives
    conditioning (holds). (At a true null a 95% interval misses zero one time in twenty:
    seed 3 of this table is such a draw in the clear stratum, seed 4 is pinned.)"""
    doc = _ladder({"ambiguity": PlantedStages(0.5, 0.9, width_cost=0.5, cost_gap=0.20),
                   "overload": PlantedStages(0.5, 0.9, width_cost=0.5)})
    amb = _verdicts(doc, "width_after_value_gap", "ambiguity")[0]
    assert amb["detail"]["contrast"] == "oracle_top5-oracle_top2"
    assert amb["detail"]["pooled"]["high"] < 0
    strata = amb["detail"]["strata"]
    assert set(strata) == {"<0.05", "0.05–0.2", "≥0.2"}
    assert strata["≥0.2"]["low"] <= 0 <= strata["≥0.2"]["high"]
    assert strata["<0.05"]["high"] < 0 and amb["detail"]["interaction"]["high"] < 0
    assert amb["verdict"] == "fails" and "disappears after conditioning" in amb["wording"]
    over = _verdicts(doc, "width_after_value_gap", "overload")[0]
    assert over["verdict"] == "holds" and over["detail"]["strata"]["≥0.2"]["high"] < 0
    # widths 5 and 10 carry the same planted cost: no width effect to condition on
    assert _verdicts(doc, "width_after_value_gap", "overload")[1]["verdict"] == "inconclusive"


def test_planted_colour_reversal_is_reported_as_the_result() -> None:
    """Oracle top-2 selection 0.95 for white and 0.05 for black reverses the top-2 benefit
    by colour: the side-to-move reversal is flagged (fails) for that model only, with the
    level estimates of opposite sign; never averaged into the pooled benefit."""
    doc = _ladder({"colour": PlantedStages(0.5, 0.7, colour_selection={"white": 0.95,
                                                                         "black": 0.05}),
                   "steady": PlantedStages(0.5, 0.7)})
    flip = _reversal(doc, "colour", "side_to_move")
    levels = flip["detail"]["levels"]
    assert levels["white"]["low"] > 0 and levels["black"]["high"] < 0
    assert flip["verdict"] == "fails" and "the interaction is the result" in flip["wording"]
    assert flip["p"] <= 0.05 and flip["detail"]["pairs"][0]["method"] == "benjamini_hochberg"
    assert _reversal(doc, "steady", "side_to_move")["verdict"] != "fails"
    # the phase strata of the colour agent mix both colours equally: no phase reversal
    assert _reversal(doc, "colour", "phase")["verdict"] != "fails"
    across = _reversal(doc, ALL_MODELS, "model")
    assert set(across["detail"]["levels"]) == {"colour", "steady"}


def test_proposal_availability_holds_or_fails_with_the_planted_benefit() -> None:
    """Top-2 selection 0.9 against unaided C×S 0.45 lowers regret (holds); selection 0.05 in
    every top-2 list against the same unaided rate raises it (fails, wholly below zero)."""
    doc = _ladder({"helped": PlantedStages(0.5, 0.9),
                   "hurt": PlantedStages(0.9, 0.5, colour_selection={"white": 0.05,
                                                                       "black": 0.05})},
                  positions=300)
    helped = _verdicts(doc, "proposal_availability", "helped")[0]
    assert helped["verdict"] == "holds" and helped["low"] > 0
    hurt = _verdicts(doc, "proposal_availability", "hurt")[0]
    assert hurt["verdict"] == "fails" and hurt["high"] < 0
    assert "fails in this population" in hurt["wording"]


def test_successor_that_removes_the_deficit_displaces_pure_comparison() -> None:
    """E022: a successor arm lifting S from 0.35 to 0.95 removes most of the control's
    deficit (fails: pure comparison displaced); a reply arm equal to the control settles
    nothing (inconclusive)."""
    header, rows = e022_table({"oracle_top5": 0.35, "successor_top5": 0.95,
                               "reply_top5": 0.35}, positions=300, seed=4,
                              design_digest=load_design("e022").digest)
    doc = _doc("e022", header, rows)
    by = {v["detail"].get("contrast"): v for v in _verdicts(doc, "transition_search",
                                                           "planted")}
    succ = by["successor_top5-oracle_top5"]
    assert succ["verdict"] == "fails" and succ["low"] > 0
    assert succ["detail"]["deficit_removed"]["estimate"] == pytest.approx(
        (0.95 - 0.35) / 0.65, abs=0.12)
    assert by["reply_top5-oracle_top5"]["verdict"] == "inconclusive"


def test_order_sensitive_selector_makes_order_disagreement_high() -> None:
    """An agent taking the first slot with probability 0.9 changes its move between the two
    cyclic presentations in most pairs (instability holds as an explanation); a sharp
    selector without primacy rarely does (fails: not a major explanation)."""
    header, rows = e023_table({"primacy": 1.0, "sharp": 0.05}, positions=120,
                              design_digest=load_design("e023").digest,
                              primacy={"primacy": 0.9})
    table = build_table(header, list(enumerate(rows, start=2)))
    plan = replace(plan_of(load_design("e023")), rare_order_change=0.10)
    settings = replace(SETTINGS, plan=plan)
    high = order_instability(table.rows, "primacy", "held_out", settings)
    low = order_instability(table.rows, "sharp", "held_out", settings)
    assert high.verdict == "holds" and high.low is not None and high.low > 0.5
    assert low.verdict == "fails" and low.high is not None and low.high < 0.10
    assert set(high.detail["by_arm"]) == {"near_strong", "mid_band", "mixed_tail",
                                          "far_tail"}
    shares = [a["share"] for a in high.detail["by_arm"].values()]
    assert min(shares) > 0.5 and np.isclose(
        high.estimate, sum(a["differ"] for a in high.detail["by_arm"].values())
        / sum(a["pairs"] for a in high.detail["by_arm"].values()))


def test_every_verdict_carries_its_seed_text_interval_and_rows() -> None:
    """Each verdict row states the seed's bullet, the claim, the test, a verdict in the
    three-word vocabulary and the digest of its rows; the Markdown prints one row each."""
    doc = _ladder({"m": PlantedStages(0.5, 0.9)}, positions=120)
    assert doc["falsifiers"]
    md = markdown(doc)
    for v in doc["falsifiers"]:
        assert v["seed"] == FALSIFIERS[v["falsifier"]][0]
        assert v["verdict"] in ("holds", "fails", "inconclusive") and v["test"]
        assert v["source"] is None or v["source"].startswith("sha256:")
        assert v["wording"].replace("|", "/") in md


def test_planted_strata_cover_every_combination() -> None:
    """The planted positions cross colour, phase and class every 18 positions."""
    combos = {tuple(planted_strata(0, i)[k] for k in ("side_to_move", "phase", "tacticality"))
              for i in range(18)}
    assert len(combos) == 18


def test_distractor_verdict_states_the_endpoint_validity_warning() -> None:
    """The bundled E023's synthetic audit finds its WDL primary moving against the declared
    mechanism for the diffuse selector: the analysis records the warning and states it
    beside every distractor-strength verdict (never a silent pass)."""
    header, rows = e023_table({"diffuse": 1.0}, positions=30, seed=2,
                              design_digest=load_design("e023").digest)
    doc = _doc("e023", header, rows)
    codes = {w["code"] for w in doc["endpoint_validity"]["warnings"]}
    assert "primary_endpoint_inconsistent_with_mechanism" in codes
    (verdict,) = _verdicts(doc, "distractor_strength", "diffuse")
    assert verdict["warnings"] and "Warning: primary endpoint wdl_regret" in verdict["wording"]
    assert "primary_endpoint_inconsistent_with_mechanism" in markdown(doc)
    assert set(doc["e023"][0]["primaries"]) == {"wdl_regret", "catastrophic_rate"}
