"""Provenance / source dependence and negative evidence worlds (seed 003 "Task families").

Provenance: a fault ``f`` is read by one source report ``src``; ``copies`` relay
that one report verbatim (deterministic copies), ``ind*`` are independent
readings of ``f`` with the same error rates. The correct posterior P(f=1 | reports)
counts the relayed copies once, because given ``src`` they carry nothing more;
the oracle gets this from the SCM itself. The ``source_duplication`` value is the
same posterior in the twin world where every copy is an independent reading.

Negative evidence: a fault ``f`` causes a condition ``s``; an ``alarm`` fires only
when ``s`` holds, the sensor ``cover`` covers it and the reporting ``delay`` has
elapsed (alarm := s ∧ cover ∧ elapsed). An absent alarm is evidence against ``f``
only where the sensor covers and the delay has passed. The
``negative_evidence_misread`` value is the posterior in the twin world where the
alarm is read as if it always covered and had always reported (alarm := s).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from rungbench.causal.scm import mechanisms, oracle
from rungbench.causal.scm.world import Query, Response, Variable, World


def reading(false_pos: float, true_pos: float) -> tuple[Response, ...]:
    """A report of a binary parent: P(=1 | parent=0) = false_pos, P(=1 | parent=1) = true_pos."""
    return tuple(r for r in (
        Response(false_pos, (1, 1)), Response(true_pos - false_pos, (0, 1)),
        Response(1.0 - true_pos, (0, 0))) if r.p > 0)


@dataclass(frozen=True)
class PosteriorItem:
    """A posterior question over a small world, with its confused twin value."""

    structure: str
    """``provenance`` or ``negative_evidence``."""
    world: World
    """The true SCM."""
    twin: World
    """The confused reading of the SCM (copies independent / alarm always informative)."""
    target: Mapping[str, int]
    """Event whose posterior is asked."""
    evidence: Mapping[str, int]
    """Observed event."""
    label: str
    """Taxonomy label of the confused answer."""

    @property
    def value(self) -> float:
        """The exact posterior P(target | evidence) in the true SCM."""
        return oracle.probability(self.world, Query(1, self.target, {}, self.evidence))

    @property
    def confused(self) -> float:
        """The same posterior in the confused twin."""
        return oracle.probability(self.twin, Query(1, self.target, {}, self.evidence))


def draw_provenance(rng: np.random.Generator, world_id: str) -> PosteriorItem:
    """Fault, one source report with 2–4 relayed copies, 1–2 independent reports."""
    prior = round(float(rng.uniform(0.1, 0.4)), 3)
    fp = round(float(rng.uniform(0.05, 0.2)), 3)
    tp = round(float(rng.uniform(0.6, 0.9)), 3)
    n_copies, n_ind = int(rng.integers(2, 5)), int(rng.integers(1, 3))
    base = [Variable("f", (), mechanisms.root(prior)), Variable("src", ("f",), reading(fp, tp))]
    inds = [Variable(f"ind{j}", ("f",), reading(fp, tp)) for j in range(n_ind)]
    copies = [Variable(f"copy{i}", ("src",), mechanisms.deterministic(lambda b: b[0], 1))
              for i in range(n_copies)]
    twin_copies = [Variable(f"copy{i}", ("f",), reading(fp, tp)) for i in range(n_copies)]
    world = World(world_id, tuple(base + inds + copies))
    twin = World(world_id, tuple(base + inds + twin_copies))
    evidence = {"src": 1, **{c.name: 1 for c in copies},
                **{v.name: int(rng.random() < 0.5) for v in inds}}
    return PosteriorItem("provenance", world, twin, {"f": 1}, evidence, "source_duplication")


def draw_negative_evidence(rng: np.random.Generator, world_id: str) -> PosteriorItem:
    """Fault -> condition -> alarm gated by sensor coverage and reporting delay."""
    prior = round(float(rng.uniform(0.2, 0.5)), 3)
    strength = round(float(rng.uniform(0.7, 0.95)), 3)
    p_cover = round(float(rng.uniform(0.4, 0.8)), 3)
    p_elapsed = round(float(rng.uniform(0.4, 0.8)), 3)
    common = [
        Variable("f", (), mechanisms.root(prior)),
        Variable("s", ("f",), mechanisms.noisy_or([strength], 0.0)),
        Variable("cover", (), mechanisms.root(p_cover)),
        Variable("elapsed", (), mechanisms.root(p_elapsed)),
    ]
    alarm = Variable("alarm", ("s", "cover", "elapsed"),
                     mechanisms.deterministic(lambda b: int(all(b)), 3))
    naive = Variable("alarm", ("s", "cover", "elapsed"),
                     mechanisms.deterministic(lambda b: b[0], 3))
    world = World(world_id, (*common, alarm))
    twin = World(world_id, (*common, naive))
    cover, elapsed = int(rng.random() < 0.5), int(rng.random() < 0.5)
    evidence = {"alarm": 0, "cover": cover, "elapsed": elapsed}
    return PosteriorItem("negative_evidence", world, twin, {"f": 1}, evidence,
                         "negative_evidence_misread")
