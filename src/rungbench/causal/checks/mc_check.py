"""Independent Monte Carlo twin-network checker for the exact causal oracle.

Seed 003, "Validation of the reference implementation": the oracle is checked
against "Monte Carlo twin network, 200,000 draws, separate code reading only the
shuffled public JSON". This module is that separate code. It reads nothing but
the public world JSON (``docs/CONTRACTS.md`` §1, schemas ``rungbench.world/1``
and ``/2``) and query JSON (§2), through its own reader
(`rungbench.causal.checks.mc_world`), and shares no code with the oracle.

How a batch of queries is estimated:

1. Draw every exogenous ``U_V`` once: for each variable, an index into its
   response list with the listed probabilities, independently across
   variables (§1). The draw order is by variable name, so the listing order of
   the JSON does not change the estimate for a given seed.
2. Solve the *factual* world in topological order: a variable's value is its
   selected response table read at the row ``sum(value(parent_i) * stride_i)``.
3. For every distinct ``do`` set, solve the *mutilated* world on the SAME
   draws: a ``do`` variable takes its forced value and its own mechanism is
   ignored (the incoming edges are cut, never the outgoing ones); only
   descendants of the ``do`` variables are recomputed, the rest is shared.
4. Read each query by rejection:

   ========  ==============================  ==========================
   rung      keep the draws where            read the target in
   ========  ==============================  ==========================
   1         evidence holds, factual world   the factual world
   2         evidence holds, mutilated world the mutilated world
   3         evidence holds, factual world   the mutilated world
   ========  ==============================  ==========================

   Rung 3 is abduction (keep the exogenous states consistent with the factual
   episode), action (apply ``do``) and prediction (re-solve with the same
   ``U``) — the twin network of seed 003, "World model".

Two samplers solve step 2. An all-binary world packs each response table into
the bits of one integer and reads a draw's output as bit ``row`` (the speed the
validation suite's 200,000 draws per world rely on). A world with any variable
of more than two states keeps, per variable, an integer array of state indices
and reads its outputs from a flat array of tables at ``response * rows + row``.
For the same seed both samplers draw the same responses, so on a binary
variable they give the same values.

The estimate is the kept fraction ``p`` with binomial standard error
``sqrt(p (1 - p) / n_accepted)``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from rungbench.causal.checks.mc_world import (
    Event,
    PublicQuery,
    PublicWorld,
    Variable,
    read_query,
    read_world,
)
from rungbench.errors import InputError

WORD_PARENTS = 6
"""Up to this many parents a table of ``2**6`` rows packs into one integer per response."""

EQUALITY_SLACK = 1e-9
"""Distance under which a zero-variance estimate counts as equal to the exact value."""

Values = npt.NDArray[np.integer[Any]]
"""Per draw: state indices, response indices, packed tables or offsets into a table array."""
Mask = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class McEstimate:
    """A Monte Carlo estimate of one query probability."""

    p: float
    """Fraction of accepted draws in which the target event holds."""
    se: float
    """Binomial standard error ``sqrt(p (1 - p) / n_accepted)``."""
    n_accepted: int
    """Number of draws that satisfied the query's evidence (the rejection sample size)."""


@dataclass(frozen=True)
class _Packed:
    """A binary variable with binary parents, compiled for bit lookup."""

    parents: tuple[int, ...]
    """Positions of the parents in topological order, in listed (bit) order."""
    codes: Values
    """Response ``r``'s table packed as bits: ``codes[r]`` holds row ``i`` at bit ``i``.

    With more than ``WORD_PARENTS`` parents the table needs several 64-bit words
    and ``codes`` has shape ``(responses, words)``: row ``i`` is bit ``i % 64`` of
    word ``i // 64``.
    """
    cuts: npt.NDArray[np.uint32]
    """32-bit thresholds: a uniform 32-bit draw ``u`` selects response ``#{cuts <= u}``."""


@dataclass(frozen=True)
class _Categorical:
    """A variable of any number of states, compiled for lookup in a flat table array."""

    parents: tuple[int, ...]
    """Positions of the parents in topological order, in listed order."""
    strides: tuple[int, ...]
    """Weight of each parent's state index in the row (CONTRACTS §1)."""
    rows: int
    """Rows of one table: the product of the parents' state counts."""
    outputs: npt.NDArray[np.uint8]
    """All tables end to end: response ``r``'s output at ``row`` is ``outputs[r * rows + row]``."""
    cuts: npt.NDArray[np.uint32]
    """32-bit thresholds: a uniform 32-bit draw ``u`` selects response ``#{cuts <= u}``."""


_Mechanism = _Packed | _Categorical


# ------------------------------------------------------------------- compiling


def _pack_tables(tables: Sequence[Sequence[int]]) -> Values:
    """Pack each table into the smallest unsigned integer holding one bit per row."""
    width = len(tables[0])
    if width > 64:
        words = [[_pack(table[start : start + 64]) for start in range(0, width, 64)]
                 for table in tables]
        return np.asarray(words, dtype=np.uint64)
    dtype = np.uint8 if width <= 8 else np.uint16 if width <= 16 else np.uint32 if width <= 32 \
        else np.uint64
    return np.asarray([_pack(table) for table in tables], dtype=dtype)


