"""Tests for rungbench.causal.scm.world: the binary SCM, its public JSON and query validation."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

from rungbench.causal.scm import mechanisms as mech
from rungbench.causal.scm.motifs import motif_catalogue
from rungbench.causal.scm.random_dag import DagSpec, random_world
from rungbench.causal.scm.world import Query, Response, Variable, World, check_query
from rungbench.errors import InputError


def _doc() -> dict[str, Any]:
    return {
        "schema": "rungbench.world/1",
        "world_id": "w0007",
        "variables": [
            {"name": "B", "observed": True, "parents": ["A", "L1"],
             "responses": [{"p": 0.25, "table": [0, 1, 1, 1]},
                           {"p": 0.75, "table": [0, 0, 0, 1]}]},
            {"name": "L1", "observed": False, "parents": [],
             "responses": [{"p": 0.4, "table": [1]}, {"p": 0.6, "table": [0]}]},
            {"name": "A", "observed": True, "parents": [],
             "responses": [{"p": 0.5, "table": [1]}, {"p": 0.5, "table": [0]}]},
        ],
    }


def test_contract_example_parses_in_topological_order() -> None:
    """The CONTRACTS §1 example parses and is held in causal order (roots first)."""
    w = World.from_json(_doc())
    assert w.names.index("B") > w.names.index("A")
    assert w.names.index("B") > w.names.index("L1")
    assert w.latent_names == ("L1",)


def test_round_trip_every_motif_and_random_world() -> None:
    """from_json(to_json(w)) == w for all motifs and random worlds, whatever the seed."""
    rng = np.random.default_rng(0)
    worlds = [m.world for m in motif_catalogue(rng)]
    worlds += [random_world(DagSpec(8, 0.4, 0.25), rng, f"r{i}") for i in range(5)]
    for w in worlds:
        for seed in (0, 1, 99):
            assert World.from_json(w.to_json(seed=seed)) == w


def test_public_listing_is_shuffled_by_seed() -> None:
    """The listing order depends on the seed and is not always the causal order."""
    w = random_world(DagSpec(10, 0.3), np.random.default_rng(1), "r")
    orders = {tuple(v["name"] for v in w.to_json(seed=s)["variables"]) for s in range(6)}
    assert len(orders) > 1
    assert w.names not in orders or len(orders) > 2
    assert [v["name"] for v in w.to_json(seed=4)["variables"]] == \
        [v["name"] for v in w.to_json(seed=4)["variables"]]


def test_cycle_is_an_input_error() -> None:
    """A parent cycle raises InputError naming the parents field."""
    doc = _doc()
    doc["variables"][2]["parents"] = ["B"]
    doc["variables"][2]["responses"] = [{"p": 1.0, "table": [0, 1]}]
    with pytest.raises(InputError, match="cycle") as exc:
        World.from_json(doc)
    assert exc.value.field is not None and "parents" in exc.value.field


def test_unknown_parent_is_an_input_error() -> None:
    """An unknown parent raises InputError naming the variable's parents field."""
    doc = _doc()
    doc["variables"][0]["parents"] = ["A", "Q"]
    with pytest.raises(InputError, match="unknown parent 'Q'") as exc:
        World.from_json(doc)
    assert exc.value.field == "variables[B].parents"


def test_probabilities_not_summing_to_one_is_an_input_error() -> None:
    """Response probabilities summing to 0.9 raise InputError naming the responses field."""
    doc = _doc()
    doc["variables"][2]["responses"][0]["p"] = 0.4
    with pytest.raises(InputError, match="sum to") as exc:
        World.from_json(doc)
    assert exc.value.field == "variables[A].responses"


@pytest.mark.parametrize(("mutate", "field"), [
    (lambda d: d["variables"][0]["responses"][0].update(table=[0, 1]), "table"),
    (lambda d: d["variables"][0]["responses"][0].update(table=[0, 1, 2, 1]), "table"),
    (lambda d: d["variables"][1]["responses"][0].update(p=0.0), ".p"),
    (lambda d: d["variables"][2].update(responses=[{"p": 0.5, "table": [1]}] * 2), "responses"),
    (lambda d: d.update(schema="other"), "schema"),
    (lambda d: d["variables"].append(copy.deepcopy(d["variables"][2])), "variables"),
])
def test_malformed_worlds_name_the_field(mutate: Any, field: str) -> None:
    """Wrong table width, non-binary entries, p = 0, repeated tables, schema, duplicates fail."""
    doc = _doc()
    mutate(doc)
    with pytest.raises(InputError) as exc:
        World.from_json(doc)
    assert exc.value.field is not None and field in exc.value.field


