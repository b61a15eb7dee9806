"""Run report: accuracy by family and rung, identification table, calibration, paired delta.

Seed 003 "Deterministic scorer" and "Rules": accuracy counts ``correct`` and
``correct_non_id`` over every scored case (abstentions and invalid lines stay in
the denominator, and so do cases no response line names) with two 95% intervals side by
side: per case (Clopper–Pearson, cases treated as independent) and over worlds (a
cluster bootstrap resampling whole worlds, so a world's items and skin twins move
together); the identification table
puts each response in exactly one cell; calibration is the Brier score with a
reliability table; two agents are compared paired by case with a cluster
bootstrap over worlds ("Stages within a world, domain skins of one world, and
repeated samples are not independent cases").

A run of a bench with episode families (records/2) reports them in the same tables
(``justified_abstain`` — holding back while the evidence leaves several causes — is
right; ``lucky`` is not) and adds a ``next_stage`` block: mean decision, information
and experiment regret per family and the revision rates (seed 003 "Deterministic scorer").

Every report holds the sub-capability table (``subcapabilities``): one row per seed 003
"Observable sub-capabilities" row with its primary metric, or ``not exercised``.

The transfer table (:func:`transfer_table`) gives, per rung, the accuracy on each semantic
mutation of seed 003 "Research synthesis" (original, skin swap, nonsense skin, renaming,
paraphrase) and the transfer gap, mutation minus original, with a cluster-bootstrap
interval over worlds (a mutated case keeps its original's world as its cluster). A
mutation the bench does not hold is ``not built``, never an accuracy of 0.
"""

from __future__ import annotations

import itertools
import pathlib
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from rungbench.causal.bench.evaluate import episode_summary
from rungbench.causal.bench.records import EPISODE_OUTCOMES, MUTATIONS, OUTCOMES, RUNG_NAMES
from rungbench.causal.bench.subcapabilities import subcapability_table, to_markdown_lines
from rungbench.causal.bench.taxonomy import ALL_LABELS, PROJECT_EVIDENCE, TAXONOMY
from rungbench.causal.bench.verified import open_run, run_verdicts
from rungbench.errors import InputError
from rungbench.stats import (
    clopper_pearson,
    cluster_ratio_draws,
    nan_interval,
    paired_cluster_bootstrap,
)

RIGHT = ("correct", "correct_non_id", "justified_abstain")
"""Outcomes that count as right (``justified_abstain`` occurs on records/2 items only)."""

CALIBRATION_BINS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
"""Confidence bin edges of the reliability table (last bin closed)."""


INTERVALS = {
    "ci95": "Clopper–Pearson 95% interval treating every case as independent (per case)",
    "ci95_cluster_bootstrap": "95% percentile interval of a bootstrap resampling whole worlds "
    "(a world's items and their nonsense-skin twins move together); null with < 2 worlds",
}
"""What each accuracy interval of the report is (printed in the JSON and the tables)."""

CLUSTER_BOOT = 2000
"""Bootstrap resamples of the per-group cluster interval."""


def load_rows(run: pathlib.Path) -> list[dict[str, Any]]:
    """The private per-case verdict rows of a scored run, after verifying its seal."""
    return run_verdicts(open_run(run))


def _is_right(row: Mapping[str, Any]) -> bool:
    return bool(row["verdict"]["outcome"] in RIGHT and not row.get("missing"))


def cluster_interval(rows: list[Mapping[str, Any]], *, seed: int = 0) -> list[float] | None:
    """95% cluster-bootstrap interval of accuracy over worlds, or None with under 2 worlds."""
    worlds = [str(r.get("world_id")) for r in rows]
    if len(set(worlds)) < 2:
        return None
    right = [float(_is_right(r)) for r in rows]
    d = paired_cluster_bootstrap(right, [0.0] * len(right), worlds, n_boot=CLUSTER_BOOT,
                                 rng=seed)
    return [d.low, d.high]


