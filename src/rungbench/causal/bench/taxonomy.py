"""Failure labels (seed 003 "Failure taxonomy"): all 22 in :data:`TAXONOMY`, and who assigns each.

"The rung-confusion labels are detectable mechanically because the oracle
computes the rung-1, rung-2, resampled and abduced values for every item; a
response matching the wrong one within τ gets that label." A label is assigned
only by such a match (or by the item's witness-backed non-identifiability, or by
the stated confidence); a wrong answer with no matching mechanism is
``unexplained``. Correct, abstained and invalid verdicts get no label.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rungbench.causal.bench.records import (
    AgentResponse,
    EpisodeOracle,
    EpisodeVerdict,
    PrivateOracle,
    Variant,
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

FAILED_OUTCOMES = frozenset({"wrong", "false_answer_on_non_id", "false_non_id"})
"""Verdict outcomes that count as failures of a records/1 case."""


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
    if verdict.outcome not in FAILED_OUTCOMES or response is None:
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


# ------------------------------------------------ matched diagnostic variants (twins)

CORRELATION_AS_CAUSATION = "correlation_as_causation"
REVERSE_CAUSATION = "reverse_causation"
CONFOUNDING_NEGLECT = "confounding_neglect"
COLLIDER_SELECTION = "collider_selection_bias"
MEDIATOR_MISUSE = "mediator_misuse"
TEMPORAL_ORDER = "temporal_order_shortcut"
MECHANISM_FABRICATION = "mechanism_fabrication"
GRAPH_RETRIEVAL = "graph_retrieval_failure"
ROUTING_BYPASS = "routing_bypass"
ORACLE_LEAKAGE = "oracle_leakage"
SCORER_HARNESS = "scorer_harness_failure"

TWIN_LABELS: tuple[str, ...] = (
    CORRELATION_AS_CAUSATION, REVERSE_CAUSATION, CONFOUNDING_NEGLECT, COLLIDER_SELECTION,
    MEDIATOR_MISUSE, TEMPORAL_ORDER,
)
"""The labels a matched diagnostic variant licenses (``variants`` builds the pairs)."""

REFINES: dict[str, str] = {
    CORRELATION_AS_CAUSATION: OBS_INT,
    CONFOUNDING_NEGLECT: OBS_INT,
    REVERSE_CAUSATION: OBS_INT,
}
"""Twin label -> the mechanical label it refines: on these pairs the confused answer is the
rung-1 value, and the twin shows which reading of it the agent made. A row given the twin
label drops the mechanical one (the pair names the mechanism the match only describes)."""

_RIGHT = frozenset({"correct", "correct_non_id"})


@dataclass(frozen=True)
class PairMember:
    """One case of a diagnostic pair as the twin rules read it."""

    case_id: str
    """The case."""
    variant: Variant
    """Its private variant record."""
    outcome: str
    """Its verdict's outcome (``missing`` when no response named it)."""
    point: float | None
    """The single number its answer commits to (:func:`answered_point`), if any."""
    tol: float = 0.02
    """Tolerance tau of the case."""

    @property
    def right(self) -> bool:
        """Right by its verdict."""
        return self.outcome in _RIGHT

    @property
    def failed(self) -> bool:
        """Failed by its verdict (wrong, false non-ID, false answer on non-ID)."""
        return self.outcome in FAILED_OUTCOMES

    def reads_confused(self) -> bool:
        """Its answer equals, within tol, a value the confused reading gives on this case."""
        return self.point is not None and any(within(self.point, c, self.tol)
                                              for c in self.variant.confused)


