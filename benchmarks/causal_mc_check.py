"""Speed of the independent Monte Carlo checker's two samplers (200,000 draws per world).

Run: ``.venv/bin/python benchmarks/causal_mc_check.py``. Prints three figures, each the
best and the median of five runs taken in alternation, so the load of a shared machine
falls on every side of a ratio:

- ``packed``: the validation suite's checker row (60 binary worlds, their 418 queries,
  the same world JSON, queries and seeds as ``rungbench causal validate``), as
  ``check_queries`` runs it on all-binary worlds;
- ``categorical``: the same worlds and queries through the categorical sampler, reached
  through the public API by adding an unconnected three-state variable named to draw last
  (the world becomes ``rungbench.world/2``; the binary variables' draws are unchanged, and
  the estimates are checked to be identical before anything is timed);
- ``categorical worlds``: 60 random 6-node worlds of 2 to 5 states, 7 queries each.
"""

from __future__ import annotations

import copy
import math
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rungbench.causal.checks.mc_check import McEstimate, check_queries
from rungbench.causal.checks.validate import compare_with_checker

DRAWS = 200_000
Call = tuple[dict[str, Any], list[dict[str, Any]], int]
"""One checker call: world JSON, query JSONs, seed."""


def validation_calls() -> list[Call]:
    """The checker calls the validation suite makes, recorded with their seeds."""
    calls: list[Call] = []

    def record(world_json: dict[str, Any], queries: list[dict[str, Any]], *, draws: int,
               rng: np.random.Generator) -> list[McEstimate]:
        seed = int(rng.integers(2**31))
        calls.append((world_json, queries, seed))
        return check_queries(world_json, queries, draws=draws, rng=np.random.default_rng(seed))

    compare_with_checker(record, draws=DRAWS, seed=3)
    return calls


def with_idle_three_state(world: dict[str, Any]) -> dict[str, Any]:
    """The binary world as rungbench.world/2 plus an unconnected three-state root."""
    named = copy.deepcopy(world)
    named["schema"] = "rungbench.world/2"
    for variable in named["variables"]:
        variable["states"] = ["no", "yes"]
    named["variables"].append({
        "name": "~idle", "observed": True, "parents": [], "states": ["p", "q", "r"],
        "responses": [{"p": 0.2, "table": [0]}, {"p": 0.3, "table": [1]},
                      {"p": 0.5, "table": [2]}]})
    return named


def categorical_calls(rng: np.random.Generator, n_worlds: int = 60) -> list[Call]:
    """Random 6-node worlds of 2-5 states (two roots, then up to 3 parents and 3 responses)
    with 7 queries."""
    calls = []
    for _ in range(n_worlds):
        names = [f"V{i}" for i in range(6)]
        k = {n: int(rng.integers(2, 6)) for n in names}
        variables = []
        for i, name in enumerate(names):
            # V0 and V1 are roots drawing every state, so the queries' evidence is possible.
            parents = [str(p) for p in rng.choice(names[:i], size=min(i, 3), replace=False)
                       ] if i > 1 else []
            rows = math.prod(k[p] for p in parents)
            tables = sorted({tuple(int(v) for v in rng.integers(0, k[name], rows))
                             for _ in range(3)}) if parents else [(j,) for j in range(k[name])]
            variables.append({
                "name": name, "observed": True, "parents": parents,
                "states": [f"s{j}" for j in range(k[name])],
                "responses": [{"p": 1 / len(tables), "table": list(t)} for t in tables]})
        world = {"schema": "rungbench.world/2", "world_id": "bench", "variables": variables}
        queries = [{"rung": rung, "target": {"V5": 0}, "evidence": {"V1": 0},
                    **({"do": {"V2": 1}} if rung > 1 else {})} for rung in (1, 2, 3)]
        queries += [{"rung": 3, "target": {"V4": 1}, "do": {"V0": 0}, "evidence": {"V0": 1}},
                    {"rung": 1, "target": {"V3": 1}}, {"rung": 2, "target": {"V5": 1},
                                                       "do": {"V4": 0}},
                    {"rung": 1, "target": {"V5": 1}, "evidence": {"V0": 0}}]
        calls.append((world, queries, int(rng.integers(2**31))))
    return calls


def run(calls: Sequence[Call]) -> list[list[McEstimate]]:
    """Run every call on its own seed."""
    return [check_queries(w, q, draws=DRAWS, rng=np.random.default_rng(s)) for w, q, s in calls]


def timed(fn: Callable[[], object]) -> float:
    """Wall seconds of one call."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    """Time the packed and categorical samplers and print best and median of five."""
    binary = validation_calls()
    widened = [(with_idle_three_state(w), q, s) for w, q, s in binary]
    if run(binary) != run(widened):
        raise SystemExit("the categorical sampler's estimates differ from the packed ones")
    categorical = categorical_calls(np.random.default_rng(7))
    runs: dict[str, list[float]] = {"packed": [], "categorical": [], "categorical worlds": []}
    for _ in range(5):
        runs["packed"].append(timed(lambda: run(binary)))
        runs["categorical"].append(timed(lambda: run(widened)))
        runs["categorical worlds"].append(timed(lambda: run(categorical)))
    n_binary = sum(len(q) for _, q, _ in binary)
    n_categorical = sum(len(q) for _, q, _ in categorical)
    sizes = {"packed": (len(binary), n_binary), "categorical": (len(binary), n_binary),
             "categorical worlds": (len(categorical), n_categorical)}
    for name, seconds in runs.items():
        worlds, queries = sizes[name]
        print(f"{name:18s} {worlds} worlds, {queries} queries, {DRAWS:,} draws: "
              f"best {min(seconds):.3f} s, median {statistics.median(seconds):.3f} s")
    ratio = statistics.median(runs["categorical"]) / statistics.median(runs["packed"])
    print(f"categorical / packed on the binary validation worlds (medians): {ratio:.2f}")


if __name__ == "__main__":
    main()