def accuracy(rows: Iterable[Mapping[str, Any]], *, seed: int = 0) -> dict[str, Any]:
    """k right of n: per-case Clopper–Pearson and cluster-bootstrap (over worlds) 95% CIs.

    ``n`` counts every bench case of the group, missing ones included.
    """
    rows = list(rows)
    k, n = sum(_is_right(r) for r in rows), len(rows)
    lo, hi = clopper_pearson(k, n) if n else (0.0, 1.0)
    return {"k": k, "n": n, "accuracy": k / n if n else None, "ci95": [lo, hi],
            "ci95_cluster_bootstrap": cluster_interval(rows, seed=seed),
            "n_worlds": len({str(r.get("world_id")) for r in rows})}


def accuracy_by(rows: list[dict[str, Any]], key: str, *, seed: int = 0
                ) -> dict[str, dict[str, Any]]:
    """Accuracy per value of ``key`` (e.g. ``family``, ``rung``)."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[str(r.get(key))].append(r)
    return {g: accuracy(rs, seed=seed) for g, rs in sorted(groups.items())}


def identification_table(rows: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Truth (identifiable / not) × response cell counts (seed 003 three-way table).

    Cases with no response line sit in their own ``missing`` column.
    """
    cells = EPISODE_OUTCOMES if any(r.get("version") for r in rows) else OUTCOMES
    table = {t: {o: 0 for o in (*cells, "missing")}
             for t in ("identifiable", "not_identifiable")}
    for r in rows:
        if r.get("identifiable") is None:
            continue
        truth = "identifiable" if r["identifiable"] else "not_identifiable"
        table[truth]["missing" if r.get("missing") else r["verdict"]["outcome"]] += 1
    return table