def _pack(bits: Sequence[int]) -> int:
    return sum(bit << row for row, bit in enumerate(bits))


def _cuts(probabilities: Sequence[float]) -> npt.NDArray[np.uint32]:
    """Cumulative probabilities before each response after the first, scaled to 2**32."""
    total = math.fsum(probabilities)
    cumulative = np.cumsum(np.asarray(probabilities[:-1], dtype=np.float64)) / total
    return np.minimum(np.round(cumulative * 2.0**32), 2.0**32 - 1).astype(np.uint32)


def _compile_packed(variable: Variable) -> _Packed:
    return _Packed(parents=variable.parents, codes=_pack_tables(variable.tables),
                   cuts=_cuts(variable.probabilities))


def _compile_categorical(variable: Variable) -> _Categorical:
    return _Categorical(
        parents=variable.parents, strides=variable.strides, rows=len(variable.tables[0]),
        outputs=np.asarray(variable.tables, dtype=np.uint8).reshape(-1),
        cuts=_cuts(variable.probabilities),
    )


def _compile(world: PublicWorld, *, packed: bool) -> tuple[_Mechanism, ...]:
    """Compile every variable for the packed sampler (binary worlds only) or the categorical one."""
    if packed:
        return tuple(_compile_packed(v) for v in world.variables)
    return tuple(_compile_categorical(v) for v in world.variables)


# -------------------------------------------------------------------- sampling


def _response_index(cuts: npt.NDArray[np.uint32], uniform: npt.NDArray[np.uint32]) -> Values:
    """Map 32-bit uniform draws to response indices: the number of cuts at or below each.

    Up to 255 responses a uint8 count over the cuts is fastest; past that a binary
    search, whose platform integers hold any number of responses.
    """
    if len(cuts) > 254:
        index: Values = np.searchsorted(cuts, uniform, side="right")
        return index
    count = np.zeros(len(uniform), dtype=np.uint8)
    for cut in cuts:
        count += uniform >= cut
    return count


