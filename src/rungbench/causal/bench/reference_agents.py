"""A case-level agent protocol and the reference agents of the causal benchmark.

``CaseAgent``: a public case in, an ``agent_response`` out. Reference agents are
*instruments*, not contestants: they read the private oracle record of each case
to answer exactly, or exactly wrong in one named way, so the scorer and the
failure taxonomy can be checked against known behaviour (seed 003 "Failure
taxonomy": each confused agent must show its own label on its failures,
:data:`SIGNATURES`).

========================  ==================================================
``oracle``                the reference answer everywhere
``rung1``                 answers every causal question with the rung-1 value
``rung2_population``      answers counterfactuals with the population rung-2 value
``resampled``             answers counterfactuals with fresh noise for descendants
``never_abstain``         never says not_identifiable: answers a value on non-ID items
``always_abstain``        abstains on every item
``correlation_as_``       on fork pairs, answers the association P(y | x)
``causation``
``confounding_neglect``   on confounded pairs, answers P(y | x) for P(y | do x)
``reverse_causation``     on chain pairs, answers P(b | a) (on the reversed twin too)
``collider_bias``         on collider pairs, answers P(y | x, C = c)
``mediator_misuse``       on mediation pairs, answers Σ_m P(y | x, m) P(m)
``temporal_order``        on listing-order pairs, orients edges by listing position
``overconfident``         a wrong value, no confused reading, at confidence 0.95
``original_wording``      the reference answer on questions worded by an original
                          template (or an imported network's), a wrong one on every
                          other wording (a planted agent that does not transfer to
                          paraphrases)
========================  ==================================================

Episode families (records/2, :data:`EPISODE_POLICIES`): ``oracle``,
``premature_commitment``, ``experiment_avoidance``, ``costly_irrelevant``,
``double_count``, ``negative_misread``, ``stale_mechanism``,
``omitted_joint_cause`` and ``names_symptom``. On a bench holding both record versions, an
agent answers the records of the other version as the oracle does, so its failures are its
own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from rungbench.causal.bench.incidents import JOINT_SEP
from rungbench.causal.bench.networks import NETWORK_FAMILY
from rungbench.causal.bench.paraphrases import is_original_wording
from rungbench.causal.bench.records import (
    AgentResponse,
    EpisodeCase,
    EpisodeOracle,
    PrivateOracle,
    PublicCase,
)
from rungbench.causal.bench.taxonomy import (
    COLLIDER_SELECTION,
    CONFOUNDING_NEGLECT,
    CORRELATION_AS_CAUSATION,
    MEDIATOR_MISUSE,
    REVERSE_CAUSATION,
    TEMPORAL_ORDER,
    UNSUPPORTED_CERTAINTY,
)
from rungbench.errors import InputError

FIXED_TIME = "2026-10-03T00:00:00Z"
"""Timestamp of reference responses (fixed so reruns are byte-identical)."""


class CaseAgent(Protocol):
    """Anything that answers one public causal case with a structured response."""

    @property
    def name(self) -> str:
        """The agent's name (its arm)."""
        ...

    def answer(self, case: PublicCase) -> AgentResponse:
        """Return the structured response to ``case``."""
        ...


def _oracle_fields(o: PrivateOracle) -> dict[str, Any]:
    """The response fields that reproduce the oracle's reference answer."""
    if not o.identifiable:
        return {"status": "not_identifiable"}
    if o.cpdag is not None:
        return {"status": "answer", "edges": list(o.true_edges or [])}
    if o.expected_loss is not None:
        loss = o.expected_loss
        return {"status": "answer", "action": min(sorted(loss), key=lambda a: loss[a])}
    if o.eig_bits is not None:
        eig = o.eig_bits
        return {"status": "answer", "experiment": max(sorted(eig), key=lambda x: eig[x])}
    if o.bounds is not None:
        return {"status": "answer", "bounds": o.bounds}
    return {"status": "answer", "value": o.value}


def _point(value: float | None, o: PrivateOracle) -> dict[str, Any]:
    """Answer ``value`` in the form the item requires (degenerate bounds on bounds items)."""
    if value is None:
        return _oracle_fields(o)
    if o.bounds is not None:
        return {"status": "answer", "bounds": (value, value)}
    return {"status": "answer", "value": value}


