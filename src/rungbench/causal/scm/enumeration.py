"""Exact answers by vectorized enumeration of exogenous configurations.

Seed 003, "World model": exogenous noise is finite, so every rung is computed
exactly by enumerating the joint response-function assignments u = (u_V)_V.
Only response functions with nonzero probability are kept, and all N = prod_V
|responses(V)| configurations are solved at once with numpy (one array per
variable), so a query is a handful of vector operations.

Surgery (rung 2) replaces the mechanism of each intervened variable by a
constant and leaves every other mechanism — including the children's, which
still read X — untouched: the *incoming* edges of X are severed, never the
outgoing ones (seed 003 "Status and summary": the nullification bug).

Counterfactuals (rung 3) use abduction → action → prediction on the same
configuration array: the factual solution filters u by the evidence, the
intervened solution is read on the same u (seed 003 "World model" → "Counterfactuals").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from rungbench.causal.scm.world import World
from rungbench.errors import InputError

MAX_CONFIGURATIONS = 1 << 16
"""Above this many exogenous configurations the oracle uses variable elimination."""

DoValue = int | np.ndarray
"""An intervention value: a constant, or one value per configuration (nested counterfactuals)."""


def _dtype(card: int) -> type[np.generic]:
    """Value array type of a variable with ``card`` values (boolean for binary ones)."""
    return np.bool_ if card == 2 else np.int16


@dataclass(frozen=True)
class _Solution:
    values: dict[str, np.ndarray]
    """Per variable, its value in each configuration (boolean for a binary variable,
    an integer 0..k-1 otherwise)."""


class Enumerator:
    """A world compiled to arrays over its exogenous configurations."""

    def __init__(self, world: World) -> None:
        n = world.n_configurations()
        if n > MAX_CONFIGURATIONS:
            raise InputError(f"{n} exogenous configurations exceed {MAX_CONFIGURATIONS}; "
                             "use variable elimination", field="world")
        self.world = world
        self.n = n
        self._u: dict[str, np.ndarray] = {}
        self._radix: dict[str, int] = {}
        self._tables: dict[str, np.ndarray] = {}
        weight = np.ones(n)
        stride = 1
        for v in world.variables:
            r = len(v.responses)
            self._u[v.name] = (np.arange(n) // stride) % r
            self._radix[v.name] = stride
            stride *= r
            probs = np.array([resp.p for resp in v.responses])
            weight *= probs[self._u[v.name]]
            self._tables[v.name] = np.array([resp.table for resp in v.responses],
                                            dtype=_dtype(v.card))
        self.weight = weight
        """Probability of each exogenous configuration."""
        self._cache: dict[tuple[tuple[str, int], ...], _Solution] = {}
        self.factual = self.solve({})

    def solve(self, do: Mapping[str, DoValue]) -> _Solution:
        """Solve every configuration under ``do`` (cached for constant interventions)."""
        constant = all(isinstance(x, int) for x in do.values())
        key = tuple(sorted((k, int(v)) for k, v in do.items())) if constant else None
        if key is not None and key in self._cache:
            return self._cache[key]
        base = self._cache.get(()) if do else None
        changed = self.world.descendants(do) if base is not None else None
        values: dict[str, np.ndarray] = {}
        for v in self.world.variables:
            name = v.name
            if name in do:
                x = do[name]
                values[name] = (np.full(self.n, x, dtype=_dtype(v.card)) if isinstance(x, int)
                                else np.asarray(x, dtype=_dtype(v.card)))
            elif base is not None and changed is not None and name not in changed:
                values[name] = base.values[name]
            else:
                row = np.zeros(self.n, dtype=np.int64)
                for p, stride in zip(v.parents, v.strides, strict=True):
                    row += values[p].astype(np.int64) * stride
                values[name] = self._tables[name][self._u[name], row]
        sol = _Solution(values)
        if key is not None:
            self._cache[key] = sol
        return sol

    def mask(self, sol: _Solution, event: Mapping[str, int]) -> np.ndarray:
        """Boolean mask of the configurations where ``event`` holds in ``sol``."""
        out = np.ones(self.n, dtype=bool)
        for name, value in event.items():
            col = sol.values[name]
            if col.dtype == bool:
                out &= col if value else ~col
            else:
                out &= col == value
        return out

    def mass(self, mask: np.ndarray) -> float:
        """Total probability of the configurations in ``mask``."""
        return float(self.weight[mask].sum())  # not BLAS: the same sum on every CPU

    def conditional(self, target: np.ndarray, given: np.ndarray, *, field: str) -> float:
        """P(target | given); InputError naming ``field`` when P(given) = 0."""
        denom = self.mass(given)
        if denom <= 0.0:
            raise InputError("the conditioning event has probability zero", field=field)
        return self.mass(target & given) / denom

    def rung1(self, target: Mapping[str, int], evidence: Mapping[str, int]) -> float:
        """P(target | evidence) in the factual world."""
        return self.conditional(self.mask(self.factual, target),
                                self.mask(self.factual, evidence), field="evidence")

    def rung2(self, target: Mapping[str, int], do: Mapping[str, int],
              evidence: Mapping[str, int]) -> float:
        """P(target | do, evidence), evidence observed after the intervention."""
        sol = self.solve(do)
        return self.conditional(self.mask(sol, target), self.mask(sol, evidence),
                                field="evidence")

    def rung3(self, target: Mapping[str, int], do: Mapping[str, int],
              evidence: Mapping[str, int]) -> float:
        """P(target_do | evidence) with the factual evidence abducted on the same u."""
        cf = self.solve(do)
        return self.conditional(self.mask(cf, target), self.mask(self.factual, evidence),
                                field="evidence")

    def resampled(self, target: Mapping[str, int], do: Mapping[str, int],
                  evidence: Mapping[str, int]) -> float:
        """Rung-3 value with the intervened variables' descendants' noise redrawn.

        Abduction keeps only U of the non-descendants of the do() variables; the U
        of every descendant is drawn fresh from its prior (the "incorrect noise
        reuse" confusion of seed 003, "Failure taxonomy").
        """
        changed = self.world.descendants(do)
        kept = [v.name for v in self.world.variables if v.name not in changed]
        key = np.zeros(self.n, dtype=np.int64)
        for name in kept:
            key += self._u[name] * self._radix[name]
        ev = self.mask(self.factual, evidence)
        p_e = self.mass(ev)
        if p_e <= 0.0:
            raise InputError("the conditioning event has probability zero", field="evidence")
        size = int(key.max()) + 1
        prior = np.bincount(key, weights=self.weight, minlength=size)
        post = np.bincount(key, weights=self.weight * ev, minlength=size) / p_e
        reweight = self.weight * (post[key] / prior[key])
        # The reweighted masses sum to 1 only up to rounding (one ulp above it was
        # seen, e.g. 1.0000000000000002): clip the probability into [0, 1].
        mass = float(reweight[self.mask(self.solve(do), target)].sum())
        return min(1.0, max(0.0, mass))

    def joint_counterfactual(self, events: list[tuple[Mapping[str, DoValue],
                                                      Mapping[str, int]]]) -> float:
        """P(all events hold), each event read in its own intervened world on the same u."""
        out = np.ones(self.n, dtype=bool)
        for do, event in events:
            out &= self.mask(self.solve(do), event)
        return self.mass(out)

    def expectation_nested(self, outer_do: Mapping[str, int], inner_do: Mapping[str, int],
                           mediators: tuple[str, ...], outcome: str) -> float:
        """E[Y_{outer_do, M = M_{inner_do}}]: the mediators take their values under ``inner_do``.

        Pearl (2001) natural effects; evaluated per configuration (same unit).
        """
        inner = self.solve(inner_do)
        nested: dict[str, DoValue] = dict(outer_do)
        for m in mediators:
            nested[m] = inner.values[m]
        sol = self.solve(nested)
        return self.mass(sol.values[outcome])
