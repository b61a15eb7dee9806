"""The Monte Carlo checker's own reading of the public world and query JSON.

Written from ``docs/CONTRACTS.md`` §1 (world) and §2 (query) alone, like the
sampler in `rungbench.causal.checks.mc_check` that uses it: it imports nothing
from the oracle (``causal/scm``). Two world schemas are read:

- ``rungbench.world/1``: every variable binary, values 0 and 1, no state names;
- ``rungbench.world/2``: every variable lists its ``states`` (2 to 64 distinct
  non-empty names; value ``i`` is the ``i``-th state), so variables may have
  more than two values.

In both, a response ``table`` has one output per parent configuration, the row
of a configuration being ``sum(value(parents[i]) * stride[i])`` with
``stride[0] = 1`` and ``stride[i] = stride[i-1] * k(parents[i-1])`` (the first
listed parent varies fastest; for binary parents this is ``sum(value << i)``).

Every field is checked and a bad one raises `InputError` naming it: nothing is
coerced, defaulted or skipped.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rungbench.errors import InputError

BINARY_SCHEMA = "rungbench.world/1"
"""All-binary worlds without state names (CONTRACTS §1)."""

STATES_SCHEMA = "rungbench.world/2"
"""Worlds whose variables list their states (CONTRACTS §1)."""

MAX_STATES = 64
"""Most states one variable may list in ``rungbench.world/2``."""

PROBABILITY_SLACK = 1e-9
"""How far the response probabilities of one variable may sum from 1 (CONTRACTS §1)."""

Event = dict[int, int]
"""A joint event: variable position (in topological order) -> required state index."""


@dataclass(frozen=True)
class Variable:
    """One variable's public mechanism as the checker read it."""

    name: str
    """Variable name as listed in the world JSON."""
    observed: bool
    """False for a latent variable, which queries may not condition on."""
    parents: tuple[int, ...]
    """Positions of the parents in topological order, in listed order."""
    strides: tuple[int, ...]
    """Weight of each parent's value in the table row (``strides[0] = 1``)."""
    states: tuple[str, ...] | None
    """State names in ``rungbench.world/2``; None in ``rungbench.world/1`` (states 0 and 1)."""
    probabilities: tuple[float, ...]
    """Probability with which ``U_V`` selects each response."""
    tables: tuple[tuple[int, ...], ...]
    """Each response's outputs (state indices), one per parent configuration row."""

    @property
    def n_states(self) -> int:
        """Number of values the variable takes."""
        return 2 if self.states is None else len(self.states)


@dataclass(frozen=True)
class PublicWorld:
    """A checked public world: variables in topological order."""

    variables: tuple[Variable, ...]
    """Variables ordered so that every parent precedes its children (ties by name)."""
    position: Mapping[str, int]
    """Variable name -> position in ``variables``."""

    @property
    def is_binary(self) -> bool:
        """True when every variable has exactly two states."""
        return all(v.n_states == 2 for v in self.variables)


@dataclass(frozen=True)
class PublicQuery:
    """A checked query over positions of a `PublicWorld`."""

    rung: int
    """1, 2 or 3 (CONTRACTS §2)."""
    target: Event
    """Joint target event."""
    do: Event
    """Forced values (empty for rung 1)."""
    evidence: Event
    """Joint evidence event; factual for rungs 1 and 3, post-intervention for rung 2."""


@dataclass(frozen=True)
class _Declaration:
    """A variable's fields before its tables are checked against its parents."""

    listed: int
    name: str
    observed: bool
    parents: list[str]
    states: tuple[str, ...] | None
    responses: Any


# -------------------------------------------------------------- field readers


def _field_list(value: Any, field: str) -> list[Any]:
    if not isinstance(value, list):
        raise InputError(f"expected a list, got {value!r}", field=field)
    return value


