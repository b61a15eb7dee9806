"""Tests for rungbench.causal.bench.taxonomy (mechanical failure labels)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rungbench.causal.bench.evaluate import score_cases
from rungbench.causal.bench.records import AgentResponse, PrivateOracle, Variant
from rungbench.causal.bench.scorer import score
from rungbench.causal.bench.taxonomy import (
    ALL_LABELS,
    COLLIDER_SELECTION,
    CONFOUNDING_NEGLECT,
    CORRELATION_AS_CAUSATION,
    EPISODE_LABELS,
    INT_CF,
    LABELS,
    MECHANISM_FABRICATION,
    MEDIATOR_MISUSE,
    NOISE_REUSE,
    NON_ID_IGNORED,
    OBS_INT,
    REVERSE_CAUSATION,
    TAXONOMY,
    TEMPORAL_ORDER,
    TWIN_LABELS,
    UNEXPLAINED,
    UNSUPPORTED_CERTAINTY,
    PairMember,
    carries,
    fabricated_links,
    failure_labels,
    graph_edges,
    twin_pattern_labels,
    with_fabrication,
    with_oracle_leakage,
    with_routing_bypass,
    with_twin_label,
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


# ------------------------------------------------ the 22 labels and the twin rules

SEED_TITLES = (
    "Correlation-as-causation", "Reverse causation", "Confounding neglect",
    "Collider / selection bias", "Mediator misuse", "Temporal-order shortcut",
    "Mechanism fabrication", "Symptom / root-cause confusion", "Omitted joint cause",
    "Observation / intervention confusion", "Intervention / counterfactual confusion",
    "Incorrect noise reuse", "Non-identifiability ignored", "Source duplication",
    "Stale mechanism", "Unsupported certainty", "Experiment avoidance",
    "Costly irrelevant experiment", "Graph retrieval failure", "Routing bypass",
    "Oracle leakage", "Scorer / harness failure",
)
"""The label column of seed 003 "Failure taxonomy", copied in its order."""


def test_registry_lists_the_seeds_22_labels_in_order_with_their_evidence() -> None:
    """TAXONOMY holds the seed's 22 labels in its order, each with its evidence rule and an
    account of who assigns it; every label a taxonomy function emits is in ALL_LABELS."""
    assert tuple(f.title for f in TAXONOMY) == SEED_TITLES
    assert len({f.name for f in TAXONOMY}) == 22
    assert all(f.evidence and f.assigned_by for f in TAXONOMY)
    assert set(LABELS) | set(EPISODE_LABELS) | set(TWIN_LABELS) <= set(ALL_LABELS)
    assert ALL_LABELS[:22] == tuple(f.name for f in TAXONOMY)


def _assigner(name: str) -> object:
    """The function an ``assigned_by`` text names: a taxonomy function, or a dotted path
    under ``rungbench``."""
    import importlib

    from rungbench.causal.bench import taxonomy

    if "." not in name:
        return getattr(taxonomy, name)
    module, _, attr = name.rpartition(".")
    return getattr(importlib.import_module(f"rungbench.{module}"), attr)


def test_every_label_names_a_callable_assigner() -> None:
    """Each of the 22 entries says where it is assigned, and every function named before its
    colon exists and is callable (no entry says 'not assigned')."""
    for f in TAXONOMY:
        assert "not assigned" not in f.assigned_by, f.name
        head = f.assigned_by.split(":", 1)[0]
        for name in head.split(" / "):
            assert callable(_assigner(name.strip())), (f.name, name)


def test_bypass_and_leakage_replace_unexplained_and_keep_other_labels() -> None:
    """with_routing_bypass / with_oracle_leakage drop 'unexplained', keep the other labels in
    order, append their label once, and stack."""
    assert with_routing_bypass([UNEXPLAINED]) == ["routing_bypass"]
    assert with_routing_bypass([OBS_INT, "routing_bypass"]) == [OBS_INT, "routing_bypass"]
    assert with_oracle_leakage([]) == ["oracle_leakage"]
    assert with_oracle_leakage([UNSUPPORTED_CERTAINTY, UNEXPLAINED]) == [
        UNSUPPORTED_CERTAINTY, "oracle_leakage"]
    assert with_oracle_leakage(with_routing_bypass([UNEXPLAINED])) == [
        "routing_bypass", "oracle_leakage"]


def _member(cid: str, kind: str, label: str, outcome: str, point: float | None = None,
            confused: tuple[float, ...] = (), agrees: bool | None = None) -> PairMember:
    variant = Variant(label=label, kind=kind, parent="p", seed=1, confused=[*confused],
                      order_agrees=agrees)
    return PairMember(cid, variant, outcome, point)


@pytest.mark.parametrize(("label", "kind"), [
    (CONFOUNDING_NEGLECT, "z_removed"), (COLLIDER_SELECTION, "unconditioned"),
    (MEDIATOR_MISUSE, "m_unobserved")])
def test_value_twin_labels_need_the_confused_answer_and_the_right_twin(label: str,
                                                                      kind: str) -> None:
    """Wrong with the confused value on the item and right on the twin: the label, on the
    item. A different wrong value, or a wrong twin, shows nothing."""
    def pair(point: float, twin: str) -> dict[str, str]:
        return twin_pattern_labels([
            _member("p", "item", label, "wrong", point, confused=(0.6,)),
            _member("t", kind, label, twin, 0.3)])
    assert pair(0.61, "correct") == {"p": label}
    assert pair(0.2, "correct") == {}
    assert pair(0.61, "wrong") == {}


def test_correlation_as_causation_is_wrong_on_fork_right_where_the_edge_is_real() -> None:
    """The fork item wrong and the edge_real twin right give the label; a right item none."""
    def pair(item: str, twin: str) -> dict[str, str]:
        return twin_pattern_labels([
            _member("p", "item", CORRELATION_AS_CAUSATION, item, 0.7),
            _member("t", "edge_real", CORRELATION_AS_CAUSATION, twin, 0.7)])
    assert pair("wrong", "correct") == {"p": CORRELATION_AS_CAUSATION}
    assert pair("wrong", "wrong") == {}
    assert pair("correct", "correct") == {}
    assert pair("wrong", "missing") == {}


def test_reverse_causation_lands_on_the_reversed_twin() -> None:
    """Right on A → B and the forward reading on the reversed twin: the twin carries it."""
    def pair(item: str, point: float) -> dict[str, str]:
        return twin_pattern_labels([
            _member("p", "item", REVERSE_CAUSATION, item, 0.5),
            _member("t", "reversed", REVERSE_CAUSATION, "wrong", point, confused=(0.8,))])
    assert pair("correct", 0.79) == {"t": REVERSE_CAUSATION}
    assert pair("wrong", 0.79) == {}
    assert pair("correct", 0.4) == {}


def test_temporal_order_needs_a_right_aligned_twin_and_a_disagreeing_listing() -> None:
    """Wrong where the listing opposes the direction, right where it agrees: the label on
    every failed case whose listing disagrees; none when the aligned twin is wrong too."""
    def pair(aligned: str, item_agrees: bool) -> dict[str, str]:
        return twin_pattern_labels([
            _member("p", "item", TEMPORAL_ORDER, "wrong", agrees=item_agrees),
            _member("a", "order_aligned", TEMPORAL_ORDER, aligned, agrees=True),
            _member("o", "order_opposed", TEMPORAL_ORDER, "wrong", agrees=False)])
    assert pair("correct", False) == {"p": TEMPORAL_ORDER, "o": TEMPORAL_ORDER}
    assert pair("correct", True) == {"o": TEMPORAL_ORDER}
    assert pair("wrong", False) == {}


def test_twin_label_replaces_unexplained_and_the_label_it_refines() -> None:
    """A twin label drops ``unexplained`` and the mechanical label it refines, keeps others."""
    assert with_twin_label([OBS_INT, UNSUPPORTED_CERTAINTY], CONFOUNDING_NEGLECT) == [
        CONFOUNDING_NEGLECT, UNSUPPORTED_CERTAINTY]
    assert with_twin_label([UNEXPLAINED], MEDIATOR_MISUSE) == [MEDIATOR_MISUSE]
    assert with_twin_label([OBS_INT], COLLIDER_SELECTION) == [COLLIDER_SELECTION, OBS_INT]
    assert carries([CORRELATION_AS_CAUSATION], OBS_INT)
    assert not carries([MEDIATOR_MISUSE], OBS_INT)


def _case_oracle(cid: str, kind: str, value: float, rung1: float,
                 confused: tuple[float, ...] = ()) -> PrivateOracle:
    variant = {"label": CONFOUNDING_NEGLECT, "kind": kind, "parent": "w-q01d", "seed": 7,
               "confused": list(confused)}
    return _oracle(case_id=cid, rung=2, value=value, confusions={"rung1": rung1},
                   variant=variant)


def test_score_cases_labels_the_pair_and_leaves_a_lone_wrong_answer_unexplained() -> None:
    """Through evaluate.score_cases: P(y | x) on the item with the twin right is confounding
    neglect (not observation/intervention confusion); with the twin wrong too the item keeps
    the mechanical label, and a wrong value that is no confused reading is unexplained."""
    oracles = {"w-q01d": _case_oracle("w-q01d", "item", 0.3, 0.6, (0.6,)),
               "v-q00d": _case_oracle("v-q00d", "z_removed", 0.3, 0.3)}

    def labels(item: float, twin: float) -> list[str]:
        lines = [json.dumps({"case_id": c, "arm": "a", "status": "answer", "value": v})
                 for c, v in (("w-q01d", item), ("v-q00d", twin))]
        rows = score_cases(lines, oracles, "r.jsonl").rows
        return [lb for r in rows if r["verdict"]["case_id"] == "w-q01d" for lb in r["labels"]]
    assert labels(0.6, 0.3) == [CONFOUNDING_NEGLECT]
    assert labels(0.6, 0.9) == [OBS_INT]
    assert labels(0.9, 0.3) == [UNEXPLAINED]


def test_graph_edges_reads_every_variable_with_parents_at_any_depth() -> None:
    """Edges come from any object with a name and a parents list, mechanism or graph alike."""
    doc = {"evidence": {"payload": {"mechanism": {"variables": [
        {"name": "b", "parents": ["a"]}, {"name": "a", "parents": []}]}}},
        "graph": [{"name": "c", "parents": ["b", "x"]}], "telemetry": {"b": 1}}
    assert graph_edges(doc) == {("a", "b"), ("b", "c"), ("x", "c")}


def test_fabricated_links_are_claims_no_delivered_path_supports() -> None:
    """A delivered edge or a delivered path (a collapsed mediator) supports a claim; a
    reversed, unrelated or self-made link is fabricated, reported once in claim order."""
    delivered = {("a", "m"), ("m", "y"), ("z", "y")}
    assert fabricated_links([("a", "m"), ("a", "y")], delivered) == []
    assert fabricated_links([("y", "a"), ("z", "a"), ("y", "a")], delivered) == [
        ("y", "a"), ("z", "a")]
    assert fabricated_links([("q", "y")], set()) == [("q", "y")]
    assert with_fabrication([UNEXPLAINED]) == [MECHANISM_FABRICATION]
    assert with_fabrication([UNSUPPORTED_CERTAINTY]) == [UNSUPPORTED_CERTAINTY,
                                                         MECHANISM_FABRICATION]
