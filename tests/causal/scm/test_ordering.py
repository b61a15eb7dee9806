"""Tests for rungbench.causal.scm.ordering: bitset heuristics equal the plain set versions,
the weighted and level-sweep orders, the MMD+ lower bound and the order reports."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from rungbench.causal.scm import ordering
from rungbench.causal.scm.random_dag import dense_world
from rungbench.errors import InputError


def _graph(scopes: Sequence[Sequence[str]]) -> dict[str, set[str]]:
    nb: dict[str, set[str]] = {}
    for sc in scopes:
        for a in sc:
            nb.setdefault(a, set()).update(b for b in sc if b != a)
    return nb


def _fill(nb: dict[str, set[str]], v: str) -> int:
    return sum(len(nb[v] - nb[a]) - 1 for a in nb[v]) // 2


def _greedy(scopes: Sequence[Sequence[str]], keep: set[str], fill: bool
            ) -> tuple[tuple[str, ...], int, int]:
    """Reference: rescore every variable at every step (quadratic), ties by name."""
    nb = _graph(scopes)
    todo = {v for v in nb if v not in keep}
    order, width, cost = [], max(len(set(s)) for s in scopes), 0
    while todo:
        best = min(todo, key=lambda v: ((_fill(nb, v), len(nb[v])) if fill else len(nb[v]), v))
        around = nb.pop(best)
        width, cost = max(width, len(around)), cost + 2 ** (len(around) + 1)
        for a in around:
            nb[a].discard(best)
            nb[a].update(b for b in around if b != a)
        todo.discard(best)
        order.append(best)
    return tuple(order), width, cost


def _scopes(seed: int, n: int) -> list[tuple[str, ...]]:
    w = dense_world(n, 2.7, np.random.default_rng(seed), f"d{seed}")
    return [(v.name, *v.parents) for v in w.variables]


def test_min_fill_equals_the_reference() -> None:
    """On dense 20-45-node moral graphs, the incremental bitset min-fill picks the same order
    (and reports the same width and entries) as rescoring every variable every step."""
    for seed, n in ((1, 20), (2, 30), (3, 45)):
        scopes = _scopes(seed, n)
        keep = {scopes[-1][0]}
        got = ordering.min_fill(scopes, keep)
        assert (got.names, got.width, got.cost) == _greedy(scopes, keep, fill=True)


def test_min_degree_equals_the_reference() -> None:
    """The bitset min-degree order, width and entries equal the plain greedy min-degree's."""
    for seed, n in ((4, 20), (5, 45)):
        scopes = _scopes(seed, n)
        keep = {scopes[-1][0]}
        got = ordering.min_degree(scopes, keep)
        assert (got.names, got.width, got.cost) == _greedy(scopes, keep, fill=False)


def _grid_edges(n: int) -> list[tuple[str, str]]:
    """The plain n x n grid graph (4 neighbours), as two-variable scopes."""
    out = []
    for r in range(n):
        for c in range(n):
            if r + 1 < n:
                out.append((f"g{r:02d}_{c:02d}", f"g{r + 1:02d}_{c:02d}"))
            if c + 1 < n:
                out.append((f"g{r:02d}_{c:02d}", f"g{r:02d}_{c + 1:02d}"))
    return out


def test_a_k_clique_has_lower_bound_k_minus_1() -> None:
    """The MMD+ bound of a k-clique (as pairwise scopes or one scope) is k - 1 (its
    treewidth)."""
    for k in range(2, 9):
        names = [f"c{i}" for i in range(k)]
        pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
        assert ordering.treewidth_lower_bound(pairs) == k - 1
        assert ordering.treewidth_lower_bound([tuple(names)]) == k - 1


def test_a_tree_has_lower_bound_1() -> None:
    """A random tree (each node joined to an earlier one) and a path have MMD+ bound 1."""
    rng = np.random.default_rng(3)
    tree = [(f"t{i:02d}", f"t{int(rng.integers(i)):02d}") for i in range(1, 40)]
    path = [(f"p{i:02d}", f"p{i + 1:02d}") for i in range(20)]
    assert ordering.treewidth_lower_bound(tree) == 1
    assert ordering.treewidth_lower_bound(path) == 1


def test_a_grid_lower_bound_is_at_most_n_and_our_width() -> None:
    """On the n x n grid (treewidth n), the bound is <= n <= the width of every heuristic's
    order, and the level sweep reaches width n exactly."""
    for n in (3, 5, 8, 12):
        scopes = _grid_edges(n)
        bound = ordering.treewidth_lower_bound(scopes)
        assert 2 <= bound <= n
        for heuristic in ordering.HEURISTICS.values():
            got = heuristic(scopes, [])
            assert got.lower_bound == bound
            assert bound <= n <= got.width
        assert ordering.level_sweep(scopes, []).width == n


def test_the_lower_bound_never_exceeds_a_width() -> None:
    """On dense worlds' moral graphs with a kept target, every order's reported lower bound
    is at most its width, and at least the widest input scope."""
    for seed, n in ((6, 20), (7, 35), (8, 50)):
        scopes = _scopes(seed, n)
        for heuristic in ordering.HEURISTICS.values():
            got = heuristic(scopes, {scopes[-1][0]})
            assert got.lower_bound is not None
            assert max(len(set(s)) for s in scopes) <= got.lower_bound <= got.width


