"""Tests for rungbench.causal.agreement (the scorer-agreement harness, scorer 1 side)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from rungbench.causal.agreement import (
    compare,
    generated_responses,
    hand_cases,
    same_value,
    scorer_agreement,
    verdicts_agree,
)
from rungbench.causal.scorer import score_dict


def test_same_value_tolerates_float_noise_only() -> None:
    """Floats agree within 1e-9; booleans, strings and None are exact."""
    assert same_value(0.1 + 0.2, 0.3)
    assert not same_value(0.3, 0.3001)
    assert not same_value(True, 1)
    assert same_value({"a": 1.0, "b": None}, {"a": 1.0 + 1e-12, "b": None})
    assert not verdicts_agree({"outcome": "correct"}, {"outcome": "wrong"})


def test_generated_responses_cover_every_outcome() -> None:
    """1,000 generated responses reach every outcome cell, invalid included."""
    pairs = generated_responses(1000, 4)
    outcomes = Counter(score_dict(o, r)["outcome"] for o, r in pairs)
    assert set(outcomes) == {"correct", "wrong", "false_non_id", "false_answer_on_non_id",
                             "correct_non_id", "abstain", "invalid"}
    assert len(pairs) == 1000


def test_compare_reports_every_disagreement_with_both_verdicts() -> None:
    """A scorer that calls abstentions wrong disagrees exactly on the abstain cases."""

    def skewed(o: dict[str, Any], r: dict[str, Any]) -> dict[str, Any]:
        v = score_dict(o, r)
        return {**v, "outcome": "wrong"} if v["outcome"] == "abstain" else v

    cases = hand_cases()
    pairs = [(c["oracle"], c["response"]) for c in cases]
    same = compare(pairs, score_dict, score_dict, expected=[c["expected"] for c in cases])
    assert same["rate"] == 1.0 and not same["disagreements"]
    diff = compare(pairs, score_dict, skewed)
    n_abstain = sum(c["expected"]["outcome"] == "abstain" for c in cases)
    assert diff["agree"] == len(cases) - n_abstain
    d = diff["disagreements"][0]
    assert d["first"]["outcome"] == "abstain" and d["second"]["outcome"] == "wrong"


def test_real_second_scorer_agreement() -> None:
    """Against the independent scorer: >= 99% on generated responses; scorer 1 matches every
    hand key, and each hand disagreement is reported with both verdicts and the key."""
    result = scorer_agreement(300, 11)
    assert result["generated"]["n"] == 300
    assert result["generated"]["rate"] >= 0.99
    hand = result["hand"]
    assert hand["n"] == len(hand_cases())
    for d in hand["disagreements"]:
        assert verdicts_agree(d["first"], d["expected"])
        assert {"first", "second", "expected", "response"} <= set(d)
