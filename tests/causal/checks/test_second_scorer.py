"""Tests for the independently written second scorer (rungbench.causal.checks.second_scorer).

Hand cases with their derivations live in the package data
src/rungbench/causal/data/second_scorer_cases.json (``scorer-agreement`` also runs them).
"""

from __future__ import annotations

import copy
import itertools
import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from rungbench.causal.checks.second_scorer import (
    cpdag,
    is_acyclic,
    same_mec,
    score,
    score_file,
    skeleton,
    v_structures,
)
from rungbench.errors import InputError

DATA = json.loads(
    resources.files("rungbench.causal").joinpath("data/second_scorer_cases.json").read_text()
)
ORACLES: dict[str, dict[str, Any]] = DATA["oracles"]
VERDICT_KEYS = ("case_id", "outcome", "abs_error", "brier", "decision_regret", "info_regret",
                "structure")


def _response(oracle: dict[str, Any], **fields: Any) -> dict[str, Any]:
    response: dict[str, Any] = {
        "case_id": oracle["case_id"], "arm": "hand", "status": "answer", "value": None,
        "bounds": None, "label": None, "confidence": None, "experiment": None, "action": None,
        "edges": None, "claim_text": "", "t": "2026-10-03T14:02:11Z",
    }
    response.update(fields)
    return response


def _expected(oracle: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
    verdict: dict[str, Any] = dict.fromkeys(VERDICT_KEYS)
    verdict["case_id"] = oracle["case_id"]
    verdict.update(fields)
    return verdict


def _approx(value: Any) -> Any:
    if isinstance(value, float):
        return pytest.approx(value, abs=1e-12)
    if isinstance(value, dict):
        return {k: _approx(v) for k, v in value.items()}
    return value


@pytest.mark.parametrize("case", DATA["cases"], ids=[c["name"] for c in DATA["cases"]])
def test_hand_case_verdict(case: dict[str, Any]) -> None:
    """Each hand-written response gets exactly the hand-derived verdict in the data file."""
    oracle = ORACLES[case["oracle"]]
    verdict = score(oracle, _response(oracle, **case["response"]))
    assert verdict == _approx(_expected(oracle, case["expected"])), case["why"]


def test_hand_cases_cover_every_outcome() -> None:
    """The hand cases reach all seven outcome cells of CONTRACTS §3."""
    outcomes = {c["expected"]["outcome"] for c in DATA["cases"]}
    assert outcomes == {"correct", "wrong", "false_non_id", "false_answer_on_non_id",
                        "correct_non_id", "abstain", "invalid"}


def test_verdict_has_exactly_the_contract_fields() -> None:
    """score() returns the verdict fields of CONTRACTS §3 and nothing else."""
    oracle = ORACLES["exact"]
    assert tuple(score(oracle, _response(oracle, value=0.3))) == VERDICT_KEYS


def test_missing_optional_fields_read_as_null() -> None:
    """A response that omits the null fields scores like one that spells them out."""
    oracle = ORACLES["exact"]
    short = {"case_id": oracle["case_id"], "status": "answer", "value": 0.37}
    assert score(oracle, short) == score(oracle, _response(oracle, value=0.37))


# ------------------------------------------------------------ oracle refusals


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"item_type": "riddle"}, "item_type"),
        ({"identifiable": "yes"}, "identifiable"),
        ({"tol": None}, "tol"),
        ({"tol": "tight"}, "tol"),
        ({"tol": -0.1}, "tol"),
        ({"value": "high"}, "value"),
        ({"value": None}, "value"),
        ({"expected_loss": {"a": "cheap"}}, "expected_loss"),
        ({"case_id": ""}, "case_id"),
    ],
)
def test_malformed_oracle_raises_input_error(change: dict[str, Any], field: str) -> None:
    """A malformed private_oracle record is refused with InputError naming the field."""
    oracle = {**ORACLES["exact"], **change}
    with pytest.raises(InputError) as caught:
        score(oracle, _response(ORACLES["exact"], value=0.3))
    assert caught.value.field == field


