"""Tagged control cases from a committed seed and selection rule (seed 003, "Matched controls").

``data/case_selection.json`` holds the rule, the seeds and the fixed per-tag counts; it
was committed before any result was read. :func:`build_world` turns one entry into a
synthetic production store: one node-disjoint *module* per case, holding the case's
target (the rows the original run withheld), its true mechanism (a parent of the cause,
a child of the effect, a co-parent of the effect and the effect's sibling), one
non-causal noise edge, plus background edges; every edge has a source text, and some
modules have a summary naming both endpoints (the leakage scan must find them).

Tags: direct · 2-hop · 3+-hop · alias (the query names an alias) · negative polarity
(``A prevents B``; the answer must carry ``-``) · conditional (the answer must carry the
condition) · reversed query (``does B cause A`` with ``A → B`` stored; gold none) ·
unsupported relation (only a correlation / chronology / dependency / part-of edge; gold
none).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import numpy as np

from rungbench.causal.instrument.graph_store import Edge, SourceText
from rungbench.causal.instrument.query import wording
from rungbench.causal.instrument.scorers import Gold, GoldEdge
from rungbench.errors import InputError

TAGS = ("direct", "2-hop", "3+-hop", "alias", "negative polarity", "conditional",
        "reversed query", "unsupported relation")
NONE_TAGS = ("reversed query", "unsupported relation")
COMPONENTS = ("disk", "swap", "cache", "queue", "dns", "tls", "cron", "kernel", "nginx",
              "postgres", "redis", "backup", "sensor", "pump", "valve", "fan", "battery",
              "router", "printer", "camera", "scheduler", "index", "socket", "thread", "vm",
              "container", "shard", "replica", "quota", "token", "lease", "lock", "log",
              "buffer", "heap", "pool", "mirror", "proxy", "worker", "timer")
STATES = ("full", "stall", "spike", "leak", "drift", "timeout", "restart", "overload", "loss",
          "lag", "fault", "flap", "jam", "churn", "burst", "crash", "starvation",
          "corruption", "exhaustion", "throttle", "backlog", "storm", "skew", "expiry",
          "eviction", "freeze", "reset", "drop", "surge", "degradation", "saturation",
          "contention", "divergence", "outage", "misfire", "underflow", "overflow", "wedge",
          "glitch", "collapse")
NON_CAUSAL = ("correlation", "chronology", "dependency", "part_of")


@dataclass(frozen=True)
class Case:
    """One control case: a query, its gold answer, and the rows the conditions vary."""

    case_id: str
    """``c01`` … in generation order."""
    tag: str
    """One of :data:`TAGS`."""
    query: str
    """The harness's exact wording (identical in every condition)."""
    gold: Gold
    """The correct answer."""
    target: tuple[Edge, ...]
    """The withheld rows (C0 removes them, C1 restores them, C2 holds only them)."""
    mechanism: tuple[Edge, ...]
    """The complete true causal mechanism of the module (C3)."""
    sibling: str
    """The effect's sibling (C5 swaps the last target edge's effect to it)."""
    aliases: tuple[tuple[str, str], ...]
    """Alias rows of the module (``alias``, canonical node)."""


@dataclass(frozen=True)
class World:
    """A synthetic production store and its cases."""

    seed: int
    """Seed the world was built from."""
    edges: tuple[Edge, ...]
    """Every production edge (targets included): the C1 graph."""
    aliases: tuple[tuple[str, str], ...]
    """The production alias table."""
    sources: tuple[SourceText, ...]
    """Declared text stores (sources, summaries)."""
    cases: tuple[Case, ...]
    """The tagged cases, in generation order."""


@cache
def selection() -> dict[str, Any]:
    """The committed selection rule (``data/case_selection.json``)."""
    text = resources.files("rungbench.causal.instrument").joinpath(
        "data/case_selection.json").read_text(encoding="utf-8")
    doc: dict[str, Any] = json.loads(text)
    for name in ("standard", "generated"):
        if set(doc[name]["tags"]) != set(TAGS):
            raise InputError("tag counts do not cover every tag", path="case_selection.json",
                             field=name)
    return doc


class _Names:
    def __init__(self, rng: np.random.Generator) -> None:
        grid = [f"{c} {s}" for c in COMPONENTS for s in STATES]
        self.pool: list[str] = [grid[int(i)] for i in rng.permutation(len(grid))]

    def take(self) -> str:
        if not self.pool:
            raise InputError("name grid exhausted", field="tags")
        return self.pool.pop()


def alias_of(node: str) -> str:
    """The alias form of ``node``: ``cache stall`` → ``stall of cache``."""
    component, state = node.split(" ", 1)
    return f"{state} of {component}"


def _sentence(e: Edge) -> str:
    if e.relation_kind == "causal_claim":
        verb = "led to" if e.polarity == "+" else "prevented"
        tail = f" {e.condition}" if e.condition else ""
        return f"Incident note: {e.cause} {verb} {e.effect}{tail}."
    return {"correlation": f"{e.cause} was seen together with {e.effect}.",
            "chronology": f"{e.cause}, then {e.effect}.",
            "dependency": f"{e.cause} requires {e.effect}.",
            "part_of": f"{e.cause} is part of {e.effect}.",
            "other": f"{e.cause} and {e.effect} are related."}[e.relation_kind]


