"""Tests for rungbench.causal.checks.validate: the seed's validation table and its alarms."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np
import pytest

from rungbench.causal.checks.mc_check import check_queries
from rungbench.causal.checks.validate import (
    categorical_queries,
    categorical_validation_worlds,
    check_adjustment,
    check_against_checker,
    check_categorical_adjustment,
    check_categorical_against_checker,
    check_categorical_witnesses,
    check_hand_cases,
    check_witnesses,
    compare_categorical_with_checker,
    compare_with_checker,
    evaluate_hand_case,
    load_hand_cases,
    validation_worlds,
    z_score,
)
from rungbench.causal.scm import oracle
from rungbench.causal.scm.world import Query, World, check_query
from rungbench.errors import InputError


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


def test_validation_worlds_are_42_motifs_and_18_random_dags_half_latent() -> None:
    """The checker row's worlds: 42 motif worlds (14 kinds × 3) then 18 random 6-node DAGs,
    9 of them with latent confounders."""
    worlds = validation_worlds()
    assert len(worlds) == 60
    motifs, randoms = worlds[:42], worlds[42:]
    assert all(w.world_id.startswith("vm") for w, *_ in motifs)
    assert all(w.world_id.startswith("vr") and len(w.observed_names) == 6 for w, *_ in randoms)
    assert sum(bool(w.latent_names) for w, *_ in randoms) == 9


def test_hand_cases_cover_every_rung_and_named_quantity() -> None:
    """Hand cases span rungs 1, 2 and 3 and the named quantities PNS, NDE, NIE and total."""
    cases = load_hand_cases()
    assert {c.query.rung for c in cases if c.query is not None} == {1, 2, 3}
    assert {str(c.quantity["kind"]) for c in cases if c.quantity is not None} == {
        "pns", "nde", "nie", "total"}


def test_unknown_hand_case_world_names_the_field() -> None:
    """A hand case naming a world the file does not define is an InputError on that case."""
    text = resources.files("rungbench.causal").joinpath("data/hand_cases.json").read_text()
    doc = json.loads(text)
    doc["cases"][2]["world"] = "no-such-world"
    with pytest.raises(InputError) as info:
        load_hand_cases(json.dumps(doc))
    assert info.value.field == "cases[2].world"


def test_checker_is_independent_and_draws_200k_by_default() -> None:
    """mc_check and its reader mc_world import nothing from the oracle stack (only the standard
    library, numpy, rungbench.errors and each other) and, like the validation, the checker
    draws 200,000 samples by default."""
    import ast
    import inspect

    from rungbench.causal.checks import mc_check, mc_world
    from rungbench.causal.checks.validate import run_validation

    imported: set[str] = set()
    for module in (mc_check, mc_world):
        tree = ast.parse(inspect.getsource(module))
        imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                     for alias in node.names}
        imported |= {str(node.module) for node in ast.walk(tree)
                     if isinstance(node, ast.ImportFrom)}
    rungbench_modules = {m for m in imported if m.startswith("rungbench")}
    assert rungbench_modules == {"rungbench.errors", "rungbench.causal.checks.mc_world"}
    assert imported - rungbench_modules <= {"__future__", "math", "collections.abc",
                                            "dataclasses", "typing", "numpy", "numpy.typing"}
    for fn in (mc_check.check_queries, mc_check.check_query, run_validation):
        assert inspect.signature(fn).parameters["draws"].default == 200_000


def test_categorical_worlds_agree_with_the_checker() -> None:
    """On 4 categorical worlds (2-4 states) the checker (20k draws) stays within 5σ of the
    oracle at rungs 1, 2 and 3, and the row says how many worlds and queries it checked."""
    row = check_categorical_against_checker(check_queries, draws=20_000, seed=5, n_worlds=4)
    assert row.passed, row.result
    assert row.figures["worlds"] == 4 and int(row.figures["queries"]) >= 20
    assert all(int(row.figures[f"rung{r}"]) > 0 for r in (1, 2, 3))
    assert row.result.startswith(f"4 categorical worlds, {row.figures['queries']} queries")


def test_a_perturbed_oracle_value_on_a_categorical_world_is_caught() -> None:
    """Moving ONE oracle value of one categorical world by 0.05 raises a 5σ alarm on exactly
    that query and fails the row."""
    worlds = categorical_validation_worlds(5, 4)
    target = worlds[2][0].world_id
    perturbed: list[Query] = []

    def exact(world: World, query: Query) -> float:
        value = oracle.probability(world, query)
        if world.world_id == target and query.rung == 3 and not perturbed:
            perturbed.append(query)
            return value + 0.05 if value < 0.5 else value - 0.05
        return value

    comparisons = compare_categorical_with_checker(check_queries, draws=200_000, seed=5,
                                                   n_worlds=4, exact=exact)
    alarms = [c for c in comparisons if abs(c.z) > 5.0]
    assert [(c.world_id, c.query) for c in alarms] == [(target, perturbed[0])]
    row = check_categorical_against_checker(check_queries, draws=20_000, seed=5, n_worlds=4,
                                            exact=lambda w, q: min(1.0, oracle.probability(
                                                w, q) + 0.05))
    assert not row.passed and int(row.figures["alarms"]) > 0


def test_categorical_queries_use_every_state_range() -> None:
    """The categorical worlds have named states and their queries take values beyond 0 and 1
    (a binary-only query drawer would never ask about state 2 or 3)."""
    worlds = categorical_validation_worlds(3, 8)
    assert all(not w.is_binary and w.state_names() for w, _, _ in worlds)
    rng = np.random.default_rng(0)
    values = {v for w, x, y in worlds for q in categorical_queries(w, x, y, rng)
              for part in (q.target, q.do, q.evidence) for v in part.values()}
    assert values >= {0, 1, 2}
    for w, x, y in worlds:
        for q in categorical_queries(w, x, y, rng):
            check_query(w, q)


def test_categorical_world_count_must_be_positive() -> None:
    """Asking for zero categorical worlds is an InputError naming categorical_worlds."""
    with pytest.raises(InputError) as info:
        categorical_validation_worlds(3, 0)
    assert info.value.field == "categorical_worlds"


def test_categorical_adjustment_and_witness_rows_pass() -> None:
    """On 3 categorical worlds every identified effect, over every value of X, equals the
    do-oracle to 1e-12; categorical witnesses meet row 4's bar (>= 34/40 above 0.02,
    median >= 0.10)."""
    adj = check_categorical_adjustment(seed=3, n_worlds=3)
    assert adj.passed, adj.result
    assert int(adj.figures["backdoor_queries"]) >= 20
    assert float(adj.figures["backdoor_max_diff"]) <= 1e-12
    wit = check_categorical_witnesses()
    assert wit.passed, wit.result
    assert wit.figures["worlds"] == 40 and int(wit.figures["above_tol"]) >= 34
    assert float(wit.figures["median_gap"]) >= 0.10


def test_cli_default_size_is_the_full_categorical_validation() -> None:
    """`causal validate` checks N_CATEGORICAL_WORLDS categorical worlds unless told fewer."""
    import inspect

    from rungbench.causal.checks.validate import N_CATEGORICAL_WORLDS, run_validation
    from rungbench.cli.causal import validate

    option = inspect.signature(validate).parameters["categorical_worlds"].default
    assert option.default == N_CATEGORICAL_WORLDS == 48
    assert inspect.signature(run_validation).parameters[
        "categorical_worlds"].default == N_CATEGORICAL_WORLDS
