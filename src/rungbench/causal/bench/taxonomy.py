"""Mechanical failure labels (seed 003 "Failure taxonomy").

"The rung-confusion labels are detectable mechanically because the oracle
computes the rung-1, rung-2, resampled and abduced values for every item; a
response matching the wrong one within τ gets that label." A label is assigned
only by such a match (or by the item's witness-backed non-identifiability, or by
the stated confidence); a wrong answer with no matching mechanism is
``unexplained``. Correct, abstained and invalid verdicts get no label.
"""

from __future__ import annotations

from rungbench.causal.bench.records import AgentResponse, PrivateOracle, Verdict
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
