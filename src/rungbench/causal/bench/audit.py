"""Shortcut audits of a built bench (seed 003 "World model", "Research synthesis").

- **Listing order.** "The reference generator originally listed variables in
  causal order; edge direction agreed with listing position 100% of the time.
  After shuffling: 49%." We measure both on the bench: *before* on the causal
  order kept privately, *after* on the listings agents see. Gate: after ≤ 0.55.
- **Nonsense-skin invariance.** A skin renames variables only. Structurally:
  every domain-skin case, with names replaced by placeholders in listing order,
  must be byte-identical to its nonsense-skin twin. Behaviourally (given a run):
  accuracy on domain vs nonsense twins, paired by item, clustered by world.
- **Varsortability** (Reisach, Seiler & Weichwald 2021). For items exposing
  numeric samples: the fraction of true edges pointing from lower to higher
  marginal variance (ties count one half), raw and after standardization, and
  the accuracy of the sort-by-variance baseline that orients every true
  adjacency from the lower- to the higher-variance end.

:func:`audit_bench` reads the bench (and run) only through ``causal.bench.verified``;
the audits themselves are pure functions of the parsed records.
"""

from __future__ import annotations

import pathlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rungbench.causal.bench.verified import (
    CASES,
    EPISODE_CASES,
    ORACLE,
    WORLDS,
    open_bench,
    open_run,
    run_verdicts,
)
from rungbench.evidence.canonical import canonical_bytes
from rungbench.stats import paired_cluster_bootstrap

LISTING_GATE = 0.55
"""Largest acceptable agreement of edge direction with listing position (seed 003 stage 3)."""


Records = Sequence[Mapping[str, Any]]
"""Parsed JSON records (cases, worlds, oracle records or verdict rows)."""


def listing_agreement(listing: Sequence[str], edges: Sequence[tuple[str, str]]) -> tuple[int, int]:
    """Return (edges whose parent is listed before its child, edges) for one listing."""
    pos = {name: i for i, name in enumerate(listing)}
    pairs = [(a, b) for a, b in edges if a in pos and b in pos]
    return sum(1 for a, b in pairs if pos[a] < pos[b]), len(pairs)


def _listed_graph(case: Mapping[str, Any]) -> tuple[list[str], list[tuple[str, str]]] | None:
    ev = case["evidence"]
    if ev["kind"] == "mechanism":
        variables = ev["payload"]["variables"]
    elif ev["kind"] == "telemetry":  # records/2 incident cases: mechanism beside tool outputs
        variables = ev["payload"]["mechanism"]["variables"]
    elif ev["kind"] == "graph_joint":
        variables = ev["payload"]["graph"]
    else:
        return None
    listing = [v["name"] for v in variables]
    edges = [(p, v["name"]) for v in variables for p in v["parents"]]
    return listing, edges


def listing_order_audit(worlds: Records, cases: Records) -> dict[str, Any]:
    """Edge/listing agreement before (causal order) and after shuffling (public listings)."""
    before = [0, 0]
    for w in worlds:
        edges = [(p, v["name"]) for v in w["world"]["variables"] for p in v["parents"]]
        k, n = listing_agreement(w["causal_order"], edges)
        before[0] += k
        before[1] += n
    after = [0, 0]
    seen: set[tuple[str, str]] = set()
    for case in cases:
        graph = _listed_graph(case)
        key = (case["world_id"], case["skin"])
        if graph is None or key in seen:
            continue
        seen.add(key)
        k, n = listing_agreement(*graph)
        after[0] += k
        after[1] += n
    rate_after = after[0] / after[1] if after[1] else None
    return {
        "before": {"agree": before[0], "edges": before[1],
                   "rate": before[0] / before[1] if before[1] else None},
        "after": {"agree": after[0], "edges": after[1], "rate": rate_after},
        "gate": LISTING_GATE,
        "pass": rate_after is not None and rate_after <= LISTING_GATE,
    }


