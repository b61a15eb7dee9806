"""Tests for causal.bench.scorer (CONTRACTS §3 outcome rules and response-file parsing)."""

from __future__ import annotations

import json
import math
import pathlib
from importlib import resources
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rungbench.causal.bench.records import AgentResponse, PrivateOracle
from rungbench.causal.bench.scorer import (
    load_oracles,
    parse_response_line,
    score,
    score_dict,
    score_file,
    score_lines,
)
from rungbench.errors import InputError


def _cases() -> list[dict[str, Any]]:
    text = resources.files("rungbench.causal").joinpath("data/response_cases.json").read_text()
    cases: list[dict[str, Any]] = json.loads(text)["cases"]
    return cases


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(a, b, abs_tol=1e-9)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


@pytest.mark.parametrize("case", _cases(), ids=lambda c: c["response"]["case_id"])
def test_hand_case_verdict(case: dict[str, Any]) -> None:
    """Every hand-written response case gets exactly its expected verdict."""
    got = score_dict(case["oracle"], case["response"])
    got.pop("error")
    assert _same(got, case["expected"]), (case["note"], got)


def _oracle(cid: str) -> PrivateOracle:
    return PrivateOracle.model_validate(
        {"case_id": cid, "world_id": "w1", "family": "f", "structure": "s", "skin": "linux",
         "item_type": "exact", "rung": 2, "estimand": "e", "scm_hash": "h", "seed": 1,
         "identifiable": True, "value": 0.5}
    )


def _line(cid: str, **kw: Any) -> str:
    return json.dumps({"case_id": cid, "arm": "a", "status": "answer", **kw})


def test_bad_lines_are_invalid_and_rest_scored() -> None:
    """Malformed JSON, missing field, unknown id, value > 1: invalid lines; the rest scored."""
    oracles = {c: _oracle(c) for c in ("c1", "c2")}
    lines = [
        _line("c1", value=0.5),
        "{not json",
        json.dumps({"case_id": "c1", "status": "answer", "value": 0.5}),
        _line("zz", value=0.5),
        _line("c2", value=1.5),
        "",
        _line("c2", value=0.9),
    ]
    scored = score_lines(lines, oracles, "resp.jsonl")
    outcomes = [(s.line, s.verdict.outcome) for s in scored]
    assert outcomes == [(1, "correct"), (2, "invalid"), (3, "invalid"), (4, "invalid"),
                        (5, "invalid"), (7, "wrong")]
    errors = [s.verdict.error or "" for s in scored]
    assert errors[1].startswith("resp.jsonl:2: malformed JSON")
    assert "resp.jsonl:3:" in errors[2] and "'arm'" in errors[2]
    assert "resp.jsonl:4: unknown case id 'zz'" in errors[3]
    assert "resp.jsonl:5: value 1.5 outside [0, 1]" in errors[4]


def test_score_file_and_load_oracles(tmp_path: pathlib.Path) -> None:
    """Files round-trip: oracles load by case id; a bad oracle line raises naming the line."""
    opath = tmp_path / "oracle.jsonl"
    opath.write_text(_oracle("c1").model_dump_json() + "\n")
    rpath = tmp_path / "r.jsonl"
    rpath.write_text(_line("c1", value=0.51) + "\n")
    scored = score_file(rpath, load_oracles(opath))
    assert [s.verdict.outcome for s in scored] == ["correct"]
    opath.write_text(_oracle("c1").model_dump_json() + "\n{}\n")
    with pytest.raises(InputError, match=r"oracle.jsonl:2"):
        load_oracles(opath)


