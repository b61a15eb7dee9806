"""Speed of the exact causal oracle vs pgmpy, and wall time of `causal validate`.

Prints, side by side in one run, milliseconds per query of our oracle and of
pgmpy 1.x — VariableElimination for rung 1, CausalInference.query(do=...) for
rung 2, VariableElimination on a twin network (U_V as a node over the response
index, shared by the factual and counterfactual copies) for the probability of
necessity — on random binary worlds of 7, 20 and 30 nodes, with the ratio, the
reference figures measured for pgmpy on this machine kind and our targets
(issue 3). Usage: ``.venv/bin/python benchmarks/causal_oracle.py [--worlds N]``.

A second table (issue 21, item 4) sets pyAgrum's LazyPropagation (only the queried
variable as target) beside pgmpy's VariableElimination on sparse worlds of 7-300 nodes and
dense worlds (in-degree ~2.7, parents drawn among all earlier nodes) of 15-80 nodes, for
rung 1 (evidence on up to six leaves; ``dense*`` rows: on every leaf, treewidth up to ~17)
and rung 2 (pyAgrum on the mutilated network). All
three answers are checked to agree to 1e-9 before anything is timed. ``dense^`` rows reach
treewidth 17, 18 and 20 (dense 60-70-node worlds, evidence on every leaf, drawn until the
query's treewidth is the target): pgmpy takes minutes per query there, so it is skipped
(``-``) and our answers are checked against pyAgrum's only (1e-9). A last line runs rung 3
(PN with every leaf observed) on the twin network of the first treewidth-20 world, cold:
its answer, checked against pyAgrum's LazyPropagation on the same twin network, or a
``world_too_large`` refusal naming its estimate; then the same query under a 16 MiB budget,
refused with its estimate before any table is built (never a ``MemoryError``). Our figures
and pyAgrum's are timed in alternating batches (best of 7 each), so the load of a shared
machine falls on both sides of a ratio. ``cold`` is the first
query after ``elimination.clear_caches()`` (network, plan and order rebuilt; the World is
validated once, as pyAgrum's BayesNet is built once), ``agCold`` a new LazyPropagation on
the built BayesNet; pyAgrum's warm rung 2 re-reads a cached posterior (the evidence did not
change, so ``makeInference`` does no work), and our warm query re-reads the answer kept with
its compiled plan; ``rerun`` runs the compiled contractions again
(``elimination.clear_answers()`` first), the figure to set beside pyAgrum's warm rung 1.
``tw`` is the treewidth (networkx min-fill) of the moralized graph of the query's ancestral
set; targets: warm <= 0.5x pyAgrum up to treewidth 20, cold <= 1.0x. ``--pyagrum-only`` runs
only it; ``--wide-only`` only its ``dense^`` rows and the rung-3 line.

``--networks`` runs only the bnlearn part (``benchmarks/causal_networks.py``): per bundled
network (binary and categorical), nodes, largest state count, median ms per query of ours
and of pyAgrum, cold and warm, over ``--network-queries`` random queries, and the largest
|ours - pyAgrum|.

A grid table (``--grids-only``; ``--quick``: grids 10, 14 and 18, 20 queries each) sets our
oracle beside pyAgrum on n x n grid worlds (``random_dag.grid_world``, n = 10..20 step 2):
per grid, the width of the order elimination chooses for the far-corner query over the whole
grid, the best of the four heuristics of ``causal.scm.ordering``, the MMD+ lower bound,
min-fill's width and pyAgrum's junction-tree max clique; then the median cold and warm ms of
both over ``--grid-queries`` random queries (1-5 observed cells, random targets, every other
one with a do()), their ratios and the largest |difference| of the answers. pyAgrum runs a
query only when its junction tree of the query's ancestral set has no clique over
``--ag-max-clique`` variables, within :data:`AG_MAX_MEMORY_MB`; the row says how many it ran.
"""

from __future__ import annotations

import argparse
import itertools
import logging
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from rungbench.causal.checks.validate import run_validation
from rungbench.causal.scm import elimination, oracle, ordering
from rungbench.causal.scm.enumeration import MAX_CONFIGURATIONS, Enumerator
from rungbench.causal.scm.random_dag import DagSpec, dense_world, grid_world, random_world
from rungbench.causal.scm.world import Query, World
from rungbench.errors import InputError, Refusal

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.inference import CausalInference, VariableElimination
    from pgmpy.models import DiscreteBayesianNetwork

import networkx as nx
import pyagrum as gum
from networkx.algorithms.approximation import treewidth_min_fill_in

logging.getLogger("pgmpy").setLevel(logging.ERROR)
warnings.simplefilter("ignore")

SIZES = {7: (6, 1, 0.4), 20: (18, 2, 0.15), 30: (27, 3, 0.1)}
"""Total nodes -> (observed, latent confounders, edge density)."""

REFERENCE_PGMPY = {7: (0.30, 1.54, 0.90), 30: (0.64, 4.43, 1.57)}
"""pgmpy ms/query measured on this machine kind (issue 3): rung 1, rung 2, PN."""