def public_listing_share(cases: Records) -> dict[str, Any]:
    """Edge/listing agreement over the distinct mechanisms of the domain-skin public cases.

    For records/2 cases (no world order is published beside them): the share of edges
    whose parent is listed before its child, against the 0.55 gate.
    """
    seen: set[bytes] = set()
    agree = total = 0
    for c in cases:
        graph = _listed_graph(c)
        if c["skin"] == "nonsense" or graph is None:
            continue
        key = canonical_bytes(graph)
        if key in seen:
            continue
        seen.add(key)
        a, n = listing_agreement(*graph)
        agree, total = agree + a, total + n
    rate = agree / total if total else None
    return {"agree": agree, "edges": total, "rate": rate, "gate": LISTING_GATE,
            "pass": rate is None or rate <= LISTING_GATE}


def skeleton_form(case: Mapping[str, Any]) -> bytes:
    """The case with every variable name replaced by its listing index (skin-free form)."""
    graph = _listed_graph(case)
    names = graph[0] if graph is not None else list(case["evidence"]["payload"]["joint"]["names"])
    pattern = re.compile(r"\b(" + "|".join(re.escape(n) for n in names) + r")\b")
    index = {n: f"<v{i}>" for i, n in enumerate(names)}

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {index.get(k, pattern.sub(lambda m: index[m.group(0)], k)): strip(v)
                    for k, v in value.items()}
        if isinstance(value, list):
            return [strip(v) for v in value]
        if isinstance(value, str):
            return pattern.sub(lambda m: index[m.group(0)], value)
        return value

    # episode_id (records/2) ends in the skin's initial, like case_id.
    body = {k: v for k, v in case.items() if k not in ("case_id", "skin", "episode_id")}
    return canonical_bytes(strip(body))


def skin_structure_audit(cases: Records) -> dict[str, Any]:
    """Count twin pairs whose skin-free forms differ (must be zero)."""
    by_id = {c["case_id"]: c for c in cases}
    pairs = mismatched = 0
    examples = []
    for cid, case in by_id.items():
        if case["skin"] == "nonsense":
            continue
        twin = by_id.get(cid[:-1] + "n")
        if twin is None:
            continue
        pairs += 1
        if skeleton_form(case) != skeleton_form(twin):
            mismatched += 1
            examples.append(cid)
    return {"pairs": pairs, "mismatched": mismatched, "examples": examples[:10],
            "pass": pairs > 0 and mismatched == 0}


def _right(row: Mapping[str, Any]) -> float:
    return float(row["verdict"]["outcome"] in ("correct", "correct_non_id")
                 and not row.get("missing"))


def skin_behaviour_audit(verdicts: Records, *, seed: int = 0) -> dict[str, Any]:
    """Accuracy on domain vs nonsense twins of a scored run, paired by item, by-world clusters."""
    rows = {r["verdict"]["case_id"]: r for r in verdicts}
    a: list[float] = []
    b: list[float] = []
    clusters: list[str] = []
    for cid, row in rows.items():
        twin = rows.get(cid[:-1] + "n")
        if not cid.endswith("d") or twin is None:
            continue
        a.append(_right(row))
        b.append(_right(twin))
        clusters.append(str(row["world_id"]))
    if not a:
        return {"pairs": 0, "pass": False}
    delta = paired_cluster_bootstrap(a, b, clusters, n_boot=2000, rng=seed)
    return {"pairs": len(a), "domain_accuracy": float(np.mean(a)),
            "nonsense_accuracy": float(np.mean(b)), "delta": delta.to_json(),
            "pass": not delta.excludes_zero()}


def varsortability(
    samples: np.ndarray, names: Sequence[str], edges: Sequence[tuple[str, str]]
) -> float | None:
    """Fraction of edges a -> b with var(a) < var(b); ties count one half (Reisach et al. 2021)."""
    if not edges:
        return None
    var = dict(zip(names, samples.var(axis=0), strict=True))
    score = 0.0
    for a, b in edges:
        if np.isclose(var[a], var[b], rtol=0, atol=1e-12):
            score += 0.5
        elif var[a] < var[b]:
            score += 1.0
    return score / len(edges)


