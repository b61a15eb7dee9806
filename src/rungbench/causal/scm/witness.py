"""Witnesses of non-identifiability (seed 003, "Item types": non-ID is proved per item).

A witness is a second SCM with the identical observed joint distribution and a
different P(y | do x). We build it inside the same causal graph, so it is a
proof of non-identifiability and not merely a different model:

1. Take the latent projection of the world (an ADMG over the observed variables)
   and its topological order.
2. Give each observed V as parents its ordered Markov blanket
   mb(V) = (D ∪ pa(D)) \\ {V}, where D is V's district among its predecessors.
   By the ordered local Markov property of ADMGs (Richardson 2003, "Markov
   properties for acyclic directed mixed graphs", Scand. J. Statist. 30) the
   observed joint factorizes as prod_V P(V | mb(V)), so the witness, with CPDs
   read off the observed joint, reproduces it exactly (checked numerically). Variables of
   more than two states keep their states; their CPDs are encoded by the comonotone
   coupling of `cpts.comonotone_categorical` (a rung-2 answer does not depend on it).
3. The witness has no latent confounding; it is a member of the graph's model
   (latents with no effect) iff every mb(V) is among V's directed parents in the
   projection. Otherwise no witness is returned (the verdict stays ``unknown``).

In the latent-confounded motif L → X, L → Y, X → Y this is seed 003's "same
P(X, Y), unconfounded model": the witness answers P(y | x) where the truth is
P(y | do x).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from rungbench.causal.scm import mechanisms as mech
from rungbench.causal.scm import oracle
from rungbench.causal.scm.cpts import comonotone_categorical
from rungbench.causal.scm.joint import (
    ObservedDistribution,
    ObservedJoint,
    observed_distribution,
)
from rungbench.causal.scm.world import Query, Response, Variable, World
from rungbench.errors import IntegrityError

WITNESS_TOL = 0.02
"""Items are kept only when the witness gap exceeds this tolerance (seed 003, τ)."""

JOINT_CHECK = 1e-9
"""The witness's observed joint must match the world's within this (max abs cell)."""


@dataclass(frozen=True)
class Witness:
    """An alternative SCM with the same observed joint and a different interventional answer."""

    world: World
    """The witness SCM (observed variables only, no latent confounding)."""
    true_value: float
    """P(y | do x) in the original world."""
    witness_value: float
    """P(y | do x) in the witness."""
    joint_max_diff: float
    """Max |P_world(v) - P_witness(v)| over observed cells (≈ 1e-16)."""

    @property
    def gap(self) -> float:
        """|true_value - witness_value| (the witness gap)."""
        return abs(self.true_value - self.witness_value)

    @property
    def keeps_item(self) -> bool:
        """True when the gap exceeds `WITNESS_TOL` (answering anyway is detectably wrong)."""
        return self.gap > WITNESS_TOL


def projection(world: World) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Latent projection: directed parents and bidirected neighbours of each observed variable."""
    observed = set(world.observed_names)
    parents: dict[str, set[str]] = {}
    for v in world.observed_names:
        found: set[str] = set()
        stack = list(world.var(v).parents)
        seen: set[str] = set()
        while stack:
            p = stack.pop()
            if p in seen:
                continue
            seen.add(p)
            if p in observed:
                found.add(p)
            else:
                stack.extend(world.var(p).parents)
        parents[v] = found
    reach: dict[str, set[str]] = {}
    for lat in reversed(world.latent_names):
        out: set[str] = set()
        for c in world.children(lat):
            out |= {c} if c in observed else reach[c]
        reach[lat] = out
    siblings: dict[str, set[str]] = {v: set() for v in world.observed_names}
    for group in reach.values():
        for a in group:
            siblings[a] |= group - {a}
    return parents, siblings


