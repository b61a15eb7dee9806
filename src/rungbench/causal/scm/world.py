"""Structural causal models ("worlds") over finite variables and their public JSON view.

Seed 003, "Generated-world benchmark" → "World model": each endogenous V has its own
exogenous U_V that selects one *response function* (a table from parent configurations to
V's values); latent confounders are unobserved roots. Seed 003's v0 worlds are binary; a
variable may also have 2..64 named states (a categorical world, e.g. an imported bnlearn
network), value i being its i-th state. The public rendering is the `rungbench.world/1`
document of docs/CONTRACTS.md §1 for all-binary worlds without state names (byte for byte
as before) and `rungbench.world/2` otherwise, listed in a seeded shuffled order (never
causal order).

Queries are `rungbench.query/1` documents (CONTRACTS §2), parsed into `Query`
and checked against a world by `check_query`.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from rungbench.errors import InputError

WORLD_SCHEMA = "rungbench.world/1"
"""Schema tag of the public JSON of an all-binary world without state names."""

CATEGORICAL_SCHEMA = "rungbench.world/2"
"""Schema tag of the public JSON of a world with a variable of more than two states or with
state names (CONTRACTS §1): every variable lists its ``states``."""

MAX_STATES = 64
"""Most states a variable may have."""

BINARY_STATES = ("0", "1")
"""The states a nameless binary variable takes when its world is rendered as
`rungbench.world/2`."""

QUERY_SCHEMA = "rungbench.query/1"
"""Schema tag of the query JSON (documents may omit it)."""

PROB_TOLERANCE = 1e-9
"""Response probabilities of one variable must sum to 1 within this (CONTRACTS §1)."""


@dataclass(frozen=True)
class Response:
    """One response function of a variable, selected by U_V with probability ``p``."""

    p: float
    """Probability that U_V selects this function; > 0."""
    table: tuple[int, ...]
    """Output (a value 0..k-1) per parent configuration; row index = sum(value(parent_i) *
    stride_i), stride_0 = 1, stride_i = stride_(i-1) * k(parent_(i-1)): the first parent is
    the least significant digit (for binary parents, sum(parent_i << i))."""


@dataclass(frozen=True)
class Variable:
    """A finite variable with its parents and its mixture of response functions."""

    name: str
    """Unique variable name."""
    parents: tuple[str, ...]
    """Parent names; the first listed parent is the least significant digit of the row index."""
    responses: tuple[Response, ...]
    """Distinct response functions with probabilities summing to 1."""
    observed: bool = True
    """False marks a latent variable (typically a confounder root)."""
    states: tuple[str, ...] = ()
    """State names in value order (value i = states[i]); () = binary with unnamed values 0
    and 1, the only case a `rungbench.world/1` document can hold."""

    @property
    def card(self) -> int:
        """Number of values the variable takes."""
        return len(self.states) if self.states else 2

    @property
    def parent_cards(self) -> tuple[int, ...]:
        """Number of values of each parent, as the variable's world set them (all 2 for a
        variable outside a world)."""
        cards: tuple[int, ...] | None = self.__dict__.get("_parent_cards")
        return cards if cards is not None else (2,) * len(self.parents)

    @property
    def strides(self) -> tuple[int, ...]:
        """Row-index stride of each parent (first parent 1; CONTRACTS §1)."""
        out, step = [], 1
        for k in self.parent_cards:
            out.append(step)
            step *= k
        return tuple(out)

    @property
    def rows(self) -> int:
        """Number of parent configurations (product of the parents' numbers of values)."""
        return math.prod(self.parent_cards)

    def p_one(self) -> np.ndarray:
        """Return P(V=1 | parent configuration) per row index (U_V marginalized)."""
        return np.asarray(self.cpd()[1])

    def cpd(self) -> np.ndarray:
        """Return P(V=v | row) as a (k, rows) array; every entry is a sum of response
        probabilities, so impossible values are exactly 0 (not 1 - (1 - 1e-16)).

        Computed once per variable (it is immutable) and returned read-only."""
        cached = self.__dict__.get("_cpd")
        if cached is None:
            probs = np.array([r.p for r in self.responses])
            tables = np.array([r.table for r in self.responses], dtype=float)
            # elementwise products summed in numpy's own order, not a BLAS product: a
            # BLAS kernel's summation order depends on the CPU, and the sealed values of a
            # bench must not (the same build is byte-identical on every host)
            weighted = probs[:, None]
            if self.card == 2:
                cached = np.stack([(weighted * (1.0 - tables)).sum(axis=0),
                                   (weighted * tables).sum(axis=0)])
            else:
                cached = np.stack([(weighted * (tables == s)).sum(axis=0)
                                   for s in range(self.card)])
            cached.setflags(write=False)
            object.__setattr__(self, "_cpd", cached)
        return cached


@dataclass(frozen=True)
class World:
    """A binary SCM; ``variables`` is held in canonical topological order.

    Construct with any listing order: the constructor validates the world and
    reorders the variables topologically (Kahn's algorithm, ties by name), so
    two worlds with the same mechanisms compare equal however they were listed.
    """

    world_id: str
    """Identifier of the world, e.g. ``w0007``."""
    variables: tuple[Variable, ...]
    """All variables in canonical topological order."""
    _index: Mapping[str, int] = field(init=False, repr=False, compare=False, hash=False)
    _binary: bool = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        ordered = _validate_and_order(self.variables)
        object.__setattr__(self, "variables", ordered)
        object.__setattr__(self, "_index", {v.name: i for i, v in enumerate(ordered)})
        object.__setattr__(self, "_binary", not any(v.states for v in ordered))

    @property
    def names(self) -> tuple[str, ...]:
        """Variable names in topological order."""
        return tuple(v.name for v in self.variables)

    @property
    def observed_names(self) -> tuple[str, ...]:
        """Observed variable names in topological order."""
        return tuple(v.name for v in self.variables if v.observed)

    @property
    def latent_names(self) -> tuple[str, ...]:
        """Latent variable names in topological order."""
        return tuple(v.name for v in self.variables if not v.observed)

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def var(self, name: str) -> Variable:
        """Return the variable called ``name``; InputError if unknown."""
        if name not in self._index:
            raise InputError(f"unknown variable {name!r}", field="name")
        return self.variables[self._index[name]]

    def position(self, name: str) -> int:
        """Return the topological position of ``name``."""
        return self._index[name]

    def edges(self) -> list[tuple[str, str]]:
        """Return all directed edges (parent, child), latents included."""
        return [(p, v.name) for v in self.variables for p in v.parents]

    def children(self, name: str) -> tuple[str, ...]:
        """Return the children of ``name`` in topological order."""
        return tuple(v.name for v in self.variables if name in v.parents)

    def descendants(self, names: Iterable[str]) -> frozenset[str]:
        """Return the variables reachable from ``names`` by directed paths (names included)."""
        out = set(names)
        for v in self.variables:
            if any(p in out for p in v.parents):
                out.add(v.name)
        return frozenset(out)

    def ancestors(self, names: Iterable[str]) -> frozenset[str]:
        """Return the variables with a directed path into ``names`` (names included)."""
        out = set(names)
        for v in reversed(self.variables):
            if v.name in out:
                out.update(v.parents)
        return frozenset(out)

    def card(self, name: str) -> int:
        """Number of values of variable ``name``."""
        return self.var(name).card

    @property
    def is_binary(self) -> bool:
        """True when every variable is binary without state names (`rungbench.world/1`)."""
        return self._binary

    def state_names(self) -> dict[str, tuple[str, ...]]:
        """Per named variable, its states in value order ({} for a `rungbench.world/1`
        world)."""
        return {v.name: v.states for v in self.variables if v.states}

    def n_configurations(self) -> int:
        """Return the number of joint exogenous configurations (product of response counts)."""
        return math.prod(len(v.responses) for v in self.variables)

    def to_json(self, *, seed: int) -> dict[str, Any]:
        """Render the public world document (`rungbench.world/1` when :attr:`is_binary`,
        else `rungbench.world/2`), variables shuffled by ``seed``."""
        order = np.random.default_rng(seed).permutation(len(self.variables))
        return {
            "schema": WORLD_SCHEMA if self.is_binary else CATEGORICAL_SCHEMA,
            "world_id": self.world_id,
            "variables": [_variable_json(self.variables[int(i)]) for i in order],
        }

    @classmethod
    def from_cpts(cls, world_id: str, cpts: Sequence[Any], *,
                  coupling: str = "comonotone") -> World:
        """A binary Bayesian network (``cpts.Cpt`` rows of P(V=1 | parents)) as a world.

        See ``rungbench.causal.scm.cpts`` for the encoding and for which quantities the
        (unspecified) cross-row coupling leaves unchanged.
        """
        from rungbench.causal.scm import cpts as cpt_module

        if coupling not in cpt_module.COUPLINGS:
            raise InputError(f"unknown coupling {coupling!r}; choose one of "
                             f"{list(cpt_module.COUPLINGS)}", field="coupling")
        return cpt_module.world_from_cpts(world_id, cpts,
                                          coupling="comonotone" if coupling == "comonotone"
                                          else "independent")

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> World:
        """Parse a `rungbench.world/1` or `/2` document; InputError names the bad field."""
        if not isinstance(doc, Mapping):
            raise InputError("world document must be an object", field="world")
        schema = doc.get("schema")
        if schema not in (WORLD_SCHEMA, CATEGORICAL_SCHEMA):
            raise InputError(f"schema must be {WORLD_SCHEMA!r} or {CATEGORICAL_SCHEMA!r}, got "
                             f"{schema!r}", field="schema")
        world_id = doc.get("world_id")
        if not isinstance(world_id, str) or not world_id:
            raise InputError(f"world_id must be a non-empty string, got {world_id!r}",
                             field="world_id")
        raw = doc.get("variables")
        if not isinstance(raw, list) or not raw:
            raise InputError("variables must be a non-empty list", field="variables")
        named = schema == CATEGORICAL_SCHEMA
        return cls(world_id, tuple(_variable_from_json(v, i, named=named)
                                   for i, v in enumerate(raw)))


def _variable_json(v: Variable) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": v.name,
        "observed": v.observed,
        "parents": list(v.parents),
        "responses": [{"p": r.p, "table": list(r.table)} for r in v.responses],
    }
    if v.states:
        out["states"] = list(v.states)
    return out


