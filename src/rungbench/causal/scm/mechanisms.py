"""Mechanism families as exact mixtures of response functions.

Seed 003, "World model" → "Mechanism families": noisy-OR (encoded exactly as a
mixture of response tables), AND-interaction with failure noise, and random
response mixtures. Each builder returns the `Response` tuple of one variable;
identical tables are merged and zero-probability tables dropped, so the
enumeration oracle only visits response functions that can occur.

Variables of more than two states (`rungbench.world/2`, docs/CONTRACTS.md §1) get the
same kind of mechanism: :func:`categorical_root` and :func:`random_categorical_mixture`
are structural equations V := t_{U_V}(parents), the exogenous U_V picking one table t
over the values 0..k-1, so rung 3 is fixed by the SCM itself (no CPT coupling is
chosen). A leak (U_V picks a constant table) gives every state positive probability in
every parent row, so no adjustment formula meets a zero-probability stratum.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

import numpy as np

from rungbench.causal.scm.world import MAX_STATES, Response
from rungbench.errors import InputError


def _rows(k: int) -> list[tuple[int, ...]]:
    """Parent configurations in row order: row index = sum(bit_i << i)."""
    return [tuple((idx >> i) & 1 for i in range(k)) for idx in range(2**k)]


def _mixture(weighted: Sequence[tuple[float, tuple[int, ...]]]) -> tuple[Response, ...]:
    merged: dict[tuple[int, ...], float] = {}
    for p, table in weighted:
        if p > 0.0:
            merged[table] = merged.get(table, 0.0) + p
    total = sum(merged.values())
    return tuple(Response(float(p / total), t) for t, p in sorted(merged.items()))


def _check_prob(value: float, name: str) -> None:
    if not 0.0 <= value <= 1.0:
        raise InputError(f"{name} must be in [0, 1], got {value!r}", field=name)


def root(p_one: float) -> tuple[Response, ...]:
    """A root: V=1 with probability ``p_one``."""
    _check_prob(p_one, "p_one")
    return _mixture([(p_one, (1,)), (1.0 - p_one, (0,))])


def deterministic(function: Callable[[tuple[int, ...]], int], k: int) -> tuple[Response, ...]:
    """A noiseless mechanism ``V := function(parents)``."""
    return (Response(1.0, tuple(int(function(bits)) for bits in _rows(k))),)


def noisy_or(strengths: Sequence[float], leak: float) -> tuple[Response, ...]:
    """Noisy-OR: V=1 iff the leak fires or some active parent's link fires.

    Parent i's link fires independently with probability ``strengths[i]``; the
    leak with probability ``leak``. Each joint link pattern is one response table,
    so the mixture reproduces P(V=1 | pa) = 1 - (1-leak) prod_{i: pa_i=1} (1-s_i) exactly.
    """
    for i, s in enumerate(strengths):
        _check_prob(s, f"strengths[{i}]")
    _check_prob(leak, "leak")
    k = len(strengths)
    weighted = []
    for links in itertools.product((0, 1), repeat=k + 1):
        p = leak if links[k] else 1.0 - leak
        for i in range(k):
            p *= strengths[i] if links[i] else 1.0 - strengths[i]
        table = tuple(int(links[k] or any(b and links[i] for i, b in enumerate(bits)))
                      for bits in _rows(k))
        weighted.append((p, table))
    return _mixture(weighted)


def and_interaction(k: int, failure: float, leak: float = 0.0) -> tuple[Response, ...]:
    """AND of all ``k`` parents; it fails (outputs 0) w.p. ``failure``; a leak forces 1.

    The failure and the leak are independent: P(leak) = ``leak`` overrides everything.
    """
    _check_prob(failure, "failure")
    _check_prob(leak, "leak")
    conj = tuple(int(all(bits)) for bits in _rows(k))
    zeros = tuple(0 for _ in conj)
    ones = tuple(1 for _ in conj)
    return _mixture([
        (leak, ones),
        ((1.0 - leak) * (1.0 - failure), conj),
        ((1.0 - leak) * failure, zeros),
    ])


def noisy_function(function: Callable[[tuple[int, ...]], int], k: int,
                   flip: float) -> tuple[Response, ...]:
    """``V := function(parents)`` whose output is flipped w.p. ``flip`` (one shared U_V bit)."""
    _check_prob(flip, "flip")
    table = tuple(int(function(bits)) for bits in _rows(k))
    return _mixture([(1.0 - flip, table), (flip, tuple(1 - t for t in table))])


def random_mixture(k: int, rng: np.random.Generator, *, n_tables: int = 3,
                   concentration: float = 1.0) -> tuple[Response, ...]:
    """``n_tables`` distinct random response tables with Dirichlet(concentration) weights."""
    width = 2**k
    n_tables = min(n_tables, 2**width)
    tables: set[tuple[int, ...]] = set()
    while len(tables) < n_tables:
        tables.add(tuple(int(b) for b in rng.integers(0, 2, size=width)))
    weights = rng.dirichlet(np.full(n_tables, concentration))
    weights = np.maximum(weights, 1e-3)
    weights = weights / weights.sum()
    return _mixture(list(zip((float(w) for w in weights), sorted(tables), strict=True)))


CATEGORICAL_LEAK = 0.1
"""Total weight of the constant tables in a generated categorical mechanism: every state
has probability at least ``CATEGORICAL_LEAK / k`` in every parent row."""


def _check_states(k: int) -> None:
    if not 2 <= k <= MAX_STATES:
        raise InputError(f"a variable has 2..{MAX_STATES} states, got {k!r}", field="states")


def categorical_root(probabilities: Sequence[float]) -> tuple[Response, ...]:
    """A root of ``len(probabilities)`` states: V = s with probability ``probabilities[s]``."""
    _check_states(len(probabilities))
    for s, p in enumerate(probabilities):
        _check_prob(p, f"probabilities[{s}]")
    total = math.fsum(probabilities)
    if abs(total - 1.0) > 1e-9:
        raise InputError(f"state probabilities sum to {total!r}, not 1", field="probabilities")
    return _mixture([(p, (s,)) for s, p in enumerate(probabilities)])


def random_categorical_root(k: int, rng: np.random.Generator, *,
                            leak: float = CATEGORICAL_LEAK) -> tuple[Response, ...]:
    """A ``k``-state root with Dirichlet(1) probabilities mixed with ``leak`` of the uniform."""
    _check_states(k)
    _check_prob(leak, "leak")
    probs = (1.0 - leak) * rng.dirichlet(np.ones(k)) + leak / k
    return categorical_root([float(p) for p in probs / probs.sum()])


def random_categorical_mixture(parent_cards: Sequence[int], k: int, rng: np.random.Generator,
                               *, n_tables: int = 3, concentration: float = 1.0,
                               leak: float = CATEGORICAL_LEAK) -> tuple[Response, ...]:
    """V := t_{U_V}(parents) over ``k`` states: ``n_tables`` distinct random tables with
    Dirichlet(concentration) weights sharing ``1 - leak``, and the k constant tables sharing
    ``leak`` equally (the categorical :func:`random_mixture` with a leak).

    Rows follow CONTRACTS §1: the first parent is the least significant digit, its
    stride 1, the next parent's stride the first parent's number of states, and so on.
    """
    _check_states(k)
    _check_prob(leak, "leak")
    for i, c in enumerate(parent_cards):
        if not 2 <= c <= MAX_STATES:
            raise InputError(f"a parent has 2..{MAX_STATES} states, got {c!r}",
                             field=f"parent_cards[{i}]")
    width = math.prod(parent_cards)
    n_tables = min(n_tables, k**width)
    tables: set[tuple[int, ...]] = set()
    while len(tables) < n_tables:
        tables.add(tuple(int(v) for v in rng.integers(0, k, size=width)))
    weights = np.maximum(rng.dirichlet(np.full(n_tables, concentration)), 1e-3)
    weights = (1.0 - leak) * weights / weights.sum()
    constants = [(leak / k, (s,) * width) for s in range(k)]
    return _mixture([*zip((float(w) for w in weights), sorted(tables), strict=True),
                     *constants])


def categorical_links(sources: Sequence[tuple[Sequence[int], float]], k: int,
                      rows: int) -> tuple[Response, ...]:
    """V := the output of the first link that fires, else a uniform leak state.

    Each source is (table, strength): a table over the ``rows`` parent configurations
    (values 0..k-1) and the probability that its link fires; links are tried in order, so
    source i decides V with probability strength_i prod_{j < i} (1 - strength_j); when none
    fires V is a uniform state (the k constant tables share the rest: the leak). This is the
    categorical noisy-OR of :func:`noisy_or`: one U_V chooses which link decides.
    """
    _check_states(k)
    weighted: list[tuple[float, tuple[int, ...]]] = []
    remaining = 1.0
    for i, (table, strength) in enumerate(sources):
        _check_prob(strength, f"sources[{i}].strength")
        if len(table) != rows or not all(0 <= t < k for t in table):
            raise InputError(f"a link table needs {rows} values in 0..{k - 1}, got "
                             f"{list(table)!r}", field=f"sources[{i}].table")
        weighted.append((remaining * strength, tuple(int(t) for t in table)))
        remaining *= 1.0 - strength
    weighted.extend((remaining / k, (s,) * rows) for s in range(k))
    return _mixture(weighted)
