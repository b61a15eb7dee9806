"""Identification of P(y | do x) from the graph and the observed joint.

Seed 003, "Item types and when 'not identifiable' is correct" and Pearl (1995,
Biometrika 82(4)): the back-door criterion (an observed set Z with no
descendant of X that d-separates X and Y once X's outgoing edges are removed;
estimate sum_z P(y | x, z) P(z)) and the front-door criterion (an observed set M
intercepting every directed X→Y path, with no open back-door path X→M and every
back-door path M→Y blocked by X; estimate sum_m P(m | x) sum_x' P(y | x', m) P(x')).
d-separation is networkx's (`nx.is_d_separator`, `nx.find_minimal_d_separator`).
Both estimates index the observed table by value, so they hold for variables of any number
of states (categorical worlds, `random_dag.categorical_world`).

When neither applies, `not_identifiable` is returned only with a witness
(`witness.build_witness`): an alternative SCM with the identical observed joint
and a different P(y | do x). Without a witness the verdict is ``unknown``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import networkx as nx
import numpy as np

from rungbench.causal.scm.joint import ObservedDistribution, observed_distribution
from rungbench.causal.scm.witness import JOINT_CHECK, Witness, build_witness
from rungbench.causal.scm.world import World
from rungbench.errors import InputError

Verdict = Literal["no_causal_path", "backdoor", "frontdoor", "not_identifiable", "unknown"]
"""How P(y | do x) was identified, or why it was not."""

MAX_FRONTDOOR_SIZE = 3
"""Largest front-door mediator set searched."""


@dataclass(frozen=True)
class Identification:
    """The identification result for P(Y=y | do(X=x))."""

    verdict: Verdict
    """``no_causal_path`` (Y is not a descendant of X: the effect is P(y)), ``backdoor``,
    ``frontdoor``, ``not_identifiable`` (witness-backed) or ``unknown``."""
    adjustment_set: tuple[str, ...] | None
    """The back-door adjustment set when the verdict is ``backdoor``."""
    frontdoor_set: tuple[str, ...] | None
    """The front-door mediator set when the verdict is ``frontdoor``."""
    estimate: float | None
    """P(y | do x) computed from the observed joint alone; None unless identified."""
    witness: Witness | None
    """The witness when the verdict is ``not_identifiable``."""

    @property
    def identifiable(self) -> bool:
        """True when the effect was identified from the observed joint."""
        return self.estimate is not None


def causal_graph(world: World) -> nx.DiGraph:
    """The world's DAG, latents included."""
    g = nx.DiGraph()
    g.add_nodes_from(world.names)
    g.add_edges_from(world.edges())
    return g


def _without_outgoing(g: nx.DiGraph, nodes: Iterable[str]) -> nx.DiGraph:
    h = g.copy()
    h.remove_edges_from([(a, b) for a in nodes for b in list(g.successors(a))])
    return h


def is_backdoor_set(world: World, x: str, y: str, z: Iterable[str]) -> bool:
    """True iff ``z`` satisfies the back-door criterion for (x, y) (Pearl 1995, Def. 3)."""
    zs = set(z)
    if zs & world.descendants([x]) or y in zs:
        return False
    if any(not world.var(n).observed for n in zs):
        return False
    return bool(nx.is_d_separator(_without_outgoing(causal_graph(world), [x]), {x}, {y}, zs))


def find_backdoor_set(world: World, x: str, y: str) -> tuple[str, ...] | None:
    """A minimal observed back-door adjustment set for (x, y), or None."""
    allowed = set(world.observed_names) - world.descendants([x]) - {y}
    g = _without_outgoing(causal_graph(world), [x])
    found = nx.find_minimal_d_separator(g, {x}, {y}, restricted=allowed)
    if found is None:
        return None
    return tuple(n for n in world.names if n in found)


def is_frontdoor_set(world: World, x: str, y: str, m: Iterable[str]) -> bool:
    """True iff ``m`` satisfies the front-door criterion for (x, y) (Pearl 1995, Def. 5)."""
    ms = set(m)
    if not ms or x in ms or y in ms or any(not world.var(n).observed for n in ms):
        return False
    g = causal_graph(world)
    cut = g.copy()
    cut.remove_nodes_from(ms)
    if nx.has_path(cut, x, y):
        return False
    if not nx.is_d_separator(_without_outgoing(g, [x]), {x}, ms, set()):
        return False
    return bool(nx.is_d_separator(_without_outgoing(g, ms), ms, {y}, {x}))