def _states_from_json(raw: Any, where: str) -> tuple[str, ...]:
    if (not isinstance(raw, list) or not 2 <= len(raw) <= MAX_STATES
            or not all(isinstance(s, str) and s for s in raw)):
        raise InputError(f"states must be a list of 2..{MAX_STATES} non-empty strings, got "
                         f"{raw!r}", field=f"{where}.states")
    return tuple(raw)


def _variable_from_json(raw: Any, i: int, *, named: bool) -> Variable:
    where = f"variables[{i}]"
    if not isinstance(raw, Mapping):
        raise InputError("variable must be an object", field=where)
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise InputError(f"name must be a non-empty string, got {name!r}", field=f"{where}.name")
    observed = raw.get("observed", True)
    if not isinstance(observed, bool):
        raise InputError(f"observed must be a boolean, got {observed!r}",
                         field=f"{where}.observed")
    parents = raw.get("parents", [])
    if not isinstance(parents, list) or not all(isinstance(p, str) for p in parents):
        raise InputError(f"parents must be a list of names, got {parents!r}",
                         field=f"{where}.parents")
    responses = raw.get("responses")
    if not isinstance(responses, list) or not responses:
        raise InputError("responses must be a non-empty list", field=f"{where}.responses")
    parsed = []
    for j, r in enumerate(responses):
        rw = f"{where}.responses[{j}]"
        if not isinstance(r, Mapping):
            raise InputError("response must be an object", field=rw)
        p, table = r.get("p"), r.get("table")
        if isinstance(p, bool) or not isinstance(p, int | float):
            raise InputError(f"p must be a number, got {p!r}", field=f"{rw}.p")
        if not isinstance(table, list) or not all(
            isinstance(t, int) and not isinstance(t, bool) for t in table
        ):
            raise InputError(f"table must be a list of state values, got {table!r}",
                             field=f"{rw}.table")
        parsed.append(Response(float(p), tuple(table)))
    if named:
        states = _states_from_json(raw.get("states"), where)
    elif "states" in raw:
        raise InputError(f"states need schema {CATEGORICAL_SCHEMA!r}", field=f"{where}.states")
    else:
        states = ()
    return Variable(name, tuple(parents), tuple(parsed), observed, states)


