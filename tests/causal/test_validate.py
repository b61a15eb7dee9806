"""Tests for rungbench.causal.validate: the seed's validation table and its alarms."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np
import pytest

from rungbench.causal import oracle
from rungbench.causal.mc_check import check_queries
from rungbench.causal.validate import (
    check_adjustment,
    check_against_checker,
    check_hand_cases,
    check_witnesses,
    compare_with_checker,
    evaluate_hand_case,
    load_hand_cases,
    z_score,
)
from rungbench.causal.world import Query, World


def test_hand_cases_all_match() -> None:
    """At least 11 hand-derived answers, each with its derivation, all equal the oracle."""
    row = check_hand_cases()
    assert row.passed, row.result
    cases = load_hand_cases()
    assert len(cases) >= 11
    assert all(len(c.derivation) > 30 for c in cases)


def test_collider_hand_case_is_one_half() -> None:
    """C := X OR Y: P(X=1 | Y=1, C=1) = 1/2 (the seed's first key said 2/3)."""
    case = next(c for c in load_hand_cases() if c.case_id == "collider-explained")
    assert float(case.expected) == 0.5
    assert evaluate_hand_case(case) == pytest.approx(0.5, abs=1e-15)


def test_a_wrong_hand_key_is_caught() -> None:
    """Changing the collider key to the seed's wrong 2/3 makes that case disagree."""
    text = resources.files("rungbench.causal").joinpath("data/hand_cases.json").read_text()
    doc = json.loads(text)
    for c in doc["cases"]:
        if c["id"] == "collider-explained":
            c["expected"] = "2/3"
    cases = load_hand_cases(json.dumps(doc))
    wrong = [c.case_id for c in cases if abs(evaluate_hand_case(c) - float(c.expected)) > 1e-12]
    assert wrong == ["collider-explained"]


def test_oracle_agrees_with_independent_checker() -> None:
    """On 60 worlds and >= 359 queries the Monte Carlo checker (20k draws) stays within 5σ."""
    row = check_against_checker(check_queries, draws=20_000, seed=5)
    assert row.passed, row.result
    assert row.figures["worlds"] == 60
    assert int(row.figures["queries"]) >= 359
    assert all(int(row.figures[f"rung{r}"]) > 100 for r in (1, 2, 3))


@dataclass(frozen=True)
class _Estimate:
    p: float
    se: float
    n_accepted: int


def test_a_biased_checker_raises_the_alarm() -> None:
    """A checker that is off by 0.05 produces |z| > 5 alarms and fails the row."""

    def biased(world_json: dict[str, Any], queries: list[dict[str, Any]], *, draws: int,
               rng: np.random.Generator) -> list[_Estimate]:
        w = World.from_json(world_json)
        out = []
        for q in queries:
            p = oracle.probability(w, Query.from_json(q))
            out.append(_Estimate(min(1.0, p + 0.05), 0.0, draws // 2))
        return out

    row = check_against_checker(biased, draws=200_000)
    assert not row.passed
    assert int(row.figures["alarms"]) > 100


def test_checker_comparisons_use_the_shuffled_public_json() -> None:
    """The checker receives public JSON documents whose listing order is not the causal order."""
    shuffled: list[bool] = []

    def spy(world_json: dict[str, Any], queries: list[dict[str, Any]], *, draws: int,
            rng: np.random.Generator) -> list[_Estimate]:
        w = World.from_json(world_json)
        shuffled.append(tuple(v["name"] for v in world_json["variables"]) != w.names)
        return [_Estimate(oracle.probability(w, Query.from_json(q)), 0.0, draws)
                for q in queries]

    rows = compare_with_checker(spy, draws=1000)
    assert max(abs(r.z) for r in rows) == 0.0
    assert len(shuffled) == 60 and sum(shuffled) >= 40


def test_adjustment_and_witness_rows_pass() -> None:
    """Back-door estimates match the do-oracle on >= 80 queries; witnesses meet the seed's bar."""
    adj = check_adjustment()
    assert adj.passed and int(adj.figures["backdoor_queries"]) >= 80
    assert float(adj.figures["backdoor_max_diff"]) <= 1e-12
    wit = check_witnesses()
    assert wit.passed and int(wit.figures["above_tol"]) >= 34
    assert float(wit.figures["median_gap"]) >= 0.10


def test_z_score_edges() -> None:
    """z is 0 for an exact deterministic match, inf for a deterministic miss or no draws."""
    assert z_score(1.0, 1.0, 100) == 0.0
    assert math.isinf(z_score(1.0, 0.99, 100))
    assert math.isinf(z_score(0.5, 0.5, 0))
    assert z_score(0.5, 0.6, 100) == pytest.approx(2.0)