def test_query_unknown_variable_and_value() -> None:
    """A query naming an unknown variable or a non-binary value raises InputError with the field."""
    w = World.from_json(_doc())
    with pytest.raises(InputError) as exc:
        check_query(w, Query(1, {"Q": 1}, {}, {}))
    assert exc.value.field == "target.Q"
    with pytest.raises(InputError) as exc:
        Query.from_json({"rung": 2, "target": {"B": 1}, "do": {"A": 2}})
    assert exc.value.field == "do.A"
    with pytest.raises(InputError) as exc:
        check_query(w, Query(1, {"B": 1}, {}, {"L1": 1}))
    assert exc.value.field == "evidence.L1"
    with pytest.raises(InputError) as exc:
        Query.from_json({"rung": 4, "target": {"B": 1}})
    assert exc.value.field == "rung"
    with pytest.raises(InputError) as exc:
        check_query(w, Query(2, {"B": 1}, {}, {}))
    assert exc.value.field == "do"


def test_query_json_round_trip() -> None:
    """Query documents of all rungs survive to_json/from_json."""
    for q in (Query(1, {"Y": 1}, {}, {"Z": 0}), Query(2, {"Y": 1}, {"X": 1}, {"Z": 0}),
              Query(3, {"Y": 0}, {"X": 0}, {"X": 1, "Y": 1})):
        assert Query.from_json(q.to_json()) == q


def test_query_with_an_unknown_key_is_refused() -> None:
    """A misspelt part ("given" for "evidence") is refused naming it, never dropped (which
    answered the unconditional probability instead)."""
    with pytest.raises(InputError, match="unknown key 'given'"):
        Query.from_json({"rung": 1, "target": {"Y": 1}, "given": {"X": 1}})


def test_graph_helpers() -> None:
    """descendants/ancestors/children follow the directed edges, latents included."""
    w = World("w", (
        Variable("A", (), mech.root(0.5)),
        Variable("B", ("A",), mech.noisy_or([0.5], 0.1)),
        Variable("C", ("B",), (Response(1.0, (0, 1)),)),
    ))
    assert w.descendants(["B"]) == {"B", "C"}
    assert w.ancestors(["B"]) == {"A", "B"}
    assert w.children("A") == ("B",)
    assert w.n_configurations() == 2 * 3


def test_probability_sum_tolerance_is_1e_9() -> None:
    """Sums off by 1e-6 are rejected; sums off by 1e-12 (rounding) are accepted (CONTRACTS §1)."""
    doc = _doc()
    doc["variables"][2]["responses"] = [{"p": 0.5 + 1e-6, "table": [1]},
                                        {"p": 0.5, "table": [0]}]
    with pytest.raises(InputError, match="sum to"):
        World.from_json(doc)
    doc["variables"][2]["responses"][0]["p"] = 0.5 + 1e-12
    assert "A" in World.from_json(doc)


def test_rung3_query_without_do_is_an_input_error() -> None:
    """A rung-3 (counterfactual) query with an empty do() raises InputError on field ``do``."""
    w = World.from_json(_doc())
    with pytest.raises(InputError) as exc:
        check_query(w, Query(3, {"B": 1}, {}, {"A": 1}))
    assert exc.value.field == "do"


# --- categorical worlds (rungbench.world/2) ---------------------------------------------

BUNDLED_DIGESTS = {  # computed with the binary-only world module (before world/2 existed)
    "confounded": "sha256:4e4ac13a081ef9c1ef9f85c0f1e5c0f8e7f69ebd7e6fcf94923581dd8c0999a4",
    "xor": "sha256:0795deb28f9a0d15e6f82c58dfca2abd5e32901bcc1cff054408b0482634f50a",
}


def _categorical_doc() -> dict[str, Any]:
    return {
        "schema": "rungbench.world/2",
        "world_id": "c1",
        "variables": [
            {"name": "W", "observed": True, "parents": [], "states": ["low", "mid", "high"],
             "responses": [{"p": 0.2, "table": [0]}, {"p": 0.5, "table": [1]},
                           {"p": 0.3, "table": [2]}]},
            {"name": "S", "observed": True, "parents": [], "states": ["off", "on"],
             "responses": [{"p": 0.4, "table": [0]}, {"p": 0.6, "table": [1]}]},
            # Y = W + S capped at 2, read through the row rule row = W + 3 * S
            {"name": "Y", "observed": True, "parents": ["W", "S"], "states": ["a", "b", "c"],
             "responses": [{"p": 1.0, "table": [0, 1, 2, 1, 2, 2]}]},
        ],
    }