def ordered_blankets(world: World) -> dict[str, tuple[str, ...]]:
    """mb(V) for each observed V over its predecessors, in topological order."""
    parents, siblings = projection(world)
    order = world.observed_names
    out: dict[str, tuple[str, ...]] = {}
    for i, v in enumerate(order):
        allowed = set(order[: i + 1])
        district = {v}
        stack = [v]
        while stack:
            a = stack.pop()
            for b in siblings[a] & allowed:
                if b not in district:
                    district.add(b)
                    stack.append(b)
        blanket = district.union(*(parents[d] for d in district)) - {v}
        out[v] = tuple(n for n in order if n in blanket)
    return out


def threshold_responses(p_one: np.ndarray) -> tuple[Response, ...]:
    """Exact response mixture for P(V=1 | row) = p_one[row] (a comonotone threshold coupling).

    U ~ Uniform(0, 1) and V = 1[U < p_one[row]]; between consecutive distinct
    thresholds the table is constant, so each interval is one response table.
    """
    cuts = np.unique(np.concatenate([[0.0, 1.0], np.clip(p_one, 0.0, 1.0)]))
    weighted = []
    for lo, hi in itertools.pairwise(cuts):
        if hi - lo > 1e-15:
            weighted.append((float(hi - lo), tuple(int(p >= hi) for p in p_one)))
    return mech._mixture(weighted)


def saturated_world(world: World, joint: ObservedDistribution,
                    parents: dict[str, tuple[str, ...]]) -> World:
    """The latent-free SCM with the given parents and CPDs read off ``joint``.

    A binary V gets the threshold coupling of :func:`threshold_responses`; a V of more
    states the comonotone one of `cpts.comonotone_categorical` (the same coupling, and
    its states). The coupling is free: a witness answers a rung-2 query."""
    variables = []
    for v in world.observed_names:
        ps, var = parents[v], world.var(v)
        t = joint.marginal([v, *reversed(ps)])  # C-order rows: first parent is the LSB
        flat = t.reshape(var.card, -1)
        denom = flat.sum(axis=0)
        safe = np.where(denom > 0.0, denom, 1.0)
        if var.card == 2:
            p_one = np.where(denom > 0.0, flat[1] / safe, 0.5)
            responses = threshold_responses(p_one)
        else:
            rows = np.where(denom > 0.0, flat / safe, 1.0 / var.card).T
            responses = comonotone_categorical(rows.tolist())
        variables.append(Variable(v, ps, responses, True, var.states))
    return World(f"{world.world_id}-witness", tuple(variables))


def joint_difference(a: ObservedDistribution, b: ObservedDistribution,
                     blankets: dict[str, tuple[str, ...]]) -> float:
    """Max |P_a - P_b| over the full joint when both are dense, else over every family
    marginal (V, mb(V)) — which fixes the joint through the ordered factorization."""
    if isinstance(a, ObservedJoint) and isinstance(b, ObservedJoint):
        return float(np.max(np.abs(b.marginal(a.names) - a.table)))
    return max(float(np.max(np.abs(a.marginal([v, *mb]) - b.marginal([v, *mb]))))
               for v, mb in blankets.items())


def build_witness(world: World, x: str, y: str, *, x_val: int = 1, y_val: int = 1,
                  joint: ObservedDistribution | None = None) -> Witness | None:
    """A graph-compatible witness for P(Y=y | do(X=x)), or None when the construction
    leaves the graph's model (some ordered blanket is not among the directed parents)."""
    directed, _ = projection(world)
    blankets = ordered_blankets(world)
    if any(not set(mb) <= directed[v] for v, mb in blankets.items()):
        return None
    joint = joint if joint is not None else observed_distribution(world)
    alt = saturated_world(world, joint, blankets)
    diff = joint_difference(joint, observed_distribution(alt), blankets)
    if diff > JOINT_CHECK:
        raise IntegrityError(f"witness of {world.world_id} changes the observed joint by {diff}")
    q = Query(2, {y: y_val}, {x: x_val}, {})
    return Witness(alt, oracle.probability(world, q), oracle.probability(alt, q), diff)
