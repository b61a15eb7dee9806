"""Tests for the Monte Carlo checker's reader of public worlds and queries
(rungbench.causal.checks.mc_world): schemas /1 and /2, row strides, state names, refusals.

The binary world's refusals are pinned in test_mc_check.py (through check_query);
these pin what ``rungbench.world/2`` adds.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

from rungbench.causal.checks.mc_check import check_queries
from rungbench.causal.checks.mc_world import (
    MAX_STATES,
    PublicWorld,
    read_query,
    read_world,
    row_strides,
)
from rungbench.errors import InputError

World = dict[str, Any]


def _var(name: str, states: list[str], parents: list[str],
         responses: list[tuple[float, list[int]]], observed: bool = True) -> dict[str, Any]:
    return {"name": name, "observed": observed, "parents": parents, "states": states,
            "responses": [{"p": p, "table": t} for p, t in responses]}


# W (3 states), V (2 states), U (4 states) are roots; Y has parents [W, V, U] and 3 states.
# Rows: w + 3 v + 6 u (strides 1, 3, 6), 24 in all; Y's one table is row mod 3.
MIXED: World = {
    "schema": "rungbench.world/2", "world_id": "mixed",
    "variables": [
        _var("Y", ["lo", "mid", "hi"], ["W", "V", "U"], [(1.0, [r % 3 for r in range(24)])]),
        _var("W", ["w0", "w1", "w2"], [], [(0.2, [0]), (0.3, [1]), (0.5, [2])]),
        _var("V", ["off", "on"], [], [(0.5, [0]), (0.5, [1])]),
        _var("U", ["u0", "u1", "u2", "u3"], [], [(0.25, [0]), (0.25, [1]), (0.25, [2]),
                                                 (0.25, [3])]),
    ],
}
Y, W, V, U = 0, 1, 2, 3
"""Listed positions of the variables in MIXED."""


def _broken(path: list[Any], value: Any) -> World:
    world = copy.deepcopy(MIXED)
    node: Any = world
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return world


def _without_states(world: World, listed: int) -> World:
    broken = copy.deepcopy(world)
    del broken["variables"][listed]["states"]
    return broken


def _read(world: World) -> PublicWorld:
    return read_world(world)


# ----------------------------------------------------------------- reading


def test_row_strides_multiply_the_earlier_parents_state_counts() -> None:
    """Strides are 1, k0, k0*k1, ...; for binary parents they are the bit weights 1, 2, 4."""
    assert row_strides([3, 2, 4]) == (1, 3, 6)
    assert row_strides([2, 2, 2]) == (1, 2, 4)
    assert row_strides([5]) == (1,)
    assert row_strides([]) == ()


def test_a_categorical_world_is_read_in_topological_order_with_its_states() -> None:
    """MIXED reads as roots U, V, W (by name) then Y, with Y's parents in listed order and
    strides (1, 3, 6); it is not binary."""
    world = _read(MIXED)
    assert [v.name for v in world.variables] == ["U", "V", "W", "Y"]
    y = world.variables[world.position["Y"]]
    assert y.parents == (world.position["W"], world.position["V"], world.position["U"])
    assert y.strides == (1, 3, 6)
    assert y.states == ("lo", "mid", "hi") and y.n_states == 3
    assert len(y.tables[0]) == 24
    assert not world.is_binary


def test_a_binary_world_with_state_names_is_binary() -> None:
    """A /2 world whose variables all have two named states is binary (the packed sampler)."""
    world = {"schema": "rungbench.world/2", "world_id": "b", "variables": [
        _var("A", ["no", "yes"], [], [(0.4, [1]), (0.6, [0])]),
        _var("B", ["off", "on"], ["A"], [(1.0, [1, 0])]),
    ]}
    assert _read(world).is_binary


def test_state_names_and_indices_give_the_same_event() -> None:
    """A query naming states reads as the same state indices as one giving the indices."""
    world = _read(MIXED)
    by_name = read_query(world, {"rung": 3, "target": {"Y": "hi"}, "do": {"V": "on"},
                                 "evidence": {"W": "w2", "U": "u1"}})
    by_index = read_query(world, {"rung": 3, "target": {"Y": 2}, "do": {"V": 1},
                                  "evidence": {"W": 2, "U": 1}})
    assert by_name == by_index
    assert by_name.target == {world.position["Y"]: 2}


def test_mixed_strides_read_the_documented_row() -> None:
    """Y's deterministic table (row mod 3) is read at row w + 3 v + 6 u for every configuration."""
    configurations = [(w, v, u) for w in range(3) for v in range(2) for u in range(4)]
    queries = [{"rung": 1, "target": {"Y": (w + 3 * v + 6 * u) % 3},
                "evidence": {"W": w, "V": v, "U": u}} for w, v, u in configurations]
    estimates = check_queries(MIXED, queries, draws=20_000, rng=np.random.default_rng(3))
    assert [e.p for e in estimates] == [1.0] * len(configurations)