def _check_states(v: Variable) -> None:
    where = f"variables[{v.name}].states"
    if not v.states:
        return
    if not 2 <= len(v.states) <= MAX_STATES:
        raise InputError(f"a variable has 2..{MAX_STATES} states, got {len(v.states)}",
                         field=where)
    if not all(isinstance(s, str) and s for s in v.states):
        raise InputError(f"state names must be non-empty strings, got {list(v.states)!r}",
                         field=where)
    if len(set(v.states)) != len(v.states):
        raise InputError(f"state names repeat: {list(v.states)!r}", field=where)


def _check_variable(v: Variable, cards: Mapping[str, int]) -> None:
    _check_states(v)
    width = math.prod(cards[p] for p in v.parents)
    values = range(v.card)
    if len(set(v.parents)) != len(v.parents):
        raise InputError(f"repeated parent in {list(v.parents)!r}",
                         field=f"variables[{v.name}].parents")
    if v.name in v.parents:
        raise InputError(f"{v.name!r} is its own parent (cycle)",
                         field=f"variables[{v.name}].parents")
    if not v.responses:
        raise InputError("no response functions", field=f"variables[{v.name}].responses")
    for j, r in enumerate(v.responses):
        if not (r.p > 0.0 and math.isfinite(r.p)):
            raise InputError(f"response probability must be > 0, got {r.p!r}",
                             field=f"variables[{v.name}].responses[{j}].p")
        if len(r.table) != width:
            raise InputError(f"table needs {width} rows for {len(v.parents)} parents, "
                             f"got {len(r.table)}",
                             field=f"variables[{v.name}].responses[{j}].table")
        if not all(t in values for t in r.table):
            message = ("0 or 1" if v.card == 2 else f"values 0..{v.card - 1}")
            raise InputError(f"table entries must be {message}, got {list(r.table)!r}",
                             field=f"variables[{v.name}].responses[{j}].table")
    total = math.fsum(r.p for r in v.responses)
    if abs(total - 1.0) > PROB_TOLERANCE:
        raise InputError(f"response probabilities sum to {total!r}, not 1",
                         field=f"variables[{v.name}].responses")
    if len({r.table for r in v.responses}) != len(v.responses):
        raise InputError("response tables are not distinct",
                         field=f"variables[{v.name}].responses")


