"""Our exact oracle vs pyAgrum's LazyPropagation on every bundled bnlearn network.

The ``--networks`` part of ``benchmarks/causal_oracle.py`` (run it there, or directly:
``.venv/bin/python benchmarks/causal_networks.py [--queries 200] [--only alarm,child]``).
Per network in ``data/bnlearn/``: nodes, the largest number of states, and the median
milliseconds per query of ours and of pyAgrum, cold and warm, over random queries
(alternately P(y | e) and P(y | do(x), e), up to 5 evidence variables, values drawn
uniformly; queries whose evidence is impossible are drawn again), and the largest
|ours - pyAgrum| over them.

pyAgrum reads each BIF file itself (state names its parser rejects — child's ``Asy/Patch``,
``<5`` — renamed in a temporary copy), and its CPT numbers are then set to our encoded
world's P(V | parents), so both sides answer the same model at full precision (pyAgrum's
parser keeps about 3e-8). ``cold``: ours after ``elimination.clear_caches()`` (network, plan
and elimination order rebuilt), pyAgrum a new LazyPropagation (on a new mutilated BayesNet
for do()); ``warm``: ours with the compiled plan kept (``elimination.clear_answers()`` first,
so the contractions run again), pyAgrum the same engine re-run after its evidence is erased
and set again.
"""

from __future__ import annotations

import argparse
import re
import statistics
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from rungbench.causal.interop.bif import read_bif
from rungbench.causal.scm import elimination, oracle
from rungbench.causal.scm.cpts import world_from_cpts
from rungbench.causal.scm.world import Query, World
from rungbench.errors import InputError

DATA = Path(__file__).resolve().parents[1] / "data" / "bnlearn"

_PYAGRUM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")


def pyagrum_network(gum: Any, path: Path, states: Mapping[str, tuple[str, ...]],
                    world: World) -> Any:
    """pyAgrum's BayesNet of ``path`` (its own parser, odd state names renamed), with our
    encoded world's CPT numbers."""
    text = path.read_text(encoding="utf-8")
    bad = sorted({s for names in states.values() for s in names
                  if not _PYAGRUM_NAME.fullmatch(s)}, key=len, reverse=True)
    if bad:
        rename = {s: f"state_{i}" for i, s in enumerate(bad)}
        pattern = re.compile(r"(?<=[\s{(,])(" + "|".join(map(re.escape, bad)) + r")(?=[\s,;)}])")
        text = pattern.sub(lambda m: rename[m.group(1)], text)
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / path.name
        copy.write_text(text, encoding="utf-8")
        bn = gum.loadBN(str(copy))
    for v in world.variables:
        pot, cpd = bn.cpt(v.name), v.cpd()
        for row in range(v.rows):
            inst = {p: (row // s) % k for p, s, k in zip(v.parents, v.strides, v.parent_cards,
                                                         strict=True)}
            for s in range(v.card):
                pot[{**inst, v.name: s}] = float(cpd[s, row])
    return bn


def random_queries(world: World, rng: np.random.Generator, n: int) -> list[Query]:
    """``n`` possible queries, alternately rung 1 (x observed) and rung 2 (do(x)), with up to
    5 further evidence variables."""
    names = list(world.observed_names)
    out: list[Query] = []
    while len(out) < n:
        size = min(len(names), 2 + int(rng.integers(0, 6)))
        y, x, *ev = (str(s) for s in rng.choice(names, size, replace=False))
        value = {v: int(rng.integers(0, world.card(v))) for v in (y, x, *ev)}
        evidence = {v: value[v] for v in ev}
        rung = 1 + len(out) % 2
        if rung == 1:
            q = Query(1, {y: value[y]}, {}, {**evidence, x: value[x]})
        else:
            q = Query(2, {y: value[y]}, {x: value[x]}, evidence)
        try:
            oracle.probability(world, q)
        except InputError:
            continue  # impossible evidence: draw again
        out.append(q)
    return out


