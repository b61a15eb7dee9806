"""Paired analysis of arm runs (seed 003: "Analyse paired by world", "inconclusive is
reported as inconclusive", "equivalence requires the interval to sit inside the margin").

Units are cells: (case, sample). Two arms pair on the units both ran; intervals come from
:func:`rungbench.stats.paired_cluster_bootstrap` resampling whole *worlds* — skins, stages
and repeated samples of one world are one cluster, never independent cases.

Endpoints per arm (:func:`arm_endpoints`): ``accuracy`` (right = correct or correct_non_id,
over every cell; missing and invalid cells count as not right), ``accuracy_exact_nonid``
(exact items plus non-identifiable items: the reasoning-aid endpoint), ``false_answer_on_non_id``
(share of non-identifiable cells answered with a value), ``false_non_id`` (share of
identifiable cells declared not identifiable), ``decision_accuracy`` (decision items),
``brier`` (mean where defined), and per cell ``tokens``, ``tool_calls``, ``cost_usd`` and
``edges_obtained`` (the evidence the arm actually fetched). Each arm also counts the cells
carrying each failure label (every label of ``causal.bench.taxonomy.ALL_LABELS``, zeros
included; the cells' labels come from :mod:`rungbench.causal.ablations.labels`).

No margin is assumed: equivalence is claimed only inside a margin committed in the
preregistration (:mod:`rungbench.causal.ablations.prereg`); without one, an interval near 0
is ``inconclusive``. An arm whose valid answers fall below the preset's registered floor
(``[analysis]`` of ``designs/causal_arms.toml``) gives no verdict: every comparison and
question that uses it says ``insufficient_valid_answers`` with the counts, never
``equivalent``, ``yes`` or ``no``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from rungbench.causal.ablations.arms import Comparison, Matrix, Question, ValidityFloor
from rungbench.causal.bench.report import failure_label_counts, label_rows
from rungbench.errors import InputError
from rungbench.stats.paired import paired_cluster_bootstrap, paired_summary

Row = Mapping[str, Any]
N_BOOT = 2000
INSUFFICIENT = "insufficient_valid_answers"
"""Verdict and answer of a comparison that uses an arm below the validity floor."""
NOT_VALID = ("invalid", "missing")
"""Cell outcomes that are not a valid answer (an abstention is a valid answer)."""

Unit = Callable[[Row], float | None]
"""An endpoint's per-cell value; None when the cell is outside the endpoint's denominator."""


def _right(row: Row) -> float:
    return 1.0 if row["right"] else 0.0


ENDPOINTS: dict[str, Unit] = {
    "accuracy": _right,
    "accuracy_exact_nonid": lambda r: _right(r) if (r["item_type"] == "exact"
                                                    or not r["identifiable"]) else None,
    "false_answer_on_non_id": lambda r: (1.0 if r["outcome"] == "false_answer_on_non_id"
                                         else 0.0) if not r["identifiable"] else None,
    "false_non_id": lambda r: (1.0 if r["outcome"] == "false_non_id" else 0.0)
    if r["identifiable"] else None,
    "decision_accuracy": lambda r: _right(r) if r["decision"] else None,
    "brier": lambda r: None if r["brier"] is None else float(r["brier"]),
    "tokens": lambda r: float(r["tokens"]),
    "tool_calls": lambda r: float(r["tool_calls"]),
    "cost_usd": lambda r: float(r["cost_usd"]),
    "edges_obtained": lambda r: float(r["edges_obtained"]),
}
"""Endpoint name -> per-cell value."""


def arm_endpoints(rows: Sequence[Row]) -> dict[str, dict[str, Any]]:
    """Mean and n of every endpoint over one arm's cells (aggregates only)."""
    out = {}
    for name, unit in ENDPOINTS.items():
        values = [v for v in (unit(r) for r in rows) if v is not None]
        out[name] = {"mean": float(np.mean(values)) if values else None, "n": len(values)}
    return out


def validity(rows: Sequence[Row], floor: ValidityFloor) -> dict[str, Any]:
    """Valid answers of one arm against the registered floor: counts, share, sufficiency."""
    total = len(rows)
    valid = sum(1 for r in rows if r["outcome"] not in NOT_VALID)
    share = valid / total if total else 0.0
    return {"valid": valid, "total": total, "share": share,
            "sufficient": valid >= floor.min_valid_answers and share >= floor.min_valid_share}


def _insufficient(names: Sequence[str], by_arm: Mapping[str, Sequence[Row]],
                  floor: ValidityFloor) -> dict[str, dict[str, Any]] | None:
    """Validity of the named arms when any is below the floor; None when all are above it."""
    counts = {n: validity(by_arm[n], floor) for n in names}
    if all(c["sufficient"] for c in counts.values()):
        return None
    return counts


