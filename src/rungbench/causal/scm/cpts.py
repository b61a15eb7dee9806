"""Worlds from conditional probability tables (docs/CONTRACTS.md §14).

A binary Bayesian network gives, per variable V with parents pa(V), the numbers
q_V[row] = P(V=1 | pa(V) = row) (row index = sum(parent_i << i), first parent the
least significant bit, as everywhere in rungbench). A response-function world needs
more: the JOINT law of V's responses across the rows (the "cross-row coupling"),
which a CPT does not fix. Two couplings are offered:

- ``comonotone`` (the default encoding): one uniform U_V per variable and
  V = 1[U_V < q_V[row]]. Between consecutive distinct thresholds the table is
  constant, so V gets at most 2^k + 1 response tables (k parents) — small enough for
  every bnlearn network tried. This is the "monotone" coupling: no unit responds
  against the direction of its CPT row order.
- ``independent``: the rows respond independently, P(table) = prod_row q or 1 - q;
  up to 2^(2^k) tables, so it is offered for k <= 3 only.

What the coupling cannot change (`COUPLING_NOTE`): every rung-1 and rung-2 quantity,
and every counterfactual that reads each variable's mechanism at ONE parent setting
per unit — ATE, ETT, and NDE/NIE with the mediator set of :func:`estimands.mediators`
(all descendants of X that are ancestors of Y). What it can change: counterfactuals
that read one variable at two parent settings of the same unit — PN, PS, PNS and
most rung-3 queries with factual evidence on a descendant of the intervention.
:func:`coupling_dependence` decides which case a query is in, structurally
(``elimination.coupled_variables``), without computing anything.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from rungbench.causal.scm import elimination
from rungbench.causal.scm.world import Query, Response, Variable, World, check_query
from rungbench.errors import InputError, Reason, Refusal

Coupling = Literal["comonotone", "independent"]
"""A named cross-row coupling of a CPT (module docstring)."""

COUPLINGS: tuple[str, ...] = ("comonotone", "independent")
"""Every coupling :func:`world_from_cpts` can build."""

INDEPENDENT_MAX_PARENTS = 3
"""The independent coupling needs up to 2^(2^k) tables: offered for k <= 3 parents only."""

CPT_TOLERANCE = 1e-12
"""Probabilities may exceed [0, 1] by at most this rounding before they are refused."""

ENCODING = ("one uniform U_V per variable, V = 1[U_V < P(V=1 | parents)] (comonotone "
            "threshold coupling); at most 2^k + 1 response tables for k parents")
"""The default encoding, as printed by every import."""

COUPLING_NOTE = (
    "A CPT fixes P(V=1 | parents) row by row but not how one unit's responses at different "
    "parent rows are coupled. Unchanged by the coupling: every rung-1 and rung-2 quantity, "
    "and every counterfactual that reads each variable at one parent setting per unit (ATE, "
    "ETT, NDE and NIE with the mediator set = descendants of X that are ancestors of Y). "
    "Coupling-dependent: counterfactuals that read a variable at two parent settings of the "
    "same unit (PN, PS, PNS and, in general, rung-3 queries with factual evidence downstream "
    "of the intervention); these are refused unless a coupling is named."
)
"""The invariance statement every CPT import prints (docs/CONTRACTS.md §14)."""


@dataclass(frozen=True)
class Cpt:
    """One binary variable of a Bayesian network: its parents and P(V=1 | parents)."""

    name: str
    """Variable name."""
    parents: tuple[str, ...]
    """Parent names; the first parent is the least significant bit of the row index."""
    p_one: tuple[float, ...]
    """P(V=1 | parent row) for each of the 2^k rows."""
    observed: bool = True
    """False marks a latent variable."""


def _check_cpt(cpt: Cpt) -> tuple[float, ...]:
    where = f"cpts[{cpt.name}]"
    if len(cpt.p_one) != 2 ** len(cpt.parents):
        raise InputError(f"{len(cpt.parents)} parents need {2 ** len(cpt.parents)} rows, got "
                         f"{len(cpt.p_one)}", field=f"{where}.p_one")
    out = []
    for i, q in enumerate(cpt.p_one):
        if isinstance(q, bool) or not isinstance(q, int | float) or not math.isfinite(q):
            raise InputError(f"row {i} must be a finite number, got {q!r}",
                             field=f"{where}.p_one[{i}]")
        if not -CPT_TOLERANCE <= q <= 1.0 + CPT_TOLERANCE:
            raise InputError(f"row {i} is not a probability: {q!r}", field=f"{where}.p_one[{i}]")
        out.append(min(1.0, max(0.0, float(q))))
    return tuple(out)


def comonotone_responses(p_one: Sequence[float]) -> tuple[Response, ...]:
    """U ~ Uniform(0, 1), V = 1[U < p_one[row]]: one table per interval between thresholds.

    The interval widths are differences of the sorted thresholds, so P(V=1 | row)
    is reproduced to one rounding per threshold (full double precision).
    """
    cuts = sorted({0.0, 1.0, *p_one})
    merged: dict[tuple[int, ...], float] = {}
    for lo, hi in itertools.pairwise(cuts):
        table = tuple(int(q >= hi) for q in p_one)
        merged[table] = merged.get(table, 0.0) + (hi - lo)
    return tuple(Response(p, t) for t, p in sorted(merged.items()) if p > 0.0)


def independent_responses(p_one: Sequence[float]) -> tuple[Response, ...]:
    """Rows respond independently: P(table) = prod_row (q if table[row] else 1 - q)."""
    out = []
    for table in itertools.product((0, 1), repeat=len(p_one)):
        p = math.prod(q if t else 1.0 - q for q, t in zip(p_one, table, strict=True))
        if p > 0.0:
            out.append(Response(p, table))
    total = math.fsum(r.p for r in out)
    return tuple(Response(r.p / total, r.table) for r in out)


def responses_for(cpt: Cpt, coupling: Coupling) -> tuple[Response, ...]:
    """The response mixture of ``cpt`` under the named ``coupling``."""
    p_one = _check_cpt(cpt)
    if coupling == "comonotone":
        return comonotone_responses(p_one)
    if coupling == "independent":
        if len(cpt.parents) > INDEPENDENT_MAX_PARENTS:
            raise InputError(f"the independent coupling needs 2^(2^k) tables; {cpt.name!r} has "
                             f"{len(cpt.parents)} parents (max {INDEPENDENT_MAX_PARENTS})",
                             field="coupling")
        return independent_responses(p_one)
    raise InputError(f"unknown coupling {coupling!r}; choose one of {list(COUPLINGS)}",
                     field="coupling")


def world_from_cpts(world_id: str, cpts: Sequence[Cpt], *,
                    coupling: Coupling = "comonotone") -> World:
    """The response-function world of a binary Bayesian network under ``coupling``."""
    return World(world_id, tuple(
        Variable(c.name, tuple(c.parents), responses_for(c, coupling), c.observed)
        for c in cpts))


def cpts_of(world: World) -> tuple[Cpt, ...]:
    """The CPTs of ``world`` (U_V marginalized), in topological order."""
    return tuple(Cpt(v.name, v.parents, tuple(float(q) for q in v.cpd()[1]), v.observed)
                 for v in world.variables)


def max_cpt_error(world: World, cpts: Sequence[Cpt]) -> float:
    """Largest |P_world(V=1 | row) - q| over every row of every CPT (encoding check)."""
    worst = 0.0
    for c in cpts:
        got = world.var(c.name).cpd()[1]
        worst = max(worst, float(np.max(np.abs(got - np.asarray(_check_cpt(c))))))
    return worst


def query_specs(query: Query) -> tuple[list[elimination.WorldSpec],
                                       list[elimination.WorldSpec]]:
    """The (worlds, given) multi-world specs of a `rungbench.query/1` query."""
    if query.rung == 1:
        return [elimination.WorldSpec({}, query.target)], [elimination.WorldSpec({},
                                                                                 query.evidence)]
    if query.rung == 2:
        return ([elimination.WorldSpec(query.do, query.target)],
                [elimination.WorldSpec(query.do, query.evidence)])
    return [elimination.WorldSpec(query.do, query.target)], [elimination.WorldSpec({},
                                                                                   query.evidence)]


def coupling_dependence(world: World, query: Query) -> tuple[str, ...]:
    """Variables through which ``query``'s answer may depend on the CPT coupling (() if none)."""
    check_query(world, query)
    worlds, given = query_specs(query)
    return elimination.coupled_variables(world, worlds, given)


def require_coupling_free(world: World, coupled: Sequence[str], what: str,
                          coupling: str | None) -> None:
    """Refuse (``coupling_dependent``) when ``coupled`` is non-empty and no coupling is named."""
    if coupled and coupling is None:
        raise Refusal([Reason(
            "coupling_dependent",
            f"{what} reads {', '.join(coupled)} at two parent settings of the same unit, so its "
            "value depends on the cross-row coupling the CPTs leave unspecified; name one "
            f"with --coupling ({'|'.join(COUPLINGS)})",
            subject=world.world_id,
            data={"variables": list(coupled), "couplings": list(COUPLINGS)},
        )], gate="CPT coupling")


def cpts_from_mapping(raw: Mapping[str, tuple[Sequence[str], Sequence[float]]]) -> list[Cpt]:
    """Build CPTs from ``{name: (parents, p_one)}`` (convenience for tests and importers)."""
    return [Cpt(name, tuple(ps), tuple(float(q) for q in qs)) for name, (ps, qs) in raw.items()]
