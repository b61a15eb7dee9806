"""Synthetic 2×2 surfaces, their recovery, and the A105 claim gate (seed 000)."""

from __future__ import annotations

import dataclasses

import pytest

from rungbench.design.factorial import (
    SIGNATURES,
    ClaimGateInputs,
    GateRules,
    NoiseModel,
    claim_gate,
    classify_estimands,
    primary_family,
    recover,
    require_claim,
    surface,
)
from rungbench.design.presets import factorial_design
from rungbench.errors import InputError, Refusal
from rungbench.stats import factorial_2x2

RULES = factorial_design().gate
FAMILY = primary_family(["luna", "deepseek-v4-flash"], ["board", "legal_list"])
SENSITIVITIES = {name: 0.05 for name in RULES.sensitivities}


def _good(**changes: object) -> ClaimGateInputs:
    base = ClaimGateInputs(
        model="luna", factor="board", split="held_out", main_effect=0.06,
        family_pvalues={FAMILY[0]: 0.001, FAMILY[1]: 0.2, FAMILY[2]: 0.03, FAMILY[3]: 0.5},
        simple_effects=(0.05, 0.07), sensitivities=SENSITIVITIES,
        prompt_bytes_at_registered_offsets=True,
        tool_schema_digests={"a": "sha256:1", "b": "sha256:1"},
        action_universe_digests={"a": "sha256:2", "b": "sha256:2"},
        legal_and_all_shown_together=True, legal_subset_called_randomized=False,
        pooled_across_models=False)
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


@pytest.mark.parametrize("signature", SIGNATURES)
def test_exact_surfaces_classified(signature: str) -> None:
    """Each stipulated surface's exact estimands classify as that signature."""
    s = surface(signature, baseline=0.4, effect=0.15)  # type: ignore[arg-type]
    assert classify_estimands(factorial_2x2(*s.cells())) == signature


def test_additive_surface_is_not_a_single_signature() -> None:
    """Both mains without interaction is 'additive', not B- or L-limited."""
    assert classify_estimands(factorial_2x2(0.5, 0.4, 0.3, 0.2)) == "additive"


def test_substitutable_vs_complementary_signs() -> None:
    """Substitutes have a negative interaction, complements a positive one (seed 000)."""
    sub = factorial_2x2(*surface("substitutable").cells())
    comp = factorial_2x2(*surface("complementary").cells())
    assert sub.interaction == pytest.approx(-0.2) and comp.interaction == pytest.approx(0.2)
    assert sub.main_b == pytest.approx(0.1) and comp.main_b == pytest.approx(0.1)


def test_noisy_recovery_of_board_limited() -> None:
    """150 paired units in 75 clusters recover a 0.2 board-limited effect in ≥ 8 of 10 studies."""
    rec = recover("b_limited", replicates=10, noise=NoiseModel(n_boot=200))
    assert rec.recovered and rec.noisy_calls.get("b_limited", 0) >= 8


def test_noisy_null_is_mostly_null() -> None:
    """A null surface is called null in most simulated studies (no effect invented)."""
    rec = recover("null", replicates=10, noise=NoiseModel(n_boot=200))
    assert rec.noisy_calls.get("null", 0) >= 7


def test_unknown_signature_raises() -> None:
    """An unregistered signature name raises InputError."""
    with pytest.raises(InputError, match="signature"):
        surface("mystery")  # type: ignore[arg-type]


def test_gate_passes_when_every_condition_holds() -> None:
    """Holm rejects luna:board (p 0.001 ≤ 0.05/4), all directions agree: no reasons."""
    assert claim_gate(_good(), RULES) == []
    require_claim(_good(), RULES)


@pytest.mark.parametrize(("change", "code"), [
    ({"family_pvalues": {FAMILY[0]: 0.02, FAMILY[1]: 0.2, FAMILY[2]: 0.03, FAMILY[3]: 0.5}},
     "not_significant_after_holm"),
    ({"main_effect": -0.06}, "not_beneficial"),
    ({"simple_effects": (0.12, -0.01)}, "simple_effects_disagree"),
    ({"sensitivities": {**SENSITIVITIES, "panel_order": -0.01}}, "sensitivity_reversal"),
    ({"sensitivities": {}}, "sensitivity_missing"),
    ({"prompt_bytes_at_registered_offsets": False}, "prompt_bytes_unmatched"),
    ({"tool_schema_digests": {"a": "sha256:1", "b": "sha256:9"}}, "tool_schema_mismatch"),
    ({"action_universe_digests": {"a": "sha256:2", "b": "sha256:3"}},
     "action_universe_mismatch"),
    ({"legal_and_all_shown_together": False}, "results_not_shown_together"),
    ({"legal_subset_called_randomized": True}, "legal_subset_called_randomized"),
    ({"split": "development"}, "not_held_out"),
    ({"pooled_across_models": True}, "pooled_across_models"),
    ({"differential_attrition": True}, "differential_attrition"),
    ({"family_pvalues": {FAMILY[0]: 0.001}}, "family_mismatch"),
])
def test_gate_names_each_failed_condition(change: dict[str, object], code: str) -> None:
    """Breaking one condition refuses with that condition's reason code."""
    with pytest.raises(Refusal) as info:
        require_claim(_good(**change), RULES)
    assert code in info.value.codes
    assert info.value.gate == "representation_claim"


def test_gate_holm_uses_registered_family_size() -> None:
    """p = 0.02 passes a family of one but not Holm over four (0.02 > 0.05/4)."""
    single = GateRules(alpha=0.05, family_size=1, primary_split="held_out",
                       sensitivities=())
    inputs = _good(family_pvalues={"luna:board": 0.02}, sensitivities={})
    assert claim_gate(inputs, single) == []
    assert "not_significant_after_holm" in [
        r.code for r in claim_gate(_good(family_pvalues={
            FAMILY[0]: 0.02, FAMILY[1]: 0.2, FAMILY[2]: 0.03, FAMILY[3]: 0.5}), RULES)]
