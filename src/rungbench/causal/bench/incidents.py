"""Incident simulator over an SCM: root-cause diagnosis and active experiments (seed 003).

Seed 003 "Task families": root-cause debugging is an "incident simulator over SCM"
and active experiments a "hypothesis set + experiment menu + costs". An incident
world is a binary SCM whose roots are candidate faults ``f0..`` (the hypothesis set
H), whose telemetry nodes ``s0..`` are noisy-OR symptoms of one or two faults (no
leak: a symptom never fires without a fault behind it, but a fault may fail to
show), and whose ``outage`` node is the OR of every fault. An episode samples one
fault (the single-fault assumption, stated to the agent), draws the telemetry
from the SCM, and delivers part of it through the ``logs`` and ``metrics`` tools;
the other telemetry nodes are probes in the experiment menu, each with a cost.

Every number comes from the exact oracle (``scm.oracle``):

- posterior over H given the delivered evidence e: P(h | e) ∝ P(F = onehot(h), e)
  (rung-1 joint probabilities); the identified set is its support;
- expected loss of a repair a: E[L(a) | e] = cost(a) + 10 · Σ_h P(h | e) ·
  P(outage=1 | do(F = onehot(h), a)) (seed 003 "Decision regret");
- EIG(x) = H(H | e) − E_{o ~ p(o | x, e)} H(H | e, x=o) in bits, and the decision
  value of x: cost(x) + E_o min_a E[L(a) | e, x=o] (seed 003 "Information regret":
  information and decision value are separate endpoints).

Interaction worlds (seed 003 "Failure taxonomy", omitted joint cause: "Interaction
world: names one of two necessary causes as sufficient"): two faults are jointly
necessary (the outage is ``others OR (a AND b)``), and the hypothesis set adds the
joint hypothesis ``a+b`` (both active) beside the single faults. A single component
alone does not produce the outage, so given the outage it is outside the identified
set; naming it is the ``omitted_joint_cause`` failure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from rungbench.causal.scm import mechanisms, oracle
from rungbench.causal.scm.world import Query, Response, Variable, World

LOSS_PER_OUTAGE = 10.0
"""Loss units charged when the outage persists after the chosen repair."""

POSTERIOR_FLOOR = 1e-12
"""A hypothesis with posterior at or below this is outside the identified set."""

EIG_EPS = 1e-9
"""An experiment with EIG at or below this (bits) is irrelevant to the live set."""

ACT_NOW = "act_now"
"""Experiment-menu entry meaning "run no experiment, repair now" (EIG 0, cost 0)."""

LEAVE_ALONE = "leave_alone"
"""Repair-menu entry that changes nothing (the outage persists)."""

RESTART = "restart_service"
"""Repair-menu entry that clears the symptom for a while and fixes no fault."""

OUTAGE = "outage"
"""World name of the outage node (OR of every fault)."""

JOINT_SEP = "+"
"""Separator of the components in a joint hypothesis's name (``a+b``)."""