TARGETS = {7: (0.05, 0.1, 0.3), 20: (0.5, 0.5, 1.0), 30: (0.5, 0.5, 1.0)}
"""Our targets in ms/query (issue 3); 20 nodes takes the 30-node target."""


@dataclass(frozen=True)
class Case:
    """One query triple on one world."""

    world: World
    """The world."""
    x: str
    """Treatment (an ancestor of y)."""
    y: str
    """Outcome."""
    z: str
    """A third observed variable used as rung-1 evidence."""
    xv: int
    """Value of x in the rung-1 evidence and the do()."""
    zv: int
    """Value of z in the rung-1 evidence."""


def _world(size: int, rng: np.random.Generator, k: int) -> World:
    n_obs, n_lat, density = SIZES[size]
    return random_world(DagSpec(n_obs, density, n_lat / n_obs), rng, f"b{size}-{k}")


def _case(w: World, rng: np.random.Generator) -> Case | None:
    pairs = [(x, y) for x, y in itertools.permutations(w.observed_names, 2)
             if y in w.descendants([x])]
    if not pairs:
        return None
    x, y = pairs[int(rng.integers(len(pairs)))]
    z = str(rng.choice([n for n in w.observed_names if n not in (x, y)]))
    return Case(w, x, y, z, int(rng.integers(0, 2)), int(rng.integers(0, 2)))


def to_pgmpy(w: World) -> DiscreteBayesianNetwork:
    """The world's Bayesian network with U_V summed out."""
    model = DiscreteBayesianNetwork()
    model.add_nodes_from(w.names)
    model.add_edges_from(w.edges())
    for v in w.variables:
        p0, p1 = v.cpd()
        model.add_cpds(TabularCPD(v.name, 2, [list(p0), list(p1)],
                                  evidence=list(reversed(v.parents)) or None,
                                  evidence_card=[2] * len(v.parents) or None))
    return model


def twin_pgmpy(w: World, x: str, x_cf: int) -> DiscreteBayesianNetwork:
    """Twin network: U_V nodes over response indices; V and V* deterministic given U_V."""
    model = DiscreteBayesianNetwork()
    reached = w.descendants([x])
    star = {v.name: (f"{v.name}*" if v.name in reached else v.name) for v in w.variables}
    for v in w.variables:
        u = f"U_{v.name}"
        probs = [r.p for r in v.responses]
        model.add_node(u)
        model.add_cpds(TabularCPD(u, len(probs), [[p] for p in probs]))
        copies = [(v.name, list(v.parents))]
        if v.name in reached:
            copies.append((star[v.name], [star[p] for p in v.parents]))
        for node, parents in copies:
            model.add_node(node)
            model.add_edges_from([(p, node) for p in parents] + [(u, node)])
            if node == star[x] and node != x:
                model.remove_edges_from([(p, node) for p in parents] + [(u, node)])
                model.add_cpds(TabularCPD(node, 2, [[1 - x_cf], [x_cf]]))
                continue
            # columns: evidence (U, reversed parents) with the last varying fastest.
            k = len(parents)
            cols = [(r, row) for r in range(len(probs)) for row in range(2**k)]
            ones = [float(v.responses[r].table[row]) for r, row in cols]
            model.add_cpds(TabularCPD(node, 2, [[1 - o for o in ones], ones],
                                      evidence=[u, *reversed(parents)],
                                      evidence_card=[len(probs)] + [2] * k))
    return model


def _ms(fn: Callable[[], object], repeat: int, batches: int = 5) -> float:
    """Best-of-``batches`` mean ms per call (robust to other load on a shared machine)."""
    fn()  # warm-up (compiles caches on both sides)
    best = float("inf")
    for _ in range(batches):
        start = time.perf_counter()
        for _ in range(repeat):
            fn()
        best = min(best, (time.perf_counter() - start) / repeat * 1000.0)
    return best


INTERLEAVED_BATCHES = 7
"""Batches of :func:`_ms_interleaved` per function."""


def _ms_interleaved(fns: Sequence[Callable[[], object]], repeat: int) -> list[float]:
    """Best-of-:data:`INTERLEAVED_BATCHES` mean ms per call of each function, their batches
    alternating (ours, then pyAgrum's, then ours...), so that load from other processes on a
    shared machine falls on both sides of a ratio alike."""
    for fn in fns:
        fn()  # warm-up (compiles caches on both sides)
    best = [float("inf")] * len(fns)
    for _ in range(INTERLEAVED_BATCHES):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            for _ in range(repeat):
                fn()
            best[i] = min(best[i], (time.perf_counter() - start) / repeat * 1000.0)
    return best