@pytest.mark.parametrize("name", sorted(BUNDLED_DIGESTS))
def test_binary_worlds_keep_schema_1_and_their_digests(name: str) -> None:
    """A bundled all-binary world renders as rungbench.world/1, byte for byte as before."""
    import json
    from pathlib import Path

    import rungbench
    from rungbench.evidence.canonical import bytes_digest, canonical_bytes

    cases = Path(rungbench.__file__).parent / "causal" / "data" / "hand_cases.json"
    world = World.from_json(json.loads(cases.read_text())["worlds"][name])
    doc = world.to_json(seed=3)
    assert doc["schema"] == "rungbench.world/1" and world.is_binary
    assert all("states" not in v for v in doc["variables"])
    assert bytes_digest(canonical_bytes(doc)) == BUNDLED_DIGESTS[name]


def test_categorical_world_round_trips_as_schema_2() -> None:
    """A world with a three-state variable is rungbench.world/2 and survives the round trip."""
    w = World.from_json(_categorical_doc())
    assert not w.is_binary and w.card("W") == 3 and w.card("S") == 2
    for seed in range(4):
        doc = w.to_json(seed=seed)
        assert doc["schema"] == "rungbench.world/2"
        assert all("states" in v for v in doc["variables"])
        assert World.from_json(doc) == w


def test_row_index_is_mixed_radix_first_parent_least_significant() -> None:
    """The row of (W=w, S=s) is w + 3*s: Y's CPD puts each row's mass on W + S capped at 2."""
    y = World.from_json(_categorical_doc()).var("Y")
    assert y.strides == (1, 3) and y.rows == 6
    expected = [min(2, w + s) for s in range(2) for w in range(3)]
    assert y.cpd().shape == (3, 6)
    assert [int(np.argmax(y.cpd()[:, r])) for r in range(6)] == expected


def test_a_named_binary_variable_makes_the_world_schema_2() -> None:
    """Naming the states of an all-binary world makes it /2; nameless variables get 0 and 1."""
    a = Variable("A", (), (Response(1.0, (1,)),), True, ("no", "yes"))
    b = Variable("B", ("A",), (Response(1.0, (0, 1)),))
    w = World("n", (a, b))
    assert w.to_json(seed=0)["schema"] == "rungbench.world/2"
    assert w.var("B").states == ("0", "1")
    assert World.from_json(w.to_json(seed=0)) == w


@pytest.mark.parametrize(("mutate", "field"), [
    (lambda d: d["variables"][0].update(states=["x"]), "states"),
    (lambda d: d["variables"][0].update(states=["x", "x", "y"]), "states"),
    (lambda d: d["variables"][0].update(states=[f"s{i}" for i in range(65)]), "states"),
    (lambda d: d["variables"][0].update(states=["x", "", "y"]), "states"),
    (lambda d: d["variables"][1].pop("states"), "states"),
    (lambda d: d["variables"][2]["responses"][0].update(table=[0, 1, 3, 1, 2, 2]), "table"),
    (lambda d: d["variables"][2]["responses"][0].update(table=[0, 1, 2, 1]), "table"),
    (lambda d: d.update(schema="rungbench.world/1"), "states"),
])
def test_malformed_categorical_worlds_name_the_field(mutate: Any, field: str) -> None:
    """Bad state lists, missing states in /2, out-of-range outputs, short tables and states in
    a /1 document are InputErrors naming the field."""
    doc = _categorical_doc()
    mutate(doc)
    with pytest.raises(InputError) as exc:
        World.from_json(doc)
    assert exc.value.field is not None and field in exc.value.field


def test_query_values_may_be_state_names() -> None:
    """Query values are indices or state names; unknown names and values name the field."""
    w = World.from_json(_categorical_doc())
    q = Query.from_json({"rung": 2, "target": {"Y": "c"}, "do": {"W": "high"},
                         "evidence": {"S": 0}}, states=w.state_names())
    assert q == Query(2, {"Y": 2}, {"W": 2}, {"S": 0})
    check_query(w, q)
    for doc, field in (({"rung": 1, "target": {"Y": "d"}}, "target.Y"),
                       ({"rung": 1, "target": {"Y": 3}}, "target.Y"),
                       ({"rung": 1, "target": {"Y": True}}, "target.Y")):
        with pytest.raises(InputError) as exc:
            Query.from_json(doc, states=w.state_names())
        assert exc.value.field == field
    with pytest.raises(InputError) as exc:
        Query.from_json({"rung": 1, "target": {"Y": "c"}})
    assert exc.value.field == "target.Y"
    with pytest.raises(InputError) as exc:
        check_query(w, Query(1, {"W": 3}, {}, {}))
    assert exc.value.field == "target.W"