def find_frontdoor_set(world: World, x: str, y: str) -> tuple[str, ...] | None:
    """The smallest front-door set (ties by topological order), or None."""
    between = world.descendants([x]) & world.ancestors([y])
    cands = [n for n in world.observed_names if n in between and n not in (x, y)]
    for size in range(1, min(MAX_FRONTDOOR_SIZE, len(cands)) + 1):
        for ms in itertools.combinations(cands, size):
            if is_frontdoor_set(world, x, y, ms):
                return ms
    return None


def backdoor_estimate(joint: ObservedDistribution, x: str, y: str, z: tuple[str, ...],
                      x_val: int = 1, y_val: int = 1) -> float | None:
    """sum_z P(y | x, z) P(z) from the observed joint; None if P(x, z) = 0 where P(z) > 0."""
    t = joint.marginal([x, y, *z])  # axes: x, y, z...
    pxz = t.sum(axis=1)[x_val]
    pz = t.sum(axis=(0, 1))
    if np.any((pxz <= 0.0) & (pz > 0.0)):
        return None
    safe = np.where(pxz > 0.0, pxz, 1.0)
    return float(np.sum(t[x_val, y_val] / safe * pz))


def frontdoor_estimate(joint: ObservedDistribution, x: str, y: str, m: tuple[str, ...],
                       x_val: int = 1, y_val: int = 1) -> float | None:
    """sum_m P(m | x) sum_x' P(y | x', m) P(x') from the observed joint (Pearl 1995, eq. 29)."""
    t = joint.marginal([x, y, *m])  # axes: x, y, m...
    px = t.sum(axis=tuple(range(1, t.ndim)))
    if px[x_val] <= 0.0:
        return None
    pxm = t.sum(axis=1)  # axes: x, m...
    p_m_given_x = pxm[x_val] / px[x_val]
    if np.any((pxm <= 0.0) & (p_m_given_x[None] > 0.0)):
        return None
    safe = np.where(pxm > 0.0, pxm, 1.0)
    p_y_given_xm = t[:, y_val] / safe  # axes: x', m...
    weights = px.reshape((-1,) + (1,) * (p_y_given_xm.ndim - 1))
    inner = (weights * p_y_given_xm).sum(axis=0)  # not BLAS: the same sum on every CPU
    return float(np.sum(p_m_given_x * inner))


def identify(world: World, x: str, y: str, *, x_val: int = 1, y_val: int = 1,
             joint: ObservedDistribution | None = None) -> Identification:
    """Decide whether P(Y=y | do(X=x)) is identified; estimate it from the observed joint."""
    for role, name in (("treatment", x), ("outcome", y)):
        if name not in world:
            raise InputError(f"unknown variable {name!r}", field=role)
        if not world.var(name).observed:
            raise InputError(f"{name!r} is latent", field=role)
    if x == y:
        raise InputError("treatment and outcome must differ", field="outcome")
    joint = joint if joint is not None else observed_distribution(world)
    if y not in world.descendants([x]):
        return Identification("no_causal_path", None, None, joint.prob({y: y_val}), None)
    z = find_backdoor_set(world, x, y)
    if z is not None:
        est = backdoor_estimate(joint, x, y, z, x_val, y_val)
        if est is not None:
            return Identification("backdoor", z, None, est, None)
    m = find_frontdoor_set(world, x, y)
    if m is not None:
        est = frontdoor_estimate(joint, x, y, m, x_val, y_val)
        if est is not None:
            return Identification("frontdoor", None, m, est, None)
    w = build_witness(world, x, y, x_val=x_val, y_val=y_val, joint=joint)
    # a gap within the joint's own check is rounding, not two worlds that disagree
    if w is not None and w.gap > JOINT_CHECK:
        return Identification("not_identifiable", None, None, None, w)
    return Identification("unknown", None, None, None, None)
