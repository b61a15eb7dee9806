"""Outcome-blind design audits: A105 schedule and E023 orders/selectors (seeds 000, 001)."""

from __future__ import annotations

from importlib import resources

import pytest

from rungbench.design.audit import factorial_audit, order_audit, schedule_audit
from rungbench.design.presets import arms_design, factorial_design
from rungbench.design.registry import parse_design


def _figures(report: object) -> dict[str, float]:
    return {f.key: f.ours for f in report.figures}  # type: ignore[attr-defined]


def test_a105_schedule_audit_reproduces_seed() -> None:
    """4,800 cells, 2,400 per model, 300 per condition-ordinal, the MDE envelope to 4 dp."""
    report = schedule_audit(factorial_design())
    figures = _figures(report)
    assert report.ok, report.failed()
    assert figures["cells"] == 4800 and figures["condition_ordinal_count"] == 300
    assert figures["requests_luna"] == figures["requests_deepseek-v4-flash"] == 2400
    assert (figures["mde_n150_sd010"], figures["mde_n150_sd040"]) == (0.0273, 0.1091)
    assert (figures["mde_c75_sd010"], figures["mde_c75_sd040"]) == (0.0386, 0.1542)


def test_a105_factorial_audit_recovers_every_signature() -> None:
    """Exact recovery holds for all five signatures and the report stays ok."""
    report = factorial_audit(factorial_design(), replicates=4)
    assert all(report.checks[f"exact_recovery_{s}"] for s in (
        "b_limited", "l_limited", "substitutable", "complementary", "null"))
    assert report.ok


def test_e023_audit_reproduces_seed() -> None:
    """Every arm: 200 differing and deranged pairs, all moved, 80 per rank-slot, zero imbalance."""
    report = order_audit(arms_design())
    assert report.ok, report.failed()
    figures = _figures(report)
    for arm in ("near_strong", "mid_band", "mixed_tail", "far_tail"):
        assert figures[f"cyclic_{arm}_differing_pairs"] == 200
        assert figures[f"cyclic_{arm}_deranged_pairs"] == 200
        assert figures[f"cyclic_{arm}_moved_share"] == 1.0
        assert figures[f"cyclic_{arm}_rank_slot_count"] == 80
        assert figures[f"cyclic_{arm}_max_imbalance"] == 0
    assert figures["alias_ideas_limited"] == figures["alias_vision_limited"] == 0.315
    assert figures["shuffle_max_imbalance_w5"] > 0 and figures["shuffle_max_imbalance_w10"] > 0
    # the seed's own shuffle figures are shown beside ours, never asserted equal
    seed_values = {f.key: f.seed for f in report.figures}
    assert seed_values["shuffle_identical_pairs_w2"] == 96


def test_e023_audit_fails_when_positions_break_balance() -> None:
    """199 positions cannot give 80 exposures per rank-slot: the audit reports failure."""
    text = (resources.files("rungbench.designs") / "e023.toml").read_text(encoding="utf-8")
    broken = parse_design(text.replace("positions = 200", "positions = 199"), name="e023",
                          source="e023-broken")
    report = order_audit(arms_design(broken))
    assert not report.ok
    assert "cyclic_near_strong_rank_slot_exact" in report.failed()


def test_e023_audit_warns_that_its_primary_endpoints_miss_the_mechanism() -> None:
    """Bundled E023, registered regret profile: the diffuse selector's near_strong − far_tail
    WDL regret is −0.0078 (near_strong's wrong picks are strong moves), so wdl_regret warns
    primary_endpoint_inconsistent_with_mechanism; no registered rank reaches the catastrophic
    0.40, so catastrophic_rate warns primary_endpoint_blind_to_mechanism. Warnings do not
    fail the audit."""
    report = order_audit(arms_design())
    assert report.ok, report.failed()
    assert [(w["code"], w["endpoint"], w["selector"], w["contrast"]) for w in report.warnings] \
        == [("primary_endpoint_inconsistent_with_mechanism", "wdl_regret", "diffuse",
             "near_strong-far_tail"),
            ("primary_endpoint_blind_to_mechanism", "catastrophic_rate", "diffuse",
             "near_strong-far_tail")]
    assert report.warnings[0]["expected_contrast"] == pytest.approx(-0.0078178, abs=1e-7)
    assert report.to_json()["warnings"] == report.warnings


def test_e023_audit_table_says_which_endpoints_detect_the_mechanism() -> None:
    """On both contrasts, rank-1 selection and order disagreement move the declared way for
    diffuse by more than for sharp; WDL regret, the catastrophic rate and the −log(rank)
    utility regret do not; legality, latency, tokens and cost are not modelled."""
    validity = order_audit(arms_design()).detail["endpoint_validity"]
    for contrast in ("near_strong-far_tail", "near_strong-mixed_tail"):
        assert validity["detects_mechanism"][contrast] == {
            "wdl_regret": False, "catastrophic_rate": False, "rank1_selection": True,
            "order_disagreement": True, "utility_regret": False}
        for endpoint in ("legality", "latency", "tokens", "cost"):
            assert validity["table"][contrast]["diffuse"][endpoint]["verdict"] == "not_modelled"
    diffuse = validity["table"]["near_strong-far_tail"]["diffuse"]
    sharp = validity["table"]["near_strong-far_tail"]["sharp"]
    assert (diffuse["wdl_regret"]["verdict"], sharp["wdl_regret"]["verdict"]) == (
        "against", "consistent")
    assert diffuse["utility_regret"]["contrast"] == pytest.approx(-0.0795496, abs=1e-7)
    assert diffuse["rank1_selection"]["contrast"] == pytest.approx(-0.2381908, abs=1e-7)
    assert diffuse["order_disagreement"]["contrast"] == pytest.approx(0.2031353, abs=1e-7)
    assert validity["profile"]["source"] == "registered"
    assert validity["endpoints"]["wdl_regret"]["primary"]
    assert not validity["endpoints"]["rank1_selection"]["primary"]


def test_e023_audit_checks_balance_through_every_endpoint() -> None:
    """The primacy-only selector scores each arm's plain rank mean on every endpoint of the
    chosen rank and disagrees equally often in every arm; 199 positions break the rank
    endpoints' checks (the order-disagreement one holds: the rotation is the same)."""
    report = order_audit(arms_design())
    names = [f"primacy_alone_gives_composition_only_{e}_when_balanced"
             for e in ("wdl_regret", "catastrophic_rate", "rank1_selection", "utility_regret")]
    assert all(report.checks[n] for n in names)
    assert report.checks["primacy_alone_gives_no_order_disagreement_contrast_when_balanced"]
    figures = _figures(report)
    assert figures["wdl_regret_delta_diffuse"] == pytest.approx(-0.0078178, abs=1e-7)
    text = (resources.files("rungbench.designs") / "e023.toml").read_text(encoding="utf-8")
    broken = order_audit(arms_design(parse_design(
        text.replace("positions = 200", "positions = 199"), name="e023", source="e023-broken")))
    assert "primacy_alone_gives_composition_only_wdl_regret_when_balanced" in broken.failed()
