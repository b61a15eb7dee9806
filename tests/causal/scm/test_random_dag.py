"""Tests for rungbench.causal.scm.random_dag: size, edge density, latent fraction, determinism,
binary bytes, and categorical worlds."""

from __future__ import annotations

import hashlib
import json

import networkx as nx
import numpy as np
import pytest

from rungbench.causal.scm.random_dag import DagSpec, categorical_world, random_world
from rungbench.causal.scm.world import World
from rungbench.errors import InputError


def test_size_names_and_acyclicity() -> None:
    """n observed variables named V00…, latents L00…; the graph is a DAG."""
    rng = np.random.default_rng(0)
    for n in (2, 6, 12, 30):
        w = random_world(DagSpec(n, 0.3, 0.2), rng, f"r{n}")
        assert sorted(w.observed_names) == [f"V{i:02d}" for i in range(n)]
        assert all(name.startswith("L") for name in w.latent_names)
        assert nx.is_directed_acyclic_graph(nx.DiGraph(w.edges()))


def test_edge_density_matches_its_expectation() -> None:
    """Without the parent cap, the share of present forward edges is close to the density."""
    rng = np.random.default_rng(1)
    for density in (0.1, 0.5):
        present = possible = 0
        for k in range(40):
            w = random_world(DagSpec(8, density, max_parents=8), rng, f"d{k}")
            present += sum(1 for p, _ in w.edges() if not p.startswith("L"))
            possible += 8 * 7 // 2
        assert present / possible == pytest.approx(density, abs=0.04)


def test_parent_cap_is_respected() -> None:
    """No variable has more than max_parents observed parents, nor more than 2 latent ones."""
    rng = np.random.default_rng(2)
    for k in range(20):
        w = random_world(DagSpec(10, 0.9, 0.5, max_parents=2), rng, f"c{k}")
        for v in w.variables:
            assert sum(not p.startswith("L") for p in v.parents) <= 2
            assert sum(p.startswith("L") for p in v.parents) <= 2


@pytest.mark.parametrize(("n", "fraction", "latents"), [(6, 0.0, 0), (6, 0.34, 2), (10, 0.3, 3)])
def test_latent_fraction_gives_confounders_of_two(n: int, fraction: float, latents: int) -> None:
    """round(fraction × n) latent roots, each an unobserved parent of exactly two variables."""
    w = random_world(DagSpec(n, 0.3, fraction), np.random.default_rng(3), "l")
    assert len(w.latent_names) == latents
    for name in w.latent_names:
        assert w.var(name).parents == () and not w.var(name).observed
        assert len(w.children(name)) == 2


def test_same_seed_same_world() -> None:
    """The generator is a pure function of the spec and the Generator state."""
    spec = DagSpec(7, 0.4, 0.3)
    assert random_world(spec, np.random.default_rng(4), "a") == random_world(
        spec, np.random.default_rng(4), "a")
    assert random_world(spec, np.random.default_rng(4), "a") != random_world(
        spec, np.random.default_rng(5), "a")


def test_names_do_not_reveal_causal_order() -> None:
    """Over many draws the first variable in causal order carries many different labels."""
    rng = np.random.default_rng(6)
    firsts = {random_world(DagSpec(6, 0.5), rng, f"o{k}").observed_names[0] for k in range(30)}
    assert len(firsts) >= 4


@pytest.mark.parametrize(("spec", "field"), [
    (DagSpec(1, 0.5), "n_nodes"), (DagSpec(5, 1.5), "edge_density"),
    (DagSpec(5, -0.1), "edge_density"), (DagSpec(5, 0.5, -0.2), "latent_fraction")])
def test_bad_spec_is_an_input_error(spec: DagSpec, field: str) -> None:
    """Fewer than two nodes, a density outside [0, 1] or a negative latent fraction fail."""
    with pytest.raises(InputError) as info:
        random_world(spec, np.random.default_rng(0), "bad")
    assert info.value.field == field