def standardize(samples: np.ndarray) -> np.ndarray:
    """Z-score every column (constant columns are centred only)."""
    x = samples.astype(float)
    sd = x.std(axis=0)
    out: np.ndarray = (x - x.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    return out


def sort_by_variance_accuracy(
    samples: np.ndarray, names: Sequence[str], edges: Sequence[tuple[str, str]]
) -> float | None:
    """Share of true adjacencies the sort-by-variance baseline orients correctly.

    The baseline orients each adjacency from the lower- to the higher-variance
    end; ties (all of them after standardization) fall back to listing order.
    """
    if not edges:
        return None
    var = dict(zip(names, samples.var(axis=0), strict=True))
    pos = {n: i for i, n in enumerate(names)}
    right = 0
    for a, b in edges:
        tie = np.isclose(var[a], var[b], rtol=0, atol=1e-12)
        first_is_a = pos[a] < pos[b] if tie else var[a] < var[b]
        right += int(first_is_a)
    return right / len(edges)


def varsortability_audit(cases: Records, oracle_records: Records) -> dict[str, Any]:
    """Varsortability and the sort-by-variance baseline, raw and standardized."""
    oracles = {o["case_id"]: o for o in oracle_records}
    raw_v: list[float] = []
    std_v: list[float] = []
    raw_b: list[float] = []
    std_b: list[float] = []
    for case in cases:
        samples = case["evidence"]["payload"].get("samples")
        edges = oracles[case["case_id"]].get("true_edges")
        if samples is None or not edges:
            continue
        x = np.asarray(samples["rows"], dtype=float)
        names = samples["names"]
        pairs = [(a, b) for a, b in edges]
        for store, fn, data in ((raw_v, varsortability, x), (std_v, varsortability, standardize(x)),
                                (raw_b, sort_by_variance_accuracy, x),
                                (std_b, sort_by_variance_accuracy, standardize(x))):
            value = fn(data, names, pairs)
            if value is not None:
                store.append(value)

    def mean(v: list[float]) -> float | None:
        return float(np.mean(v)) if v else None

    raw_acc = mean(raw_b)
    return {"items": len(raw_v), "varsortability_raw": mean(raw_v),
            # Either sort direction is a usable cue; max(a, 1 - a) is what a shortcut could reach.
            "sort_by_variance_best_direction_raw":
            None if raw_acc is None else max(raw_acc, 1.0 - raw_acc),
            "varsortability_standardized": mean(std_v),
            "sort_by_variance_accuracy_raw": mean(raw_b),
            "sort_by_variance_accuracy_standardized": mean(std_b)}


def audit_bench(bench: pathlib.Path, run: pathlib.Path | None = None) -> dict[str, Any]:
    """Every audit of a built bench (and of a scored run when given), after verifying both."""
    verified = open_bench(bench)
    rows = run_verdicts(open_run(run)) if run is not None else None
    cases = verified.jsonl(CASES)
    out: dict[str, Any] = {
        "listing_order": listing_order_audit(verified.jsonl(WORLDS), cases),
        "skin_structure": skin_structure_audit(cases),
        "varsortability": varsortability_audit(cases, verified.jsonl(ORACLE)),
    }
    if rows is not None:
        out["skin_behaviour"] = skin_behaviour_audit(rows)
    if EPISODE_CASES in verified.digests:
        episode_cases = verified.jsonl(EPISODE_CASES)
        out["listing_order_v2"] = public_listing_share(episode_cases)
        out["skin_structure_v2"] = skin_structure_audit(episode_cases)
    out["pass"] = all(v.get("pass", True) for v in out.values() if isinstance(v, dict))
    return out
