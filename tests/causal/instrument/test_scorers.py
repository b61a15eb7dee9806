"""The strict and lenient scorers on hand cases and the seed's probe C.6."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import pytest

from rungbench.causal.instrument.http_contract import parse_response
from rungbench.causal.instrument.probes import probe_scorer
from rungbench.causal.instrument.scorers import Gold, lenient, strict


def hand_cases() -> dict[str, Any]:
    text = resources.files("rungbench.causal.instrument").joinpath(
        "data/scorer_hand_cases.json").read_text(encoding="utf-8")
    doc: dict[str, Any] = json.loads(text)
    return doc


@pytest.mark.parametrize("case", hand_cases()["cases"], ids=lambda c: c["id"])
def test_strict_matches_the_hand_key(case: dict[str, Any]) -> None:
    """Each hand-written strict verdict is what the strict scorer returns."""
    answer = parse_response(json.dumps(case["response"]).encode())
    assert strict(Gold.from_json(case["gold"]), answer, hand_cases()["aliases"]) is case["strict"]


def test_strict_passes_probe_c6_and_lenient_fails_it() -> None:
    """C.6: strict gets correct/reversed/aliased/empty right; lenient accepts a reversal."""
    assert all(r.passed for r in probe_scorer(strict))
    failed = {r.check for r in probe_scorer(lenient) if not r.passed}
    assert failed == {"reversed", "aliased"}
