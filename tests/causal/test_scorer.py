"""Tests for rungbench.causal.scorer (CONTRACTS §3 outcome rules and response-file parsing)."""

from __future__ import annotations

import json
import math
import pathlib
from importlib import resources
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rungbench.causal.records import AgentResponse, PrivateOracle
from rungbench.causal.scorer import load_oracles, score, score_dict, score_file, score_lines
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
