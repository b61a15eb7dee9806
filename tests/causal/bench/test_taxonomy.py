"""Tests for rungbench.causal.bench.taxonomy (mechanical failure labels)."""

from __future__ import annotations

from typing import Any

from rungbench.causal.bench.records import AgentResponse, PrivateOracle
from rungbench.causal.bench.scorer import score
from rungbench.causal.bench.taxonomy import (
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


def test_wrong_answer_near_a_confusion_that_equals_the_truth_is_unexplained() -> None:
    """Truth 0.51, rung-2 value 0.50: a wrong 0.485 is within tau of 0.50 but gets no INT_CF."""
    o = _oracle(value=0.51, confusions={"rung1": None, "rung2_population": 0.5, "resampled": None})
    assert _labels(o, value=0.485) == [UNEXPLAINED]


def test_answered_point_takes_only_degenerate_bounds() -> None:
    """A value is the point; bounds [0.3, 0.3] commit to 0.3; bounds [0.2, 0.4] commit to none."""
    from rungbench.causal.bench.taxonomy import answered_point

    def resp(**kw: Any) -> AgentResponse:
        return AgentResponse.model_validate({"case_id": "c", "arm": "a", "status": "answer", **kw})

    assert answered_point(resp(value=0.7)) == 0.7
    assert answered_point(resp(bounds=[0.3, 0.3])) == 0.3
    assert answered_point(resp(bounds=[0.2, 0.4])) is None


def test_confidence_exactly_at_threshold_is_unsupported_certainty() -> None:
    """Confidence 0.9 (= CERTAINTY, inclusive) on a wrong answer is unsupported certainty."""
    assert _labels(_oracle(), value=0.1, confidence=0.9) == [UNSUPPORTED_CERTAINTY]
    assert _labels(_oracle(), value=0.1, confidence=0.89) == [UNEXPLAINED]


def test_rung1_item_gets_no_rung_confusion_label() -> None:
    """A rung-1 item cannot confuse rungs: a wrong answer at its rung1 value is unexplained."""
    o = _oracle(rung=1, confusions={"rung1": 0.6, "rung2_population": None, "resampled": None})
    assert _labels(o, value=0.6) == [UNEXPLAINED]


def test_false_non_id_verdict_is_labelled() -> None:
    """Claiming non-ID on an identifiable item is a failure: unexplained, or certainty."""
    o = _oracle()
    assert _labels(o, status="not_identifiable") == [UNEXPLAINED]
    assert _labels(o, status="not_identifiable", confidence=0.95) == [UNSUPPORTED_CERTAINTY]


def test_episode_hand_cases_carry_their_written_labels() -> None:
    """Hand cases that state their taxonomy labels get exactly those (omitted joint cause …)."""
    import json
    from importlib.resources import files

    from rungbench.causal.bench.episode_scorer import score_episode_case
    from rungbench.causal.bench.records import EpisodeOracle
    from rungbench.causal.bench.taxonomy import episode_failure_labels

    doc = json.loads((files("rungbench.causal") / "data" / "episode_hand_cases.json").read_text())
    stated = [c for c in doc["cases"] if "labels" in c]
    assert len(stated) >= 5 and any("omitted_joint_cause" in c["labels"] for c in stated)
    for c in stated:
        o = EpisodeOracle.model_validate(doc["oracles"][c["oracle"]])
        r = AgentResponse.model_validate({"case_id": o.case_id, "arm": "hand", "claim_text": "",
                                          "t": "2026-10-03T00:00:00Z", **c["response"]})
        labels = episode_failure_labels(o, r, score_episode_case(o, r))
        assert sorted(labels) == sorted(c["labels"]), c["name"]