@dataclass(frozen=True)
class IncidentWorld:
    """An incident SCM with its fault hypotheses, telemetry tools and menus."""

    world: World
    """The SCM (faults are roots; symptoms and the outage are their children)."""
    faults: tuple[str, ...]
    """The hypothesis set H (fault root names)."""
    symptoms: tuple[str, ...]
    """Telemetry nodes."""
    tool_of: Mapping[str, str]
    """Symptom name -> the tool that reports it (``logs`` or ``metrics``)."""
    probe_cost: Mapping[str, float]
    """Symptom name -> cost of probing it as an experiment."""
    repair_cost: Mapping[str, float]
    """Fault name -> cost of repairing it (do(fault=0))."""
    restart_cost: float = 0.3
    """Cost of the restart action."""
    joint: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Joint hypothesis name -> its jointly necessary faults (interaction worlds)."""

    @property
    def hypotheses(self) -> tuple[str, ...]:
        """The hypothesis set H: every single fault, then every joint hypothesis."""
        return (*self.faults, *self.joint)

    def components(self, h: str) -> tuple[str, ...]:
        """The faults active under hypothesis ``h``."""
        return self.joint.get(h, (h,))

    def onehot(self, h: str) -> dict[str, int]:
        """The fault assignment of hypothesis ``h`` (exactly its components active)."""
        active = self.components(h)
        return {f: int(f in active) for f in self.faults}


def _entropy(p: Sequence[float]) -> float:
    return -sum(x * math.log2(x) for x in p if x > POSTERIOR_FLOOR)


@dataclass(frozen=True)
class Diagnosis:
    """Oracle quantities of one incident given the delivered evidence (all exact)."""

    iw: IncidentWorld
    """The incident world."""
    evidence: Mapping[str, int]
    """Delivered evidence (outage and the telemetry shown)."""

    def joint(self, h: str, extra: Mapping[str, int] | None = None) -> float:
        """P(F = onehot(h), evidence, extra) from the exact oracle (rung 1)."""
        target = {**self.iw.onehot(h), **self.evidence, **(extra or {})}
        return oracle.probability(self.iw.world, Query(1, target))

    def posterior_given(self, extra: Mapping[str, int] | None = None) -> dict[str, float]:
        """P(h | evidence, extra) over the hypothesis set; all zero if the event is impossible."""
        w = {h: self.joint(h, extra) for h in self.iw.hypotheses}
        total = sum(w.values())
        return {h: (v / total if total > 0 else 0.0) for h, v in w.items()}

    @cached_property
    def posterior(self) -> dict[str, float]:
        """P(h | delivered evidence)."""
        return self.posterior_given()

    @cached_property
    def identified_set(self) -> list[str]:
        """Hypotheses the evidence leaves possible (posterior support), in fault order."""
        return [h for h in self.iw.hypotheses if self.posterior[h] > POSTERIOR_FLOOR]

    def _outage_prob(self, h: str, action: str) -> float:
        do = self.iw.onehot(h)
        if action.startswith("repair:"):
            do[action.removeprefix("repair:")] = 0
        return oracle.probability(self.iw.world, Query(2, {OUTAGE: 1}, do))

    def _action_cost(self, action: str) -> float:
        if action == LEAVE_ALONE:
            return 0.0
        if action == RESTART:
            return self.iw.restart_cost
        return self.iw.repair_cost[action.removeprefix("repair:")]

    @cached_property
    def actions(self) -> tuple[str, ...]:
        """Repair menu: one repair per fault, restart, leave alone."""
        return (*(f"repair:{f}" for f in self.iw.faults), RESTART, LEAVE_ALONE)

    def expected_loss_under(self, post: Mapping[str, float]) -> dict[str, float]:
        """E[L(a)] = cost(a) + 10 · Σ_h post(h) P(outage | do(onehot(h), a)) per action."""
        return {a: self._action_cost(a) + LOSS_PER_OUTAGE * sum(
            p * self._outage_prob(h, a) for h, p in post.items() if p > 0)
            for a in self.actions}

    @cached_property
    def expected_loss(self) -> dict[str, float]:
        """Expected loss of every repair under the posterior given the delivered evidence."""
        return self.expected_loss_under(self.posterior)

    @cached_property
    def probes(self) -> tuple[str, ...]:
        """Telemetry nodes not yet delivered (the experiment menu besides ``act_now``)."""
        return tuple(s for s in self.iw.symptoms if s not in self.evidence)

    def outcome_probs(self, probe: str) -> dict[int, float]:
        """p(probe = o | evidence) for o in {0, 1}."""
        joint = {o: sum(self.joint(h, {probe: o}) for h in self.iw.hypotheses)
                 for o in (0, 1)}
        total = joint[0] + joint[1]
        return {o: v / total for o, v in joint.items()}

    @cached_property
    def eig_bits(self) -> dict[str, float]:
        """EIG of every experiment (``act_now`` has 0), in bits."""
        h0 = _entropy(list(self.posterior.values()))
        out = {ACT_NOW: 0.0}
        for x in self.probes:
            po = self.outcome_probs(x)
            after = sum(po[o] * _entropy(list(self.posterior_given({x: o}).values()))
                        for o in (0, 1) if po[o] > 0)
            out[x] = max(0.0, h0 - after)
        return out

    @cached_property
    def experiment_loss(self) -> dict[str, float]:
        """Decision value per experiment: cost(x) + E_o min_a E[L(a) | e, x=o]."""
        out = {ACT_NOW: min(self.expected_loss.values())}
        for x in self.probes:
            po = self.outcome_probs(x)
            total = self.iw.probe_cost[x]
            for o in (0, 1):
                if po[o] > 0:
                    total += po[o] * min(self.expected_loss_under(
                        self.posterior_given({x: o})).values())
            out[x] = total
        return out

    @cached_property
    def discriminating(self) -> list[str]:
        """Probes with EIG > 0 over the live set (the checks that separate live causes)."""
        return [x for x in self.probes if self.eig_bits[x] > EIG_EPS]


def draw_incident_world(rng: np.random.Generator, world_id: str) -> IncidentWorld:
    """Draw an incident SCM: 3–4 faults, 4–6 noisy-OR symptoms (1–2 fault parents), outage."""
    k = int(rng.integers(3, 5))
    m = int(rng.integers(4, 7))
    faults = tuple(f"f{i}" for i in range(k))
    symptoms = tuple(f"s{j}" for j in range(m))
    parents: list[tuple[str, ...]] = []
    for j in range(m):
        first = faults[j % k] if j < k else faults[int(rng.integers(k))]
        ps = [first]
        if rng.random() < 0.6:
            other = faults[int(rng.integers(k))]
            if other != first:
                ps.append(other)
        parents.append(tuple(sorted(ps)))
    variables = [Variable(f, (), mechanisms.root(round(float(rng.uniform(0.05, 0.3)), 3)))
                 for f in faults]
    for s, pa in zip(symptoms, parents, strict=True):
        strengths = [1.0 if rng.random() < 0.5 else round(float(rng.uniform(0.6, 0.95)), 3)
                     for _ in pa]
        variables.append(Variable(s, pa, mechanisms.noisy_or(strengths, 0.0)))
    variables.append(Variable(OUTAGE, faults, mechanisms.deterministic(lambda b: int(any(b)), k)))
    world = World(world_id, tuple(variables))
    return IncidentWorld(
        world=world, faults=faults, symptoms=symptoms,
        tool_of={s: ("logs" if rng.random() < 0.5 else "metrics") for s in symptoms},
        probe_cost={s: round(float(rng.uniform(0.2, 1.5)), 2) for s in symptoms},
        repair_cost={f: round(float(rng.uniform(0.5, 3.0)), 2) for f in faults},
    )


def interaction_outage(k: int, pair: tuple[int, int]) -> tuple[Response, ...]:
    """``outage := (OR of the faults outside pair) OR (both faults of pair)``, over k faults."""
    def fires(bits: tuple[int, ...]) -> int:
        others = any(b for i, b in enumerate(bits) if i not in pair)
        return int(others or all(bits[i] for i in pair))
    return mechanisms.deterministic(fires, k)


def draw_interaction_world(rng: np.random.Generator, world_id: str) -> IncidentWorld:
    """Draw an interaction incident world: faults ``f0``, ``f1`` are jointly necessary.

    3–4 faults; the joint pair has priors 0.35–0.6 (so the joint hypothesis ``f0+f1`` is
    the usual cause), the others 0.05–0.2; 4–5 noisy-OR symptoms, each fault with at
    least one symptom of its own; the outage is ``others OR (f0 AND f1)``.
    """
    k = int(rng.integers(3, 5))
    m = int(rng.integers(4, 6))
    faults = tuple(f"f{i}" for i in range(k))
    symptoms = tuple(f"s{j}" for j in range(m))
    priors = [round(float(rng.uniform(0.35, 0.6)), 3) if i < 2
              else round(float(rng.uniform(0.05, 0.2)), 3) for i in range(k)]
    variables = [Variable(f, (), mechanisms.root(p)) for f, p in zip(faults, priors, strict=True)]
    for j, s in enumerate(symptoms):
        first = faults[j % k] if j < k else faults[int(rng.integers(k))]
        ps = {first}
        if rng.random() < 0.4:
            ps.add(faults[int(rng.integers(k))])
        pa = tuple(sorted(ps))
        strengths = [1.0 if rng.random() < 0.5 else round(float(rng.uniform(0.6, 0.95)), 3)
                     for _ in pa]
        variables.append(Variable(s, pa, mechanisms.noisy_or(strengths, 0.0)))
    variables.append(Variable(OUTAGE, faults, interaction_outage(k, (0, 1))))
    return IncidentWorld(
        world=World(world_id, tuple(variables)), faults=faults, symptoms=symptoms,
        tool_of={s: ("logs" if rng.random() < 0.5 else "metrics") for s in symptoms},
        probe_cost={s: round(float(rng.uniform(0.2, 1.5)), 2) for s in symptoms},
        repair_cost={f: round(float(rng.uniform(0.5, 3.0)), 2) for f in faults},
        joint={f"f0{JOINT_SEP}f1": ("f0", "f1")},
    )


def sample_fault(iw: IncidentWorld, rng: np.random.Generator) -> str:
    """Draw the episode's hypothesis given an outage: P(h | outage) over H.

    P(h | outage=1) ∝ P(F = onehot(h)) · P(outage=1 | do(F = onehot(h))); the second
    factor is 1 for every hypothesis of a plain world (the outage is the OR of the
    faults) and 0 for a lone component of a joint hypothesis.
    """
    hs = iw.hypotheses
    w = np.array([oracle.probability(iw.world, Query(1, iw.onehot(h)))
                  * oracle.probability(iw.world, Query(2, {OUTAGE: 1}, iw.onehot(h)))
                  for h in hs])
    return hs[int(rng.choice(len(hs), p=w / w.sum()))]


def sample_telemetry(iw: IncidentWorld, fault: str, rng: np.random.Generator) -> dict[str, int]:
    """Draw every telemetry node under do(F = onehot(fault)); symptoms' noises are independent."""
    out = {}
    for s in iw.symptoms:
        p = oracle.probability(iw.world, Query(2, {s: 1}, iw.onehot(fault)))
        out[s] = int(rng.random() < p)
    return out


