"""Tests for rungbench.causal.bench.networks: items over imported bnlearn networks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tests.pyagrum_bridge import lazy_answer, pyagrum_copy, with_our_numbers

from rungbench.causal.bench.networks import (
    NETWORK_DIR,
    SPLIT_SHAPES,
    Network,
    NetworkItem,
    backdoor_adjustment,
    bundled_networks,
    has_backdoor_path,
    load_network,
    named_event,
    network_items,
    parse_networks,
)
from rungbench.causal.scm import oracle
from rungbench.causal.scm.world import Query
from rungbench.errors import InputError, Refusal


def _items(name: str, split: str = "test", draws: int = 6, seed: int = 3
           ) -> tuple[Network, list[NetworkItem]]:
    net = load_network(name, f"w-{name}")
    return net, network_items(net, np.random.default_rng(seed), split=split, draws=draws)


@pytest.mark.parametrize("name", ["alarm", "child"])
def test_item_answers_equal_pyagrum_lazy_propagation(name: str, tmp_path: Path) -> None:
    """Every rung-1, rung-2 and identification value, and the rung-1 / population rung-2
    readings of every rung-3 item, equal pyAgrum's LazyPropagation within 1e-9."""
    gum = pytest.importorskip("pyagrum", reason="pyAgrum not installed (extra crosscheck)")
    net, items = _items(name)
    bn = gum.loadBN(str(pyagrum_copy(NETWORK_DIR / f"{name}.bif", tmp_path, net.states)))
    assert with_our_numbers(bn, net.world) <= 1e-6
    checked = {1: 0, 2: 0, 3: 0}
    for it in items:
        q = it.query
        if it.rung == 3:
            ((x, x1),) = q.do.items()
            ((y, yv),) = q.target.items()
            got = lazy_answer(gum, bn, {y: yv}, {x: x1}, {})
            assert it.confusions["rung2_population"] == pytest.approx(got, abs=1e-9)
            got1 = lazy_answer(gum, bn, {y: yv}, {}, {x: x1})
            assert it.confusions["rung1"] == pytest.approx(got1, abs=1e-9)
        else:
            assert it.value == pytest.approx(lazy_answer(gum, bn, q.target, q.do, q.evidence),
                                             abs=1e-9), it.estimand
        checked[it.rung] += 1
    assert checked[1] == 6 and checked[2] == 12 and checked[3] == 6


def test_rung3_values_differ_from_their_rung2_readings() -> None:
    """Counterfactual items are not rung-2 items in disguise: on alarm and child most have a
    value away from the population P(y | do x') by more than tol."""
    far = 0
    total = 0
    for name in ("alarm", "child"):
        _, items = _items(name)
        for it in items:
            if it.rung == 3:
                total += 1
                far += abs(it.value - (it.confusions["rung2_population"] or 0.0)) > 0.02
    assert total == 12 and far >= 6


def test_rung3_value_changes_with_the_named_coupling() -> None:
    """On asia (small enough for the independent coupling) a rung-3 query has different
    values under the comonotone and the independent coupling, each the oracle's under the
    world it names."""
    net = load_network("asia", "w-asia")
    assert sorted(net.worlds) == ["comonotone", "independent"]
    q = Query(3, {"dysp": 1}, {"bronc": 1}, {"bronc": 0, "dysp": 0})
    values = {c: oracle.probability(w, q) for c, w in net.worlds.items()}
    assert abs(values["comonotone"] - values["independent"]) > 0.02
    _, items = _items("asia", draws=12)
    named = {it.coupling for it in items if it.rung == 3}
    assert named == {"comonotone", "independent"}
    for it in items:
        if it.rung == 3:
            assert it.coupling is not None
            assert it.value == pytest.approx(oracle.probability(net.worlds[it.coupling],
                                                                it.query), abs=1e-12)
            assert f"[{it.coupling} coupling]" in it.estimand


def test_large_networks_name_the_comonotone_coupling_only() -> None:
    """alarm, child and insurance exceed the independent coupling's table limit, so their
    counterfactuals are asked under the comonotone coupling alone."""
    for name in ("alarm", "child", "insurance"):
        assert sorted(load_network(name, name).worlds) == ["comonotone"]


def test_identification_items_state_the_parents_as_back_door_set() -> None:
    """An identification item's adjustment set is exactly pa(X), stated in its private
    estimand (a root X needs none), and adjusting for it reproduces the do-value."""
    net, items = _items("child")
    idents = [it for it in items if it.item_type == "identification"]
    assert len(idents) == 6
    for it in idents:
        ((x, xv),) = it.query.do.items()
        ((y, yv),) = it.query.target.items()
        assert it.adjustment == net.world.var(x).parents
        assert backdoor_adjustment(net.world, x, xv, y, yv) == pytest.approx(it.value,
                                                                              abs=1e-9)
        stated = ("sum over {" + ",".join(it.adjustment) + "}" if it.adjustment
                  else f") = P({named_event(net, it.query.target)}|")
        assert stated in it.estimand