def _rung1(o: PrivateOracle) -> dict[str, Any]:
    if o.rung == 1 or o.cpdag is not None:
        return _oracle_fields(o)
    return _point(o.confusions.rung1, o)


def _rung2_population(o: PrivateOracle) -> dict[str, Any]:
    if o.rung != 3:
        return _oracle_fields(o)
    return _point(o.confusions.rung2_population, o)


def _resampled(o: PrivateOracle) -> dict[str, Any]:
    if o.rung != 3:
        return _oracle_fields(o)
    return _point(o.confusions.resampled, o)


def _never_abstain(o: PrivateOracle) -> dict[str, Any]:
    if o.identifiable:
        return _oracle_fields(o)
    c = o.confusions
    guess = next((v for v in (c.rung1, c.rung2_population, c.resampled) if v is not None), 0.5)
    return _point(guess, o)


def _always_abstain(o: PrivateOracle) -> dict[str, Any]:
    return {"status": "abstain"}


def _in_pair(o: PrivateOracle, label: str) -> bool:
    return o.variant is not None and o.variant.label == label


def _reads_association(label: str) -> Callable[[PrivateOracle], dict[str, Any]]:
    """On the cases of ``label``'s diagnostic pairs, answers P(y | x) for P(y | do x)."""
    def policy(o: PrivateOracle) -> dict[str, Any]:
        if not _in_pair(o, label):
            return _oracle_fields(o)
        return _point(o.confusions.rung1, o)
    return policy


def _adjusts(label: str) -> Callable[[PrivateOracle], dict[str, Any]]:
    """On ``label``'s pairs, conditions on the collider (adjusts for the mediator) when the
    case shows one: answers the variant's confused value; without one, P(y | x)."""
    def policy(o: PrivateOracle) -> dict[str, Any]:
        if not _in_pair(o, label):
            return _oracle_fields(o)
        assert o.variant is not None
        confused = o.variant.confused
        return _point(confused[0] if confused else o.confusions.rung1, o)
    return policy