def _uniform_words(draws: int, n_variables: int, rng: np.random.Generator) -> list[Any]:
    """One independent uniform 32-bit word per draw and variable."""
    words = -(-draws * n_variables // 2)
    raw = rng.integers(0, 2**64, size=words, dtype=np.uint64, endpoint=False)
    flat = raw.view(np.uint32)[: draws * n_variables]
    return list(flat.reshape(n_variables, draws))


def _select(mechanism: _Mechanism, response: Values) -> Values:
    """What a variable's evaluation needs of its drawn responses.

    Packed: the selected table itself (or, for multi-word tables, the response
    index; its word is chosen per row later). Categorical: the offset of the
    selected table in ``outputs``.
    """
    if isinstance(mechanism, _Categorical):
        if mechanism.rows == 1:
            return response
        offsets: Values = response.astype(_index_dtype(mechanism)) * mechanism.rows
        return offsets
    if mechanism.codes.ndim == 2:
        return response
    selected: Values = np.take(mechanism.codes, response)
    return selected


def _draw(
    world: PublicWorld, mechanisms: Sequence[_Mechanism], draws: int, rng: np.random.Generator
) -> list[Values]:
    """Sample every U_V (in order of variable name); return each variable's selection."""
    by_name = sorted(range(len(mechanisms)), key=lambda i: world.variables[i].name)
    uniforms = _uniform_words(draws, len(by_name), rng)
    selected: list[Values] = [np.empty(0, dtype=np.uint8)] * len(by_name)
    for index, uniform in zip(by_name, uniforms, strict=True):
        mechanism = mechanisms[index]
        selected[index] = _select(mechanism, _response_index(mechanism.cuts, uniform))
    return selected


def _row(parents: Sequence[Values]) -> Values:
    """Row of each draw in a table: ``sum(parent_i << i)`` (CONTRACTS §1, first parent = LSB)."""
    dtype = np.uint8 if len(parents) <= 8 else np.uint32
    row: Values = parents[0].astype(dtype)
    for bit, values in enumerate(parents[1:], start=1):
        np.bitwise_or(row, np.left_shift(values.astype(dtype), bit, dtype=dtype), out=row)
    return row


def _evaluate_packed(mechanism: _Packed, table: Values, values: Sequence[Values]) -> Values:
    """Read each draw's selected table at its parents' row: bit ``row`` of the packed table."""
    if not mechanism.parents:
        return table
    row = _row([values[parent] for parent in mechanism.parents])
    if mechanism.codes.ndim == 2:
        table = mechanism.codes[table, row >> 6]
        row = (row & 63).astype(np.uint64)
    bit: Values = np.bitwise_and(np.right_shift(table, row), 1, dtype=table.dtype)
    return bit


def _index_dtype(mechanism: _Categorical) -> type[np.signedinteger[Any]]:
    """32-bit positions in ``outputs`` when they fit (half the memory traffic of 64-bit)."""
    return np.int32 if mechanism.outputs.size < 2**31 else np.int64


def _evaluate_categorical(
    mechanism: _Categorical, offsets: Values, values: Sequence[Values]
) -> Values:
    """Read each draw's selected table at row ``sum(value(parent_i) * stride_i)``."""
    if not mechanism.parents:
        return np.take(mechanism.outputs, offsets)
    dtype = _index_dtype(mechanism)
    index = offsets.astype(dtype)
    scaled = np.empty_like(index)
    for parent, stride in zip(mechanism.parents, mechanism.strides, strict=True):
        np.multiply(values[parent], stride, out=scaled, dtype=dtype)
        index += scaled
    outputs: Values = np.take(mechanism.outputs, index)
    return outputs


def _evaluate(mechanism: _Mechanism, selected: Values,
              values: Sequence[Values]) -> Values:
    if isinstance(mechanism, _Categorical):
        return _evaluate_categorical(mechanism, selected, values)
    return _evaluate_packed(mechanism, selected, values)


def _solve(
    mechanisms: Sequence[_Mechanism],
    selected: Sequence[Values],
    do: Event,
    factual: Sequence[Values] | None,
) -> list[Values]:
    """Solve a world on fixed exogenous draws, with ``do`` variables forced.

    With ``factual`` given, variables whose value cannot differ from the factual
    solution (no forced ancestor) reuse the factual array instead of recomputing.
    """
    draws = len(selected[0]) if selected else 0
    values: list[Values] = []
    changed: set[int] = set()
    for index, mechanism in enumerate(mechanisms):
        if index in do:
            values.append(np.full(draws, do[index], dtype=np.uint8))
            changed.add(index)
        elif factual is not None and not changed.intersection(mechanism.parents):
            values.append(factual[index])
        else:
            values.append(_evaluate(mechanism, selected[index], values))
            if factual is not None:
                changed.add(index)
    return values


def _holds(values: Sequence[Values], event: Event, draws: int) -> Mask:
    mask = np.ones(draws, dtype=np.bool_)
    for index, value in event.items():
        mask &= values[index] == value
    return mask


# ------------------------------------------------------------------ estimation


def _estimate(accepted: Mask, target: Mask) -> tuple[int, int]:
    return int(np.count_nonzero(accepted)), int(np.count_nonzero(accepted & target))


def check_queries(
    world_json: Mapping[str, Any],
    queries: Sequence[Mapping[str, Any]],
    *,
    draws: int = 200_000,
    rng: np.random.Generator,
) -> list[McEstimate]:
    """Estimate many queries of one world on the same exogenous draws.

    Raises InputError for a bad world or query (naming ``queries[i]...``), for
    ``draws < 1``, and when no draw satisfies a query's evidence (its
    probability is then below about ``1 / draws`` and the estimate is undefined).
    """
    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 1:
        raise InputError(f"draws must be a positive integer, got {draws!r}", field="draws")
    world = read_world(world_json)
    parsed = [read_query(world, q, field=f"queries[{i}]") for i, q in enumerate(queries)]
    return _estimate_all(world, parsed, draws=draws, rng=rng, packed=world.is_binary)


def _estimate_all(world: PublicWorld, parsed: Sequence[PublicQuery], *, draws: int,
                  rng: np.random.Generator, packed: bool) -> list[McEstimate]:
    """Estimate read queries on one set of draws, with the packed or the categorical sampler."""
    mechanisms = _compile(world, packed=packed)
    selected = _draw(world, mechanisms, draws, rng)
    factual = _solve(mechanisms, selected, {}, None)
    worlds: dict[frozenset[tuple[int, int]], list[Values]] = {frozenset(): factual}
    estimates = []
    for i, query in enumerate(parsed):
        key = frozenset(query.do.items())
        if key not in worlds:
            worlds[key] = _solve(mechanisms, selected, query.do, factual)
        acted = worlds[key]
        evidence_world = acted if query.rung == 2 else factual
        n, hits = _estimate(
            _holds(evidence_world, query.evidence, draws), _holds(acted, query.target, draws)
        )
        if n == 0:
            raise InputError(
                f"no draw out of {draws} satisfied the evidence; the query is not estimable",
                field=f"queries[{i}].evidence",
            )
        p = hits / n
        estimates.append(McEstimate(p=p, se=math.sqrt(p * (1.0 - p) / n), n_accepted=n))
    return estimates


def check_query(
    world_json: Mapping[str, Any],
    query_json: Mapping[str, Any],
    *,
    draws: int = 200_000,
    rng: np.random.Generator,
) -> McEstimate:
    """Estimate one query (CONTRACTS §2) on one world (§1) by Monte Carlo."""
    return check_queries(world_json, [query_json], draws=draws, rng=rng)[0]


def z_score(estimate: McEstimate, exact: float) -> float:
    """Return ``(estimate.p - exact) / estimate.se``.

    A zero standard error (every accepted draw agreed) gives 0 when the exact
    value equals the estimate within ``EQUALITY_SLACK`` and infinity otherwise,
    so an exact 1 estimated as 1 passes and anything else alarms.
    """
    gap = estimate.p - exact
    if estimate.se == 0.0:
        return 0.0 if abs(gap) <= EQUALITY_SLACK else math.copysign(math.inf, gap)
    return gap / estimate.se
