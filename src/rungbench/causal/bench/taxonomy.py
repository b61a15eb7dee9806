"""Mechanical failure labels (seed 003 "Failure taxonomy").

"The rung-confusion labels are detectable mechanically because the oracle
computes the rung-1, rung-2, resampled and abduced values for every item; a
response matching the wrong one within τ gets that label." A label is assigned
only by such a match (or by the item's witness-backed non-identifiability, or by
the stated confidence); a wrong answer with no matching mechanism is
``unexplained``. Correct, abstained and invalid verdicts get no label.
"""

from __future__ import annotations

from rungbench.causal.bench.records import (
    AgentResponse,
    EpisodeOracle,
    EpisodeVerdict,
    PrivateOracle,
    Verdict,
)
from rungbench.causal.bench.scorer import within

OBS_INT = "observation_intervention_confusion"
INT_CF = "intervention_counterfactual_confusion"
NOISE_REUSE = "incorrect_noise_reuse"
NON_ID_IGNORED = "non_identifiability_ignored"
UNSUPPORTED_CERTAINTY = "unsupported_certainty"
UNEXPLAINED = "unexplained"

LABELS: tuple[str, ...] = (
    OBS_INT,
    INT_CF,
    NOISE_REUSE,
    NON_ID_IGNORED,
    UNSUPPORTED_CERTAINTY,
    UNEXPLAINED,
)
"""Every label, in report order."""

CERTAINTY = 0.9
"""Confidence at or above which a wrong answer is unsupported certainty (seed 003)."""

_FAILED = {"wrong", "false_answer_on_non_id", "false_non_id"}


def answered_point(response: AgentResponse) -> float | None:
    """Return the single number an answer commits to (a value, or degenerate bounds)."""
    if response.value is not None:
        return response.value
    if response.bounds is not None and response.bounds[0] == response.bounds[1]:
        return response.bounds[0]
    return None


def _matches_confusion(
    point: float, confused: float | None, oracle: PrivateOracle
) -> bool:
    """Return whether ``point`` matches the confused value and the correct value does not."""
    if confused is None:
        return False
    if oracle.identifiable and oracle.value is not None and within(
        oracle.value, confused, oracle.tol
    ):
        return False
    return within(point, confused, oracle.tol)


def rung_labels(oracle: PrivateOracle, response: AgentResponse) -> list[str]:
    """Return the rung-confusion labels whose confused value the answer matches."""
    point = answered_point(response)
    if point is None or oracle.rung == 1:
        return []
    c = oracle.confusions
    out = []
    if _matches_confusion(point, c.rung1, oracle):
        out.append(OBS_INT)
    if oracle.rung == 3 and _matches_confusion(point, c.rung2_population, oracle):
        out.append(INT_CF)
    if oracle.rung == 3 and _matches_confusion(point, c.resampled, oracle):
        out.append(NOISE_REUSE)
    return out


def failure_labels(
    oracle: PrivateOracle, response: AgentResponse | None, verdict: Verdict
) -> list[str]:
    """Return every label that applies to a failed verdict; ``[]`` for other outcomes."""
    if verdict.outcome not in _FAILED or response is None:
        return []
    labels = rung_labels(oracle, response) if response.status == "answer" else []
    if not oracle.identifiable and response.status == "answer":
        labels.append(NON_ID_IGNORED)
    if response.confidence is not None and response.confidence >= CERTAINTY:
        labels.append(UNSUPPORTED_CERTAINTY)
    return labels or [UNEXPLAINED]


# ------------------------------------------------ episode families (records/2)

SYMPTOM_ROOT_CAUSE = "symptom_root_cause_confusion"
EXPERIMENT_AVOIDANCE = "experiment_avoidance"
COSTLY_IRRELEVANT = "costly_irrelevant_experiment"
SOURCE_DUPLICATION = "source_duplication"
STALE_MECHANISM = "stale_mechanism"
NEGATIVE_EVIDENCE = "negative_evidence_misread"
OMITTED_JOINT_CAUSE = "omitted_joint_cause"

EPISODE_LABELS: tuple[str, ...] = (
    SYMPTOM_ROOT_CAUSE, OMITTED_JOINT_CAUSE, EXPERIMENT_AVOIDANCE, COSTLY_IRRELEVANT,
    SOURCE_DUPLICATION, STALE_MECHANISM, NEGATIVE_EVIDENCE, UNSUPPORTED_CERTAINTY, UNEXPLAINED,
)
"""Labels of the episode families, in report order (seed 003 "Failure taxonomy";
``negative_evidence_misread`` is this project's: an absent alarm read as evidence where
the sensor does not cover or the delay has not passed, or ignored where it has)."""

EPISODE_FAILED = frozenset({"lucky", "consistent_unjustified", "wrong", "false_non_id"})
"""Records/2 outcomes that count as failures (lucky: right cause, unjustified)."""

_EIG_ZERO = 1e-9


def episode_failure_labels(oracle: EpisodeOracle, response: AgentResponse | None,
                           verdict: EpisodeVerdict) -> list[str]:
    """Every label that applies to a failed records/2 verdict; ``[]`` for other outcomes.

    Each label is licensed by a mechanical match (seed 003): experiment avoidance —
    committed (a cause, or ``act_now``) while the identified set has ≥ 2 members and a
    discriminating probe exists; costly irrelevant experiment — ran a probe with EIG 0
    over the live set; symptom/root-cause confusion — named a telemetry node downstream
    of the true cause; stale mechanism — named a cause only the superseded mechanism
    allows; omitted joint cause — named alone one component of a live joint hypothesis
    (interaction world), which alone cannot produce the outage; source duplication /
    negative-evidence misread — the value matches the confused twin's posterior within
    tol while the true value does not.
    """
    if verdict.outcome not in EPISODE_FAILED or response is None:
        return []
    labels: list[str] = []
    live = oracle.identified_set or []
    probes = oracle.discriminating or []
    if oracle.item_type == "diagnosis" and response.status == "answer":
        stale = oracle.alt_causes.get(STALE_MECHANISM, [])
        if response.label in stale and response.label not in live:
            labels.append(STALE_MECHANISM)
        omitted = oracle.alt_causes.get(OMITTED_JOINT_CAUSE, [])
        if response.label in omitted and response.label not in live:
            labels.append(OMITTED_JOINT_CAUSE)
        if response.label in (oracle.descendants or []):
            labels.append(SYMPTOM_ROOT_CAUSE)
        if len(live) >= 2 and probes:
            labels.append(EXPERIMENT_AVOIDANCE)
    if oracle.item_type == "experiment" and response.experiment is not None:
        eig = (oracle.eig_bits or {}).get(response.experiment, 0.0)
        if response.experiment == "act_now":
            if len(live) >= 2 and probes:
                labels.append(EXPERIMENT_AVOIDANCE)
        elif eig <= _EIG_ZERO:
            labels.append(COSTLY_IRRELEVANT)
    if oracle.item_type == "posterior" and response.value is not None:
        for label, confused in sorted(oracle.alt_values.items()):
            truth_apart = oracle.value is None or not within(oracle.value, confused, oracle.tol)
            if truth_apart and within(response.value, confused, oracle.tol):
                labels.append(label)
    if response.confidence is not None and response.confidence >= CERTAINTY:
        labels.append(UNSUPPORTED_CERTAINTY)
    return labels or [UNEXPLAINED]
