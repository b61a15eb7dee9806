"""Speed of the interop paths: CLadder import + re-grade, BIF queries vs pgmpy (issue 20).

Prints (1) the wall time of importing and exactly re-grading all of CLadder's in-repo
test set (396 models, 3,742 stored quantities, 4,164 questions; target < 5 s) and
(2) per bnlearn network (asia, cancer, earthquake, win95pts) the milliseconds per
rung-1 and rung-2 query of our oracle — cold (first query on a fresh world, encoding
included) and warm (median of repeats on a compiled world) — beside pgmpy 1.x
(VariableElimination; rung 2 on pgmpy's mutilated network ``model.do([X])``), with the
ratio and the largest |difference| between the two. Target: win95pts warm < 1 ms.
Usage: ``.venv/bin/python benchmarks/causal_interop.py [--queries N]``.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from rungbench.causal.interop import cladder
from rungbench.causal.interop.bif import read_bif
from rungbench.causal.scm import estimands, oracle
from rungbench.causal.scm.cpts import world_from_cpts
from rungbench.causal.scm.world import Query, World
from rungbench.errors import InputError

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from pgmpy.inference import VariableElimination
    from pgmpy.readwrite import BIFReader

logging.getLogger("pgmpy").setLevel(logging.ERROR)
warnings.simplefilter("ignore")

DATA = Path(__file__).resolve().parents[1] / "data"
NETWORKS = ("asia", "cancer", "earthquake", "win95pts")
CLADDER_TARGET_S = 5.0
WARM_TARGET_MS = 1.0


def _queries(world: World, rng: np.random.Generator, n: int) -> list[Query]:
    out: list[Query] = []
    while len(out) < 2 * n:
        y, x, z = (str(s) for s in rng.choice(world.names, 3, replace=False))
        a, b, c = (int(v) for v in rng.integers(0, 2, 3))
        q1, q2 = Query(1, {y: a}, {}, {x: b, z: c}), Query(2, {y: a}, {x: b}, {})
        try:
            oracle.probability(world, q1)
        except InputError:
            continue
        out += [q1, q2]
    return out


def _time(fn: object, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def bench_cladder() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        summary = cladder.import_cladder(DATA / "cladder", Path(tmp) / "imp")
        elapsed = time.perf_counter() - t
    c = summary["counts"]
    print(f"CLadder import + exact re-grade: {elapsed:.2f} s (target < {CLADDER_TARGET_S} s; "
          f"ratio {elapsed / CLADDER_TARGET_S:.2f}) — {c['models']} models, {c['quantities']} "
          f"quantities ({c['quantities_wrong']} wrong in CLadder), {c['questions']} questions, "
          f"{c['numeric_labels_flipped']} numeric labels flipped by the formal_form quantity "
          f"({c['numeric_labels_flipped_by_type']}), "
          f"{c['numeric_labels_flipped_engine_definition']} by the exact value of CLadder's "
          f"implemented estimand ({c['numeric_labels_flipped_engine_definition_by_type']})")


def bench_bif(n: int) -> None:
    print(f"\n{'network':<11}{'rung':>5}{'cold ms':>9}{'warm ms':>9}{'pgmpy ms':>10}"
          f"{'ratio':>8}{'max |diff|':>12}")
    for name in NETWORKS:
        path = DATA / "bnlearn" / f"{name}.bif"
        net = read_bif(path)
        states = net.states
        model = BIFReader(str(path)).get_model()
        ve = VariableElimination(model)
        rng = np.random.default_rng(20)
        probe = world_from_cpts(name, net.cpts)
        queries = _queries(probe, rng, n)
        for rung in (1, 2):
            qs = [q for q in queries if q.rung == rung]
            cold, warm, ref, diff = [], [], [], 0.0
            for q in qs:
                fresh = world_from_cpts(name, net.cpts)
                t = time.perf_counter()
                ours = oracle.probability(fresh, q)
                cold.append((time.perf_counter() - t) * 1e3)
                warm.append(_time(lambda q=q, w=fresh: oracle.probability(w, q), 5))
                ((y, a),) = q.target.items()
                if rung == 1:
                    ev = {k: states[k][v] for k, v in q.evidence.items()}
                    t = time.perf_counter()
                    r = ve.query([y], evidence=ev, show_progress=False)
                else:
                    ((x, b),) = q.do.items()
                    t = time.perf_counter()
                    r = VariableElimination(model.do([x])).query(
                        [y], evidence={x: states[x][b]}, show_progress=False)
                ref.append((time.perf_counter() - t) * 1e3)
                diff = max(diff, abs(ours - float(r.values[r.state_names[y].index(
                    states[y][a])])))
            w, p = statistics.median(warm), statistics.median(ref)
            print(f"{name:<11}{rung:>5}{statistics.median(cold):>9.3f}{w:>9.3f}{p:>10.3f}"
                  f"{p / w:>7.0f}x{diff:>12.1e}")
    w95 = world_from_cpts("win95pts", read_bif(DATA / "bnlearn" / "win95pts.bif").cpts)
    x, y = "PrtDataOut", "Problem1"
    ms = _time(lambda: estimands.nde(w95, x, y), 3)
    print(f"\nwin95pts NDE({x} -> {y}) by variable elimination (nested twin network): "
          f"{ms:.2f} ms; mediators {estimands.mediators(w95, x, y)}")
    print(f"targets: win95pts warm < {WARM_TARGET_MS} ms per rung-1/2 query")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=30, help="Queries per rung and network.")
    args = parser.parse_args()
    bench_cladder()
    bench_bif(args.queries)


if __name__ == "__main__":
    main()