def test_backdoor_paths_on_asia_by_hand() -> None:
    """On asia: bronc <- smoke -> lung -> either -> dysp and lung <- smoke -> bronc -> dysp
    are open back-door paths; either -> xray and tub -> either have none."""
    w = load_network("asia", "w-asia").world
    assert has_backdoor_path(w, "bronc", "dysp") and has_backdoor_path(w, "lung", "dysp")
    assert not has_backdoor_path(w, "either", "xray")
    assert not has_backdoor_path(w, "tub", "either")


def test_rung2_items_prefer_confounded_pairs() -> None:
    """On alarm every rung-2 and identification pair has an open back-door path, and on
    several P(y | do x) differs from P(y | x) by more than tol."""
    net, items = _items("alarm", split="dev", draws=8)
    rung2 = [it for it in items if it.rung == 2]
    assert len(rung2) == 16
    for it in rung2:
        assert has_backdoor_path(net.world, next(iter(it.query.do)), next(iter(it.query.target)))
    assert sum(abs(it.value - (it.confusions["rung1"] or 0.0)) > 0.02 for it in rung2) >= 4


def test_dev_holds_out_three_evidence_variables_and_multi_hop_pairs() -> None:
    """dev items use 1-2 evidence variables and parent -> child pairs only; test items
    include 3-variable evidence and non-parent ancestors."""
    net, dev = _items("alarm", split="dev", draws=8)
    assert max(len(it.query.evidence) for it in dev if it.rung == 1) <= 2
    for it in dev:
        if it.rung >= 2:
            ((x, _),) = it.query.do.items()
            ((y, _),) = it.query.target.items()
            assert x in net.world.var(y).parents
    _, test = _items("alarm", split="test", draws=8)
    assert max(len(it.query.evidence) for it in test if it.rung == 1) == 3
    hops = [it for it in test if it.rung >= 2
            and next(iter(it.query.do)) not in net.world.var(next(iter(it.query.target))).parents]
    assert hops
    assert SPLIT_SHAPES["dev"] == SPLIT_SHAPES["validation"]


def test_items_are_a_function_of_the_seed() -> None:
    """The same network and seed give the same items; another seed gives others."""
    _, a = _items("child", seed=5)
    _, b = _items("child", seed=5)
    _, c = _items("child", seed=6)
    assert a == b and a != c


def test_every_bundled_network_is_named() -> None:
    """The bundled names are the data/bnlearn files."""
    assert {"alarm", "child", "insurance", "asia"} <= set(bundled_networks())


@pytest.mark.parametrize("text, why", [
    ("alarm,nosuch", "unknown network 'nosuch'"),
    ("", "no network named"),
    ("child,child", "named twice"),
    (f"child,{NETWORK_DIR / 'child.bif'}", "named twice"),
])
def test_bad_network_names_are_refused(text: str, why: str) -> None:
    """An unknown name, an empty list or a repeat (also a bundled name and a path of the
    same name, which would share a world id) is refused with the reason."""
    with pytest.raises(Refusal, match=why):
        parse_networks(text)


def test_a_missing_bif_path_is_an_input_error() -> None:
    """A .bif path that does not exist is an InputError naming it."""
    with pytest.raises(InputError, match="not found"):
        parse_networks("/nonexistent/x.bif")


@pytest.mark.parametrize("name", ["child", "asia"])
def test_rung3_values_agree_with_the_independent_monte_carlo_checker(name: str) -> None:
    """Every rung-3 item's value is within 4.5 standard errors of the twin-network Monte
    Carlo checker (``checks.mc_check``, 200,000 draws of the world under the item's named
    coupling), which shares no code with the oracle."""
    from rungbench.causal.checks.mc_check import check_queries, z_score

    net, items = _items(name, draws=8)
    rung3 = [it for it in items if it.rung == 3]
    assert len(rung3) == 8
    for coupling, world in net.worlds.items():
        mine = [it for it in rung3 if it.coupling == coupling]
        if not mine:
            continue
        estimates = check_queries(world.to_json(seed=0), [it.query.to_json() for it in mine],
                                  draws=200_000, rng=np.random.default_rng(9))
        for it, est in zip(mine, estimates, strict=True):
            assert est.n_accepted >= 1000
            assert abs(z_score(est, it.value)) <= 4.5, (it.estimand, est, it.value)