def _validate_and_order(variables: Sequence[Variable]) -> tuple[Variable, ...]:
    if not variables:
        raise InputError("a world needs at least one variable", field="variables")
    named = any(v.states for v in variables)
    by_name: dict[str, Variable] = {}
    for v in variables:
        if v.name in by_name:
            raise InputError(f"duplicate variable name {v.name!r}", field="variables")
        if named and not v.states:  # a /2 world names every state: 0 and 1 by default
            v = replace(v, states=BINARY_STATES)
        by_name[v.name] = v
    cards = {n: v.card for n, v in by_name.items()}
    for n, v in list(by_name.items()):
        for p in v.parents:
            if p not in by_name:
                raise InputError(f"unknown parent {p!r} of {v.name!r}",
                                 field=f"variables[{v.name}].parents")
        _check_variable(v, cards)
        by_name[n] = _with_parent_cards(v, tuple(cards[p] for p in v.parents))
    return _topological(by_name)


def _with_parent_cards(v: Variable, parent_cards: tuple[int, ...]) -> Variable:
    """``v`` carrying its parents' numbers of values (a copy when another world gave the same
    object other ones)."""
    known = v.__dict__.get("_parent_cards")
    if known is not None and known != parent_cards:
        v = replace(v)
    object.__setattr__(v, "_parent_cards", parent_cards)
    return v


def _topological(by_name: Mapping[str, Variable]) -> tuple[Variable, ...]:
    """Kahn's algorithm, always taking the smallest ready name (a heap)."""
    indegree = {n: len(v.parents) for n, v in by_name.items()}
    children: dict[str, list[str]] = {n: [] for n in by_name}
    for n, v in by_name.items():
        for p in v.parents:
            children[p].append(n)
    ready = [n for n, d in indegree.items() if d == 0]
    heapq.heapify(ready)
    out: list[Variable] = []
    while ready:
        n = heapq.heappop(ready)
        out.append(by_name[n])
        for c in children[n]:
            indegree[c] -= 1
            if indegree[c] == 0:
                heapq.heappush(ready, c)
    if len(out) != len(by_name):
        stuck = sorted(n for n, d in indegree.items() if d > 0)
        raise InputError(f"the parent relation has a cycle through {stuck!r}",
                         field="variables.parents")
    return tuple(out)


QUERY_KEYS: tuple[str, ...] = ("rung", "target", "do", "evidence")
"""The keys of a `rungbench.query/1` document (docs/CONTRACTS.md §2)."""