# --------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("world", "field"),
    [
        (_broken(["variables", W, "states"], ["w0", "w1", "w0"]), f"variables[{W}].states[2]"),
        (_broken(["variables", W, "states"], ["w0", "", "w2"]), f"variables[{W}].states[1]"),
        (_broken(["variables", W, "states"], ["w0", 1, "w2"]), f"variables[{W}].states[1]"),
        (_broken(["variables", W, "states"], [f"s{i}" for i in range(MAX_STATES + 1)]),
         f"variables[{W}].states"),
        (_broken(["variables", V, "states"], ["only"]), f"variables[{V}].states"),
        (_broken(["variables", V, "states"], "off,on"), f"variables[{V}].states"),
        (_without_states(MIXED, U), f"variables[{U}].states"),
        (_broken(["schema"], "rungbench.world/1"), f"variables[{Y}].states"),
        (_broken(["schema"], "rungbench.world/3"), "schema"),
        (_broken(["variables", W, "responses", 2, "table"], [3]),
         f"variables[{W}].responses[2].table[0]"),
        (_broken(["variables", Y, "responses", 0, "table"], [0] * 23 + [-1]),
         f"variables[{Y}].responses[0].table[23]"),
        (_broken(["variables", Y, "responses", 0, "table"], [0] * 16),
         f"variables[{Y}].responses[0].table"),
        (_broken(["variables", Y, "responses", 0, "table"], [0] * 24 + [1]),
         f"variables[{Y}].responses[0].table"),
        (_broken(["variables", U, "responses", 3, "table"], [0]),
         f"variables[{U}].responses[3].table"),
    ],
    ids=["duplicate-state", "empty-state", "non-string-state", "too-many-states", "one-state",
         "states-not-a-list", "missing-states", "states-in-world-1", "unknown-schema",
         "output-above-states", "negative-output", "table-too-short", "table-too-long",
         "duplicate-table"],
)
def test_bad_categorical_world_raises_input_error_naming_the_field(world: World,
                                                                   field: str) -> None:
    """A malformed /2 world raises InputError whose field names the offending entry."""
    with pytest.raises(InputError) as caught:
        check_queries(world, [{"rung": 1, "target": {"Y": 0}}], draws=100,
                      rng=np.random.default_rng(0))
    assert caught.value.field == field
    assert "\n" not in str(caught.value)


def test_sixty_four_states_are_accepted() -> None:
    """A variable may list exactly MAX_STATES = 64 states (inclusive) and output the last one."""
    states = [f"s{i}" for i in range(MAX_STATES)]
    world = {"schema": "rungbench.world/2", "world_id": "wide",
             "variables": [_var("A", states, [], [(0.5, [63]), (0.5, [0])])]}
    estimate, = check_queries(world, [{"rung": 1, "target": {"A": "s63"}}], draws=1_000,
                              rng=np.random.default_rng(0))
    assert _read(world).variables[0].n_states == 64
    assert 0.4 < estimate.p < 0.6


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"rung": 1, "target": {"Y": "top"}}, "queries[0].target.Y"),
        ({"rung": 1, "target": {"Y": 0}, "evidence": {"W": "u1"}}, "queries[0].evidence.W"),
        ({"rung": 2, "target": {"Y": 0}, "do": {"V": "ON"}}, "queries[0].do.V"),
        ({"rung": 1, "target": {"Y": 3}}, "queries[0].target.Y"),
        ({"rung": 1, "target": {"Y": -1}}, "queries[0].target.Y"),
        ({"rung": 1, "target": {"Y": 1.0}}, "queries[0].target.Y"),
        ({"rung": 1, "target": {"Y": None}}, "queries[0].target.Y"),
    ],
    ids=["unknown-state-name", "another-variables-state", "case-matters", "index-too-big",
         "negative-index", "float-index", "null-value"],
)
def test_bad_state_in_a_query_raises_input_error_naming_the_field(query: dict[str, Any],
                                                                  field: str) -> None:
    """An unknown state name or an index outside 0..k-1 is an InputError naming its field."""
    with pytest.raises(InputError) as caught:
        check_queries(MIXED, [query], draws=100, rng=np.random.default_rng(0))
    assert caught.value.field == field


def test_unknown_state_name_message_lists_the_states() -> None:
    """The refusal of an unknown state name quotes the name and the variable's states."""
    with pytest.raises(InputError, match=r"unknown state 'top' of 'Y'; states are "
                                         r"\['lo', 'mid', 'hi'\]"):
        read_query(_read(MIXED), {"rung": 1, "target": {"Y": "top"}})


def test_a_binary_world_lists_no_states_not_even_null() -> None:
    """In rungbench.world/1 a "states" key is refused, even null: state names need /2."""
    for states in (None, ["0", "1"]):
        world = {"schema": "rungbench.world/1", "world_id": "b", "variables": [
            {"name": "A", "observed": True, "parents": [], "states": states,
             "responses": [{"p": 0.5, "table": [0]}, {"p": 0.5, "table": [1]}]}]}
        with pytest.raises(InputError) as caught:
            read_world(world)
        assert caught.value.field == "variables[0].states"


def test_a_binary_world_takes_no_state_names_in_queries() -> None:
    """In rungbench.world/1 a query value must be 0 or 1: the string "1" is refused."""
    world = read_world({"schema": "rungbench.world/1", "world_id": "b", "variables": [
        {"name": "A", "observed": True, "parents": [],
         "responses": [{"p": 0.5, "table": [0]}, {"p": 0.5, "table": [1]}]}]})
    with pytest.raises(InputError) as caught:
        read_query(world, {"rung": 1, "target": {"A": "1"}})
    assert caught.value.field == "query.target.A"