@dataclass(frozen=True)
class Incident:
    """One simulated incident: the true fault, every telemetry value, what is delivered."""

    iw: IncidentWorld
    """The incident world."""
    fault: str
    """The true fault (private)."""
    telemetry: Mapping[str, int]
    """Every telemetry value of the episode (private; probes reveal them)."""
    shown: tuple[str, ...]
    """Telemetry nodes delivered through the tools."""

    def evidence(self, extra: Sequence[str] = ()) -> dict[str, int]:
        """Outage plus the shown telemetry (plus ``extra`` probed nodes)."""
        return {OUTAGE: 1, **{s: self.telemetry[s] for s in (*self.shown, *extra)}}

    def diagnosis(self, extra: Sequence[str] = ()) -> Diagnosis:
        """Oracle quantities given the delivered evidence (and ``extra`` probes)."""
        return Diagnosis(self.iw, self.evidence(extra))


def draw_incident(iw: IncidentWorld, rng: np.random.Generator, n_shown: int | None = None
                  ) -> Incident:
    """Sample a fault, its telemetry and the 1–2 telemetry nodes the tools deliver."""
    fault = sample_fault(iw, rng)
    telemetry = sample_telemetry(iw, fault, rng)
    n = n_shown if n_shown is not None else int(rng.integers(1, 3))
    order = [iw.symptoms[int(i)] for i in rng.permutation(len(iw.symptoms))]
    return Incident(iw, fault, telemetry, tuple(sorted(order[:n])))


def tool_outputs(iw: IncidentWorld, evidence: Mapping[str, int]) -> dict[str, dict[str, int]]:
    """What the ``logs`` and ``metrics`` tools return for the delivered telemetry."""
    out: dict[str, dict[str, int]] = {"logs": {}, "metrics": {}}
    for s, v in sorted(evidence.items()):
        if s in iw.tool_of:
            out[iw.tool_of[s]][s] = v
    return out
