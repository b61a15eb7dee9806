"""Independent Monte Carlo twin-network checker for the exact causal oracle.

Seed 003, "Validation of the reference implementation": the oracle is checked
against "Monte Carlo twin network, 200,000 draws, separate code reading only the
shuffled public JSON". This module is that separate code. It reads nothing but
the public world JSON (``docs/CONTRACTS.md`` §1) and query JSON (§2) and shares
no code with the oracle.

How a batch of queries is estimated:

1. Draw every exogenous ``U_V`` once: for each variable, an index into its
   response list with the listed probabilities, independently across
   variables (§1). The draw order is by variable name, so the listing order of
   the JSON does not change the estimate for a given seed.
2. Solve the *factual* world in topological order: a variable's value is its
   selected response table read at the row ``sum(parent_i << i)``.
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

from rungbench.errors import InputError

WORLD_SCHEMA = "rungbench.world/1"
"""The only world schema this checker reads (CONTRACTS §1)."""

PROBABILITY_SLACK = 1e-9
"""How far the response probabilities of one variable may sum from 1 (CONTRACTS §1)."""

WORD_PARENTS = 6
"""Up to this many parents a table of ``2**6`` rows packs into one integer per response."""

EQUALITY_SLACK = 1e-9
"""Distance under which a zero-variance estimate counts as equal to the exact value."""

Bits = npt.NDArray[np.unsignedinteger[Any]]
"""Per-draw values in {0, 1}, or per-draw packed response tables; any unsigned dtype."""
Mask = npt.NDArray[np.bool_]
Event = dict[int, int]
"""A joint event: variable position (in topological order) -> required value."""


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
class _Mechanism:
    """One variable's public mechanism, compiled for vectorised lookup."""

    name: str
    """Variable name as listed in the world JSON."""
    parents: tuple[int, ...]
    """Positions of the parents in topological order, in listed (bit) order."""
    codes: Bits
    """Response ``r``'s table packed as bits: ``codes[r]`` holds row ``i`` at bit ``i``.

    With more than ``WORD_PARENTS`` parents the table needs several 64-bit words
    and ``codes`` has shape ``(responses, words)``: row ``i`` is bit ``i % 64`` of
    word ``i // 64``.
    """
    cuts: npt.NDArray[np.uint32]
    """32-bit thresholds: a uniform 32-bit draw ``u`` selects response ``#{cuts <= u}``."""
    observed: bool
    """False for a latent variable, which queries may not condition on."""


@dataclass(frozen=True)
class _World:
    """A parsed public world: mechanisms in topological order."""

    mechanisms: tuple[_Mechanism, ...]
    """Mechanisms ordered so that every parent precedes its children."""
    position: Mapping[str, int]
    """Variable name -> position in ``mechanisms``."""


@dataclass(frozen=True)
class _Query:
    """A parsed query over positions of a ``_World``."""

    rung: int
    """1, 2 or 3 (CONTRACTS §2)."""
    target: Event
    """Joint target event."""
    do: Event
    """Forced values (empty for rung 1)."""
    evidence: Event
    """Joint evidence event; factual for rungs 1 and 3, post-intervention for rung 2."""


# --------------------------------------------------------------------- parsing


def _field_list(value: Any, field: str) -> list[Any]:
    if not isinstance(value, list):
        raise InputError(f"expected a list, got {value!r}", field=field)
    return value


