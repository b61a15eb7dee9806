"""Tests for rungbench.causal.scm.random_dag: size, edge density, latent fraction, determinism."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from rungbench.causal.scm.random_dag import DagSpec, random_world
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