def _no_verdict(endpoint: str, counts: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    low = ", ".join(f"{n} {c['valid']}/{c['total']}" for n, c in counts.items()
                    if not c["sufficient"])
    return {"endpoint": endpoint, "n": 0, "n_worlds": 0, "mean": None, "ci95": None,
            "verdict": INSUFFICIENT, "why": f"valid answers below the registered floor: {low}",
            "valid": {n: {"valid": c["valid"], "total": c["total"]} for n, c in counts.items()}}


def paired_units(a: Sequence[Row], b: Sequence[Row], endpoint: str
                 ) -> tuple[list[float], list[float], list[str]]:
    """Values of ``endpoint`` on the cells both arms ran, and each unit's world."""
    unit = _endpoint(endpoint)
    index = {(r["case_id"], r["sample"]): r for r in b}
    va, vb, worlds = [], [], []
    for row in a:
        other = index.get((row["case_id"], row["sample"]))
        if other is None:
            continue
        x, y = unit(row), unit(other)
        if x is None or y is None:
            continue
        va.append(x)
        vb.append(y)
        worlds.append(str(row["world_id"]))
    return va, vb, worlds


def _endpoint(name: str) -> Unit:
    if name not in ENDPOINTS:
        raise InputError(f"unknown endpoint {name!r}; known: {', '.join(ENDPOINTS)}",
                         field="endpoint")
    return ENDPOINTS[name]


def verdict_of(low: float, high: float, margin: float | None) -> str:
    """``a_better`` / ``b_better`` when the interval excludes 0; ``equivalent`` when it sits
    inside ±margin; otherwise ``inconclusive`` (never read as equivalence)."""
    if low > 0:
        return "a_better"
    if high < 0:
        return "b_better"
    if margin is not None and -margin < low and high < margin:
        return "equivalent"
    return "inconclusive"


def paired_delta(a: Sequence[Row], b: Sequence[Row], endpoint: str, *, seed: int = 0,
                 margin: float | None, n_boot: int = N_BOOT) -> dict[str, Any]:
    """Delta a − b on ``endpoint`` with its world-cluster interval, discordance and verdict.

    ``margin`` is the preregistered equivalence margin, or None (then never ``equivalent``).
    """
    va, vb, worlds = paired_units(a, b, endpoint)
    if not va:
        return {"endpoint": endpoint, "n": 0, "n_worlds": 0, "mean": None, "ci95": None,
                "verdict": "inconclusive", "why": "no paired cells", "margin": margin}
    summary = paired_summary(va, vb)
    if len(set(worlds)) < 2:
        return {"endpoint": endpoint, "n": len(va), "n_worlds": len(set(worlds)),
                "mean": summary.mean_diff, "ci95": None, "verdict": "inconclusive",
                "why": "fewer than 2 worlds", "margin": margin}
    delta = paired_cluster_bootstrap(va, vb, worlds, n_boot=n_boot, rng=seed)
    return {
        "endpoint": endpoint, "n": delta.n, "n_worlds": delta.n_clusters, "mean": delta.mean,
        "ci95": [delta.low, delta.high], "mean_a": summary.mean_a, "mean_b": summary.mean_b,
        "discordance": summary.discordance, "mcnemar_p": summary.mcnemar_p,
        "verdict": verdict_of(delta.low, delta.high, margin), "margin": margin,
    }


def compared_delta(by_arm: Mapping[str, Sequence[Row]], a: str, b: str, endpoint: str,
                   floor: ValidityFloor, *, seed: int = 0, margin: float | None
                   ) -> dict[str, Any]:
    """:func:`paired_delta` of arms ``a`` − ``b``, or no verdict when either is below the
    validity floor (``insufficient_valid_answers`` with each arm's valid/total)."""
    counts = _insufficient([a, b], by_arm, floor)
    if counts is not None:
        return {**_no_verdict(endpoint, counts), "margin": margin}
    return paired_delta(by_arm[a], by_arm[b], endpoint, seed=seed, margin=margin)


def isolation_table(by_arm: Mapping[str, Sequence[Row]], comparisons: Sequence[Comparison],
                    floor: ValidityFloor, endpoint: str = "accuracy", *, seed: int = 0,
                    margin: float | None) -> list[dict[str, Any]]:
    """The seed's "what each comparison isolates" table for the arms that ran."""
    return [{"a": c.a, "b": c.b, "isolates": c.isolates,
             **compared_delta(by_arm, c.a, c.b, endpoint, floor, seed=seed, margin=margin)}
            for c in comparisons if c.a in by_arm and c.b in by_arm]


ANSWERS = {"a_better": "yes", "b_better": "no", "equivalent": "no",
           "inconclusive": "inconclusive", INSUFFICIENT: INSUFFICIENT}
"""Question answer from the verdict of its delta ("no" needs an interval below 0, or one
inside a preregistered margin)."""


def answer_question(q: Question, by_arm: Mapping[str, Sequence[Row]], floor: ValidityFloor,
                    *, seed: int = 0, margin: float | None) -> dict[str, Any]:
    """One of the three questions: yes / no / inconclusive (or insufficient_valid_answers),
    with its endpoint and interval."""
    base = {"id": q.id, "question": q.text, "a": q.a, "b": q.b, "endpoint": q.endpoint}
    if q.a not in by_arm or q.b not in by_arm:
        return {**base, "answer": "inconclusive", "why": f"arms {q.a} and {q.b} did not both run",
                "mean": None, "ci95": None}
    delta = compared_delta(by_arm, q.a, q.b, q.endpoint, floor, seed=seed, margin=margin)
    answer = ANSWERS[delta["verdict"]]
    why = delta.get("why") or f"{q.a} − {q.b} on {q.endpoint}: {delta['verdict']}"
    return {**base, "answer": answer, "why": why, **{k: delta[k] for k in (
        "mean", "ci95", "n", "n_worlds", "verdict")},
        **({"valid": delta["valid"]} if "valid" in delta else {})}


def ablation_report(matrix: Matrix, by_arm: Mapping[str, Sequence[Row]], *, seed: int = 0,
                    margin: float | None = None) -> dict[str, Any]:
    """Per-arm endpoints and valid answers, the isolation table and the three questions
    (aggregates only). ``margin`` is a preregistered equivalence margin, or None."""
    floor = matrix.floor
    return {
        "matrix": matrix.name, "matrix_id": matrix.id, "matrix_digest": matrix.digest,
        "arms": {name: {"label": matrix.arm(name).label, "arm_digest": matrix.arm(name).digest(),
                        "cells": len(rows), "n_worlds": len({r["world_id"] for r in rows}),
                        "valid": validity(rows, floor), "endpoints": arm_endpoints(rows),
                        "failure_labels": failure_label_counts([dict(r) for r in rows])}
                 for name, rows in by_arm.items()},
        "isolation": isolation_table(by_arm, matrix.comparisons, floor, seed=seed,
                                     margin=margin),
        "questions": [answer_question(q, by_arm, floor, seed=seed, margin=margin)
                      for q in matrix.questions],
        "margin": margin, "bootstrap": {"n_boot": N_BOOT, "cluster": "world", "seed": seed},
    }


def to_markdown(report: Mapping[str, Any]) -> str:
    """The report as Markdown tables."""
    lines = ["# Causal ablations", "", "| arm | cells | valid | accuracy | exact+nonID "
             "| false-ans-nonID | false nonID | Brier | tokens/cell | tool calls/cell "
             "| cost/cell |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, arm in report["arms"].items():
        e, v = arm["endpoints"], arm["valid"]
        mark = "" if v["sufficient"] else " (below floor)"
        means = " | ".join(_f(e[k]["mean"]) for k in (
            "accuracy", "accuracy_exact_nonid", "false_answer_on_non_id", "false_non_id",
            "brier", "tokens", "tool_calls", "cost_usd"))
        lines.append(f"| {name} | {arm['cells']} | {v['valid']}/{v['total']}{mark} | {means} |")
    lines += ["", "| comparison | isolates | delta | 95% CI (world clusters) | verdict |",
              "| --- | --- | --- | --- | --- |"]
    for row in report["isolation"]:
        lines.append(f"| {row['a']} − {row['b']} | {row['isolates']} | {_f(row['mean'])} | "
                     f"{_ci(row['ci95'])} | {row['verdict']} |")
    lines += ["", "| question | answer | endpoint | delta | 95% CI |",
              "| --- | --- | --- | --- | --- |"]
    for q in report["questions"]:
        lines.append(f"| {q['id']} {q['question']} | **{q['answer']}** | {q['endpoint']} "
                     f"({q['a']} − {q['b']}) | {_f(q['mean'])} | {_ci(q['ci95'])} |")
    lines += label_table(report["arms"])
    margin = report.get("margin")
    lines += ["", "Equivalence margin: " + ("none committed (an interval near 0 is inconclusive)"
                                          if margin is None else f"±{margin:g} (preregistered)")]
    return "\n".join(lines) + "\n"


def label_table(arms: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Markdown lines: cells carrying each failure label, one column per arm, every label of
    the seed's 22 and the project's listed (a zero is a result)."""
    names = list(arms)
    counts = {n: arms[n].get("failure_labels", {}) for n in names}
    merged: dict[str, int] = {}
    for c in counts.values():
        for label, k in c.items():
            merged[label] = merged.get(label, 0) + int(k)
    lines = ["", "## Failure labels", "", "| label | evidence | " + " | ".join(names) + " |",
             "| --- | --- | " + " | ".join("---" for _ in names) + " |"]
    for label, evidence, _ in label_rows(merged):
        cells = " | ".join(str(int(counts[n].get(label, 0))) for n in names)
        lines.append(f"| {label} | {evidence} | {cells} |")
    return lines


def _f(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def _ci(ci: Sequence[float] | None) -> str:
    return "—" if ci is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]"