_STATUSES = st.sampled_from(["answer", "not_identifiable", "abstain", "need_info"])
_UNIT = st.floats(0.0, 1.0, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(ref=_UNIT, identifiable=st.booleans(), status=_STATUSES,
       value=st.none() | st.floats(-0.5, 1.5, allow_nan=False),
       confidence=st.none() | _UNIT)
def test_outcome_cells_are_exclusive_and_consistent(
    ref: float, identifiable: bool, status: str, value: float | None, confidence: float | None
) -> None:
    """Each response lands in one cell; correct iff within tau; Brier only for graded cells."""
    o = _oracle("c1").model_copy(update={"identifiable": identifiable,
                                         "value": ref if identifiable else None})
    r = AgentResponse(case_id="c1", arm="a", status=status, value=value,  # type: ignore[arg-type]
                      confidence=confidence)
    v = score(o, r)
    if value is not None and not 0.0 <= value <= 1.0:
        assert v.outcome == "invalid"
    elif status in ("abstain", "need_info"):
        assert v.outcome == "abstain"
    elif status == "not_identifiable":
        assert v.outcome == ("false_non_id" if identifiable else "correct_non_id")
    elif value is None:
        assert v.outcome == "invalid"
    elif not identifiable:
        assert v.outcome == "false_answer_on_non_id" and v.abs_error is None
    else:
        assert v.abs_error is not None
        assert (v.outcome == "correct") == (abs(value - ref) <= 0.02 + 1e-12)
    graded = v.outcome not in ("abstain", "invalid")
    assert (v.brier is not None) == (graded and confidence is not None)


# --- CONTRACTS §3 "Conventions" -------------------------------------------------------------


def _item(cid: str, **fields: Any) -> dict[str, Any]:
    base = {"case_id": cid, "world_id": "w1", "family": "f", "structure": "s", "skin": "linux",
            "item_type": "exact", "rung": 2, "estimand": "e", "scm_hash": "h", "seed": 1,
            "identifiable": True, "value": None}
    return {**base, **fields}


_CHAIN = _item("d1", item_type="discovery", rung=1, true_edges=[["A", "B"], ["B", "C"]],
               cpdag={"directed": [], "undirected": [["A", "B"], ["B", "C"]]})
_EXPERIMENT = _item("x1", eig_bits={"exp_a": 0.62, "exp_b": 0.11})
_DECISION = _item("a1", expected_loss={"set_swap": 3.1, "rollback": 5.0})


def _resp(cid: str, **fields: Any) -> dict[str, Any]:
    return {"case_id": cid, "arm": "a", "status": "answer", **fields}


@pytest.mark.parametrize("fields", [{"value": "0.5"}, {"value": True},
                                    {"value": 0.5, "confidence": "0.9"},
                                    {"value": 0.5, "confidence": False}])
def test_non_number_numeric_field_is_invalid(fields: dict[str, Any]) -> None:
    """Convention 1: a value or confidence that is not a JSON number is invalid, not coerced."""
    v = score_dict(_item("c1", value=0.5), _resp("c1", **fields))
    assert v["outcome"] == "invalid" and "not a JSON number" in v["error"]
    assert all(v[k] is None for k in ("abs_error", "brier", "structure"))


def test_non_number_bounds_and_file_lines_are_invalid() -> None:
    """Convention 1: string bounds ends are invalid; in a file the line and field are named."""
    bounds_item = _item("b1", item_type="cf_no_mechanism", rung=3, bounds=[0.2, 0.6])
    assert score_dict(bounds_item, _resp("b1", bounds=["0.2", 0.6]))["outcome"] == "invalid"
    assert score_dict(bounds_item, _resp("b1", bounds=[0.2, 0.6]))["outcome"] == "correct"
    oracles = {"c1": _oracle("c1")}
    scored = score_lines([_line("c1", value="0.5"), _line("c1", value=0.5)], oracles, "r.jsonl")
    assert [s.verdict.outcome for s in scored] == ["invalid", "correct"]
    assert "r.jsonl:1:" in (scored[0].verdict.error or "")
    assert "'0.5' is not a JSON number" in (scored[0].verdict.error or "")


@pytest.mark.parametrize(("status", "outcome"), [("abstain", "abstain"),
                                                 ("need_info", "abstain"),
                                                 ("not_identifiable", "false_non_id")])
def test_edges_get_structure_whatever_the_status(status: str, outcome: str) -> None:
    """Convention 2: discovery edges give structure under any status; the status sets outcome."""
    v = score_dict(_CHAIN, _resp("d1", status=status, edges=[["A", "B"]]))
    assert v["outcome"] == outcome
    assert v["structure"] == {"precision": 1.0, "recall": 0.5, "f1": pytest.approx(2 / 3),
                              "reversed": 0, "same_mec": False}
    assert score_dict(_CHAIN, _resp("d1", status=status))["structure"] is None


def test_structure_reported_on_non_identifiable_discovery_answer() -> None:
    """Convention 2: an answer on a non-identifiable discovery item keeps its structure."""
    v = score_dict({**_CHAIN, "identifiable": False},
                   _resp("d1", edges=[["B", "A"], ["C", "B"]], confidence=0.5))
    assert v["outcome"] == "false_answer_on_non_id" and v["brier"] == 0.25
    assert v["structure"]["same_mec"] is True and v["structure"]["reversed"] == 2


@pytest.mark.parametrize("status", ["need_info", "abstain", "not_identifiable"])
def test_experiment_gets_info_regret_whatever_the_status(status: str) -> None:
    """Convention 3: a named experiment gets info_regret = max EIG - EIG(x) under any status."""
    v = score_dict(_EXPERIMENT, _resp("x1", status=status, experiment="exp_b"))
    assert v["outcome"] in ("abstain", "false_non_id")
    assert v["info_regret"] == pytest.approx(0.51)
    assert score_dict(_EXPERIMENT, _resp("x1", status=status))["info_regret"] is None


def test_action_regret_and_unknown_choices_whatever_the_status() -> None:
    """Convention 3: abstain with an action has decision_regret; an unknown choice is invalid."""
    v = score_dict(_DECISION, _resp("a1", status="abstain", action="rollback"))
    assert v["outcome"] == "abstain" and v["decision_regret"] == pytest.approx(1.9)
    bad_x = score_dict(_EXPERIMENT, _resp("x1", status="need_info", experiment="exp_z"))
    assert bad_x["outcome"] == "invalid" and "exp_z" in bad_x["error"]
    bad_a = score_dict(_DECISION, _resp("a1", status="abstain", action="reboot"))
    assert bad_a["outcome"] == "invalid" and bad_a["decision_regret"] is None


def test_structure_division_by_zero_gives_zero() -> None:
    """Convention 4: no claimed edges gives precision 0; no true edges gives recall 0."""
    empty_claim = score_dict(_CHAIN, _resp("d1", edges=[]))["structure"]
    assert empty_claim == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "reversed": 0,
                           "same_mec": False}
    empty_truth = _item("d2", item_type="discovery", rung=1, true_edges=[],
                        cpdag={"directed": [], "undirected": []})
    v = score_dict(empty_truth, _resp("d2", edges=[["A", "B"]]))
    assert v["outcome"] == "wrong"
    assert v["structure"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "reversed": 0,
                              "same_mec": False}
    both_empty = score_dict(empty_truth, _resp("d2", edges=[]))
    assert both_empty["outcome"] == "correct"
    assert both_empty["structure"]["precision"] == 0.0 == both_empty["structure"]["recall"]