def _module(i: int, tag: str, k: int, names: _Names) -> tuple[Case, Edge]:
    """Case ``i`` (the ``k``-th of its tag) and its production noise edge."""
    cid = f"c{i:03d}"
    n = 0

    def edge(cause: str, effect: str, kind: str = "causal_claim", polarity: str = "+",
             condition: str | None = None) -> Edge:
        nonlocal n
        n += 1
        return Edge(f"{cid}-e{n:02d}", cause, effect, kind, polarity, condition,
                    "asserted", f"src-{cid}-e{n:02d}", f"2026-09-{1 + i % 28:02d}T00:00:00Z",
                    "firefly")

    a, b = names.take(), names.take()
    hops = {"2-hop": 2, "3+-hop": 3 + k % 2}.get(tag, 1)
    chain = [a] + [names.take() for _ in range(hops - 1)] + [b]
    z, w, r, s = names.take(), names.take(), names.take(), names.take()
    form = "does"
    aliases: tuple[tuple[str, str], ...] = ()
    target: tuple[Edge, ...]
    if tag == "unsupported relation":
        target = (edge(a, b, NON_CAUSAL[k % len(NON_CAUSAL)]),)
    elif tag == "negative polarity":
        target = (edge(a, b, polarity="-"),)
    elif tag == "conditional":
        target = (edge(a, b, condition=f"when {names.take()}"),)
    else:
        target = tuple(edge(x, y) for x, y in itertools.pairwise(chain))
    mechanism_rest = (edge(z, a), edge(b, w), edge(r, b), edge(r, s))
    noise = edge(w, s, NON_CAUSAL[(i + k) % len(NON_CAUSAL)])
    ask_cause, ask_effect = a, b
    if tag == "direct":
        form = ("does", "effects", "causes")[k % 3]
    if tag == "alias":
        if k % 2 == 0:
            ask_cause, aliases = alias_of(a), ((alias_of(a), a),)
        else:
            ask_effect, aliases = alias_of(b), ((alias_of(b), b),)
    if tag in NONE_TAGS:
        gold = Gold("none", b, a) if tag == "reversed query" else Gold("none", a, b)
        ask_cause, ask_effect = gold.cause, gold.effect
    else:
        gold = Gold("path", a, b, tuple(GoldEdge(e.cause, e.effect, e.polarity, e.condition)
                                        for e in target))
    causal_target = tuple(e for e in target if e.relation_kind == "causal_claim")
    case = Case(cid, tag, wording(form, ask_cause, ask_effect), gold, target,
                causal_target + mechanism_rest, s, aliases)
    return case, noise


def build_world(name: str = "standard") -> World:
    """The world of selection entry ``name`` (``standard``: 40 cases; ``generated``: 200)."""
    doc = selection()
    if name not in ("standard", "generated"):
        raise InputError(f"unknown case set {name!r}", field="case_set")
    seed = int(doc[name]["seed"])
    rng = np.random.default_rng(seed)
    names = _Names(rng)
    cases: list[Case] = []
    edges: list[Edge] = []
    counter = 0
    for tag in TAGS:
        for k in range(int(doc[name]["tags"][tag])):
            counter += 1
            case, noise = _module(counter, tag, k, names)
            cases.append(case)
            edges += list(case.target) + [e for e in case.mechanism if e not in case.target]
            edges.append(noise)
    background = [names.take() for _ in range(40)]
    bg = doc["background"]
    for j in range(int(bg["causal_edges"]) + int(bg["non_causal_edges"])):
        x, y = sorted(int(v) for v in rng.choice(len(background), size=2, replace=False))
        kind = "causal_claim" if j < int(bg["causal_edges"]) else NON_CAUSAL[j % 4]
        edges.append(Edge(f"bg-e{j:03d}", background[x], background[y], kind,
                          str(rng.choice(["+", "-"])), None, "inferred", f"src-bg-e{j:03d}"))
    sources = [SourceText(str(e.source_id), "source", _sentence(e)) for e in edges]
    sources += [SourceText(f"sum-{c.case_id}", "summary",
                           f"Weekly summary: {c.gold.cause} and {c.gold.effect} came up again.")
                for c in cases if int(c.case_id[1:]) % 4 == 0]
    aliases = tuple(pair for c in cases for pair in c.aliases)
    return World(seed, tuple(edges), aliases, tuple(sources), tuple(cases))


def ceiling_cases(cases: Sequence[Case], n: int = 5, seed: int = 5) -> tuple[Case, ...]:
    """``n`` cases drawn only from direct edges: the seed's misleading five-case ceiling."""
    direct = [c for c in cases if c.tag == "direct"]
    picks = np.random.default_rng(seed).choice(len(direct), size=n, replace=False)
    return tuple(direct[int(i)] for i in sorted(picks))