@dataclass(frozen=True)
class Query:
    """A `rungbench.query/1` query (CONTRACTS §2)."""

    rung: int
    """1 observation, 2 intervention, 3 counterfactual."""
    target: Mapping[str, int]
    """Joint event whose probability is asked (all must hold)."""
    do: Mapping[str, int] = field(default_factory=dict)
    """Intervention (rungs 2 and 3)."""
    evidence: Mapping[str, int] = field(default_factory=dict)
    """Rung 1/2: observed event; rung 3: the FACTUAL event of the same episode."""

    def to_json(self) -> dict[str, Any]:
        """Render the query document (``do`` omitted on rung 1)."""
        out: dict[str, Any] = {"rung": self.rung, "target": dict(self.target),
                               "evidence": dict(self.evidence)}
        if self.rung != 1:
            out["do"] = dict(self.do)
        return out

    @classmethod
    def from_json(cls, doc: Mapping[str, Any], *,
                  states: Mapping[str, Sequence[str]] | None = None) -> Query:
        """Parse a query document; InputError names the bad field.

        ``states`` (e.g. :meth:`World.state_names`) gives the named variables: each takes a
        value 0..k-1 or one of its state names (resolved to its index); every other
        variable is binary (0 or 1), as in every `rungbench.world/1` world.
        """
        if not isinstance(doc, Mapping):
            raise InputError("query must be an object", field="query")
        unknown = sorted(str(k) for k in doc if k not in QUERY_KEYS)
        if unknown:  # a misspelt part ("given") would silently drop its event
            raise InputError(f"unknown key {unknown[0]!r}; a query has "
                             f"{', '.join(QUERY_KEYS)}", field="query")
        rung = doc.get("rung")
        if rung not in (1, 2, 3) or isinstance(rung, bool):
            raise InputError(f"rung must be 1, 2 or 3, got {rung!r}", field="rung")
        named = {} if states is None else states
        parts = {k: _event(doc.get(k, {}), k, named) for k in ("target", "do", "evidence")}
        return cls(int(rung), parts["target"], parts["do"], parts["evidence"])


def _event(raw: Any, name: str, states: Mapping[str, Sequence[str]]) -> dict[str, int]:
    if not isinstance(raw, Mapping):
        raise InputError(f"{name} must be an object of name -> value, got {raw!r}", field=name)
    return {str(k): _value(k, v, f"{name}.{k}", states) for k, v in raw.items()}


def _value(variable: Any, raw: Any, where: str, states: Mapping[str, Sequence[str]]) -> int:
    """One event value: an index 0..k-1 or a state name of ``variable``."""
    names = states.get(variable) if isinstance(variable, str) else None
    if not isinstance(variable, str):
        raise InputError(f"variable names are strings, got {variable!r}", field=where)
    if isinstance(raw, str):
        if names is None:
            raise InputError(f"{variable!r} has no state names; give its value as 0 or 1, got "
                             f"{raw!r}", field=where)
        if raw not in names:
            raise InputError(f"{raw!r} is not a state of {variable!r} (states: {list(names)!r})",
                             field=where)
        return list(names).index(raw)
    k = 2 if names is None else len(names)
    if isinstance(raw, bool) or not isinstance(raw, int) or not 0 <= raw < k:
        expected = "0 or 1" if names is None else f"0..{k - 1} or a state name"
        raise InputError(f"value of {variable!r} must be {expected}, got {raw!r}", field=where)
    return raw


def check_query(world: World, query: Query) -> None:
    """Raise InputError naming the field when ``query`` does not fit ``world``."""
    if query.rung not in (1, 2, 3):
        raise InputError(f"rung must be 1, 2 or 3, got {query.rung!r}", field="rung")
    if not query.target:
        raise InputError("target must name at least one variable", field="target")
    if query.rung == 1 and query.do:
        raise InputError("a rung-1 query takes no do()", field="do")
    if query.rung >= 2 and not query.do:
        raise InputError(f"a rung-{query.rung} query needs a do()", field="do")
    for part in ("target", "do", "evidence"):
        for name, value in getattr(query, part).items():
            if name not in world:
                raise InputError(f"unknown variable {name!r}", field=f"{part}.{name}")
            k = world.card(name)
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or not (
                    0 <= value < k):
                raise InputError(f"value must be {'0 or 1' if k == 2 else f'0..{k - 1}'}, got "
                                 f"{value!r}", field=f"{part}.{name}")
    for name in query.evidence:
        if not world.var(name).observed:
            raise InputError(f"latent {name!r} may not be evidence", field=f"evidence.{name}")