def twin_pattern_labels(members: Sequence[PairMember]) -> dict[str, str]:
    """Case id -> twin-licensed label, for the cases of one diagnostic pair that show it.

    Each rule is the evidence column of seed 003 "Failure taxonomy":

    - correlation-as-causation: wrong on the fork item, right on the twin where the edge
      is real;
    - confounding neglect: the item's answer is P(y | x) (its rung-1 value) and wrong,
      and the twin without Z is right;
    - collider / selection bias: the item's answer is P(y | x, C = c) and wrong, and the
      unconditioned twin (no collider) is right;
    - mediator misuse: the item's answer is Σ_m P(y | x, m) P(m) and wrong, and the twin
      with M unobserved is right;
    - reverse causation: right on the A → B item, and on the reversed-structure twin the
      answer is the forward reading P(b | a) and wrong (the label goes on the twin);
    - temporal-order shortcut: right on the twin listed in causal order, wrong on a case
      whose listing puts some effect before its cause (the label goes on each such case).

    A pair with a missing or unanswered member shows nothing.
    """
    items = [m for m in members if m.variant.kind == "item"]
    if len(items) != 1:
        return {}
    item, twins = items[0], [m for m in members if m.variant.kind != "item"]
    label = item.variant.label
    if not twins:
        return {}
    if label == REVERSE_CAUSATION:
        return {t.case_id: label for t in twins
                if item.right and t.failed and t.reads_confused()}
    if label == TEMPORAL_ORDER:
        aligned = [t for t in twins if t.variant.kind == "order_aligned"]
        if not aligned or not all(t.right for t in aligned):
            return {}
        return {m.case_id: label for m in members
                if m.failed and m.variant.order_agrees is False}
    if not item.failed or not all(t.right for t in twins):
        return {}
    if label == CORRELATION_AS_CAUSATION or item.reads_confused():
        return {item.case_id: label}
    return {}


def with_twin_label(labels: Sequence[str], twin_label: str) -> list[str]:
    """A failed row's labels once its pair shows ``twin_label``: that label first, then the
    others except ``unexplained`` and the mechanical label it refines (:data:`REFINES`)."""
    drop = {UNEXPLAINED, REFINES.get(twin_label)}
    return [twin_label, *(lb for lb in labels if lb not in drop and lb != twin_label)]


def carries(labels: Sequence[str], label: str) -> bool:
    """Whether ``labels`` hold ``label`` or a twin label refining it (:data:`REFINES`)."""
    return any(lb == label or REFINES.get(lb) == label for lb in labels)


# ------------------------------------------------ the registry of all 22

@dataclass(frozen=True)
class FailureLabel:
    """One label of seed 003's failure taxonomy with the evidence that licenses it."""

    name: str
    """The label as rows carry it."""
    title: str
    """The seed's name of the label."""
    evidence: str
    """The seed's evidence column: the test that licenses the label."""
    assigned_by: str
    """Where this project assigns it, or why it cannot (no mechanism produces the data)."""


