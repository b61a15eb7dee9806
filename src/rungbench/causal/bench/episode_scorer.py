"""The first scorer for the episode families (records/2; seed 003 "Deterministic scorer").

Diagnosis items (root-cause debugging, each revision stage) — the named cause is
``label``; the oracle's identified set decides (seed 003: "only the oracle's
identified set decides"):

=====================  ==========================================================
correct                named the true cause and the identified set is that cause alone
lucky                  named the true cause, the identified set holds several causes
consistent_unjustified named a cause in the identified set that is not the true one
justified_abstain      abstain / need_info / not_identifiable while the set holds ≥ 2
abstain                abstain / need_info / not_identifiable on a uniquely identified cause
wrong                  named a cause outside the identified set (a symptom node included)
=====================  ==========================================================

Experiment items: ``correct`` iff the named experiment has zero information regret.
Posterior items (provenance, negative evidence): a value within tol is ``correct``.
``decision_regret`` (a named repair), ``info_regret`` and ``experiment_regret``
(a named experiment) are reported whatever the status; a repair or experiment the
item does not offer is ``invalid``. Brier: (c − 1[right])², right = correct or lucky
(named the true cause) on diagnosis items, correct elsewhere; computed on every
outcome except abstentions and ``invalid``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from rungbench.causal.bench.records import (
    AgentResponse,
    EpisodeOracle,
    EpisodeOutcome,
    EpisodeVerdict,
)
from rungbench.causal.bench.scorer import SLACK, bounds_error, non_number_field
from rungbench.errors import InputError

_ABSTAIN = {"abstain", "need_info", "not_identifiable"}
_NO_BRIER = {"abstain", "justified_abstain", "invalid"}


def _unit(x: float) -> bool:
    return math.isfinite(x) and 0.0 <= x <= 1.0


def _invalid(cid: str, why: str) -> EpisodeVerdict:
    return EpisodeVerdict(case_id=cid, outcome="invalid", error=why)


def _regrets(o: EpisodeOracle, r: AgentResponse) -> dict[str, float]:
    out: dict[str, float] = {}
    if o.expected_loss is not None and r.action is not None:
        out["decision_regret"] = o.expected_loss[r.action] - min(o.expected_loss.values())
    if o.eig_bits is not None and r.experiment is not None:
        out["info_regret"] = max(o.eig_bits.values()) - o.eig_bits[r.experiment]
        if o.experiment_loss is not None:
            loss = o.experiment_loss
            out["experiment_regret"] = loss[r.experiment] - min(loss.values())
    return out


def _menu_error(o: EpisodeOracle, r: AgentResponse) -> str | None:
    if r.action is not None and (o.expected_loss is None or r.action not in o.expected_loss):
        return f"unknown action {r.action!r}"
    if r.experiment is not None and (o.eig_bits is None or r.experiment not in o.eig_bits):
        return f"unknown experiment {r.experiment!r}"
    return None


def diagnosis_outcome(o: EpisodeOracle, status: str, label: str | None) -> EpisodeOutcome:
    """The diagnosis cell of a response (status and named cause) against the identified set."""
    ident = o.identified_set or []
    if status in _ABSTAIN:
        return "justified_abstain" if len(ident) >= 2 else "abstain"
    if label == o.true_cause:
        return "correct" if len(ident) == 1 else "lucky"
    return "consistent_unjustified" if label in ident else "wrong"


def score_episode_case(o: EpisodeOracle, r: AgentResponse) -> EpisodeVerdict:
    """Return the records/2 verdict for one response."""
    cid = o.case_id
    if r.case_id != cid:
        return _invalid(r.case_id, f"response for {r.case_id!r} scored against {cid!r}")
    for name in ("value", "confidence"):
        x = getattr(r, name)
        if x is not None and not _unit(x):
            return _invalid(cid, f"{name} {x!r} outside [0, 1]")
    malformed = bounds_error(r.bounds)
    if malformed is not None:
        return _invalid(cid, malformed)
    menu = _menu_error(o, r)
    if menu is not None:
        return _invalid(cid, menu)
    metrics = _regrets(o, r)
    outcome: EpisodeOutcome
    abs_error = None
    if o.item_type == "diagnosis":
        if r.status == "answer" and r.label is None:
            return _invalid(cid, "answer without label on a diagnosis item")
        outcome = diagnosis_outcome(o, r.status, r.label)
        right = outcome in ("correct", "lucky")
    elif o.item_type == "experiment":
        if r.status in _ABSTAIN:
            outcome = "abstain"
        elif r.experiment is None:
            return _invalid(cid, "answer without experiment on an experiment item")
        else:
            outcome = "correct" if metrics["info_regret"] <= SLACK else "wrong"
        right = outcome == "correct"
    else:
        if r.status in ("abstain", "need_info"):
            outcome = "abstain"
        elif r.status == "not_identifiable":
            outcome = "false_non_id"
        elif r.value is None:
            return _invalid(cid, "answer without a value")
        else:
            if o.value is None:
                raise InputError("posterior item without a reference value", field="value")
            abs_error = abs(r.value - o.value)
            outcome = "correct" if abs_error <= o.tol + SLACK else "wrong"
        right = outcome == "correct"
    brier = None if r.confidence is None or outcome in _NO_BRIER \
        else (r.confidence - (1.0 if right else 0.0)) ** 2
    return EpisodeVerdict(case_id=cid, outcome=outcome, abs_error=abs_error, brier=brier,
                          decision_regret=metrics.get("decision_regret"),
                          info_regret=metrics.get("info_regret"),
                          experiment_regret=metrics.get("experiment_regret"))


def score_episode_dict(oracle: Mapping[str, Any], response: Mapping[str, Any]) -> dict[str, Any]:
    """Score JSON mappings of records/2 (the shape ``scorer-agreement`` compares)."""
    try:
        o = EpisodeOracle.model_validate(oracle)
    except ValidationError as exc:
        raise InputError(f"bad private_oracle: {exc.errors()[0]['msg']}") from exc
    bad = non_number_field(response)
    cid = str(response.get("case_id", o.case_id))
    if bad is not None:
        return _invalid(cid, bad[1]).model_dump(mode="json")
    try:
        r = AgentResponse.model_validate(response)
    except ValidationError as exc:
        return _invalid(cid, str(exc.errors()[0]["msg"])).model_dump(mode="json")
    return score_episode_case(o, r).model_dump(mode="json")


def score_any(oracle: Mapping[str, Any], response: Mapping[str, Any]) -> dict[str, Any]:
    """Score a records/1 or records/2 oracle record (dispatch on its ``version``)."""
    from rungbench.causal.bench.records import EPISODE_RECORDS_VERSION
    from rungbench.causal.bench.scorer import score_dict

    if oracle.get("version") == EPISODE_RECORDS_VERSION:
        return score_episode_dict(oracle, response)
    return score_dict(oracle, response)