def test_dense_worlds_reach_the_requested_in_degree() -> None:
    """dense_world(80, 2.7) has mean in-degree within 0.2 of 2.7, parents strictly earlier,
    and the same seed gives the same world; bad sizes are input errors."""
    from rungbench.causal.scm.random_dag import dense_world

    w = dense_world(80, 2.7, np.random.default_rng(80), "d80")
    assert abs(np.mean([len(v.parents) for v in w.variables]) - 2.7) < 0.2
    seen: set[str] = set()
    for v in w.variables:
        assert set(v.parents) <= seen
        seen.add(v.name)
    assert w == dense_world(80, 2.7, np.random.default_rng(80), "d80")
    with pytest.raises(InputError):
        dense_world(1, 2.7, np.random.default_rng(0), "x")
    with pytest.raises(InputError):
        dense_world(5, -1.0, np.random.default_rng(0), "x")


BINARY_DIGEST = "af1375baf44d7ae7f7d5c488e992666fda3b5ff4a1615bb384d6964ba5b20075"
"""sha256 of 30 binary random worlds' public JSON (seed 2026), computed before the categorical
generator was added (commit 4bacd3b): binary generation must keep these bytes."""


def test_binary_worlds_keep_their_bytes() -> None:
    """random_world still draws exactly the worlds it drew before categorical generation."""
    digest = hashlib.sha256()
    rng = np.random.default_rng(2026)
    for k in range(30):
        spec = DagSpec(6 + k % 5, 0.45, latent_fraction=0.34 if k % 2 else 0.0)
        w = random_world(spec, rng, f"b{k:04d}")
        digest.update(json.dumps(w.to_json(seed=k), sort_keys=True).encode())
    assert digest.hexdigest() == BINARY_DIGEST


@pytest.mark.parametrize("states", [(2, 4), (3, 3), (2, 6)])
def test_categorical_worlds_are_valid(states: tuple[int, int]) -> None:
    """Every variable has states[0]..states[1] states named s0, s1, … in value order; every
    CPT row sums to 1; the public document is rungbench.world/2 and parses back equal."""
    rng = np.random.default_rng(7)
    seen: set[int] = set()
    for k in range(12):
        w = categorical_world(DagSpec(6, 0.5, 0.34 if k % 2 else 0.0), rng, f"c{k}",
                              states=states)
        for v in w.variables:
            assert states[0] <= v.card <= states[1]
            assert v.states == tuple(f"s{i}" for i in range(v.card))
            assert v.cpd().shape == (v.card, v.rows)
            assert np.allclose(v.cpd().sum(axis=0), 1.0, atol=1e-12)
            seen.add(v.card)
        doc = w.to_json(seed=k)
        assert doc["schema"] == "rungbench.world/2"
        assert World.from_json(doc) == w
    assert seen == set(range(states[0], states[1] + 1))


def test_categorical_world_draws_the_binary_graph() -> None:
    """Without latents, categorical_world draws the same graph as random_world from the same
    Generator state (only the mechanisms differ)."""
    for seed in range(10):
        spec = DagSpec(7, 0.4)
        binary = random_world(spec, np.random.default_rng(seed), "g")
        categorical = categorical_world(spec, np.random.default_rng(seed), "g")
        assert sorted(binary.edges()) == sorted(categorical.edges())
        assert not categorical.is_binary


def test_categorical_generation_is_seeded() -> None:
    """The categorical generator is a pure function of the spec, range and Generator state."""
    spec = DagSpec(6, 0.45, 0.34)
    assert categorical_world(spec, np.random.default_rng(4), "a") == categorical_world(
        spec, np.random.default_rng(4), "a")
    assert categorical_world(spec, np.random.default_rng(4), "a") != categorical_world(
        spec, np.random.default_rng(5), "a")


@pytest.mark.parametrize("states", [(1, 3), (4, 3), (2, 65)])
def test_bad_state_range_is_an_input_error(states: tuple[int, int]) -> None:
    """A range below 2, upside down or past 64 states is an InputError on ``states``."""
    with pytest.raises(InputError) as info:
        categorical_world(DagSpec(4, 0.5), np.random.default_rng(0), "bad", states=states)
    assert info.value.field == "states"
