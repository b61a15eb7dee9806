"""Worlds from conditional probability tables (docs/CONTRACTS.md §14).

A Bayesian network gives, per variable V with parents pa(V), the numbers
P(V = s | pa(V) = row) (row index = sum(value(parent_i) * stride_i), first parent the
least significant digit, as everywhere in rungbench; for a binary V the CPT is
q_V[row] = P(V=1 | row)). A response-function world needs more: the JOINT law of V's
responses across the rows (the "cross-row coupling"), which a CPT does not fix. Two
couplings are offered:

- ``comonotone`` (the default encoding): one uniform U_V per variable, read through each
  row's inverse CDF. Binary: V = 1[U_V < q_V[row]]. More states: V = the largest s with
  U_V < P(V >= s | row) (the first state takes the rest, as state 0 of a binary V does;
  with U_V mirrored to 1 - U_V this is "the smallest s with U_V < cumsum_row[s]", the same
  coupling in law). Between consecutive distinct cut points
  the table is constant, so V gets at most sum_rows(k_V - 1) + 1 response tables (2^k + 1
  for a binary V with k binary parents) — small enough for every bnlearn network. This is
  the "monotone" coupling: no unit responds against the direction of its CPT row order.
- ``independent``: the rows respond independently, P(table) = prod_row P(V = table[row] |
  row); up to k_V^rows tables, so it is offered only up to
  :data:`INDEPENDENT_MAX_TABLES` tables (binary: k <= 3 parents).

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

INDEPENDENT_MAX_TABLES = 2 ** 2 ** INDEPENDENT_MAX_PARENTS
"""Most response tables the independent coupling may give one variable of more than two
states (as many as a binary variable with :data:`INDEPENDENT_MAX_PARENTS` parents)."""

ROW_TOLERANCE = 1e-6
"""A CPT row of more than two states must sum to 1 within this (the first state takes the
rest, so the encoded row sums to 1 exactly)."""

CPT_TOLERANCE = 1e-12
"""Probabilities may exceed [0, 1] by at most this rounding before they are refused."""

ENCODING = ("one uniform U_V per variable, V = 1[U_V < P(V=1 | parents)] (comonotone "
            "threshold coupling); at most 2^k + 1 response tables for k parents")
"""The default encoding of a binary network, as printed by every import."""

CATEGORICAL_ENCODING = (
    "one uniform U_V per variable read through each parent row's inverse CDF, V = the "
    "largest state s with U_V < P(V >= s | parents) (comonotone coupling; for two states "
    "V = 1[U_V < P(V=1 | parents)]); at most sum over rows of (k_V - 1), plus 1, response "
    "tables")
"""The default encoding of a network with a variable of more than two states."""

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
    """One variable of a Bayesian network: its parents and P(V | parents).

    A binary variable gives ``p_one``; a variable of more than two states gives ``states``
    and ``table`` (``p_one`` then ())."""

    name: str
    """Variable name."""
    parents: tuple[str, ...]
    """Parent names; the first parent is the least significant digit of the row index."""
    p_one: tuple[float, ...]
    """P(V=1 | parent row) for each row (binary variables; () when ``table`` is given)."""
    observed: bool = True
    """False marks a latent variable."""
    states: tuple[str, ...] = ()
    """State names in value order; () = binary with unnamed values 0 and 1."""
    table: tuple[tuple[float, ...], ...] = ()
    """P(V = s | parent row) for every state s, one tuple per row (variables of more than
    two states)."""

    @property
    def card(self) -> int:
        """Number of values of the variable."""
        return len(self.states) if self.states else 2


def _probability(q: object, where: str) -> float:
    if isinstance(q, bool) or not isinstance(q, int | float) or not math.isfinite(q):
        raise InputError(f"must be a finite number, got {q!r}", field=where)
    if not -CPT_TOLERANCE <= q <= 1.0 + CPT_TOLERANCE:
        raise InputError(f"not a probability: {q!r}", field=where)
    return min(1.0, max(0.0, float(q)))


def _check_cpt(cpt: Cpt, rows: int | None = None) -> tuple[float, ...]:
    """The binary CPT's rows, clipped into [0, 1]; ``rows``: how many it must have (default
    2^k, binary parents)."""
    where = f"cpts[{cpt.name}]"
    want = 2 ** len(cpt.parents) if rows is None else rows
    if cpt.card != 2 or cpt.table:
        raise InputError(f"{cpt.name!r} has {cpt.card} states: give its CPT as a table",
                         field=f"{where}.table")
    if len(cpt.p_one) != want:
        raise InputError(f"{len(cpt.parents)} parents need {want} rows, got "
                         f"{len(cpt.p_one)}", field=f"{where}.p_one")
    return tuple(_probability(q, f"{where}.p_one[{i}]") for i, q in enumerate(cpt.p_one))


def _check_table(cpt: Cpt, rows: int) -> tuple[tuple[float, ...], ...]:
    """The rows of a CPT of more than two states, clipped into [0, 1]."""
    where = f"cpts[{cpt.name}]"
    if cpt.p_one or len(cpt.table) != rows:
        raise InputError(f"{cpt.name!r} needs a table of {rows} rows (one per parent "
                         f"configuration), got {len(cpt.table)}", field=f"{where}.table")
    out = []
    for i, row in enumerate(cpt.table):
        if len(row) != cpt.card:
            raise InputError(f"row {i} needs {cpt.card} probabilities, got {len(row)}",
                             field=f"{where}.table[{i}]")
        out.append(tuple(_probability(q, f"{where}.table[{i}][{s}]") for s, q in enumerate(row)))
        total = math.fsum(out[-1])
        if abs(total - 1.0) > ROW_TOLERANCE:
            raise InputError(f"row {i} sums to {total!r}, not 1", field=f"{where}.table[{i}]")
    return tuple(out)


def distribution(cpt: Cpt) -> tuple[tuple[float, ...], ...]:
    """P(V = s | row) for every state s, one tuple per row (binary: (1 - q, q))."""
    if cpt.table:
        return cpt.table
    return tuple((1.0 - q, q) for q in cpt.p_one)


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


def comonotone_categorical(table: Sequence[Sequence[float]]) -> tuple[Response, ...]:
    """U ~ Uniform(0, 1), V = the largest s with U < P(V >= s | row) (the first state takes
    the rest): one table per interval between the cut points of all rows.

    For two states this is the binary V = 1[U < q]; with U mirrored to 1 - U it is "the
    smallest s with U < P(V <= s | row)", the same coupling in law. At most
    sum_rows(k - 1) + 1 intervals; the interval widths are differences of the sorted cut
    points, so every P(V = s | row) is reproduced to a rounding or two.
    """
    tails = np.array([_tails(row) for row in table])  # (rows, k-1), decreasing along a row
    cuts = np.array(sorted({0.0, 1.0, *tails.ravel().tolist()}))
    merged: dict[tuple[int, ...], float] = {}
    step = max(1, _CHUNK_ENTRIES // tails.size)
    for start in range(0, len(cuts) - 1, step):
        hi = cuts[start + 1:start + 1 + step]
        lo = cuts[start:start + len(hi)]
        # the value on [lo, hi) is the number of tails >= hi (they are a prefix of 1..k-1)
        values = (tails[None, :, :] >= hi[:, None, None]).sum(axis=2)  # (intervals, rows)
        for a, b, out in zip(lo.tolist(), hi.tolist(), values.tolist(), strict=True):
            key = tuple(out)
            merged[key] = merged.get(key, 0.0) + (b - a)
    return tuple(Response(p, t) for t, p in sorted(merged.items()) if p > 0.0)


_CHUNK_ENTRIES = 1 << 24
"""Comparisons :func:`comonotone_categorical` holds at once (intervals x rows x states)."""


def _tails(row: Sequence[float]) -> list[float]:
    """P(V >= s | row) for s = 1..k-1 (correctly rounded sums, at most 1), with 1 exactly up
    to the first state of positive probability: the rest of a rounding goes to that state,
    so a state of probability 0 gets no table at all."""
    first = next(s for s, q in enumerate(row) if q > 0.0)
    return [1.0 if s <= first else min(1.0, math.fsum(row[s:])) for s in range(1, len(row))]


def independent_categorical(table: Sequence[Sequence[float]], name: str
                            ) -> tuple[Response, ...]:
    """Rows respond independently: P(out) = prod_row P(V = out[row] | row), for at most
    :data:`INDEPENDENT_MAX_TABLES` tables."""
    options = [[s for s, q in enumerate(row) if q > 0.0] for row in table]
    count = math.prod(len(o) for o in options)
    if count > INDEPENDENT_MAX_TABLES:
        raise InputError(f"the independent coupling would give {name!r} {count} response "
                         f"tables (max {INDEPENDENT_MAX_TABLES})", field="coupling")
    out = [Response(math.prod(row[s] for row, s in zip(table, pick, strict=True)), pick)
           for pick in itertools.product(*options)]
    total = math.fsum(r.p for r in out)
    return tuple(Response(r.p / total, r.table) for r in out if r.p > 0.0)


def responses_for(cpt: Cpt, coupling: Coupling, rows: int | None = None
                  ) -> tuple[Response, ...]:
    """The response mixture of ``cpt`` under the named ``coupling``; ``rows``: the number of
    parent configurations (default 2^k, binary parents)."""
    if cpt.card > 2:
        table = _check_table(cpt, 2 ** len(cpt.parents) if rows is None else rows)
        if coupling == "comonotone":
            return comonotone_categorical(table)
        if coupling == "independent":
            return independent_categorical(table, cpt.name)
        raise InputError(f"unknown coupling {coupling!r}; choose one of {list(COUPLINGS)}",
                         field="coupling")
    p_one = _check_cpt(cpt, rows)
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
    """The response-function world of a Bayesian network under ``coupling``."""
    cards = {c.name: c.card for c in cpts}
    variables = []
    for c in cpts:
        unknown = [p for p in c.parents if p not in cards]
        if unknown:
            raise InputError(f"unknown parent {unknown[0]!r} of {c.name!r}",
                             field=f"cpts[{c.name}].parents")
        rows = math.prod(cards[p] for p in c.parents)
        variables.append(Variable(c.name, tuple(c.parents), responses_for(c, coupling, rows),
                                  c.observed, c.states))
    return World(world_id, tuple(variables))


def cpts_of(world: World) -> tuple[Cpt, ...]:
    """The CPTs of ``world`` (U_V marginalized), in topological order."""
    out = []
    for v in world.variables:
        cpd = v.cpd()
        if v.card == 2:
            out.append(Cpt(v.name, v.parents, tuple(float(q) for q in cpd[1]), v.observed,
                           v.states))
        else:
            out.append(Cpt(v.name, v.parents, (), v.observed, v.states,
                           tuple(tuple(float(q) for q in col) for col in cpd.T)))
    return tuple(out)


def max_cpt_error(world: World, cpts: Sequence[Cpt]) -> float:
    """Largest |P_world(V=s | row) - P(V=s | row)| over every state and row of every CPT
    (encoding check)."""
    worst = 0.0
    for c in cpts:
        var = world.var(c.name)
        if c.card == 2:
            got = var.cpd()[1]
            want = np.asarray(_check_cpt(c, var.rows))
        else:
            got = var.cpd()
            want = np.asarray(_check_table(c, var.rows)).T
        worst = max(worst, float(np.max(np.abs(got - want))))
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
