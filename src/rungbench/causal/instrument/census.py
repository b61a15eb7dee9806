"""Graph validity and leakage (seed 003 sections B and E).

**Census.** :func:`sample_edges` draws ``n`` edges uniformly without replacement (numpy
``default_rng(seed)`` over the edges in ``edge_id`` order; the seed and ids are logged)
into two identical, blank labelling sheets — one per rater, so neither sees the other's
labels. Columns to fill: ``relation_kind`` (:data:`KINDS`), ``direction`` (yes · reversed
· undirected), ``prov_source_id``, ``prov_time``, ``prov_scope``, ``prov_confidence``,
``prov_contrary`` (yes · no each), ``mechanism_status`` (asserted · inferred · tested).
:func:`score_sheets` reads both filled sheets (InputError naming file, line and field on a
blank or unknown label, or when the rows differ from the sampling log), computes Cohen's
κ per field and flags a **mixed relation store** when the share of edges labelled other
than ``causal_claim`` (mean of the two raters) exceeds 20%.

**Leakage.** :func:`leakage_scan` lists, for every withheld target edge, each place in the
declared stores — other edges and every ``source_text`` row (sources, summaries,
episodes) — where both endpoints (or their aliases) co-occur.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rungbench.causal.instrument.graph_store import RELATION_KINDS, Edge, GraphStore, normalize
from rungbench.errors import InputError

KINDS = RELATION_KINDS
LABELS: dict[str, tuple[str, ...]] = {
    "relation_kind": KINDS,
    "direction": ("yes", "reversed", "undirected"),
    "prov_source_id": ("yes", "no"),
    "prov_time": ("yes", "no"),
    "prov_scope": ("yes", "no"),
    "prov_confidence": ("yes", "no"),
    "prov_contrary": ("yes", "no"),
    "mechanism_status": ("asserted", "inferred", "tested"),
}
SHOWN = ("edge_id", "cause", "effect", "source_text")
MIXED_THRESHOLD = 0.20


def sample_edges(store: GraphStore, folder: Path, *, n: int = 100, seed: int) -> dict[str, Any]:
    """Write ``rater_a.csv``, ``rater_b.csv`` and ``sample.json`` into ``folder``."""
    edges = store.edges()
    if len(edges) < n:
        raise InputError(f"the store has {len(edges)} edges, fewer than n = {n}",
                         path=store.path, field="n")
    picks = sorted(int(i) for i in np.random.default_rng(seed).choice(len(edges), n,
                                                                      replace=False))
    texts = {s.source_id: s.body for s in store.sources()}
    rows = [{"edge_id": edges[i].edge_id, "cause": edges[i].cause, "effect": edges[i].effect,
             "source_text": texts.get(edges[i].source_id or "", "")} for i in picks]
    for rater in ("a", "b"):
        with (folder / f"rater_{rater}.csv").open("w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=[*SHOWN, *LABELS])
            writer.writeheader()
            writer.writerows({**r, **dict.fromkeys(LABELS, "")} for r in rows)
    log = {"schema": "rungbench.causal.census.sample/1", "seed": seed, "n": n,
           "population": len(edges), "store": store.path,
           "edge_ids": [r["edge_id"] for r in rows]}
    (folder / "sample.json").write_text(json.dumps(log, indent=2, sort_keys=True) + "\n",
                                        encoding="utf-8")
    return log


def _read(path: Path, edge_ids: Sequence[str]) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    if [r.get("edge_id") for r in rows] != list(edge_ids):
        raise InputError("rows differ from the sampling log's edge ids", path=str(path),
                         field="edge_id")
    for line, row in enumerate(rows, start=2):
        for name, allowed in LABELS.items():
            if (row.get(name) or "").strip() not in allowed:
                raise InputError(f"label {row.get(name)!r} is not one of {allowed}",
                                 path=str(path), line=line, field=name)
    return rows


def cohen_kappa(a: Sequence[str], b: Sequence[str]) -> float | None:
    """Cohen's κ of two raters; None when undefined (chance agreement is 1)."""
    n = len(a)
    if n == 0 or n != len(b):
        raise InputError("κ needs two equally long, non-empty label lists")
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    cats = set(a) | set(b)
    chance = sum((list(a).count(c) / n) * (list(b).count(c) / n) for c in cats)
    return None if chance == 1.0 else (observed - chance) / (1.0 - chance)