def calibration(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean Brier over cases with a Brier term, and the reliability table by confidence bin."""
    briers = [r["verdict"]["brier"] for r in rows if r["verdict"].get("brier") is not None]
    bins = []
    edges = CALIBRATION_BINS
    for i, (lo, hi) in enumerate(itertools.pairwise(edges)):
        last = i == len(edges) - 2
        members = [r for r in rows if r["verdict"].get("brier") is not None
                   and r.get("confidence") is not None
                   and lo <= r["confidence"] and (r["confidence"] < hi or last)]
        bins.append({
            "bin": [lo, hi], "n": len(members),
            "mean_confidence": float(np.mean([r["confidence"] for r in members])) if members
            else None,
            "accuracy": float(np.mean([_is_right(r) for r in members])) if members else None,
        })
    return {"n": len(briers), "brier": float(np.mean(briers)) if briers else None, "bins": bins}


def failure_label_counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    """How many failed cases carry each taxonomy label (a case may carry several).

    Every label of :data:`taxonomy.ALL_LABELS` is listed, in its order, with 0 where no case
    carries it (a zero is a result); a label outside it would follow, sorted.
    """
    counts: dict[str, int] = dict.fromkeys(ALL_LABELS, 0)
    extra: dict[str, int] = defaultdict(int)
    for r in rows:
        for label in r.get("labels", []):
            if label in counts:
                counts[label] += 1
            else:
                extra[label] += 1
    return {**counts, **dict(sorted(extra.items()))}


def label_rows(counts: Mapping[str, int]) -> list[tuple[str, str, int]]:
    """(label, the evidence that licenses it, failed cases) per label, in report order."""
    evidence = {f.name: f.evidence for f in TAXONOMY}
    evidence.update(PROJECT_EVIDENCE)
    order = [*ALL_LABELS, *sorted(k for k in counts if k not in ALL_LABELS)]
    return [(k, evidence.get(k, "—"), int(counts.get(k, 0))) for k in order]


def paired_delta(
    a_rows: list[dict[str, Any]], b_rows: list[dict[str, Any]], *, seed: int = 0
) -> dict[str, Any]:
    """Accuracy of A minus B on their common cases, cluster-bootstrapped over worlds."""
    b_by_case = {r["verdict"]["case_id"]: r for r in b_rows}
    a_vals, b_vals, clusters = [], [], []
    for r in a_rows:
        other = b_by_case.get(r["verdict"]["case_id"])
        if other is None or r.get("world_id") is None:
            continue
        a_vals.append(float(_is_right(r)))
        b_vals.append(float(_is_right(other)))
        clusters.append(str(r["world_id"]))
    if not a_vals:
        return {"n": 0}
    d = paired_cluster_bootstrap(a_vals, b_vals, clusters, n_boot=2000, rng=seed)
    return d.to_json() | {"excludes_zero": d.excludes_zero()}


NONSENSE = "nonsense"
"""The nonsense skin's name (``skins.SKINS``): its cases are the ``nonsense_skin`` mutation."""

NOT_BUILT = "not built"
"""What the transfer table says of a mutation the bench holds no case of."""


def mutation_of(row: Mapping[str, Any]) -> str | None:
    """The mutation a verdict row's case is (:data:`records.MUTATIONS`), or None for a case
    outside the transfer table (a diagnostic twin, whose world differs; a records/2 case)."""
    if row.get("version") is not None or row.get("twin") is not None:
        return None
    if row.get("mutation") is not None:
        return str(row["mutation"])
    return "nonsense_skin" if row.get("skin") == NONSENSE else "original"


def transfer_gap(mutated: Sequence[Mapping[str, Any]],
                 original: Sequence[Mapping[str, Any]], *, seed: int = 0) -> dict[str, Any]:
    """Accuracy on ``mutated`` minus accuracy on ``original``, with a 95% interval.

    Both accuracies are recomputed on each resample of whole worlds (clusters), so a
    world's original cases and their mutations move together; the interval is the
    percentile interval of the resampled differences (``stats.cluster_ratio_draws``). It is
    null with under 2 worlds, or when too few resamples hold cases of both groups.
    """
    rows = [*mutated, *original]
    right = [float(_is_right(r)) for r in rows]
    is_mut = [1.0] * len(mutated) + [0.0] * len(original)
    worlds = [str(r.get("world_id")) for r in rows]
    gap = (sum(right[:len(mutated)]) / len(mutated)
           - sum(right[len(mutated):]) / len(original))
    interval: list[float] | None = None
    dropped = 0
    if len(set(worlds)) >= 2:
        try:
            _, draws = cluster_ratio_draws(
                {"mutated": ([r * m for r, m in zip(right, is_mut, strict=True)], is_mut),
                 "original": ([r * (1 - m) for r, m in zip(right, is_mut, strict=True)],
                              [1 - m for m in is_mut])},
                worlds, n_boot=CLUSTER_BOOT, rng=seed)
            low, high, dropped = nan_interval(draws["mutated"] - draws["original"])
            interval = [low, high]
        except InputError:
            interval = None
    return {"gap": gap, "ci95_cluster_bootstrap": interval, "resamples_dropped": dropped,
            "excludes_zero": interval is not None and (interval[0] > 0 or interval[1] < 0)}


def transfer_table(rows: list[dict[str, Any]], *, seed: int = 0) -> dict[str, Any]:
    """Per rung, per mutation: accuracy and the transfer gap against the original cases.

    Rungs are keyed like ``by_rung`` (``"1"``, ``"2"``, ``"3"``). A mutation with no case
    in a rung is ``{"built": false}``; the original row carries no gap. Each gap compares a
    mutation with the original cases of the worlds that hold it (``k_original`` right of
    ``n_original``), so a family built without that mutation (imported networks, say) does
    not enter it.
    """
    out: dict[str, Any] = {}
    for rung in sorted({str(r["rung"]) for r in rows if mutation_of(r) is not None}):
        groups: dict[str, list[dict[str, Any]]] = {m: [] for m in MUTATIONS}
        for r in rows:
            m = mutation_of(r)
            if m is not None and str(r["rung"]) == rung:
                groups[m].append(r)
        original = groups["original"]
        block: dict[str, Any] = {}
        for m, rs in groups.items():
            if not rs:
                block[m] = {"built": False}
                continue
            k = sum(_is_right(r) for r in rs)
            block[m] = {"built": True, "k": k, "n": len(rs), "accuracy": k / len(rs),
                        "n_worlds": len({str(r.get("world_id")) for r in rs})}
            held = {str(r.get("world_id")) for r in rs}
            base = [r for r in original if str(r.get("world_id")) in held]
            if m != "original" and base:
                block[m].update(transfer_gap(rs, base, seed=seed), n_original=len(base),
                                k_original=sum(_is_right(r) for r in base))
        out[rung] = block
    return out


def build_report(
    run: pathlib.Path, other: pathlib.Path | None = None, *, seed: int = 0
) -> dict[str, Any]:
    """The report of one run, with the paired comparison to ``other`` when given."""
    rows = load_rows(run)
    out: dict[str, Any] = {
        "run": str(run),
        "intervals": INTERVALS,
        "overall": accuracy(rows, seed=seed),
        "by_family": accuracy_by(rows, "family", seed=seed),
        "by_rung": accuracy_by(rows, "rung", seed=seed),
        "by_item_type": accuracy_by(rows, "item_type", seed=seed),
        "identification": identification_table(rows),
        "calibration": calibration(rows),
        "failure_labels": failure_label_counts(rows),
        "subcapabilities": subcapability_table(rows, seed=seed),
        "transfer": transfer_table(rows, seed=seed),
    }
    episode_rows = [r for r in rows if r.get("version") is not None]
    if episode_rows:
        out["next_stage"] = episode_summary(episode_rows)
    if other is not None:
        out["paired"] = {"other": str(other), "delta": paired_delta(rows, load_rows(other),
                                                                      seed=seed)}
    return out


def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def _acc_table(title: str, groups: Mapping[str, Mapping[str, Any]]) -> list[str]:
    lines = [f"## {title}", "",
             "| group | k/n | worlds | accuracy | 95% CI per case (Clopper–Pearson) "
             "| 95% CI over worlds (cluster bootstrap) |",
             "| --- | --- | --- | --- | --- | --- |"]
    for g, a in groups.items():
        lines.append(f"| {g} | {a['k']}/{a['n']} | {a['n_worlds']} | {_fmt(a['accuracy'])} | "
                     f"{_interval(a['ci95'])} | {_interval(a['ci95_cluster_bootstrap'])} |")
    return [*lines, ""]


def _interval(ci: list[float] | None) -> str:
    return "—" if ci is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def to_markdown(report: Mapping[str, Any]) -> str:
    """Render a report as Markdown."""
    o = report["overall"]
    lines = [f"# Causal benchmark report: {report['run']}", "",
             f"Overall: {o['k']}/{o['n']} right ({_fmt(o['accuracy'])}; 95% CI per case "
             f"(Clopper–Pearson) {_interval(o['ci95'])}; 95% CI over {o['n_worlds']} worlds "
             f"(cluster bootstrap) {_interval(o['ci95_cluster_bootstrap'])}).", ""]
    lines += _acc_table("Accuracy by family", report["by_family"])
    lines += _acc_table("Accuracy by rung", report["by_rung"])
    lines += _acc_table("Accuracy by item type", report["by_item_type"])
    lines += transfer_lines(report.get("transfer", {}))
    cells_order = tuple(next(iter(report["identification"].values())))
    lines += ["## Identification table", "", "| truth | " + " | ".join(cells_order) + " |",
              "| --- |" + " --- |" * len(cells_order)]
    for truth, cells in report["identification"].items():
        lines.append(f"| {truth} | " + " | ".join(str(cells[c]) for c in cells_order) + " |")
    cal = report["calibration"]
    lines += ["", "## Calibration", "", f"Brier: {_fmt(cal['brier'])} over {cal['n']} cases.", "",
              "| confidence bin | n | mean confidence | accuracy |", "| --- | --- | --- | --- |"]
    for b in cal["bins"]:
        lines.append(f"| [{b['bin'][0]:.1f}, {b['bin'][1]:.1f}] | {b['n']} | "
                     f"{_fmt(b['mean_confidence'])} | {_fmt(b['accuracy'])} |")
    lines += ["", "## Failure labels", "",
              "Every label of seed 003's taxonomy, with the evidence that licenses it; a "
              "failure no licensed mechanism shows is `unexplained`.", "",
              "| label | evidence that licenses it | failed cases |", "| --- | --- | --- |"]
    lines += [f"| {k} | {e} | {n} |" for k, e, n in label_rows(report["failure_labels"])]
    lines += ["", *to_markdown_lines(report["subcapabilities"])]
    if "next_stage" in report:
        lines += _episode_lines(report["next_stage"])
    if "paired" in report:
        d = report["paired"]["delta"]
        lines += ["", "## Paired difference", ""]
        if d.get("n"):
            lines.append(f"Accuracy(this) − accuracy({report['paired']['other']}) = "
                         f"{d['mean']:+.3f}, 95% cluster-bootstrap CI [{d['low']:+.3f}, "
                         f"{d['high']:+.3f}] over {d['n_clusters']} worlds ({d['n']} paired cases)"
                         + ("." if d["excludes_zero"] else "; inconclusive (CI includes 0)."))
        else:
            lines.append("No common cases.")
    return "\n".join(lines) + "\n"


def transfer_lines(table: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The transfer table as Markdown: one row per rung and mutation."""
    lines = ["## Transfer across mutations", "",
             "Accuracy per rung on the original cases and on each semantic mutation, and the "
             "transfer gap (mutation − original) with a 95% cluster-bootstrap interval over "
             "worlds. Each gap is against the original cases of the worlds that hold that "
             "mutation (k/n in brackets). A mutation the bench does not hold is 'not built'.",
             "",
             "| rung | mutation | k/n | worlds | accuracy | gap vs original (its originals) "
             "| 95% CI over worlds (cluster bootstrap) |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for rung, block in table.items():
        name = f"{rung} ({RUNG_NAMES[int(rung)]})" if rung in ("1", "2", "3") else rung
        for m, a in block.items():
            if not a["built"]:
                lines.append(f"| {name} | {m} | {NOT_BUILT} | — | {NOT_BUILT} | — | — |")
                continue
            gap = (f"{a['gap']:+.3f} ({a['k_original']}/{a['n_original']})" if "gap" in a
                   else "—")
            ci = a.get("ci95_cluster_bootstrap")
            lines.append(f"| {name} | {m} | {a['k']}/{a['n']} | {a['n_worlds']} | "
                         f"{_fmt(a['accuracy'])} | {gap} | "
                         f"{'—' if ci is None else f'[{ci[0]:+.3f}, {ci[1]:+.3f}]'} |")
    return [*lines, ""]


def _episode_lines(block: Mapping[str, Any]) -> list[str]:
    lines = ["", "## Next-stage families (records/2)", "",
             "| family | n | missing | outcomes | mean decision regret | mean info regret "
             "| mean experiment regret |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for fam, b in block["families"].items():
        oc = ", ".join(f"{k} {n}" for k, n in b["outcomes"].items()) or "—"
        lines.append(f"| {fam} | {b['n']} | {b['missing']} | {oc} | "
                     f"{_fmt(b.get('mean_decision_regret'))} | {_fmt(b.get('mean_info_regret'))} "
                     f"| {_fmt(b.get('mean_experiment_regret'))} |")
    rev = block.get("revision")
    if rev:
        lines += ["", f"Revision: accuracy {_fmt(rev['revision_accuracy'])} "
                  f"({rev['revised_right']}/{rev['should_change']}), stale-belief rate "
                  f"{_fmt(rev['stale_belief_rate'])} ({rev['stale']}/{rev['refuted']}), "
                  f"collateral-retraction rate {_fmt(rev['collateral_retraction_rate'])} "
                  f"({rev['retracted']}/{rev['supported']})."]
    return lines
