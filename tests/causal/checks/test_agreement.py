"""Tests for rungbench.causal.checks.agreement (the scorer-agreement harness, scorer 1 side)."""

from __future__ import annotations

import ast
import json
import sys
from collections import Counter
from importlib import resources
from typing import Any

import pytest

from rungbench.causal.bench.scorer import score_dict
from rungbench.causal.checks.agreement import (
    COMPARED,
    compare,
    compare_hand,
    generated_responses,
    hand_cases,
    network_responses,
    same_value,
    scorer_agreement,
    second_scorer_hand_cases,
    verdicts_agree,
)
from rungbench.causal.checks.second_scorer import score as second_score


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
    """Real scorer 2: 100% on both hand sets (34 + 49) and >= 99% of 1,000 generated."""
    result = scorer_agreement(1000, 11)
    assert result["generated"]["n"] == 1000
    assert result["generated"]["rate"] >= 0.99
    hand = result["hand"]
    assert {k: v["n"] for k, v in hand["sets"].items()} == {
        "response_cases": len(hand_cases()), "second_scorer_cases": 49}
    assert hand["n"] == len(hand_cases()) + 49
    assert hand["rate"] == 1.0 and not hand["disagreements"], hand["disagreements"]
    assert result["pass"]


def test_network_responses_reach_the_outcomes_of_identifiable_items() -> None:
    """Responses over the network family (all identifiable, numeric) reach correct, wrong,
    false_non_id, abstain and invalid, and name network cases only."""
    pairs = network_responses(600, 4, "child")
    outcomes = Counter(score_dict(o, r)["outcome"] for o, r in pairs)
    assert set(outcomes) == {"correct", "wrong", "false_non_id", "abstain", "invalid"}
    assert {o["family"] for o, _ in pairs} == {"network"}


def test_both_scorers_agree_on_network_items() -> None:
    """With networks, the second scorer agrees with the first on every network response and
    the report carries them under ``networks``; without, it has no such key."""
    result = scorer_agreement(300, 5, networks="alarm,child")
    nets = result["networks"]
    assert nets["n"] == 300 and nets["rate"] == 1.0, nets["disagreements"][:3]
    assert result["pass"]
    assert "networks" not in scorer_agreement(50, 5)


def test_second_scorer_cases_expand_to_full_records() -> None:
    """Scorer 2's compact hand cases expand to full responses and full expected verdicts."""
    cases = second_scorer_hand_cases()
    assert len(cases) == 49
    for c in cases:
        assert c["response"]["case_id"] == c["oracle"]["case_id"] == c["expected"]["case_id"]
        assert set(COMPARED) <= set(c["expected"])
        assert {"arm", "status", "value", "edges", "experiment"} <= set(c["response"])
    by_note = {c["note"]: c for c in cases}
    assert by_note["string-value"]["response"]["value"] == "0.374"
    assert by_note["experiment-need-info"]["expected"]["info_regret"] == 0.51


def test_hand_disagreements_name_their_set_and_case() -> None:
    """Dropping structure on abstentions fails exactly scorer 2's abstain-with-edges case."""

    def blind(o: dict[str, Any], r: dict[str, Any]) -> dict[str, Any]:
        v = score_dict(o, r)
        return {**v, "structure": None} if v["outcome"] == "abstain" else v

    hand = compare_hand(blind, second_score)
    assert hand["sets"]["response_cases"]["rate"] == 1.0
    assert hand["sets"]["second_scorer_cases"]["agree"] == 48
    (d,) = hand["disagreements"]
    assert d["set"] == "second_scorer_cases" and d["note"] == "discovery-abstain-with-edges"


_ORACLES: dict[str, dict[str, Any]] = json.loads(
    resources.files("rungbench.causal").joinpath("data/second_scorer_cases.json").read_text()
)["oracles"]

_CONVENTION_PROBES = [
    ("exact", {"value": 0.374, "confidence": "0.9"}, "invalid", None),
    ("exact", {"value": False}, "invalid", None),
    ("bounds", {"bounds": ["0.2", 0.6]}, "invalid", None),
    ("chain", {"status": "not_identifiable", "edges": [["B", "A"]], "confidence": 0.2},
     "false_non_id", "structure"),
    ("isolated", {"status": "need_info", "edges": [["A", "B"]]}, "abstain", "structure"),
    ("experiment", {"status": "abstain", "experiment": "exp_b"}, "abstain", "info_regret"),
    ("experiment", {"status": "need_info", "experiment": "exp_z"}, "invalid", None),
    ("decision", {"status": "abstain", "action": "rollback"}, "abstain", "decision_regret"),
    ("decision", {"status": "need_info", "action": "reboot"}, "invalid", None),
]


@pytest.mark.parametrize(("oracle", "fields", "outcome", "metric"), _CONVENTION_PROBES)
def test_both_scorers_agree_beyond_the_hand_cases(
    oracle: str, fields: dict[str, Any], outcome: str, metric: str | None
) -> None:
    """Both scorers agree on convention probes outside the hand sets, with the pinned outcome."""
    o = _ORACLES[oracle]
    response = {"case_id": o["case_id"], "arm": "probe", "status": "answer", **fields}
    first, second = score_dict(o, response), second_score(o, response)
    assert verdicts_agree(first, second), (first, second)
    assert first["outcome"] == outcome
    if metric is not None:
        assert first[metric] is not None


def test_second_scorer_shares_no_code_with_the_first() -> None:
    """scorer 2 imports only the standard library and rungbench.errors, never scorer 1's modules."""
    source = resources.files("rungbench.causal").joinpath("checks/second_scorer.py").read_text()
    imported: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            imported.add(node.module)
    ours = {m for m in imported if m.split(".")[0] == "rungbench"}
    assert ours == {"rungbench.errors"}
    assert all(m.split(".")[0] in sys.stdlib_module_names for m in imported - ours)


def test_malformed_bounds_hand_cases_pin_convention_5() -> None:
    """Scorer 1's hand set holds the malformed-bounds cases; both scorers call them invalid."""
    cases = [c for c in hand_cases() if c["response"]["bounds"] is not None
             and c["expected"]["outcome"] == "invalid"]
    statuses = {c["response"]["status"] for c in cases}
    assert {"abstain", "answer"} <= statuses
    assert any(c["oracle"].get("bounds") is None for c in cases)
    for c in cases:
        assert score_dict(c["oracle"], c["response"])["outcome"] == "invalid"
        assert second_score(c["oracle"], c["response"])["outcome"] == "invalid"
