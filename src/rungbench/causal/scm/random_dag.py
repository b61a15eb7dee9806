"""Random worlds of a given size, edge density and latent fraction.

Seed 003, "Task families": multi-hop chains and random DAGs with random
response mixtures. Observed variables are named ``V00``… in a random
permutation of the causal order, so names do not reveal direction (seed 003,
"Public listing order is shuffled"). Each latent ``L00``… is an unobserved root
confounding two observed variables. :func:`dense_world` draws parents among all earlier
nodes (high treewidth), :func:`grid_world` lays the nodes on a grid (the oracle's scaling
case). :func:`categorical_world` draws the same kind of graph with variables of a range of
named states (2 to 4 by default); the binary generators draw exactly as before.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rungbench.causal.scm import mechanisms as mech
from rungbench.causal.scm.world import MAX_STATES, Variable, World
from rungbench.errors import InputError


@dataclass(frozen=True)
class DagSpec:
    """Parameters of a random world."""

    n_nodes: int
    """Number of observed variables."""
    edge_density: float
    """Probability of each forward edge between observed variables (before the parent cap)."""
    latent_fraction: float = 0.0
    """Latent confounders per observed variable (rounded), each with two observed children."""
    max_parents: int = 3
    """Cap on observed parents per variable (latents come on top, at most 2 in total)."""
    n_tables: int = 3
    """Response functions per endogenous variable."""


def _check_spec(spec: DagSpec) -> None:
    if spec.n_nodes < 2:
        raise InputError(f"n_nodes must be >= 2, got {spec.n_nodes}", field="n_nodes")
    if not 0.0 <= spec.edge_density <= 1.0:
        raise InputError(f"edge_density must be in [0, 1], got {spec.edge_density}",
                         field="edge_density")
    if spec.latent_fraction < 0.0:
        raise InputError(f"latent_fraction must be >= 0, got {spec.latent_fraction}",
                         field="latent_fraction")


def _observed_parents(spec: DagSpec, rng: np.random.Generator
                      ) -> tuple[list[str], list[list[str]]]:
    """Labels in causal order (a random permutation of ``V00``…) and each one's observed
    parents."""
    n = spec.n_nodes
    labels = [f"V{i:02d}" for i in rng.permutation(n)]  # labels[j] is the j-th in causal order
    parents: list[list[str]] = [[] for _ in range(n)]
    for j in range(1, n):
        cands = [labels[i] for i in range(j) if rng.random() < spec.edge_density]
        if len(cands) > spec.max_parents:
            cands = [str(c) for c in rng.choice(cands, size=spec.max_parents, replace=False)]
        parents[j] = sorted(cands)
    return labels, parents


def _attach_latents(spec: DagSpec, rng: np.random.Generator, parents: list[list[str]],
                    make_root: Callable[[str], Variable]) -> list[Variable]:
    """Add ``round(latent_fraction * n)`` latent roots, each a parent of two observed
    variables with fewer than two latent parents; ``make_root`` draws each one's mechanism
    right after its children."""
    n = spec.n_nodes
    latents: list[Variable] = []
    for k in range(round(spec.latent_fraction * n)):
        name = f"L{k:02d}"
        eligible = [j for j in range(n) if sum(p.startswith("L") for p in parents[j]) < 2]
        if len(eligible) < 2:
            break
        a, b = (int(j) for j in rng.choice(eligible, size=2, replace=False))
        parents[a].append(name)
        parents[b].append(name)
        latents.append(make_root(name))
    return latents


def random_world(spec: DagSpec, rng: np.random.Generator, world_id: str) -> World:
    """Draw a random world; mechanisms are random response mixtures."""
    _check_spec(spec)
    labels, parents = _observed_parents(spec, rng)
    latents = _attach_latents(spec, rng, parents, lambda name: Variable(
        name, (), mech.root(float(rng.uniform(0.3, 0.7))), False))
    variables = list(latents)
    for j in range(spec.n_nodes):
        ps = tuple(parents[j])
        responses = (mech.root(float(rng.uniform(0.2, 0.8))) if not ps
                     else mech.random_mixture(len(ps), rng, n_tables=spec.n_tables))
        variables.append(Variable(labels[j], ps, responses, True))
    return World(world_id, tuple(variables))


StateRange = tuple[int, int]
"""Fewest and most states a generated categorical variable may have (both included)."""


def state_names(k: int) -> tuple[str, ...]:
    """The ordered state names of a generated ``k``-state variable: ``s0`` < ``s1`` < …"""
    return tuple(f"s{i}" for i in range(k))


def _check_states(states: StateRange) -> None:
    lo, hi = states
    if not 2 <= lo <= hi <= MAX_STATES:
        raise InputError(f"states must be a range 2 <= lo <= hi <= {MAX_STATES}, got "
                         f"{states!r}", field="states")


def _categorical_root(name: str, states: StateRange, rng: np.random.Generator, *,
                      observed: bool) -> Variable:
    k = int(rng.integers(states[0], states[1] + 1))
    return Variable(name, (), mech.random_categorical_root(k, rng), observed, state_names(k))


def categorical_world(spec: DagSpec, rng: np.random.Generator, world_id: str, *,
                      states: StateRange = (2, 4)) -> World:
    """Draw a random world whose variables have ``states[0]``..``states[1]`` named states.

    The graph is drawn as in :func:`random_world` (same structure for the same Generator
    state); then each observed variable's number of states, in causal order; then the
    mechanisms: roots Dirichlet-weighted (`mechanisms.random_categorical_root`), the rest
    random response mixtures over their parents' rows (`mechanisms.random_categorical_mixture`).
    Latent confounders draw their number of states and mechanism like roots. The world is a
    `rungbench.world/2` document (every variable lists its states, ``s0``… in value order).
    """
    _check_spec(spec)
    _check_states(states)
    labels, parents = _observed_parents(spec, rng)
    latents = _attach_latents(spec, rng, parents, lambda name: _categorical_root(
        name, states, rng, observed=False))
    cards = {v.name: v.card for v in latents}
    cards.update({label: int(rng.integers(states[0], states[1] + 1)) for label in labels})
    variables = list(latents)
    for j, label in enumerate(labels):
        ps, k = tuple(parents[j]), cards[label]
        responses = (mech.random_categorical_root(k, rng) if not ps
                     else mech.random_categorical_mixture([cards[p] for p in ps], k, rng,
                                                          n_tables=spec.n_tables))
        variables.append(Variable(label, ps, responses, True, state_names(k)))
    return World(world_id, tuple(variables))


def dense_world(n_nodes: int, in_degree: float, rng: np.random.Generator,
                world_id: str, *, n_tables: int = 3) -> World:
    """A world whose nodes draw parents uniformly among ALL earlier nodes.

    Node j (causal order) gets min(j, k_j) parents, k_j = floor(in_degree) or its ceiling
    with probability equal to the fractional part, so the mean in-degree approaches
    ``in_degree`` and ancestral sets span most of the graph: the hard, high-treewidth
    worlds (treewidth ~20-24 at 60-80 nodes and in-degree ~2.7) of the oracle benchmark
    (``benchmarks/causal_oracle.py``).
    """
    if n_nodes < 2:
        raise InputError(f"n_nodes must be >= 2, got {n_nodes}", field="n_nodes")
    if in_degree < 0.0:
        raise InputError(f"in_degree must be >= 0, got {in_degree}", field="in_degree")
    labels = [f"V{i:02d}" for i in rng.permutation(n_nodes)]
    base, frac = int(in_degree), in_degree - int(in_degree)
    variables = []
    for j in range(n_nodes):
        k = min(j, base + (1 if rng.random() < frac else 0))
        ps = tuple(sorted(labels[int(i)] for i in rng.choice(j, size=k, replace=False))) \
            if k else ()
        responses = (mech.root(float(rng.uniform(0.2, 0.8))) if not ps
                     else mech.random_mixture(len(ps), rng, n_tables=n_tables))
        variables.append(Variable(labels[j], ps, responses, True))
    return World(world_id, tuple(variables))


def grid_world(rows: int, cols: int, rng: np.random.Generator, world_id: str, *,
               n_tables: int = 3) -> World:
    """A ``rows`` x ``cols`` grid world: cell (r, c) is ``R{r:02d}C{c:02d}``, with the cells
    above and to its left as parents (the first listed is the one above).

    Its moral graph is a triangulated grid of treewidth about min(rows, cols) that greedy
    fill heuristics over-estimate (``causal.scm.ordering``): the scaling case of the oracle
    benchmark (``benchmarks/causal_oracle.py``). Names reveal the layout, so grids serve the
    oracle's cost, not agents' items. Mechanisms are random response mixtures, roots random
    coins, as in :func:`random_world`.
    """
    if rows < 1 or cols < 1 or rows * cols < 2:
        raise InputError(f"a grid needs at least two cells, got {rows} x {cols}",
                         field="rows")
    variables = []
    for r in range(rows):
        for c in range(cols):
            ps = tuple(([f"R{r - 1:02d}C{c:02d}"] if r else [])
                       + ([f"R{r:02d}C{c - 1:02d}"] if c else []))
            responses = (mech.root(float(rng.uniform(0.2, 0.8))) if not ps
                         else mech.random_mixture(len(ps), rng, n_tables=n_tables))
            variables.append(Variable(f"R{r:02d}C{c:02d}", ps, responses, True))
    return World(world_id, tuple(variables))
