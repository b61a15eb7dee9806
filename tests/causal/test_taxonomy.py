"""Tests for rungbench.causal.taxonomy (mechanical failure labels)."""

from __future__ import annotations

from typing import Any

from rungbench.causal.records import AgentResponse, PrivateOracle
from rungbench.causal.scorer import score
from rungbench.causal.taxonomy import (
    INT_CF,
    NOISE_REUSE,
    NON_ID_IGNORED,
    OBS_INT,
    UNEXPLAINED,
    UNSUPPORTED_CERTAINTY,
    failure_labels,
)


def _oracle(**kw: Any) -> PrivateOracle:
    base = {"case_id": "c", "world_id": "w", "family": "f", "structure": "s", "skin": "linux",
            "item_type": "exact", "rung": 3, "estimand": "e", "scm_hash": "h", "seed": 1,
            "identifiable": True, "value": 0.8,
            "confusions": {"rung1": 0.6, "rung2_population": 0.5, "resampled": 0.3}}
    return PrivateOracle.model_validate({**base, **kw})


def _labels(o: PrivateOracle, **kw: Any) -> list[str]:
    r = AgentResponse.model_validate({"case_id": "c", "arm": "a", "status": "answer", **kw})
    return failure_labels(o, r, score(o, r))


def test_each_confused_value_gets_its_label() -> None:
    """Answers equal (within tau) to the rung-1, rung-2 and resampled values get those labels."""
    o = _oracle()
    assert _labels(o, value=0.61) == [OBS_INT]
    assert _labels(o, value=0.5) == [INT_CF]
    assert _labels(o, value=0.29) == [NOISE_REUSE]
    assert _labels(o, value=0.1) == [UNEXPLAINED]


def test_no_label_when_correct_value_coincides_with_confusion() -> None:
    """If the confused value is within tau of the truth, matching it is not a confusion."""
    o = _oracle(value=0.51, confusions={"rung1": None, "rung2_population": 0.5, "resampled": None})
    assert _labels(o, value=0.2) == [UNEXPLAINED]
    assert _labels(o, value=0.5) == []


def test_rung2_item_never_gets_counterfactual_labels() -> None:
    """On a rung-2 item only the rung-1 confusion can apply."""
    o = _oracle(rung=2)
    assert _labels(o, value=0.5) == [UNEXPLAINED]
    assert _labels(o, value=0.6) == [OBS_INT]


def test_non_id_and_certainty_labels() -> None:
    """A value on a non-ID item is non-identifiability ignored; confidence >= 0.9 adds certainty."""
    o = _oracle(identifiable=False, value=None, item_type="identification", rung=2)
    assert _labels(o, value=0.6, confidence=0.95) == [OBS_INT, NON_ID_IGNORED,
                                                      UNSUPPORTED_CERTAINTY]
    assert _labels(o, value=0.1, confidence=0.89) == [NON_ID_IGNORED]
    r = AgentResponse(case_id="c", arm="a", status="not_identifiable")
    assert failure_labels(o, r, score(o, r)) == []


def test_abstain_and_invalid_get_no_label() -> None:
    """Abstentions and invalid answers are their own cells, not failures to explain."""
    o = _oracle()
    assert _labels(o) == []
    r = AgentResponse(case_id="c", arm="a", status="abstain", confidence=1.0)
    assert failure_labels(o, r, score(o, r)) == []