@dataclass(frozen=True)
class CensusReport:
    """Graph validity from two filled sheets."""

    n: int
    """Edges labelled."""
    kappa: dict[str, float | None]
    """Cohen's κ per field."""
    not_causal_share: dict[str, float]
    """Share labelled other than causal_claim: ``a``, ``b`` and ``mean``."""
    mixed_store: bool
    """Whether the mean share exceeds 20% (causal recall is the wrong metric)."""

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"n": self.n, "kappa": self.kappa, "not_causal_share": self.not_causal_share,
                "mixed_store": self.mixed_store, "threshold": MIXED_THRESHOLD}


def score_sheets(sample: Path, sheet_a: Path, sheet_b: Path) -> CensusReport:
    """κ per field and the mixed-store flag from the two filled sheets."""
    try:
        log = json.loads(sample.read_text(encoding="utf-8"))
        ids = [str(i) for i in log["edge_ids"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"not a sampling log: {exc}", path=str(sample)) from exc
    a, b = _read(sheet_a, ids), _read(sheet_b, ids)
    kappa = {f: cohen_kappa([r[f] for r in a], [r[f] for r in b]) for f in LABELS}
    share_a = sum(r["relation_kind"] != "causal_claim" for r in a) / len(a)
    share_b = sum(r["relation_kind"] != "causal_claim" for r in b) / len(b)
    mean = (share_a + share_b) / 2
    return CensusReport(len(a), kappa, {"a": share_a, "b": share_b, "mean": mean},
                        mean > MIXED_THRESHOLD)


@dataclass(frozen=True)
class Leak:
    """One place where both endpoints of a withheld edge co-occur."""

    target: str
    """Withheld edge id."""
    store: str
    """``edge`` or the source_text kind (``source``, ``summary``, ``episode``)."""
    where: str
    """Edge id or source id."""
    excerpt: str
    """The co-occurring text."""


def _mentions(text: str, names: Sequence[str]) -> bool:
    folded = normalize(text)
    return any(normalize(n) in folded for n in names)


def leakage_scan(store: GraphStore, withheld: Sequence[Edge]) -> list[Leak]:
    """Every co-occurrence of a withheld edge's endpoints in the store's other rows."""
    aliases = store.aliases()
    names: dict[str, list[str]] = {}
    for alias, node in aliases.items():
        names.setdefault(node, []).append(alias)
    gone = {e.edge_id for e in withheld}
    others = [e for e in store.edges() if e.edge_id not in gone]
    texts = store.sources()
    leaks: list[Leak] = []
    for t in withheld:
        ends = ([t.cause, *names.get(t.cause, [])], [t.effect, *names.get(t.effect, [])])
        for e in others:
            body = " | ".join(x for x in (e.cause, e.effect, e.condition, e.scope) if x)
            if _mentions(body, ends[0]) and _mentions(body, ends[1]):
                leaks.append(Leak(t.edge_id, "edge", e.edge_id, body))
        for s in texts:
            if _mentions(s.body, ends[0]) and _mentions(s.body, ends[1]):
                leaks.append(Leak(t.edge_id, s.kind, s.source_id, s.body[:160]))
    return leaks


def coverage(withheld: Sequence[Edge], leaks: Sequence[Leak]) -> Mapping[str, int]:
    """Graph coverage (probe 1): withheld edges with a source text naming both endpoints."""
    sourced = {k.target for k in leaks if k.store == "source"}
    return {"withheld": len(withheld), "with_source_text": len(sourced & {e.edge_id
                                                                       for e in withheld})}
