"""``rungbench causal controls``: probes, the control matrix, the four numbers, the verdict.

:func:`audit` runs, in order: the probes (C.3, C.6 and section D) for every requested
query and scorer — a failed C.3 or C.6 refuses unless ``gated`` is off (the seed's
demonstration of broken instruments) — then the nine conditions for every query, scored
by every scorer. It returns one JSON document: the seed's query × scorer table, a per-tag
breakdown per row, confusion matrices, localized misses, the run manifest, the four
reported numbers kept separate (graph validity, graph coverage, query reliability, agent
reasoning), and the one-line verdict.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rungbench.agents.protocol import Agent
from rungbench.causal.instrument.cases import build_world
from rungbench.causal.instrument.census import coverage, leakage_scan
from rungbench.causal.instrument.controls import (
    condition_graphs,
    manifest_json,
    run_tool,
    summarize,
    verdict,
    write_conditions,
)
from rungbench.causal.instrument.graph_store import write_store
from rungbench.causal.instrument.model_query import ModelQuery
from rungbench.causal.instrument.probes import gate, run_probes
from rungbench.causal.instrument.query import CausalTool, load_tool
from rungbench.causal.instrument.scorers import Scorer, load_scorer
from rungbench.errors import InputError

SCHEMA = "rungbench.causal.controls/1"
MODEL_QUERY = "model"
"""The ``--query`` that asks the agent named by the agent options."""


def _offset(tick: Callable[[int, int], None], base: int, total: int) -> Callable[[int], None]:
    def inner(done: int) -> None:
        tick(base + done, total)
    return inner


def audit(queries: Sequence[str], scorers: Sequence[str], *, case_set: str = "standard",
          timeout: float = 5.0, allow_remote: bool = False, gated: bool = True,
          census: Mapping[str, Any] | None = None,
          tick: Callable[[int, int], None] | None = None,
          agent: Agent | None = None) -> dict[str, Any]:
    """The whole audit as one JSON-ready document (see the module docstring).

    The query ``model`` is ``agent`` answering each ``causal()`` call
    (:mod:`~rungbench.causal.instrument.model_query`).
    """
    tools: dict[str, CausalTool] = {}
    for q in queries:
        if q == MODEL_QUERY:
            if agent is None:
                raise InputError("the query 'model' needs an agent", field="model")
            tools[q] = ModelQuery(agent)
        else:
            tools[q] = load_tool(q, timeout=timeout, allow_remote=allow_remote)
    scoring: dict[str, Scorer] = {s: load_scorer(s) for s in scorers}
    world = build_world(case_set)
    probes = run_probes(tools, scoring, world.cases)
    if gated:
        gate(probes)
    graphs = condition_graphs(world)
    n = len(world.cases)
    total = n * len(graphs) * len(tools)
    rows: list[dict[str, Any]] = []
    runs = []
    with tempfile.TemporaryDirectory(prefix="rungbench-controls-") as tmp:
        stores = write_conditions(graphs, Path(tmp))
        production = write_store(Path(tmp) / "production.sqlite", world.edges, world.aliases,
                                 world.sources)
        withheld = [e for c in world.cases for e in c.target]
        leaks = leakage_scan(production, withheld)
        production.close()
        for k, (name, tool) in enumerate(tools.items()):
            run = run_tool(name, tool, world, graphs, stores, scoring, timeout=timeout,
                           tick=None if tick is None else _offset(tick, k * n * len(graphs),
                                                                  total))
            runs.append(run)
            rows += [summarize(run, s, n) for s in scoring]
    seconds = {r.tool: r.seconds for r in runs}
    unit = {q: [asdict(p) for p in probes[f"unit:{q}"]] for q in tools}
    numbers = {
        "graph_validity": dict(census) if census is not None else {
            "measured": False, "reason": "no census: run 'rungbench causal graph census "
                                         "sample', have two raters fill the sheets, pass "
                                         "--census with 'census score --json' output"},
        "graph_coverage": {"measured": True, **coverage(withheld, leaks),
                           "leaks": len(leaks),
                           "C0_recovered": {f"{r['query']} x {r['scorer']}":
                                            r["recovered"]["C0"] for r in rows}},
        "query_reliability": {"measured": True, **{
            q: {"probe_C3": all(p.passed for p in probes[f"query:{q}"]),
                "section_D": f"{sum(p['passed'] for p in unit[q])}/{len(unit[q])}",
                "C1_C3": {f"{r['scorer']}": {c: r["recovered"][c] for c in ("C1", "C2", "C3")}
                          for r in rows if r["query"] == q}} for q in tools}},
        "agent_reasoning": {"measured": False, "reason": "needs the agent's final answers "
                                                         "beside the raw causal() returns "
                                                         "(probes C.4, C.5); not part of an "
                                                         "instrument audit"},
    }
    return {
        "schema": SCHEMA, "ok": True, "case_set": case_set, "n": n, "gated": gated,
        "table": [{"query": r["query"], "scorer": r["scorer"],
                   "C1_recovered": r["recovered"]["C1"],
                   "C5_false_accepts": {k.removeprefix("C5-"): v for k, v in
                                        r["false_accepts"].items() if k.startswith("C5")},
                   "C4_false_positives": {k.removeprefix("C4-"): v for k, v in
                                          r["false_accepts"].items() if k.startswith("C4")},
                   "instrument_valid": r["instrument_valid"]} for r in rows],
        "rows": rows,
        "probes": {k: [asdict(p) for p in v] for k, v in probes.items()},
        "manifest": manifest_json(runs),
        "seconds_C1_C5": seconds,
        "leaks": [asdict(x) for x in leaks],
        "four_numbers": numbers,
        "verdict": verdict(rows),
    }