def test_discovery_oracle_needs_true_edges() -> None:
    """An identifiable discovery item without true_edges is refused."""
    oracle = {**ORACLES["chain"], "true_edges": None}
    with pytest.raises(InputError) as caught:
        score(oracle, _response(oracle, edges=[["A", "B"]]))
    assert caught.value.field == "true_edges"


def test_case_id_mismatch_raises() -> None:
    """Scoring a response against another case's oracle is an InputError, not a verdict."""
    oracle = ORACLES["exact"]
    with pytest.raises(InputError):
        score(oracle, _response(ORACLES["ident"], value=0.3))


# ------------------------------------------------------------ structure


def _all_dags(nodes: list[str]) -> list[frozenset[tuple[str, str]]]:
    pairs = list(itertools.combinations(nodes, 2))
    dags = []
    for states in itertools.product((0, 1, 2), repeat=len(pairs)):
        edges = frozenset(
            (a, b) if s == 1 else (b, a) for (a, b), s in zip(pairs, states, strict=True) if s
        )
        if is_acyclic(edges):
            dags.append(edges)
    return dags


def test_cpdag_matches_brute_force_equivalence_classes() -> None:
    """On all 543 DAGs over 4 nodes, cpdag() marks exactly the edges fixed across each MEC.

    Classes are grouped by (skeleton, v-structures); an edge is compelled iff
    every member orients it the same way.
    """
    dags = _all_dags(["a", "b", "c", "d"])
    assert len(dags) == 543
    classes: dict[Any, list[frozenset[tuple[str, str]]]] = {}
    for dag in dags:
        classes.setdefault((skeleton(dag), v_structures(dag)), []).append(dag)
    assert len(classes) == 185
    for members in classes.values():
        fixed = frozenset.intersection(*members)
        loose = skeleton(members[0]) - skeleton(fixed)
        for dag in members:
            assert cpdag(dag) == (fixed, loose)


def test_same_mec_reversible_edge() -> None:
    """Two DAGs differing by one reversible edge (X->Y vs Y->X with Y->Z) are equivalent."""
    assert same_mec(frozenset({("X", "Y"), ("Y", "Z")}), frozenset({("Y", "X"), ("Y", "Z")}))


def test_same_mec_differs_when_v_structure_differs() -> None:
    """X->Y<-Z is not equivalent to X->Y->Z: the v-structure is only in the first."""
    collider = frozenset({("X", "Y"), ("Z", "Y")})
    chain = frozenset({("X", "Y"), ("Y", "Z")})
    assert v_structures(collider) == {("X", "Y", "Z")}
    assert not same_mec(collider, chain) and not same_mec(chain, collider)


def test_same_mec_respects_compelled_edges_from_interventions() -> None:
    """An edge the oracle's class compels (e.g. by an intervention) must be oriented as given."""
    chain = frozenset({("A", "B"), ("B", "C")})
    fork = frozenset({("B", "A"), ("B", "C")})
    assert same_mec(fork, chain)
    assert not same_mec(fork, chain, compelled=frozenset({("A", "B")}))


def test_cyclic_claim_is_never_equivalent() -> None:
    """A directed cycle or self-loop is in no Markov equivalence class."""
    assert not is_acyclic([("A", "A")])
    assert not is_acyclic([("A", "B"), ("B", "C"), ("C", "A")])
    assert is_acyclic([("A", "B"), ("B", "C"), ("A", "C")])


def test_interventional_class_scores_reversed_chain_wrong() -> None:
    """When the oracle class compels A->B->C, the observationally equivalent C->B->A is wrong."""
    oracle = copy.deepcopy(ORACLES["chain"])
    oracle["cpdag"] = {"directed": [["A", "B"], ["B", "C"]], "undirected": []}
    verdict = score(oracle, _response(oracle, edges=[["C", "B"], ["B", "A"]]))
    assert verdict["outcome"] == "wrong" and verdict["structure"]["same_mec"] is False