TAXONOMY: tuple[FailureLabel, ...] = (
    FailureLabel(CORRELATION_AS_CAUSATION, "Correlation-as-causation",
                 "Wrong on fork item; correct on matched item where the edge is real",
                 "twin_pattern_labels: fork exact rung-2 item and its edge_real twin"),
    FailureLabel(REVERSE_CAUSATION, "Reverse causation",
                 "Correct on A→B, asserts A→B on the reversed-structure twin",
                 "twin_pattern_labels: chain exact rung-2 item and its reversed twin"),
    FailureLabel(CONFOUNDING_NEGLECT, "Confounding neglect",
                 "Answers P(y|x) where P(y|do x) was asked; correct when Z is removed",
                 "twin_pattern_labels: confounded exact rung-2 item and its z_removed twin"),
    FailureLabel(COLLIDER_SELECTION, "Collider / selection bias",
                 "Conditions on C and reports induced dependence; correct on unconditioned "
                 "twin",
                 "twin_pattern_labels: collider exact rung-2 item and its unconditioned twin"),
    FailureLabel(MEDIATOR_MISUSE, "Mediator misuse",
                 "Adjusts for M when total effect asked; correct when M is unobserved",
                 "twin_pattern_labels: mediation identification item and its m_unobserved "
                 "twin"),
    FailureLabel(TEMPORAL_ORDER, "Temporal-order shortcut",
                 "Wrong on item where order and direction disagree; correct where they agree",
                 "twin_pattern_labels: discovery item and its order_aligned / order_opposed "
                 "twins"),
    FailureLabel(MECHANISM_FABRICATION, "Mechanism fabrication",
                 "Claims an edge or path absent from all delivered evidence (traced)",
                 "fabricated_links: claimed edges against the graphs of an episode's stage "
                 "views and tool results (episode_runs)"),
    FailureLabel(SYMPTOM_ROOT_CAUSE, "Symptom / root-cause confusion",
                 "Names a descendant of the true cause; counterfactual on that node does not "
                 "prevent symptom",
                 "episode_failure_labels: named a telemetry node downstream of the true cause"),
    FailureLabel(OMITTED_JOINT_CAUSE, "Omitted joint cause",
                 "Interaction world: names one of two necessary causes as sufficient",
                 "episode_failure_labels: named one component of a live joint hypothesis"),
    FailureLabel(OBS_INT, "Observation / intervention confusion",
                 "Rung-2 answer equals the rung-1 value on a confounded world",
                 "failure_labels: the answer matches the oracle's rung-1 value"),
    FailureLabel(INT_CF, "Intervention / counterfactual confusion",
                 "Rung-3 answer equals the population rung-2 value instead of the abduced one",
                 "failure_labels: the answer matches the population rung-2 value"),
    FailureLabel(NOISE_REUSE, "Incorrect noise reuse",
                 "Rung-3 answer computed with fresh exogenous draws (matches resampled, not "
                 "abduced, value)",
                 "failure_labels: the answer matches the resampled value"),
    FailureLabel(NON_ID_IGNORED, "Non-identifiability ignored",
                 "Returns a value on a witness-backed non-ID item",
                 "failure_labels: a value on a witness-backed non-identifiable item"),
    FailureLabel(SOURCE_DUPLICATION, "Source duplication",
                 "Treats N copies of one report as N independent sources (provenance trace)",
                 "episode_failure_labels: the posterior equals the double-counted twin's "
                 "(provenance family)"),
    FailureLabel(STALE_MECHANISM, "Stale mechanism",
                 "Uses a mechanism revised in an earlier stage of the same episode",
                 "episode_failure_labels: named a cause only the superseded mechanism allows"),
    FailureLabel(UNSUPPORTED_CERTAINTY, "Unsupported certainty",
                 "Confidence ≥ 0.9 on wrong or non-ID items (calibration bin)",
                 "failure_labels / episode_failure_labels: confidence ≥ 0.9 on a failure"),
    FailureLabel(EXPERIMENT_AVOIDANCE, "Experiment avoidance",
                 "Commits to a repair when the identified set has ≥ 2 members and a cheap "
                 "discriminating test exists",
                 "episode_failure_labels: committed while ≥ 2 causes live and a probe separates"),
    FailureLabel(COSTLY_IRRELEVANT, "Costly irrelevant experiment",
                 "Executed experiment with EIG ≈ 0 over the live set",
                 "episode_failure_labels: ran a probe with EIG 0 over the live set"),
    FailureLabel(GRAPH_RETRIEVAL, "Graph retrieval failure",
                 "Edge present in DB, absent from tool output (stage log)",
                 "causal.instrument.controls.failure_label: a control case whose miss the "
                 "stage log localizes to the tool response while the store holds the edge "
                 "(the bench's own tools serve no graph database)"),
    FailureLabel(ROUTING_BYPASS, "Routing bypass",
                 "Detector flagged opportunity; no tool call; graph held the answer",
                 "causal.ablations.labels.is_routing_bypass: a failed ablation cell whose "
                 "question the arm's gate detector (else the registered default detector) "
                 "flags, whose deciding attempt called no graph tool (arms.GRAPH_TOOLS), and "
                 "whose held graph holds the answer: causal(), offered in the cell, through "
                 "the arm's query path on the held rows, asked the case's queries (does T "
                 "cause Y? per treatment and "
                 "target; what does X cause? per observed variable of a discovery item), "
                 "returns a non-empty edge set equal to the repaired query's on the world's "
                 "true edges"),
    FailureLabel(ORACLE_LEAKAGE, "Oracle leakage",
                 "Validation world identifiers found in Piper's memory or reasoning",
                 "causal.ablations.labels.leaked_needles: an ablation cell whose turns or "
                 "tool-call arguments (every attempt) name a world id of the bench it ran on "
                 "(the agent is never shown one), or a needle of a validation cohort passed "
                 "in; any verdict (with_oracle_leakage). The cohort-wide memory scan is "
                 "causal.ablations.contamination"),
    FailureLabel(SCORER_HARNESS, "Scorer / harness failure",
                 "Stage 2 output correct, stage 4 verdict wrong; or harness exception",
                 "causal.instrument.controls.failure_label: a control case whose wrong "
                 "verdict the stage log localizes to the harness parse or the scorer, the raw "
                 "tool output being right"),
)
"""The 22 labels of seed 003 "Failure taxonomy", in the seed's order."""