def test_weights_change_the_weighted_min_fill_choice() -> None:
    """Eliminating ``a`` adds one fill edge between two 64-state variables (weight 4,096),
    eliminating ``b`` three between binary ones (weight 12): min-fill takes ``a`` first,
    weighted min-fill ``b``; both report tables as products of cards."""
    scopes = [("a", "h1"), ("a", "h2"), ("b", "l1"), ("b", "l2"), ("b", "l3")]
    keep = ["h1", "h2", "l1", "l2", "l3"]
    cards = {"h1": 64, "h2": 64}
    plain = ordering.min_fill(scopes, keep, cards)
    weighted = ordering.weighted_min_fill(scopes, keep, cards)
    assert plain.names == ("a", "b")
    assert weighted.names == ("b", "a")
    for got in (plain, weighted):
        assert (got.largest, got.largest_scope, got.width) == (64 * 64, ("h1", "h2"), 3)
        assert got.cost == 2 * 64 * 64 + 2 * 8  # each variable times its neighbours' states
    binary = ordering.weighted_min_fill(scopes, keep)
    assert binary.names == ordering.min_fill(scopes, keep).names == ("a", "b")


def test_weighted_min_fill_breaks_ties_by_the_product_then_the_name() -> None:
    """Two variables with no fill: the one whose step forms the smaller product goes first
    (``z`` next to a 3-state variable before ``y`` next to a 5-state one), and with equal
    products the lower name goes first."""
    scopes = [("y", "five"), ("z", "three")]
    keep = ["five", "three"]
    assert ordering.weighted_min_fill(scopes, keep, {"five": 5, "three": 3}).names == ("z", "y")
    assert ordering.weighted_min_fill(scopes, keep, {"five": 4, "three": 4}).names == ("y", "z")


def test_with_one_card_weighted_min_fill_is_min_fill() -> None:
    """With every variable binary, or every one of 3 states, weighted min-fill's order is
    min-fill's (the weights scale every score alike)."""
    for seed, n in ((9, 25), (10, 40)):
        scopes = _scopes(seed, n)
        keep = {scopes[-1][0]}
        for cards in (None, {a: 3 for s in scopes for a in s}):
            assert (ordering.weighted_min_fill(scopes, keep, cards).names
                    == ordering.min_fill(scopes, keep, cards).names)


def test_the_level_sweep_follows_a_grid_where_greedy_fill_does_not() -> None:
    """On the moral graph of an 18x18 grid world (target: the far corner), min-degree and
    min-fill build tables over 28+ variables; the level sweep stays at 19 or fewer."""
    from rungbench.causal.scm.random_dag import grid_world

    w = grid_world(18, 18, np.random.default_rng(0), "g18")
    scopes = [(v.name, *v.parents) for v in w.variables]
    keep = ["R17C17"]
    assert ordering.min_degree(scopes, keep).width >= 28
    assert ordering.min_fill(scopes, keep).width >= 28
    sweep = ordering.level_sweep(scopes, keep)
    assert sweep.width <= 19
    assert sweep.largest == 2**sweep.width


def test_evaluate_reports_a_given_order_as_its_heuristic_did() -> None:
    """``evaluate`` on a heuristic's own order reports the same width, largest table, scope
    and cost (cards included); an order missing a variable is refused naming the field."""
    scopes = _scopes(11, 30)
    keep = {scopes[-1][0]}
    cards = {a: 2 + (i % 3) for i, a in enumerate(sorted({a for s in scopes for a in s}))}
    got = ordering.weighted_min_fill(scopes, keep, cards)
    again = ordering.evaluate(scopes, keep, got.names, cards)
    assert (again.width, again.largest, again.largest_scope, again.cost) == (
        got.width, got.largest, got.largest_scope, got.cost)
    assert again.heuristic == "given"
    with pytest.raises(InputError) as caught:
        ordering.evaluate(scopes, keep, got.names[1:])
    assert caught.value.field == "names"


def test_best_order_keeps_the_smallest_largest_table_then_cost() -> None:
    """``best_order`` returns the candidate with the fewest entries in its largest table (ties:
    fewer in all): on the 18x18 grid the level sweep, on a dense world an order no worse than
    min-fill's."""
    from rungbench.causal.scm.random_dag import grid_world

    w = grid_world(18, 18, np.random.default_rng(0), "g18")
    grid = [(v.name, *v.parents) for v in w.variables]
    names = tuple(ordering.HEURISTICS)
    assert ordering.best_order(grid, ["R17C17"], heuristics=names).heuristic == "level_sweep"
    dense = _scopes(12, 45)
    keep = {dense[-1][0]}
    best = ordering.best_order(dense, keep, heuristics=names)
    every = [h(dense, keep) for h in ordering.HEURISTICS.values()]
    assert (best.largest, best.cost) == min((o.largest, o.cost) for o in every)


def test_bad_cards_and_unknown_heuristics_are_refused() -> None:
    """A card below 1 is refused naming ``cards.<variable>``; an unknown heuristic naming
    ``heuristics``."""
    with pytest.raises(InputError) as caught:
        ordering.min_degree([("a", "b")], [], {"a": 0})
    assert caught.value.field == "cards.a"
    with pytest.raises(InputError) as caught:
        ordering.best_order([("a", "b")], [], heuristics=("min_width",))
    assert caught.value.field == "heuristics"