def _field_mapping(value: Any, field: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InputError(f"expected an object, got {value!r}", field=field)
    return value


def _state_index(value: Any, n_states: int, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < n_states:
        raise InputError(f"expected a state index 0..{n_states - 1}, got {value!r}", field=field)
    return int(value)


def _probability(value: Any, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"probability must be a number, got {value!r}", field=field)
    p = float(value)
    if not (math.isfinite(p) and 0.0 < p <= 1.0 + PROBABILITY_SLACK):
        raise InputError(f"probability must be in (0, 1], got {value!r}", field=field)
    return p


def _read_states(item: Mapping[str, Any], schema: str, field: str) -> tuple[str, ...] | None:
    """A ``rungbench.world/2`` variable's states; ``rungbench.world/1`` has none."""
    if schema == BINARY_SCHEMA:
        if "states" in item:
            raise InputError(f"state names are read only in {STATES_SCHEMA!r}", field=field)
        return None
    states = _field_list(item.get("states"), field)
    if not 2 <= len(states) <= MAX_STATES:
        raise InputError(f"a variable needs 2 to {MAX_STATES} states, got {len(states)}",
                         field=field)
    for j, state in enumerate(states):
        if not isinstance(state, str) or not state:
            raise InputError(f"a state name must be a non-empty string, got {state!r}",
                             field=f"{field}[{j}]")
        if state in states[:j]:
            raise InputError(f"duplicate state name {state!r}", field=f"{field}[{j}]")
    return tuple(states)


def _read_schema(world: Mapping[str, Any]) -> str:
    schema = world.get("schema")
    if schema not in (BINARY_SCHEMA, STATES_SCHEMA):
        raise InputError(
            f"unsupported world schema {schema!r}, expected {BINARY_SCHEMA!r} or "
            f"{STATES_SCHEMA!r}", field="schema")
    return str(schema)


def _read_declaration(raw: Any, listed: int, schema: str) -> _Declaration:
    where = f"variables[{listed}]"
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
    states = _read_states(item, schema, f"{where}.states")
    return _Declaration(listed, name, observed, list(parents), states, item.get("responses"))


def _read_declarations(world_json: Any) -> list[_Declaration]:
    world = _field_mapping(world_json, "world")
    schema = _read_schema(world)
    raws = _field_list(world.get("variables"), "variables")
    declarations = [_read_declaration(raw, i, schema) for i, raw in enumerate(raws)]
    names = [d.name for d in declarations]
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


def row_strides(parent_states: Sequence[int]) -> tuple[int, ...]:
    """Stride of each parent in a table row: 1, then the product of the earlier parents' ``k``."""
    strides = [1]
    for k in parent_states[:-1]:
        strides.append(strides[-1] * k)
    return tuple(strides[: len(parent_states)])


def _read_table(raw: Any, n_rows: int, n_states: int, field: str) -> tuple[int, ...]:
    table = _field_list(raw, field)
    if len(table) != n_rows:
        raise InputError(
            f"table has {len(table)} rows, expected the product of the parents' state "
            f"counts = {n_rows}", field=field)
    return tuple(_state_index(v, n_states, f"{field}[{i}]") for i, v in enumerate(table))


def _read_responses(
    raw: Any, n_rows: int, n_states: int, field: str
) -> tuple[tuple[float, ...], tuple[tuple[int, ...], ...]]:
    responses = _field_list(raw, field)
    if not responses:
        raise InputError("a variable needs at least one response function", field=field)
    probabilities: list[float] = []
    tables: list[tuple[int, ...]] = []
    for r, response in enumerate(responses):
        where = f"{field}[{r}]"
        item = _field_mapping(response, where)
        probabilities.append(_probability(item.get("p"), f"{where}.p"))
        table = _read_table(item.get("table"), n_rows, n_states, f"{where}.table")
        if table in tables:
            raise InputError(f"duplicate response table {list(table)!r}", field=f"{where}.table")
        tables.append(table)
    total = math.fsum(probabilities)
    if abs(total - 1.0) > PROBABILITY_SLACK:
        raise InputError(f"response probabilities sum to {total!r}, not 1", field=field)
    return tuple(probabilities), tuple(tables)


def _n_states(declaration: _Declaration) -> int:
    return 2 if declaration.states is None else len(declaration.states)


def read_world(world_json: Any) -> PublicWorld:
    """Check a public world JSON (CONTRACTS §1, schema /1 or /2) and order it topologically.

    Raises InputError naming the field for a wrong schema, a bad or duplicate
    state list, a duplicate or unknown variable, a cycle, a table of the wrong
    length or with an output outside the variable's states, a non-positive
    probability, probabilities not summing to 1 or a repeated table.
    """
    declarations = _read_declarations(world_json)
    by_name = {d.name: d for d in declarations}
    order = _topological_order({d.name: d.parents for d in declarations})
    position = {name: i for i, name in enumerate(order)}
    variables = []
    for name in order:
        d = by_name[name]
        parent_states = [_n_states(by_name[p]) for p in d.parents]
        probabilities, tables = _read_responses(
            d.responses, math.prod(parent_states), _n_states(d),
            f"variables[{d.listed}].responses")
        variables.append(Variable(
            name=name, observed=d.observed, parents=tuple(position[p] for p in d.parents),
            strides=row_strides(parent_states), states=d.states,
            probabilities=probabilities, tables=tables,
        ))
    return PublicWorld(variables=tuple(variables), position=position)


# ------------------------------------------------------------------- queries


def _query_value(variable: Variable, value: Any, field: str) -> int:
    """A state index, or in ``rungbench.world/2`` a state name, as the state's index."""
    if isinstance(value, str):
        if variable.states is None:
            raise InputError(f"{variable.name!r} has no state names; expected 0 or 1, "
                             f"got {value!r}", field=field)
        if value not in variable.states:
            raise InputError(f"unknown state {value!r} of {variable.name!r}; states are "
                             f"{list(variable.states)!r}", field=field)
        return variable.states.index(value)
    return _state_index(value, variable.n_states, field)


def _read_event(world: PublicWorld, raw: Any, field: str, *, allow_latent: bool) -> Event:
    if raw is None:
        return {}
    event: Event = {}
    for name, value in _field_mapping(raw, field).items():
        where = f"{field}.{name}"
        if name not in world.position:
            raise InputError(f"unknown variable {name!r}", field=where)
        index = world.position[name]
        variable = world.variables[index]
        if not allow_latent and not variable.observed:
            raise InputError(f"latent variable {name!r} may not be conditioned on", field=where)
        event[index] = _query_value(variable, value, where)
    return event


def read_query(world: PublicWorld, query_json: Any, *, field: str = "query") -> PublicQuery:
    """Check a query JSON (CONTRACTS §2) against a read world.

    Raises InputError naming the field for an unknown rung, variable, state
    index or state name, evidence on a latent variable, or a non-empty ``do``
    on a rung-1 query.
    """
    query = _field_mapping(query_json, field)
    rung = query.get("rung")
    if isinstance(rung, bool) or rung not in (1, 2, 3):
        raise InputError(f"rung must be 1, 2 or 3, got {rung!r}", field=f"{field}.rung")
    do = _read_event(world, query.get("do"), f"{field}.do", allow_latent=True)
    if rung == 1 and do:
        raise InputError("a rung-1 query cannot carry do()", field=f"{field}.do")
    return PublicQuery(
        rung=int(rung),
        target=_read_event(world, query.get("target"), f"{field}.target", allow_latent=True),
        do=do,
        evidence=_read_event(world, query.get("evidence"), f"{field}.evidence",
                             allow_latent=False),
    )
