"""The observed joint distribution of a world: what identification may use.

Seed 003, "Item types": an identification item shows the graph and the observed
joint; latents are summed out. Estimates computed from an `ObservedJoint` see
nothing else of the world.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from rungbench.causal.scm import elimination
from rungbench.causal.scm.enumeration import MAX_CONFIGURATIONS
from rungbench.causal.scm.oracle import enumerator
from rungbench.causal.scm.world import World
from rungbench.errors import InputError

MAX_OBSERVED = 20
"""Largest number of observed variables whose joint table is materialized."""


class ObservedDistribution(Protocol):
    """Anything that answers marginals of the observed joint distribution."""

    @property
    def names(self) -> tuple[str, ...]:
        """The observed variables."""
        ...

    def marginal(self, keep: Sequence[str]) -> np.ndarray:
        """The marginal table over ``keep`` (axes in that order)."""
        ...

    def prob(self, event: Mapping[str, int]) -> float:
        """P(event) for a joint event over observed variables."""
        ...


@dataclass(frozen=True)
class ObservedJoint:
    """P(observed variables) as a dense table."""

    names: tuple[str, ...]
    """Axis names; axis i is the value of names[i]."""
    table: np.ndarray
    """Probabilities, one axis per name of length its number of states, summing to 1."""

    def marginal(self, keep: Sequence[str]) -> np.ndarray:
        """The marginal table over ``keep`` (axes in that order)."""
        for k in keep:
            if k not in self.names:
                raise InputError(f"{k!r} is not an observed variable", field="names")
        axes = tuple(i for i, n in enumerate(self.names) if n not in keep)
        summed = self.table.sum(axis=axes)
        remaining = [n for n in self.names if n in keep]
        return np.transpose(summed, [remaining.index(k) for k in keep])

    def prob(self, event: Mapping[str, int]) -> float:
        """P(event) for a joint event over observed variables."""
        names = list(event)
        return float(self.marginal(names)[tuple(event[n] for n in names)]) if names else 1.0

    def to_json(self) -> dict[str, object]:
        """Rows ``{"assignment": {...}, "p": ...}`` for every cell."""
        rows = []
        for idx in np.ndindex(*self.table.shape):
            rows.append({"assignment": dict(zip(self.names, (int(i) for i in idx), strict=True)),
                         "p": float(self.table[idx])})
        return {"names": list(self.names), "rows": rows}


def _fits(world: World) -> bool:
    """At most :data:`MAX_OBSERVED` observed variables and 2^MAX_OBSERVED joint entries."""
    names = world.observed_names
    return (len(names) <= MAX_OBSERVED
            and math.prod(world.card(n) for n in names) <= 2 ** MAX_OBSERVED)


def observed_joint(world: World) -> ObservedJoint:
    """Sum the latents out of the world's joint distribution (exactly)."""
    names = world.observed_names
    if not _fits(world):
        raise InputError(f"{len(names)} observed variables exceed {MAX_OBSERVED} (or their "
                         f"joint table 2^{MAX_OBSERVED} entries) for a dense joint table",
                         field="world")
    if world.n_configurations() <= MAX_CONFIGURATIONS:
        en = enumerator(world)
        cards = tuple(world.card(n) for n in names)
        index = np.zeros(en.n, dtype=np.int64)
        for n, k in zip(names, cards, strict=True):  # C order: the last name varies fastest
            index = index * k + en.factual.values[n].astype(np.int64)
        flat = np.bincount(index, weights=en.weight, minlength=math.prod(cards))
        return ObservedJoint(names, flat.reshape(cards))
    factors = [elimination.cpd_factor(v, v.name, list(v.parents)) for v in world.variables]
    joint = elimination.eliminate(factors, list(names))
    return ObservedJoint(names, joint.table / joint.table.sum())


class ObservedMarginals:
    """The observed joint of a large world, answered marginal by marginal (exact VE).

    Used when there are too many observed variables for a dense table; only the
    ancestors of the requested variables enter each elimination.
    """

    def __init__(self, world: World) -> None:
        self.world = world
        self._cache: dict[tuple[str, ...], np.ndarray] = {}

    @property
    def names(self) -> tuple[str, ...]:
        """The observed variables."""
        return self.world.observed_names

    def marginal(self, keep: Sequence[str]) -> np.ndarray:
        """The marginal table over ``keep`` (axes in that order)."""
        key = tuple(keep)
        if key not in self._cache:
            for k in key:
                if k not in self.names:
                    raise InputError(f"{k!r} is not an observed variable", field="names")
            relevant = self.world.ancestors(key)
            factors = [elimination.cpd_factor(v, v.name, list(v.parents))
                       for v in self.world.variables if v.name in relevant]
            table = elimination.eliminate(factors, list(key)).table
            self._cache[key] = table / table.sum()
        return self._cache[key]

    def prob(self, event: Mapping[str, int]) -> float:
        """P(event) for a joint event over observed variables."""
        names = list(event)
        return float(self.marginal(names)[tuple(event[n] for n in names)]) if names else 1.0


def observed_distribution(world: World) -> ObservedJoint | ObservedMarginals:
    """A dense `ObservedJoint` when it fits (`MAX_OBSERVED`), else lazy `ObservedMarginals`."""
    if _fits(world):
        return observed_joint(world)
    return ObservedMarginals(world)