def _field_mapping(value: Any, field: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InputError(f"expected an object, got {value!r}", field=field)
    return value


def _bit(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value not in (0, 1):
        raise InputError(f"expected 0 or 1, got {value!r}", field=field)
    return int(value)


def _probability(value: Any, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"probability must be a number, got {value!r}", field=field)
    p = float(value)
    if not (math.isfinite(p) and 0.0 < p <= 1.0 + PROBABILITY_SLACK):
        raise InputError(f"probability must be in (0, 1], got {value!r}", field=field)
    return p


def _read_responses(raw: Any, n_parents: int, field: str) -> tuple[list[float], list[list[int]]]:
    responses = _field_list(raw, field)
    if not responses:
        raise InputError("a variable needs at least one response function", field=field)
    probabilities: list[float] = []
    tables: list[list[int]] = []
    for r, response in enumerate(responses):
        where = f"{field}[{r}]"
        item = _field_mapping(response, where)
        probabilities.append(_probability(item.get("p"), f"{where}.p"))
        table = _field_list(item.get("table"), f"{where}.table")
        if len(table) != 2**n_parents:
            raise InputError(
                f"table has {len(table)} rows, expected 2**{n_parents} = {2**n_parents}",
                field=f"{where}.table",
            )
        bits = [_bit(v, f"{where}.table[{i}]") for i, v in enumerate(table)]
        if bits in tables:
            raise InputError(f"duplicate response table {bits!r}", field=f"{where}.table")
        tables.append(bits)
    total = math.fsum(probabilities)
    if abs(total - 1.0) > PROBABILITY_SLACK:
        raise InputError(f"response probabilities sum to {total!r}, not 1", field=field)
    return probabilities, tables


def _read_declarations(world_json: Any) -> list[tuple[str, bool, list[str], Any]]:
    world = _field_mapping(world_json, "world")
    if world.get("schema") != WORLD_SCHEMA:
        raise InputError(
            f"unsupported world schema {world.get('schema')!r}, expected {WORLD_SCHEMA!r}",
            field="schema",
        )
    declarations: list[tuple[str, bool, list[str], Any]] = []
    for i, raw in enumerate(_field_list(world.get("variables"), "variables")):
        where = f"variables[{i}]"
        item = _field_mapping(raw, where)
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise InputError(f"variable name must be a non-empty string, got {name!r}",
                             field=f"{where}.name")
        observed = item.get("observed")
        if not isinstance(observed, bool):
            raise InputError(f"observed must be true or false, got {observed!r}",
                             field=f"{where}.observed")
        parents = _field_list(item.get("parents"), f"{where}.parents")
        if not all(isinstance(p, str) for p in parents) or len(set(parents)) != len(parents):
            raise InputError(f"parents must be distinct names, got {parents!r}",
                             field=f"{where}.parents")
        declarations.append((name, observed, list(parents), item.get("responses")))
    names = [d[0] for d in declarations]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise InputError(f"duplicate variable name {name!r}", field=f"variables[{i}].name")
    return declarations


def _topological_order(parents_of: Mapping[str, Sequence[str]]) -> list[str]:
    """Kahn's algorithm; ties broken by name so the order is listing-independent."""
    for child, parents in parents_of.items():
        for parent in parents:
            if parent not in parents_of:
                raise InputError(f"unknown parent {parent!r} of {child!r}",
                                 field=f"{child}.parents")
    waiting = {name: len(parents) for name, parents in parents_of.items()}
    children: dict[str, list[str]] = {name: [] for name in parents_of}
    for child, parents in parents_of.items():
        for parent in parents:
            children[parent].append(child)
    ready = sorted(name for name, count in waiting.items() if count == 0)
    order: list[str] = []
    while ready:
        name = ready.pop(0)
        order.append(name)
        for child in children[name]:
            waiting[child] -= 1
            if waiting[child] == 0:
                ready.append(child)
        ready.sort()
    if len(order) != len(parents_of):
        stuck = sorted(set(parents_of) - set(order))
        raise InputError(f"the parent relation has a cycle through {stuck!r}", field="variables")
    return order


def _pack_tables(tables: Sequence[Sequence[int]]) -> Bits:
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


def _compile_world(world_json: Mapping[str, Any]) -> _World:
    """Validate a public world JSON (CONTRACTS §1) and compile it for sampling.

    Raises InputError naming the field for a wrong schema, a duplicate or
    unknown variable, a cycle, a table of the wrong length or with values
    outside {0, 1}, a non-positive probability or probabilities not summing to 1.
    """
    declarations = _read_declarations(world_json)
    parents_of = {name: parents for name, _, parents, _ in declarations}
    order = _topological_order(parents_of)
    position = {name: i for i, name in enumerate(order)}
    by_name = {d[0]: (i, d) for i, d in enumerate(declarations)}
    mechanisms = []
    for name in order:
        listed, (_, observed, parents, raw_responses) = by_name[name]
        probabilities, tables = _read_responses(
            raw_responses, len(parents), f"variables[{listed}].responses"
        )
        mechanisms.append(
            _Mechanism(
                name=name,
                parents=tuple(position[p] for p in parents),
                codes=_pack_tables(tables),
                cuts=_cuts(probabilities),
                observed=observed,
            )
        )
    return _World(mechanisms=tuple(mechanisms), position=position)


def _read_event(world: _World, raw: Any, field: str, *, allow_latent: bool) -> Event:
    if raw is None:
        return {}
    event: Event = {}
    for name, value in _field_mapping(raw, field).items():
        where = f"{field}.{name}"
        if name not in world.position:
            raise InputError(f"unknown variable {name!r}", field=where)
        index = world.position[name]
        if not allow_latent and not world.mechanisms[index].observed:
            raise InputError(f"latent variable {name!r} may not be conditioned on", field=where)
        event[index] = _bit(value, where)
    return event


def _compile_query(world: _World, query_json: Mapping[str, Any], *, field: str = "query") -> _Query:
    """Validate a query JSON (CONTRACTS §2) against a parsed world.

    Raises InputError naming the field for an unknown rung, variable or value,
    evidence on a latent variable, or a non-empty ``do`` on a rung-1 query.
    """
    query = _field_mapping(query_json, field)
    rung = query.get("rung")
    if isinstance(rung, bool) or rung not in (1, 2, 3):
        raise InputError(f"rung must be 1, 2 or 3, got {rung!r}", field=f"{field}.rung")
    do = _read_event(world, query.get("do"), f"{field}.do", allow_latent=True)
    if rung == 1 and do:
        raise InputError("a rung-1 query cannot carry do()", field=f"{field}.do")
    return _Query(
        rung=int(rung),
        target=_read_event(world, query.get("target"), f"{field}.target", allow_latent=True),
        do=do,
        evidence=_read_event(world, query.get("evidence"), f"{field}.evidence",
                             allow_latent=False),
    )


# -------------------------------------------------------------------- sampling


def _response_index(cuts: npt.NDArray[np.uint32], uniform: npt.NDArray[np.uint32]) -> Bits:
    """Map 32-bit uniform draws to response indices: the number of cuts at or below each."""
    if len(cuts) > 254:
        return np.searchsorted(cuts, uniform, side="right").astype(np.uint16)
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


def _draw_tables(world: _World, draws: int, rng: np.random.Generator) -> list[Bits]:
    """Sample every U_V; return, per variable and draw, the selected table packed as bits."""
    by_name = sorted(range(len(world.mechanisms)), key=lambda i: world.mechanisms[i].name)
    uniforms = _uniform_words(draws, len(by_name), rng)
    selected: list[Bits] = [np.empty(0, dtype=np.uint8)] * len(by_name)
    for index, uniform in zip(by_name, uniforms, strict=True):
        mechanism = world.mechanisms[index]
        response = _response_index(mechanism.cuts, uniform)
        # A multi-word table keeps the response index; its word is chosen per row later.
        selected[index] = response if mechanism.codes.ndim == 2 else np.take(mechanism.codes,
                                                                              response)
    return selected


def _row(parents: Sequence[Bits]) -> Bits:
    """Row of each draw in a table: ``sum(parent_i << i)`` (CONTRACTS §1, first parent = LSB)."""
    dtype = np.uint8 if len(parents) <= 8 else np.uint32
    row: Bits = parents[0].astype(dtype)
    for bit, values in enumerate(parents[1:], start=1):
        np.bitwise_or(row, np.left_shift(values.astype(dtype), bit, dtype=dtype), out=row)
    return row


def _evaluate(mechanism: _Mechanism, table: Bits, values: Sequence[Bits]) -> Bits:
    """Read each draw's selected table at its parents' row: bit ``row`` of the packed table."""
    if not mechanism.parents:
        return table
    row = _row([values[parent] for parent in mechanism.parents])
    if mechanism.codes.ndim == 2:
        table = mechanism.codes[table, row >> 6]
        row = (row & 63).astype(np.uint64)
    bit: Bits = np.bitwise_and(np.right_shift(table, row), 1, dtype=table.dtype)
    return bit


def _solve(
    world: _World,
    tables: Sequence[Bits],
    do: Event,
    factual: Sequence[Bits] | None,
) -> list[Bits]:
    """Solve a world on fixed exogenous draws, with ``do`` variables forced.

    With ``factual`` given, variables whose value cannot differ from the factual
    solution (no forced ancestor) reuse the factual array instead of recomputing.
    """
    draws = len(tables[0]) if tables else 0
    values: list[Bits] = []
    changed: set[int] = set()
    for index, mechanism in enumerate(world.mechanisms):
        if index in do:
            values.append(np.full(draws, do[index], dtype=np.uint8))
            changed.add(index)
        elif factual is not None and not changed.intersection(mechanism.parents):
            values.append(factual[index])
        else:
            values.append(_evaluate(mechanism, tables[index], values))
            if factual is not None:
                changed.add(index)
    return values


def _holds(values: Sequence[Bits], event: Event, draws: int) -> Mask:
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
    world = _compile_world(world_json)
    parsed = [_compile_query(world, q, field=f"queries[{i}]") for i, q in enumerate(queries)]
    tables = _draw_tables(world, draws, rng)
    factual = _solve(world, tables, {}, None)
    worlds: dict[frozenset[tuple[int, int]], list[Bits]] = {frozenset(): factual}
    estimates = []
    for i, query in enumerate(parsed):
        key = frozenset(query.do.items())
        if key not in worlds:
            worlds[key] = _solve(world, tables, query.do, factual)
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