def time_case(case: Case, repeat: int) -> dict[str, float] | None:
    """ms/query of both implementations on one case; None when its evidence is impossible."""
    w, x, y, z, xv, zv = case.world, case.x, case.y, case.z, case.xv, case.zv
    q1 = Query(1, {y: 1}, {}, {x: xv, z: zv})
    q2 = Query(2, {y: 1}, {x: xv}, {})
    try:
        oracle.probability(w, q1)
        pn_true = oracle.pn(w, x, y)
    except InputError:  # impossible evidence for this draw
        return None
    out = {"compile": _ms(lambda: Enumerator(w), 3) if w.n_configurations() <= MAX_CONFIGURATIONS
           else 0.0}
    def fresh() -> World:  # a new object: no compiled engine or factor cache to reuse
        return World(w.world_id, w.variables)

    out["cold1"] = _ms(lambda: oracle.probability(fresh(), q1), max(1, repeat // 4))
    out["cold2"] = _ms(lambda: oracle.probability(fresh(), q2), max(1, repeat // 4))
    out["cold_pn"] = _ms(lambda: oracle.pn(fresh(), x, y), max(1, repeat // 4))
    out["ours1"] = _ms(lambda: oracle.probability(w, q1), repeat)
    out["ours2"] = _ms(lambda: oracle.probability(w, q2), repeat)
    out["ours_pn"] = _ms(lambda: oracle.pn(w, x, y), repeat)
    model = to_pgmpy(w)
    ve = VariableElimination(model)
    ci = CausalInference(model)
    out["pg1"] = _ms(lambda: ve.query([y], evidence={x: xv, z: zv}, show_progress=False),
                     repeat)
    out["pg2"] = _ms(lambda: ci.query([y], do={x: xv}, show_progress=False), repeat)
    twin = VariableElimination(twin_pgmpy(w, x, 0))
    ystar = f"{y}*"
    got = twin.query([ystar], evidence={x: 1, y: 1}, show_progress=False).values[0]
    if abs(got - pn_true) > 1e-9:
        raise AssertionError(f"twin-network PN disagrees: pgmpy {got}, ours {pn_true}")
    out["pg_pn"] = _ms(lambda: twin.query([ystar], evidence={x: 1, y: 1}, show_progress=False),
                       repeat)
    return out


def measure(size: int, n_worlds: int, repeat: int, seed: int) -> dict[str, float]:
    """Mean (over worlds) of best-of-5 ms/query for both implementations."""
    rng = np.random.default_rng(seed)
    rows: list[dict[str, float]] = []
    k = 0
    while len(rows) < n_worlds:
        w = _world(size, rng, k)
        k += 1
        case = _case(w, rng)
        timed = time_case(case, repeat) if case is not None else None
        if timed is not None:
            rows.append(timed)
    return {key: float(np.mean([r[key] for r in rows])) for key in rows[0]}


SPARSE = (7, 20, 30, 60, 100, 200, 300)
"""Sparse world sizes of the pyAgrum table (observed nodes; density 2/n, 5% latents)."""

DENSE = (15, 30, 45, 60, 80)
"""Dense world sizes of the pyAgrum table (in-degree ~2.7)."""


def to_pyagrum(w: World, do: dict[str, int] | None = None) -> object:
    """The world's network with U_V summed out; ``do`` cuts incoming arcs and fixes values."""
    do = do or {}
    bn = gum.BayesNet(w.world_id)
    for v in w.variables:
        bn.add(gum.LabelizedVariable(v.name, v.name, 2))
    for v in w.variables:
        if v.name not in do:
            for p in v.parents:
                bn.addArc(p, v.name)
    for v in w.variables:
        cpt = bn.cpt(v.name)
        if v.name in do:
            cpt.fillWith([1.0 - do[v.name], float(do[v.name])])
            continue
        p1 = v.p_one()
        for row in range(2 ** len(v.parents)):
            cpt[{p: (row >> i) & 1 for i, p in enumerate(v.parents)}] = [1.0 - float(p1[row]),
                                                                          float(p1[row])]
    return bn


def _lazy(ie: object, y: str, evidence: dict[str, int]) -> float:
    ie.eraseAllEvidence()  # type: ignore[attr-defined]
    if evidence:
        ie.setEvidence(evidence)  # type: ignore[attr-defined]
    ie.makeInference()  # type: ignore[attr-defined]
    return float(ie.posterior(y)[{y: 1}])  # type: ignore[attr-defined]


def _new_lazy(bn: object, y: str) -> object:
    ie = gum.LazyPropagation(bn)
    ie.addTarget(y)
    return ie


def treewidth(w: World, nodes: list[str]) -> int:
    """Min-fill treewidth of the moralized graph of the ancestral set of ``nodes``.

    The graph is built over integer labels in name order, nodes and edges inserted sorted, so
    networkx's tie-breaking (set and dict order) does not depend on the string hash seed: the
    figure, and the ``dense^`` worlds chosen by it, are the same in every run."""
    keep = sorted(w.ancestors(nodes) | set(nodes))
    label = {n: i for i, n in enumerate(keep)}
    edges: set[tuple[int, int]] = set()
    for v in w.variables:
        if v.name in label:
            family = sorted(label[n] for n in (v.name, *v.parents))
            edges.update((a, b) for i, a in enumerate(family) for b in family[i + 1:])
    g = nx.Graph()
    g.add_nodes_from(range(len(keep)))
    g.add_edges_from(sorted(edges))
    return int(treewidth_min_fill_in(g)[0])


HARD = (45, 60)
"""Dense sizes queried with evidence on EVERY leaf (``dense*``: treewidth ~12-17)."""

WIDE = ((17, 60), (18, 65), (20, 70))
"""(treewidth, nodes) of the ``dense^`` rows: dense worlds of that many nodes, evidence on
every leaf, drawn until the query's treewidth is exactly the target (60-70 nodes give
treewidth 15-20). pgmpy takes minutes per query there: it is skipped, our answers are
checked against pyAgrum's only."""

WIDE_DRAWS = 40
"""Worlds drawn at most per ``dense^`` row before giving up on its treewidth."""


def wide_worlds(width: int, n: int, count: int, rng: np.random.Generator) -> list[World]:
    """Up to ``count`` dense ``n``-node worlds whose every-leaf query has treewidth ``width``."""
    out: list[World] = []
    for k in range(WIDE_DRAWS):
        w = dense_world(n, 2.7, rng, f"w{n}-{k}")
        y, ev, _ = hard_query(w, None)
        if treewidth(w, [y, *ev]) == width:
            out.append(w)
            if len(out) == count:
                break
    return out


def hard_query(w: World, leaves_max: int | None) -> tuple[str, dict[str, int], str]:
    """(outcome y: last in causal order, evidence on up to ``leaves_max`` other leaves
    (alternating 0/1; None: every leaf), treatment x: the middle ancestor of y)."""
    names = [v.name for v in w.variables if v.observed]
    has_child = {p for v in w.variables for p in v.parents}
    y = names[-1]
    leaves = [n for n in names if n not in has_child and n != y][:leaves_max]
    ev = {n: i % 2 for i, n in enumerate(leaves)}
    ancestors = [n for n in names if n in w.ancestors([y]) and n != y]
    x = ancestors[len(ancestors) // 2] if ancestors else next(n for n in names if n != y)
    return y, ev, x


def pyagrum_case(w: World, repeat: int, *, leaves_max: int | None = 6,
                 pgmpy: bool = True) -> dict[str, float]:
    """ms/query (ours warm and cold, pyAgrum warm and cold, pgmpy) of rung 1 and rung 2.

    ``pgmpy=False``: pgmpy is neither checked nor timed (its figures are NaN); our answers
    are still checked against pyAgrum's to 1e-9."""
    y, ev, x = hard_query(w, leaves_max)
    q1, q2 = Query(1, {y: 1}, {}, ev), Query(2, {y: 1}, {x: 1}, {})
    bn, cut = to_pyagrum(w), to_pyagrum(w, {x: 1})
    ie1, ie2 = _new_lazy(bn, y), _new_lazy(cut, y)
    ours1 = oracle.probability(w, q1, method="elimination")
    ours2 = oracle.probability(w, q2, method="elimination")
    checks = [(ours1, _lazy(ie1, y, ev)), (ours2, _lazy(ie2, y, {}))]
    pg: dict[str, float] = {"pg1": float("nan"), "pg2": float("nan")}
    if pgmpy:
        model = to_pgmpy(w)
        ve, ci = VariableElimination(model), CausalInference(model)
        checks += [(ours1, ve.query([y], evidence=ev, show_progress=False).values[1]),
                   (ours2, ci.query([y], do={x: 1}, show_progress=False).values[1])]
    for a, b in checks:
        if abs(a - float(b)) > 1e-9:
            raise AssertionError(f"{w.world_id}: answers disagree ({a} vs {b})")

    def cold(q: Query) -> float:  # empty caches; the World was validated once, as the BN
        elimination.clear_caches()
        return oracle.probability(w, q, method="elimination")

    def rerun(q: Query) -> float:  # the compiled plan runs again; only the answer forgotten
        elimination.clear_answers()
        return oracle.probability(w, q, method="elimination")

    few = max(1, repeat // 4)
    if pgmpy:
        pg["pg1"] = _ms(lambda: ve.query([y], evidence=ev, show_progress=False), few)
        pg["pg2"] = _ms(lambda: ci.query([y], do={x: 1}, show_progress=False), few)
    out = {"tw": float(treewidth(w, [y, *ev]))}
    for rung, q, ie, e, net in (("1", q1, ie1, ev, bn), ("2", q2, ie2, {}, cut)):
        out[f"ours{rung}"], out[f"rerun{rung}"], out[f"ag{rung}"] = _ms_interleaved(
            [lambda q=q: oracle.probability(w, q, method="elimination"),
             lambda q=q: rerun(q), lambda ie=ie, e=e: _lazy(ie, y, e)], repeat)
        out[f"cold{rung}"], out[f"agcold{rung}"] = _ms_interleaved(
            [lambda q=q: cold(q), lambda net=net, e=e: _lazy(_new_lazy(net, y), y, e)], few)
    return {
        **out,
        **pg,
    }


def _table_rows(kind: str, n: int, n_worlds: int, repeat: int, seed: int
                ) -> list[dict[str, float]]:
    """Timed cases of one row of the pyAgrum table (``dense^``: n = treewidth target)."""
    rng = np.random.default_rng(seed + n + (0 if kind == "sparse" else 1000))
    if kind == "dense^":
        nodes = dict(WIDE)[n]
        return [{**pyagrum_case(w, max(2, repeat // 4), leaves_max=None, pgmpy=False),
                 "nodes": float(nodes)} for w in wide_worlds(n, nodes, n_worlds, rng)]
    rows = []
    for k in range(n_worlds):
        w = (random_world(DagSpec(n, min(1.0, 2.0 / n), 0.05), rng, f"s{n}-{k}")
             if kind == "sparse" else dense_world(n, 2.7, rng, f"d{n}-{k}"))
        reps = repeat if n <= 100 and kind != "dense*" else max(2, repeat // 4)
        rows.append({**pyagrum_case(w, reps, leaves_max=None if kind == "dense*" else 6),
                     "nodes": float(n)})
    return rows


def _num(a: float) -> str:
    return "-" if np.isnan(a) else f"{a:.3f}"


def _ratio(a: float, b: float, digits: int) -> str:
    return "-" if np.isnan(a) or np.isnan(b) else f"{a / b:.{digits}f}x"


def pyagrum_table(n_worlds: int, repeat: int, seed: int, *, wide_only: bool = False) -> None:
    """Print the pyAgrum / pgmpy table (module docstring); ``wide_only``: the ``dense^`` rows
    and the twin-network row only."""
    head = (f"{'kind':<6} {'nodes':>5} {'tw':>4} {'rung':>4} {'ours':>9} {'rerun':>9} "
            f"{'cold':>9} {'pyAgrum':>9} {'agCold':>9} {'pgmpy':>9} {'warm/ag':>8} "
            f"{'rerun/ag':>8} {'cold/ag':>8} {'pg/ours':>8}")
    print("\n" + head)
    print("-" * len(head))
    plan = ([] if wide_only else [("sparse", n) for n in SPARSE] + [("dense", n) for n in DENSE]
            + [("dense*", n) for n in HARD]) + [("dense^", t) for t, _ in WIDE]
    for kind, n in plan:
        rows = _table_rows(kind, n, n_worlds, repeat, seed)
        if not rows:
            print(f"{kind:<6} no world of treewidth {n} in {WIDE_DRAWS} draws")
            continue
        m = {key: float(np.mean([r[key] for r in rows])) for key in rows[0]}
        for rung in ("1", "2"):
            o, r, c, a, ac, pg = (m[f"ours{rung}"], m[f"rerun{rung}"], m[f"cold{rung}"],
                                  m[f"ag{rung}"], m[f"agcold{rung}"], m[f"pg{rung}"])
            print(f"{kind:<6} {m['nodes']:>5.0f} {m['tw']:>4.0f} {rung:>4} {o:>9.3f} {r:>9.3f} "
                  f"{c:>9.3f} {a:>9.3f} {ac:>9.3f} {_num(pg):>9} {_ratio(o, a, 2):>8} "
                  f"{_ratio(r, a, 2):>8} {_ratio(c, ac, 2):>8} {_ratio(pg, o, 1):>8}",
                  flush=True)
    print("targets: warm/ag <= 0.50x (treewidth <= 20), cold/ag <= 1.00x; rerun = the compiled "
          "contractions run again\n(answer forgotten by elimination.clear_answers(); pyAgrum's "
          "warm rung 1 recomputes, its warm rung 2 re-reads); dense^: pgmpy skipped (minutes "
          "per query), agreement checked against pyAgrum only")
    twin_row(seed)


def twin_pyagrum(w: World, x: str, x_cf: int) -> object:
    """Twin network for pyAgrum, as :func:`twin_pgmpy`: ``U_V`` over V's response index,
    V and its counterfactual copy ``V_cf`` deterministic given U_V and their parents."""
    reached = w.descendants([x])
    star = {v.name: (f"{v.name}_cf" if v.name in reached else v.name) for v in w.variables}
    bn = gum.BayesNet(f"{w.world_id}-twin")
    for v in w.variables:
        bn.add(gum.LabelizedVariable(f"U_{v.name}", f"U_{v.name}", len(v.responses)))
        for node in dict.fromkeys((v.name, star[v.name])):
            bn.add(gum.LabelizedVariable(node, node, 2))
    for v in w.variables:
        bn.addArc(f"U_{v.name}", v.name)
        for p in v.parents:
            bn.addArc(p, v.name)
        if star[v.name] != v.name and v.name != x:
            bn.addArc(f"U_{v.name}", star[v.name])
            for p in v.parents:
                bn.addArc(star[p], star[v.name])
    for v in w.variables:
        bn.cpt(f"U_{v.name}").fillWith([r.p for r in v.responses])
        copies = [(v.name, list(v.parents))]
        if star[v.name] != v.name:
            if v.name == x:
                bn.cpt(star[x]).fillWith([1.0 - x_cf, float(x_cf)])
            else:
                copies.append((star[v.name], [star[p] for p in v.parents]))
        for node, parents in copies:
            cpt = bn.cpt(node)
            for r, resp in enumerate(v.responses):
                for row in range(2 ** len(parents)):
                    out = int(resp.table[row])
                    cpt[{f"U_{v.name}": r, **{p: (row >> i) & 1 for i, p in
                                              enumerate(parents)}}] = [1.0 - out, float(out)]
    return bn


TWIN_DEMO_BUDGET = 16 * 2**20
"""Budget (bytes) of the twin row's second query: past it, the refusal names its estimate."""


def twin_row(seed: int) -> None:
    """Rung 3 on the first treewidth-20 ``dense^`` world: PN = P(Y_{x=0} = 1 | x = 1, y = 1,
    every leaf) on the twin network, cold; an answer (checked against pyAgrum's
    LazyPropagation on the twin network to 1e-9 and timed beside it) or a
    ``world_too_large`` refusal naming its estimate. Then the same query under a budget of
    :data:`TWIN_DEMO_BUDGET`, refused before any table is built."""
    width, nodes = WIDE[-1]
    worlds = wide_worlds(width, nodes, 1, np.random.default_rng(seed + width + 1000))
    if not worlds:
        print(f"rung 3: no world of treewidth {width} in {WIDE_DRAWS} draws")
        return
    w = worlds[0]
    y, ev, x = hard_query(w, None)
    q = Query(3, {y: 1}, {x: 0}, {**ev, x: 1, y: 1})
    elimination.clear_caches()
    start = time.perf_counter()
    try:
        ours: float | None = oracle.probability(w, q, method="elimination")
    except Refusal as refused:
        ours = None
        print(f"rung 3 twin, {nodes} nodes, tw {width}: {_refusal(refused)}")
    cold = (time.perf_counter() - start) * 1000.0
    if ours is not None:
        twin = twin_pyagrum(w, x, 0)
        start = time.perf_counter()
        ag = _lazy(_new_lazy(twin, f"{y}_cf"), f"{y}_cf", {**ev, x: 1, y: 1})
        ag_ms = (time.perf_counter() - start) * 1000.0
        if abs(ours - ag) > 1e-9:
            raise AssertionError(f"twin-network PN disagrees: pyAgrum {ag}, ours {ours}")
        print(f"rung 3 twin (PN, every leaf observed), {nodes} nodes, tw {width}: answer "
              f"{ours:.12f} (pyAgrum agrees to 1e-9), cold {cold:.1f} ms, pyAgrum cold "
              f"{ag_ms:.1f} ms ({cold / ag_ms:.2f}x)")
    try:
        elimination.clear_caches()
        oracle.probability(w, q, method="elimination", memory_budget=TWIN_DEMO_BUDGET)
        print(f"  under a {TWIN_DEMO_BUDGET >> 20} MiB budget: answered (largest table fits)")
    except Refusal as refused:
        print(f"  under a {TWIN_DEMO_BUDGET >> 20} MiB budget: {_refusal(refused)}")


GRIDS = (10, 12, 14, 16, 18, 20)
"""Grid sizes (n x n cells) of the grid table."""

GRID_QUERIES = 200
"""Random queries per grid (``--grid-queries``)."""

AG_MAX_CLIQUE = 26
"""pyAgrum runs a query only when its own junction tree of the query's ancestral set has no
clique over more variables (``--ag-max-clique``): its triangulation of a full 18x18 grid has
a 30-variable clique and took 11-15 s and 6.6 GB per query (measured), of a 20x20 grid 34."""


@dataclass(frozen=True)
class GridQuery:
    """One random query of the grid table."""

    target: str
    """The cell whose P(= 1) is asked."""
    do: dict[str, int]
    """The intervention ({} for rung 1)."""
    evidence: dict[str, int]
    """Observed cells (1-5)."""


def grid_queries(w: World, count: int, rng: np.random.Generator) -> list[GridQuery]:
    """``count`` random queries: a random target, 1-5 observed cells, every other one with
    do() on a random further cell (rung 2); impossible evidence is redrawn."""
    cells = list(w.observed_names)
    out: list[GridQuery] = []
    while len(out) < count:
        picked = [str(c) for c in rng.choice(cells, int(rng.integers(1, 6)) + 2, replace=False)]
        target, cut, observed = picked[0], picked[1], picked[2:]
        q = GridQuery(target, {cut: int(rng.integers(0, 2))} if len(out) % 2 else {},
                      {c: int(rng.integers(0, 2)) for c in observed})
        try:
            oracle.probability(w, _grid_query(q), method="elimination")
        except InputError:
            continue  # impossible evidence in this draw
        out.append(q)
    return out


def _grid_query(q: GridQuery) -> Query:
    return Query(2 if q.do else 1, {q.target: 1}, q.do, q.evidence)


def _ag_clique(w: World, q: GridQuery) -> int:
    """Variables of the largest clique of pyAgrum's junction tree of the query's ancestral
    set (the do() cell's incoming arcs cut), as its LazyPropagation would triangulate it."""
    keep = w.ancestors([q.target, *q.evidence]) if not q.do else _cut_ancestors(w, q)
    dag = gum.DAG()
    ids = {name: dag.addNode() for name in sorted(keep)}
    for v in w.variables:
        if v.name in keep and v.name not in q.do:
            for p in v.parents:
                dag.addArc(ids[p], ids[v.name])
    tree = gum.JunctionTreeGenerator().junctionTree(dag)
    return max((len(tree.clique(c)) for c in tree.nodes()), default=0)


def _cut_ancestors(w: World, q: GridQuery) -> set[str]:
    out = {q.target, *q.evidence}
    for v in reversed(w.variables):
        if v.name in out and v.name not in q.do:
            out.update(v.parents)
    return out


AG_MAX_MEMORY_MB = 2048
"""Memory pyAgrum may use per query in the grid table (``setMaxMemory``): past it, it raises
and the query counts as failed on its side (on a 20x20 grid it ran out of memory without it,
on a query whose ancestral junction tree was under 26 variables wide)."""


def _ag_engine(bn: object) -> object:
    ie = gum.LazyPropagation(bn)
    ie.setNumberOfThreads(1)  # type: ignore[attr-defined]  # one core, as ours
    ie.setMaxMemory(AG_MAX_MEMORY_MB)  # type: ignore[attr-defined]
    return ie


def _ag_answer(ie: object, q: GridQuery) -> float:
    ie.eraseAllTargets()  # type: ignore[attr-defined]
    ie.addTarget(q.target)  # type: ignore[attr-defined]
    return _lazy(ie, q.target, dict(q.evidence))


def _timed(fn: Callable[[], float]) -> tuple[float, float]:
    """(value, ms) of one call."""
    start = time.perf_counter()
    value = fn()
    return value, (time.perf_counter() - start) * 1000.0


def grid_row(n: int, count: int, seed: int, ag_max_clique: int) -> dict[str, float]:
    """One row of the grid table (module docstring): widths and medians over ``count``
    queries on an n x n grid world."""
    w = grid_world(n, n, np.random.default_rng(seed + n), f"g{n}")
    corner = w.observed_names[-1]
    scopes = [(v.name, *v.parents) for v in w.variables]
    elimination.clear_caches()
    order = elimination._chosen_order(scopes, [corner])
    bn = to_pyagrum(w)
    tree = gum.JunctionTreeGenerator().junctionTree(bn)
    row: dict[str, float] = {
        "width": order.width, "lb": ordering.order_lower_bound(scopes, [corner]),
        "ag_clique": max(len(tree.clique(c)) for c in tree.nodes()),
        "min_fill": ordering.min_fill(scopes, [corner], bound=False).width,
        "best": ordering.best_order(scopes, [corner], heuristics=tuple(ordering.HEURISTICS),
                                    bound=False).width}
    cut: dict[tuple[str, int], object] = {}
    times: dict[str, list[float]] = {k: [] for k in ("cold", "warm", "agcold", "agwarm",
                                                    "cold_all")}
    skipped, failed, diff = 0, 0, 0.0
    for q in grid_queries(w, count, np.random.default_rng(seed + 7 * n)):
        query = _grid_query(q)

        def cold(query: Query = query) -> float:
            elimination.clear_caches()
            return oracle.probability(w, query, method="elimination")

        def warm(query: Query = query) -> float:
            elimination.clear_answers()
            return oracle.probability(w, query, method="elimination")

        ours, ms = _timed(cold)
        times["cold_all"].append(ms)
        if _ag_clique(w, q) > ag_max_clique:
            skipped += 1
            continue
        net = bn
        for do in q.do.items():  # at most one
            if do not in cut:
                cut[do] = to_pyagrum(w, dict([do]))
            net = cut[do]
        try:
            ag, ag_ms = _timed(lambda net=net, q=q: _ag_answer(_ag_engine(net), q))
            engine = _ag_engine(net)
            _ag_answer(engine, q)
        except Exception:  # pyAgrum's out-of-memory (std::bad_alloc)
            failed += 1
            continue
        times["cold"].append(ms)
        times["warm"].append(_timed(warm)[1])
        times["agcold"].append(ag_ms)
        times["agwarm"].append(_timed(lambda engine=engine, q=q: _ag_answer(engine, q))[1])
        diff = max(diff, abs(ours - ag))
    row.update({k: float(np.median(v)) if v else float("nan") for k, v in times.items()})
    row.update({"compared": float(len(times["cold"])), "skipped": float(skipped + failed),
                "failed": float(failed), "diff": diff})
    return row


def grid_table(sizes: Sequence[int], count: int, seed: int, ag_max_clique: int) -> None:
    """Print the grid table (module docstring)."""
    head = (f"{'grid':>5} {'width':>5} {'best':>4} {'lb':>3} {'mfill':>5} {'agJT':>4} "
            f"{'cold*':>8} "
            f"{'cold':>8} {'agCold':>8} {'c/ag':>6} {'warm':>8} {'agWarm':>8} {'w/ag':>6} "
            f"{'ag n':>7} {'agOOM':>5} {'max|diff|':>9}")
    print("\n" + head)
    print("-" * len(head))
    for n in sizes:
        r = grid_row(n, count, seed, ag_max_clique)
        print(f"{n:>2}x{n:<2} {r['width']:>5.0f} {r['best']:>4.0f} {r['lb']:>3.0f} "
              f"{r['min_fill']:>5.0f} "
              f"{r['ag_clique']:>4.0f} {r['cold_all']:>8.2f} {r['cold']:>8.2f} "
              f"{r['agcold']:>8.2f} {_ratio(r['cold'], r['agcold'], 2):>6} {r['warm']:>8.3f} "
              f"{r['agwarm']:>8.3f} {_ratio(r['warm'], r['agwarm'], 2):>6} "
              f"{r['compared']:>3.0f}/{r['compared'] + r['skipped']:<3.0f} {r['failed']:>5.0f} "
              f"{r['diff']:>9.1e}",
              flush=True)
    print("width: variables of our largest table (far-corner query, whole grid, the order "
          "elimination chose: min-degree alone\nbelow its search threshold); best: the best of "
          "the four heuristics; lb: MMD+ lower bound; mfill: min-fill's width;\nagJT: pyAgrum's "
          "junction-tree max clique (whole grid); medians in ms over random queries (cold*: all "
          "of ours;\nthe rest: those pyAgrum ran, its ancestral junction tree at most "
          f"{ag_max_clique} variables wide); warm: ours re-runs\nthe compiled plan, pyAgrum "
          "re-infers on its engine; ag n: queries pyAgrum ran / all (the others: over the\n"
          "clique cap, or agOOM: "
          f"past its {AG_MAX_MEMORY_MB} MiB memory limit)")


def _refusal(refused: Refusal) -> str:
    reason = refused.reasons[0]
    return (f"refused {reason.code}, estimate {reason.data['estimated_bytes'] / 2**20:.0f} MiB "
            f"over {reason.data['largest_factor_variables']} variables (budget "
            f"{reason.data['budget_bytes'] / 2**20:.0f} MiB)")


def main() -> None:
    """Run the benchmark and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--worlds", type=int, default=8, help="worlds per size")
    ap.add_argument("--repeat", type=int, default=20, help="timed repetitions per query")
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--pyagrum-only", action="store_true", help="only the pyAgrum table")
    ap.add_argument("--pyagrum-worlds", type=int, default=3, help="worlds per pyAgrum size")
    ap.add_argument("--wide-only", action="store_true",
                    help="only the treewidth 17-20 rows (dense^) and the twin-network row")
    ap.add_argument("--networks", action="store_true",
                    help="only the bnlearn networks vs pyAgrum (benchmarks/causal_networks.py)")
    ap.add_argument("--network-queries", type=int, default=200,
                    help="random queries per network (--networks)")
    ap.add_argument("--grids-only", action="store_true", help="only the grid table")
    ap.add_argument("--grid-sizes", default=",".join(map(str, GRIDS)),
                    help="grid sizes n (n x n cells), comma-separated")
    ap.add_argument("--grid-queries", type=int, default=GRID_QUERIES,
                    help="random queries per grid")
    ap.add_argument("--ag-max-clique", type=int, default=AG_MAX_CLIQUE,
                    help="largest pyAgrum junction-tree clique of a query pyAgrum runs")
    ap.add_argument("--quick", action="store_true",
                    help="grid table only, grids 10, 14 and 18, 20 queries each")
    args = ap.parse_args()
    if args.networks:
        from causal_networks import networks_table

        networks_table(args.network_queries, args.seed)
        return
    if args.quick or args.grids_only:
        sizes = (10, 14, 18) if args.quick else tuple(int(a) for a in args.grid_sizes.split(","))
        grid_table(sizes, 20 if args.quick else args.grid_queries, args.seed,
                   args.ag_max_clique)
        return
    if args.pyagrum_only or args.wide_only:
        pyagrum_table(args.pyagrum_worlds, args.repeat, args.seed, wide_only=args.wide_only)
        return
    print("ours = per query on a compiled world; cold = first query on a fresh World object\n"
          "(validation + compile + query); pgmpy model objects are built once, untimed.\n")
    head = (f"{'nodes':>5} {'query':<7} {'ours ms':>9} {'cold ms':>9} {'pgmpy ms':>9} "
            f"{'ratio':>7} {'target':>7} {'pgmpy ref':>9}")
    print(head)
    print("-" * len(head))
    for size in SIZES:
        m = measure(size, args.worlds, args.repeat, args.seed + size)
        for i, (label, ours, cold, pg) in enumerate((("rung 1", "ours1", "cold1", "pg1"),
                                                     ("rung 2", "ours2", "cold2", "pg2"),
                                                     ("PN", "ours_pn", "cold_pn", "pg_pn"))):
            ref = REFERENCE_PGMPY.get(size)
            print(f"{size:>5} {label:<7} {m[ours]:>9.3f} {m[cold]:>9.3f} {m[pg]:>9.3f} "
                  f"{m[pg] / m[ours]:>6.1f}x {TARGETS[size][i]:>7.2f} "
                  f"{(f'{ref[i]:.2f}' if ref else '-'):>9}")
        print(f"{size:>5} compile {m['compile']:>9.3f}  (enumeration compile per world; 0 = VE)")
    start = time.perf_counter()
    report = run_validation()
    wall = time.perf_counter() - start
    print(f"\ncausal validate: {wall:.2f} s wall (target <= 2 s; seed's suite 4.9 s); "
          f"{'ALL PASS' if report.all_pass else 'FAILED: ' + ', '.join(report.failures)}")
    for row in report.rows:
        print(f"  {row.check}: {row.result}")
    pyagrum_table(args.pyagrum_worlds, args.repeat, args.seed)


if __name__ == "__main__":
    main()