def listing_edges(case: PublicCase, edges: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """``edges``' skeleton oriented by the case's listing: earlier-listed variable first."""
    names = list(case.evidence.payload["joint"]["names"])
    pos = {n: i for i, n in enumerate(names)}
    return [(a, b) if pos[a] < pos[b] else (b, a) for a, b in edges]


def _temporal_order(o: PrivateOracle, case: PublicCase) -> dict[str, Any]:
    """On listing-order pairs, orients the true skeleton by the order variables are listed."""
    if not _in_pair(o, TEMPORAL_ORDER):
        return _oracle_fields(o)
    return {"status": "answer", "edges": listing_edges(case, o.true_edges or [])}


def away_from(avoid: Sequence[float], tol: float) -> float:
    """The first of 0, 1, 0.5, 0.25, 0.75 farther than 2·tol from every value in ``avoid``."""
    return next(x for x in (0.0, 1.0, 0.5, 0.25, 0.75)
                if all(abs(x - a) > 2 * tol for a in avoid))


def _overconfident(o: PrivateOracle) -> dict[str, Any]:
    """On exact rung-2 items outside any diagnostic pair, a wrong value that is no confused
    reading (stated, like every answer of this agent, with confidence 0.95)."""
    if o.item_type != "exact" or o.rung != 2 or o.value is None or o.variant is not None:
        return _oracle_fields(o)
    c = o.confusions
    avoid = [v for v in (o.value, c.rung1, c.rung2_population, c.resampled) if v is not None]
    return {"status": "answer", "value": away_from(avoid, o.tol)}


def wrong_answer(o: PrivateOracle) -> dict[str, Any]:
    """A response the scorer marks wrong (or a false answer on a non-identifiable item).

    A value far from the reference and from every confused reading; on a bounds item
    degenerate bounds at such a value; on a decision item the costliest action; on a
    discovery item no edges (every discovery item has at least two).
    """
    c = o.confusions
    avoid = [v for v in (o.value, *(o.bounds or ()), c.rung1, c.rung2_population, c.resampled)
             if v is not None]
    if o.identifiable and o.cpdag is not None:
        return {"status": "answer", "edges": []}
    if o.identifiable and o.expected_loss is not None:
        loss = o.expected_loss
        return {"status": "answer", "action": max(sorted(loss), key=lambda a: loss[a])}
    if o.identifiable and o.eig_bits is not None:
        eig = o.eig_bits
        return {"status": "answer", "experiment": min(sorted(eig), key=lambda x: eig[x])}
    value = away_from(avoid, o.tol)
    if o.bounds is not None:
        return {"status": "answer", "bounds": (value, value)}
    return {"status": "answer", "value": value}


def _original_wording(o: PrivateOracle, case: PublicCase) -> dict[str, Any]:
    """The reference answer when the question is worded by an original template
    (``paraphrases.is_original_wording``, read from the public text) or is an imported
    network's (worded by ``network_build``'s own templates, never paraphrased), else a wrong
    one."""
    original = is_original_wording(case.question) or o.family == NETWORK_FAMILY
    return _oracle_fields(o) if original else wrong_answer(o)


POLICIES: dict[str, tuple[Callable[[PrivateOracle], dict[str, Any]], float]] = {
    "oracle": (_oracle_fields, 1.0),
    "rung1": (_rung1, 0.95),
    "rung2_population": (_rung2_population, 0.95),
    "resampled": (_resampled, 0.95),
    "never_abstain": (_never_abstain, 0.95),
    "always_abstain": (_always_abstain, 0.5),
    "correlation_as_causation": (_reads_association(CORRELATION_AS_CAUSATION), 0.8),
    "confounding_neglect": (_reads_association(CONFOUNDING_NEGLECT), 0.8),
    "reverse_causation": (_reads_association(REVERSE_CAUSATION), 0.8),
    "collider_bias": (_adjusts(COLLIDER_SELECTION), 0.8),
    "mediator_misuse": (_adjusts(MEDIATOR_MISUSE), 0.8),
    "overconfident": (_overconfident, 0.95),
}
"""Reference agent name -> (answer policy, stated confidence).

The planted twin-label agents (``correlation_as_causation`` …) err only on the cases of
their own diagnostic pairs (read from the private variant record) and answer as the oracle
elsewhere, with confidence below the certainty bar, so each failure carries one label."""

CASE_POLICIES: dict[str, tuple[Callable[[PrivateOracle, PublicCase], dict[str, Any]],
                               float]] = {
    "temporal_order": (_temporal_order, 0.8),
    "original_wording": (_original_wording, 0.8),
}
"""Reference agents whose answer also reads the public case (its listing order, its
wording)."""

SIGNATURES: dict[str, str] = {
    "rung1": "observation_intervention_confusion",
    "rung2_population": "intervention_counterfactual_confusion",
    "resampled": "incorrect_noise_reuse",
    "never_abstain": "non_identifiability_ignored",
    "correlation_as_causation": CORRELATION_AS_CAUSATION,
    "confounding_neglect": CONFOUNDING_NEGLECT,
    "reverse_causation": REVERSE_CAUSATION,
    "collider_bias": COLLIDER_SELECTION,
    "mediator_misuse": MEDIATOR_MISUSE,
    "temporal_order": TEMPORAL_ORDER,
    "overconfident": UNSUPPORTED_CERTAINTY,
}
"""The failure label each confused reference agent must receive on its wrong items."""


@dataclass(frozen=True)
class ReferenceAgent:
    """A reference instrument answering from the private oracle by a named policy."""

    name: str
    """Policy name (a key of :data:`POLICIES`)."""
    oracles: Mapping[str, PrivateOracle]
    """Private oracle records keyed by case id."""
    episode_oracles: Mapping[str, EpisodeOracle] = field(default_factory=dict)
    """Private records/2 oracle records keyed by case id (episode families)."""

    def answer_episode(self, case: EpisodeCase) -> AgentResponse:
        """Return the policy's response to a records/2 case (the oracle's, for a v1 policy)."""
        oracle = self.episode_oracles.get(case.case_id)
        if oracle is None:
            raise InputError(f"no oracle record for case {case.case_id!r}", field="case_id")
        return episode_answer(self.name if self.name in EPISODE_POLICIES else "oracle", oracle)

    def answer(self, case: PublicCase) -> AgentResponse:
        """Return the policy's response to ``case``."""
        oracle = self.oracles.get(case.case_id)
        if oracle is None:
            raise InputError(f"no oracle record for case {case.case_id!r}", field="case_id")
        if self.name in CASE_POLICIES:
            case_policy, confidence = CASE_POLICIES[self.name]
            fields = case_policy(oracle, case)
        else:
            policy, confidence = POLICIES[self.name if self.name in POLICIES else "oracle"]
            fields = policy(oracle)
        return AgentResponse(
            case_id=case.case_id,
            arm=f"reference:{self.name}",
            confidence=confidence,
            claim_text=f"reference agent {self.name}",
            t=FIXED_TIME,
            **fields,
        )


def reference_agent(spec: str, oracles: Mapping[str, PrivateOracle],
                    episode_oracles: Mapping[str, EpisodeOracle] | None = None) -> ReferenceAgent:
    """Build ``reference:NAME``; InputError names the unknown agent.

    Without ``episode_oracles`` (a bench of records/1 only) the known names are
    :data:`POLICIES`; with them, the records/2 policies too.
    """
    kind, _, name = spec.partition(":")
    plain = [*POLICIES, *CASE_POLICIES]
    names = [*plain, *(n for n in EPISODE_POLICIES if n not in plain)] if episode_oracles \
        else plain
    if kind != "reference" or name not in names:
        known = ", ".join(f"reference:{n}" for n in names)
        hint = "" if episode_oracles or name not in EPISODE_POLICIES else \
            " (a next-stage agent: build the bench with --families)"
        raise InputError(f"unknown agent {spec!r}{hint}; known: {known}", field="agent")
    return ReferenceAgent(name, oracles, episode_oracles or {})


# ------------------------------------------------ episode families (records/2)


def _argmax(menu: Mapping[str, float]) -> str:
    return max(sorted(menu), key=lambda k: menu[k])


def _argmin(menu: Mapping[str, float]) -> str:
    return min(sorted(menu), key=lambda k: menu[k])


def episode_oracle_fields(o: EpisodeOracle) -> dict[str, Any]:
    """The reference answer of a records/2 item (holds back while ≥ 2 causes are live)."""
    if o.item_type == "posterior":
        return {"status": "answer", "value": o.value}
    if o.item_type == "experiment":
        return {"status": "answer", "experiment": _argmax(o.eig_bits or {})}
    live = o.identified_set or []
    if len(live) == 1:
        return {"status": "answer", "label": live[0],
                "action": _argmin(o.expected_loss or {})}
    out: dict[str, Any] = {"status": "need_info"}
    if o.discriminating:
        out["experiment"] = _argmax(o.eig_bits or {})
    return out


def _premature(o: EpisodeOracle) -> dict[str, Any]:
    """Names the first plausible cause and repairs it; never experiments."""
    if o.item_type == "diagnosis":
        first = (o.identified_set or [""])[0]
        # A joint hypothesis a+b is repaired through its first component (either suffices).
        return {"status": "answer", "label": first,
                "action": f"repair:{first.split(JOINT_SEP)[0]}"}
    if o.item_type == "experiment":
        return {"status": "answer", "experiment": "act_now"}
    return episode_oracle_fields(o)


def _avoids_experiments(o: EpisodeOracle) -> dict[str, Any]:
    """Commits to the most probable cause and the cheapest repair while a check would separate.

    Seed 003 "Experiment avoidance": commits "when the identified set has ≥ 2 members
    and a … discriminating test exists"; otherwise answers as the oracle does. The most
    probable cause is read from the lowest-loss repair among the live causes' repairs.
    """
    live = o.identified_set or []
    if len(live) < 2 or not o.discriminating:
        return episode_oracle_fields(o)
    if o.item_type == "experiment":
        return {"status": "answer", "experiment": "act_now"}
    if o.item_type != "diagnosis":
        return episode_oracle_fields(o)
    action = _argmin(o.expected_loss or {})
    named = action.removeprefix("repair:")
    return {"status": "answer", "label": named if named in live else live[0],
            "action": action}


def _omits_joint(o: EpisodeOracle) -> dict[str, Any]:
    """Names one component of a live joint cause as if it alone were sufficient."""
    omitted = o.alt_causes.get("omitted_joint_cause", [])
    if o.item_type == "diagnosis" and omitted:
        return {"status": "answer", "label": omitted[0], "action": f"repair:{omitted[0]}"}
    return episode_oracle_fields(o)


def _costly_irrelevant(o: EpisodeOracle) -> dict[str, Any]:
    """Runs the probe with zero EIG and the largest decision loss, when there is one."""
    eig, loss = o.eig_bits or {}, o.experiment_loss or {}
    idle = [x for x in eig if x != "act_now" and eig[x] <= 1e-9]
    if o.item_type == "experiment" and idle:
        return {"status": "answer", "experiment": max(sorted(idle), key=lambda x: loss[x])}
    return episode_oracle_fields(o)


def _alt_value(label: str) -> Callable[[EpisodeOracle], dict[str, Any]]:
    def policy(o: EpisodeOracle) -> dict[str, Any]:
        if o.item_type == "posterior" and label in o.alt_values:
            return {"status": "answer", "value": o.alt_values[label]}
        return episode_oracle_fields(o)
    return policy


def _stale(o: EpisodeOracle) -> dict[str, Any]:
    """Keeps reasoning with the mechanism stated before a revision."""
    live = o.identified_set or []
    stale = [c for c in o.alt_causes.get("stale_mechanism", []) if c not in live]
    if stale:
        return {"status": "answer", "label": stale[0]}
    return episode_oracle_fields(o)


def _names_symptom(o: EpisodeOracle) -> dict[str, Any]:
    """Where the evidence identifies the cause, names a telemetry node downstream of it
    instead (and still repairs the identified cause): symptom / root-cause confusion."""
    live, below = o.identified_set or [], o.descendants or []
    if o.item_type != "diagnosis" or len(live) != 1 or not below:
        return episode_oracle_fields(o)
    return {"status": "answer", "label": below[0], "action": _argmin(o.expected_loss or {})}


EPISODE_POLICIES: dict[str, tuple[Callable[[EpisodeOracle], dict[str, Any]], float]] = {
    "oracle": (episode_oracle_fields, 1.0),
    "premature_commitment": (_premature, 0.8),
    "costly_irrelevant": (_costly_irrelevant, 0.8),
    "double_count": (_alt_value("source_duplication"), 0.8),
    "negative_misread": (_alt_value("negative_evidence_misread"), 0.8),
    "stale_mechanism": (_stale, 0.8),
    "experiment_avoidance": (_avoids_experiments, 0.8),
    "omitted_joint_cause": (_omits_joint, 0.8),
    "names_symptom": (_names_symptom, 0.8),
}
"""Records/2 reference agent name -> (policy, stated confidence below the certainty bar)."""

EPISODE_SIGNATURES: dict[str, str] = {
    "premature_commitment": "experiment_avoidance",
    "costly_irrelevant": "costly_irrelevant_experiment",
    "double_count": "source_duplication",
    "negative_misread": "negative_evidence_misread",
    "stale_mechanism": "stale_mechanism",
    "experiment_avoidance": "experiment_avoidance",
    "omitted_joint_cause": "omitted_joint_cause",
    "names_symptom": "symptom_root_cause_confusion",
}
"""The label each confused records/2 reference agent must carry on its failures."""


def episode_answer(name: str, o: EpisodeOracle) -> AgentResponse:
    """The response of records/2 reference agent ``name`` to the case of oracle ``o``."""
    if name not in EPISODE_POLICIES:
        raise InputError(f"unknown agent {name!r}; known: {', '.join(EPISODE_POLICIES)}",
                         field="agent")
    policy, confidence = EPISODE_POLICIES[name]
    return AgentResponse(case_id=o.case_id, arm=f"reference:{name}", confidence=confidence,
                         claim_text=f"reference agent {name}", t=FIXED_TIME, **policy(o))