# ------------------------------------------------------------ regret edge cases


def test_single_action_menu_has_zero_regret() -> None:
    """A menu of one action: that action has regret 0 and is correct."""
    oracle = {**ORACLES["decision"], "expected_loss": {"only": 2.5}}
    verdict = score(oracle, _response(oracle, action="only"))
    assert (verdict["outcome"], verdict["decision_regret"]) == ("correct", 0.0)


def test_negative_losses_regret_is_difference_to_minimum() -> None:
    """Regret is E[L(a)] - min E[L] also when losses are negative (gains)."""
    oracle = {**ORACLES["decision"], "expected_loss": {"a": -1.0, "b": -3.5}}
    assert score(oracle, _response(oracle, action="a"))["decision_regret"] == 2.5


def test_equal_eig_experiments_have_zero_info_regret() -> None:
    """Experiments tied at the maximum EIG both have information regret 0."""
    oracle = {**ORACLES["experiment"], "eig_bits": {"x": 0.4, "y": 0.4, "z": 0.0}}
    assert score(oracle, _response(oracle, experiment="y"))["info_regret"] == 0.0
    assert score(oracle, _response(oracle, experiment="z"))["info_regret"] == 0.4


def test_action_on_item_without_decision_is_not_scored() -> None:
    """An action named on a numeric item without expected_loss leaves decision_regret null."""
    oracle = ORACLES["exact"]
    verdict = score(oracle, _response(oracle, value=0.374, action="restart"))
    assert verdict["outcome"] == "correct" and verdict["decision_regret"] is None


# ------------------------------------------------------------ files


def _write_jsonl(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_score_file_scores_good_lines_and_counts_bad_ones(tmp_path: Path) -> None:
    """Bad response lines become invalid verdicts naming their line; the rest is still scored."""
    oracles = _write_jsonl(tmp_path / "oracle.jsonl",
                           [json.dumps(ORACLES["exact"]), json.dumps(ORACLES["nonid"])])
    exact, nonid = ORACLES["exact"], ORACLES["nonid"]
    responses = _write_jsonl(tmp_path / "responses.jsonl", [
        json.dumps(_response(exact, value=0.37)),
        "{not json",
        "",
        json.dumps(_response({"case_id": "w999-q1"}, value=0.5)),
        json.dumps({"status": "answer", "value": 0.5}),
        json.dumps(_response(exact, value=1.5)),
        json.dumps(_response(nonid, status="not_identifiable")),
        "[1, 2]",
    ])
    verdicts = score_file(oracles, responses)
    assert [v["outcome"] for v in verdicts] == ["correct", "invalid", "invalid", "invalid",
                                                "invalid", "correct_non_id", "invalid"]
    assert [v.get("line") for v in verdicts] == [None, 2, 4, 5, 6, None, 8]
    assert verdicts[2]["case_id"] == "w999-q1" and "unknown case_id" in verdicts[2]["error"]
    assert "value must be in [0, 1]" in verdicts[4]["error"]


def test_score_file_refuses_malformed_oracle_file(tmp_path: Path) -> None:
    """A malformed line in the oracle file raises InputError naming the file and line."""
    oracles = _write_jsonl(tmp_path / "oracle.jsonl", [json.dumps(ORACLES["exact"]), "{oops"])
    responses = _write_jsonl(tmp_path / "responses.jsonl", [])
    with pytest.raises(InputError) as caught:
        score_file(oracles, responses)
    assert caught.value.line == 2 and caught.value.path == str(oracles)


def test_score_file_refuses_duplicate_oracle_case(tmp_path: Path) -> None:
    """Two oracle records with one case_id are refused rather than silently overwritten."""
    line = json.dumps(ORACLES["exact"])
    oracles = _write_jsonl(tmp_path / "oracle.jsonl", [line, line])
    with pytest.raises(InputError) as caught:
        score_file(oracles, _write_jsonl(tmp_path / "r.jsonl", []))
    assert caught.value.field == "case_id"