def _engine(gum: Any, bn: Any, q: Query) -> tuple[Any, dict[str, int]]:
    """A new LazyPropagation for ``q`` (on the mutilated network for do()) and its
    evidence."""
    net, evidence = bn, dict(q.evidence)
    if q.rung == 2:
        ((x, b),) = q.do.items()
        net = gum.BayesNet(bn)
        for p in list(net.parents(x)):
            net.eraseArc(p, net.idFromName(x))
        net.cpt(x).fillWith([1.0 if s == b else 0.0 for s in range(net.variable(x).domainSize())])
        evidence[x] = b
    ie = gum.LazyPropagation(net)
    ((y, _),) = q.target.items()
    ie.addTarget(y)
    return ie, evidence


def _read(ie: Any, q: Query, evidence: Mapping[str, int]) -> float:
    ie.eraseAllEvidence()
    ie.setEvidence(dict(evidence))
    ie.makeInference()
    ((y, a),) = q.target.items()
    return float(ie.posterior(y)[{y: a}])


def _ms(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3


def measure(gum: Any, name: str, n_queries: int, seed: int) -> dict[str, float]:
    """One network's row: nodes, states, median ms (ours/pyAgrum, cold/warm), max |diff|."""
    net = read_bif(DATA / f"{name}.bif")
    world = world_from_cpts(name, net.cpts)
    bn = pyagrum_network(gum, DATA / f"{name}.bif", net.states, world)
    queries = random_queries(world, np.random.default_rng(seed), n_queries)
    times: dict[str, list[float]] = {"cold": [], "warm": [], "ag_cold": [], "ag_warm": []}
    worst = 0.0
    for q in queries:
        elimination.clear_caches()
        times["cold"].append(_ms(lambda q=q: oracle.probability(world, q)))  # type: ignore[misc]
        elimination.clear_answers()
        start = time.perf_counter()
        ours = oracle.probability(world, q)
        times["warm"].append((time.perf_counter() - start) * 1e3)
        start = time.perf_counter()
        ie, evidence = _engine(gum, bn, q)
        ref = _read(ie, q, evidence)
        times["ag_cold"].append((time.perf_counter() - start) * 1e3)
        times["ag_warm"].append(_ms(lambda ie=ie, q=q, e=evidence: _read(ie, q, e)))  # type: ignore[misc]
        worst = max(worst, abs(ours - ref))
    row = {k: statistics.median(v) for k, v in times.items()}
    row.update(nodes=len(world.variables), states=max(v.card for v in world.variables),
               diff=worst, queries=len(queries))
    return row


def networks_table(n_queries: int, seed: int, only: list[str] | None = None) -> None:
    """Print one row per bundled network."""
    import pyagrum as gum

    names = only or sorted(p.stem for p in DATA.glob("*.bif"))
    head = (f"{'network':<11} {'nodes':>5} {'states':>6} {'cold ms':>8} {'agCold':>8} "
            f"{'warm ms':>8} {'agWarm':>8} {'max |diff|':>10}")
    print(f"median per query over {n_queries} random queries (rung 1 and rung 2 alternately, "
          "up to 5 evidence variables)\n")
    print(head)
    print("-" * len(head))
    for i, name in enumerate(names):
        r = measure(gum, name, n_queries, seed + i)
        print(f"{name:<11} {int(r['nodes']):>5} {int(r['states']):>6} {r['cold']:>8.3f} "
              f"{r['ag_cold']:>8.3f} {r['warm']:>8.3f} {r['ag_warm']:>8.3f} {r['diff']:>10.1e}",
              flush=True)


def main() -> None:
    """Run the networks benchmark."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=200, help="random queries per network")
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--only", default=None, help="comma-separated network names")
    args = ap.parse_args()
    networks_table(args.queries, args.seed, args.only.split(",") if args.only else None)


if __name__ == "__main__":
    main()