_BOUNDS_ITEM = _item("b1", item_type="cf_no_mechanism", rung=3, bounds=[0.2, 0.6])
_VALUE_ITEM = _item("c1", value=0.5)


@pytest.mark.parametrize("oracle", [_BOUNDS_ITEM, _VALUE_ITEM, _CHAIN, _EXPERIMENT, _DECISION],
                         ids=lambda o: o["case_id"])
@pytest.mark.parametrize("status", ["answer", "not_identifiable", "abstain", "need_info"])
@pytest.mark.parametrize("bounds", [[0.6, 0.2], [-0.1, 0.5], [0.3, 1.2]])
def test_malformed_bounds_are_invalid_anywhere(
    oracle: dict[str, Any], status: str, bounds: list[float]
) -> None:
    """Convention 5: reversed or out-of-range bounds are invalid under any status, on any item."""
    fields = {"status": status, "bounds": bounds, "value": 0.5, "confidence": 0.7,
              "edges": [["A", "B"]], "experiment": "exp_a", "action": "set_swap"}
    v = score_dict(oracle, _resp(oracle["case_id"], **fields))
    assert v["outcome"] == "invalid" and "not an interval in [0, 1]" in v["error"]
    assert all(v[k] is None for k in ("abs_error", "brier", "structure", "decision_regret",
                                      "info_regret"))
    fine = score_dict(oracle, _resp(oracle["case_id"], **{**fields, "bounds": [0.2, 0.6]}))
    assert fine["outcome"] != "invalid"


def test_malformed_bounds_line_names_line_and_field() -> None:
    """In a response file, a reversed-bounds abstention is invalid naming its line; rest scored."""
    oracles = {"c1": _oracle("c1")}
    lines = [_line("c1", status="abstain", bounds=[0.6, 0.2]), _line("c1", value=0.5)]
    scored = score_lines(lines, oracles, "r.jsonl")
    assert [s.verdict.outcome for s in scored] == ["invalid", "correct"]
    assert (scored[0].verdict.error or "").startswith("r.jsonl:1: bounds [0.6, 0.2]")
    with pytest.raises(InputError) as exc:
        parse_response_line(lines[0], 1, oracles, "r.jsonl")
    assert exc.value.field == "bounds" and exc.value.line == 1


def test_edge_listed_both_ways_is_not_counted_as_reversed() -> None:
    """A true edge answered in both directions is not "reversed"; one answered only backwards is."""
    v = score_dict(_CHAIN, _resp("d1", edges=[["A", "B"], ["B", "A"], ["C", "B"]]))
    assert v["structure"]["reversed"] == 1
    assert v["structure"]["same_mec"] is False