PROJECT_LABELS: tuple[str, ...] = (NEGATIVE_EVIDENCE, UNEXPLAINED)
"""Labels this project adds to the seed's 22: the negative-evidence misread (see
:data:`EPISODE_LABELS`) and ``unexplained`` (a failure no licensed mechanism shows)."""

PROJECT_EVIDENCE: dict[str, str] = {
    NEGATIVE_EVIDENCE: "An absent alarm read as evidence where the sensor does not cover or "
                       "the delay has not passed, or ignored where it has (posterior matches "
                       "the misread twin's)",
    UNEXPLAINED: "A failure that no licensed mechanism, matched variant or trace shows",
}
"""The evidence rule of each of :data:`PROJECT_LABELS`."""

ALL_LABELS: tuple[str, ...] = (*(f.name for f in TAXONOMY), *PROJECT_LABELS)
"""Every label a row may carry, in report order: the seed's 22, then the project's."""


# ------------------------------------------------ mechanism fabrication (traced)

Edge = tuple[str, str]


def graph_edges(doc: object) -> set[Edge]:
    """Every (parent, child) edge a delivered document states: each object in it with a
    ``name`` and a list of ``parents`` (a mechanism's or a graph's variables), at any depth."""
    out: set[Edge] = set()
    if isinstance(doc, dict):
        parents = doc.get("parents")
        if isinstance(doc.get("name"), str) and isinstance(parents, list):
            out.update((str(p), doc["name"]) for p in parents)
        for value in doc.values():
            out |= graph_edges(value)
    elif isinstance(doc, list):
        for value in doc:
            out |= graph_edges(value)
    return out


def fabricated_links(claimed: Sequence[Sequence[str]], delivered: set[Edge]) -> list[Edge]:
    """The claimed links (cause, effect) absent from all delivered evidence, in claim order.

    Seed 003 "Mechanism fabrication": "claims an edge or path absent from all delivered
    evidence". A claimed link is supported when the delivered graphs hold a directed path
    from its cause to its effect (an edge is a path of one step; a link that collapses a
    delivered mediator is a path); otherwise it is fabricated.
    """
    children: dict[str, set[str]] = {}
    for a, b in delivered:
        children.setdefault(a, set()).add(b)

    def reaches(a: str, b: str) -> bool:
        seen, todo = {a}, [a]
        while todo:
            for c in children.get(todo.pop(), ()):
                if c == b:
                    return True
                if c not in seen:
                    seen.add(c)
                    todo.append(c)
        return False

    out: list[Edge] = []
    for link in claimed:
        a, b = str(link[0]), str(link[1])
        if not reaches(a, b) and (a, b) not in out:
            out.append((a, b))
    return out


def with_routing_bypass(labels: Sequence[str]) -> list[str]:
    """A failed row's labels once routing bypass is shown: the verdict's labels
    (``unexplained`` dropped, the bypass explains the failure) and ``routing_bypass``."""
    return [*(lb for lb in labels if lb not in (UNEXPLAINED, ROUTING_BYPASS)), ROUTING_BYPASS]


def with_oracle_leakage(labels: Sequence[str]) -> list[str]:
    """A row's labels once its writing shows a harness-only identifier: the other labels
    (``unexplained`` dropped) and ``oracle_leakage``. Like :func:`with_fabrication`, the trace
    licenses the label whatever the verdict: a right answer may rest on the leak."""
    return [*(lb for lb in labels if lb not in (UNEXPLAINED, ORACLE_LEAKAGE)), ORACLE_LEAKAGE]


def with_fabrication(labels: Sequence[str]) -> list[str]:
    """A stage row's labels once its trace shows a fabricated link: the verdict's labels
    (``unexplained`` dropped) and ``mechanism_fabrication``. The trace licenses the label
    whatever the verdict: an answer resting on an undelivered mechanism is a failure even
    when the named cause happens to be right."""
    return [*(lb for lb in labels if lb not in (UNEXPLAINED, MECHANISM_FABRICATION)),
            MECHANISM_FABRICATION]
