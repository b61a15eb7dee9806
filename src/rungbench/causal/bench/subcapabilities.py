"""The sub-capability table: seed 003's "Observable sub-capabilities", each with its metric.

One row per sub-capability of :data:`SEED_SUBCAPABILITIES` (copied from the seed's table,
in its order), each holding the primary metric(s) the seed names, computed from the scored
rows of the families whose cases ask for that behaviour:

=============================  ================================================  ===========
sub-capability                 metric as computed here (unit = one scored case)  cases
=============================  ================================================  ===========
Hypothesis formation           Recall@1: named cause = true cause (a response    root-cause
                               names one cause, so k = 1; an abstention, an      diagnosis
                               invalid or a missing answer lists none)
Confounder recognition         accuracy (right = ``correct``/``correct_non_id``) association,
                                                                                 confounding
Mechanism representation       directed edge F1 vs the true DAG (no edges: 0,    discovery
                               CONTRACTS §3); sign and condition F1: no item
                               asks for signs or conditions, so never exercised
Experimental discrimination    information regret max EIG − EIG(x)               experiment
Effect estimation              |v̂ − v| on identifiable rung-2 value items         rung 2
Intervention selection         decision regret E[L(a)] − min E[L]                action menu
Counterfactual consistency     |v̂ − v| on rung-3 value items; violations: a      rung 3
                               rung-3 value answer matching the population rung-2
                               value (factual evidence ignored) or the
                               resampled value (fresh noise, not the abduced)
Model revision                 revision accuracy and collateral-retraction rate  revision
                               per stage transition (``revision.revision_metrics``)
=============================  ================================================  ===========

A metric whose cases no family of the run holds is ``not exercised`` (never 0). Every
metric is a mean over its units, with ``n``, the worlds, the families that fed it and a
95% cluster-bootstrap interval over worlds (``rungbench.stats.cluster_tests``; null with
under 2 worlds), so a world's items and skin twins move together. Means of regrets and
errors are over the cases whose response carries the payload; ``cases`` counts every case
that asks for it (the difference is abstentions, invalid and missing answers).

Pure: rows in (``evaluate.verdict_row`` rows, or ``episode_runs`` stage rows), table out.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rungbench.causal.bench.records import EpisodeOracle, PrivateOracle
from rungbench.causal.bench.revision import revision_metrics
from rungbench.causal.bench.taxonomy import INT_CF, NOISE_REUSE, carries
from rungbench.stats import cluster_tests

__all__ = [
    "CLUSTER_BOOT", "CONFOUNDER_FAMILIES", "NEVER_ASKED", "NOT_EXERCISED", "NO_VALUE",
    "SEED_SUBCAPABILITIES", "SeedSubcapability", "Unit", "asked_payloads",
    "consistency_violation", "metric_block", "metric_text", "revision_units", "row_asks",
    "subcapability_table", "to_markdown_lines",
]


@dataclass(frozen=True)
class SeedSubcapability:
    """One row of seed 003's "Observable sub-capabilities" table, in the seed's words."""

    name: str
    """The sub-capability (first column)."""
    behaviour: str
    """The observable behaviour a scorer checks without an LLM judge (second column)."""
    primary_metric: str
    """The primary metric (third column)."""


SEED_SUBCAPABILITIES: tuple[SeedSubcapability, ...] = (
    SeedSubcapability("Hypothesis formation",
                      "Lists the true cause among ≤ k hypotheses before testing",
                      "Recall@k of true root cause"),
    SeedSubcapability("Confounder recognition",
                      "Names an open back-door path, or declines a causal reading of a "
                      "correlation",
                      "Accuracy on association-vs-causation items"),
    SeedSubcapability("Mechanism representation",
                      "States direction, sign, conditions and mediators that match the SCM",
                      "Edge/sign/condition F1 vs oracle"),
    SeedSubcapability("Experimental discrimination",
                      "Picks the test that maximally separates live hypotheses",
                      "Information-gain regret"),
    SeedSubcapability("Effect estimation",
                      "Returns the interventional quantity within tolerance",
                      "Absolute error vs exact oracle"),
    SeedSubcapability("Intervention selection",
                      "Picks the repair that minimizes expected loss after cost",
                      "Decision regret"),
    SeedSubcapability("Counterfactual consistency",
                      "Same-episode answer agrees with factual evidence (consistency axiom) "
                      "and with the abduced noise",
                      "Absolute error; consistency violations"),
    SeedSubcapability("Model revision",
                      "Retracts or reweights a hypothesis when an intervention contradicts "
                      "it, keeping independently supported beliefs",
                      "Revision accuracy; collateral retractions"),
)
"""Seed 003 "Observable sub-capabilities", row by row (``tests/causal/bench/data/`` holds the
seed's table verbatim and a test parses it against this constant)."""

NOT_EXERCISED = "not exercised"
"""Status of a metric no case of the run asks for (never reported as 0)."""

NO_VALUE = "no value"
"""Status of a metric its cases ask for but no unit carries (every response abstained, was
invalid or missing, or no revision transition qualifies)."""

NEVER_ASKED: dict[str, str] = {
    "sign_f1": "Sign F1 vs oracle",
    "condition_f1": "Condition F1 vs oracle",
}
"""Metrics of the seed that no item type of records/1 or records/2 asks for: a response
carries directed edges only (``AgentResponse.edges``), never signs or conditions, so these
are ``not exercised`` in every run until an item asks for them."""

CLUSTER_BOOT = 2000
"""Bootstrap resamples of each metric's interval over worlds."""

_RIGHT = frozenset({"correct", "correct_non_id", "justified_abstain"})
_NAMED_TRUE_CAUSE = frozenset({"correct", "lucky"})
_ANSWERED_POINT = frozenset({"correct", "wrong", "false_answer_on_non_id"})
CONFOUNDER_FAMILIES = ("association_vs_causation", "confounding_reverse_causation")
"""Families whose items ask whether an association is causal (seed 003 "Task families":
fork and latent confounder; confounded and reversed-query variants)."""

Row = Mapping[str, Any]


# ------------------------------------------------------------------ what a case asks


def asked_payloads(oracle: PrivateOracle | EpisodeOracle) -> list[str]:
    """The response payloads a case asks for: ``edges``, ``action``, ``experiment``,
    ``bounds``, ``label`` or ``value`` (stored in each verdict row as ``asks``)."""
    if isinstance(oracle, EpisodeOracle):
        return _episode_payloads(oracle.item_type)
    if oracle.cpdag is not None:
        return ["edges"]
    if oracle.expected_loss is not None:
        return ["action"]
    if oracle.eig_bits is not None:
        return ["experiment"]
    return ["bounds"] if oracle.bounds is not None else ["value"]


def _episode_payloads(item_type: str) -> list[str]:
    return {"diagnosis": ["label", "action"], "experiment": ["experiment"]}.get(
        item_type, ["value"])


def row_asks(row: Row) -> list[str]:
    """A row's ``asks``; for a row scored before the key existed (or an episode-run stage
    row), inferred from its item type and, on records/1, from the payload its verdict
    carries (a decision item's regret)."""
    asks = row.get("asks")
    if isinstance(asks, list):
        return [str(a) for a in asks]
    item_type = str(row.get("item_type"))
    if row.get("version") is not None or "episode_id" in row:
        return _episode_payloads(item_type)
    if item_type == "discovery":
        return ["edges"]
    verdict = row.get("verdict") or {}
    if verdict.get("decision_regret") is not None:
        return ["action"]
    return ["experiment"] if verdict.get("info_regret") is not None else ["value"]


# ------------------------------------------------------------------ per-case values


def _answered(row: Row) -> bool:
    return not row.get("missing") and row["verdict"]["outcome"] != "invalid"


def _outcome_in(row: Row, cells: frozenset[str]) -> float:
    return float(_answered(row) and row["verdict"]["outcome"] in cells)


def _verdict_number(key: str) -> Callable[[Row], float | None]:
    def value(row: Row) -> float | None:
        x = row["verdict"].get(key)
        return None if x is None or not _answered(row) else float(x)
    return value


def _edge_f1(row: Row) -> float:
    structure = row["verdict"].get("structure")
    return float(structure["f1"]) if structure and _answered(row) else 0.0


def consistency_violation(row: Row) -> float | None:
    """1 when a rung-3 answer matches the population rung-2 value (the factual evidence
    ignored) or the resampled value (fresh noise instead of the abduced), else 0; None when
    the case was not answered (nothing to check against the axiom). Only cases asking for a
    value are passed in, so an answer is a point (``taxonomy.rung_labels`` matches it)."""
    if row["verdict"]["outcome"] not in _ANSWERED_POINT or row.get("missing"):
        return None
    labels = list(row.get("labels") or [])
    return float(carries(labels, INT_CF) or carries(labels, NOISE_REUSE))


# ------------------------------------------------------------------ which cases ask


def _is_root_cause_diagnosis(row: Row) -> bool:
    return row.get("family") == "root_cause_debugging" and row.get("item_type") == "diagnosis"


def _asks(payload: str, *, rung: int | None = None,
          identifiable: bool | None = None) -> Callable[[Row], bool]:
    def asks(row: Row) -> bool:
        return (payload in row_asks(row)
                and (rung is None or row.get("rung") == rung)
                and (identifiable is None or row.get("identifiable") is identifiable))
    return asks


# ------------------------------------------------------------------ one metric


@dataclass(frozen=True)
class Unit:
    """One unit a metric averages: its value and the world it clusters in."""

    value: float
    """The unit's value (a 0/1 indicator, an F1, a regret or an absolute error)."""
    world: str
    """World id (the bootstrap cluster)."""
    family: str
    """Family of the case the unit came from."""


def metric_block(key: str, title: str, units: Sequence[Unit], cases: int,
                 case_families: Iterable[str], *, seed: int = 0, counted: bool = False,
                 unit: str = "cases") -> dict[str, Any]:
    """One metric: the mean of ``units`` with n, worlds, families and its interval.

    ``cases``: how many ``unit``s (cases, or revision transitions) ask for it (0 → ``not
    exercised``); ``case_families``: their families (``asked_by``); ``families`` are those
    that fed a unit; ``counted``: units are 0/1, so ``k`` (their sum) is printed.
    """
    out: dict[str, Any] = {"metric": key, "title": title, "unit": unit, "cases": cases,
                           "asked_by": sorted(set(case_families)),
                           "families": sorted({u.family for u in units})}
    if not cases:
        return out | {"status": NOT_EXERCISED, "n": 0, "value": None,
                      "ci95_cluster_bootstrap": None, "n_worlds": 0}
    worlds = [u.world for u in units]
    out |= {"status": "measured" if units else NO_VALUE, "n": len(units),
            "n_worlds": len(set(worlds)),
            "value": sum(u.value for u in units) / len(units) if units else None,
            "ci95_cluster_bootstrap": _interval([u.value for u in units], worlds, seed)}
    if counted:
        out["k"] = int(sum(u.value for u in units))
    return out


def _interval(values: list[float], worlds: list[str], seed: int) -> list[float] | None:
    """95% percentile interval of the mean, resampling whole worlds; None with < 2 worlds."""
    if len(set(worlds)) < 2:
        return None
    test = cluster_tests({"mean": values}, worlds, n_boot=CLUSTER_BOOT, rng=seed)["mean"]
    return [test.low, test.high]


def _case_metric(rows: Sequence[Row], key: str, title: str, asks: Callable[[Row], bool],
                 value: Callable[[Row], float | None], *, seed: int,
                 counted: bool = False) -> dict[str, Any]:
    asked = [r for r in rows if asks(r)]
    units = []
    for r in asked:
        v = value(r)
        if v is not None:
            units.append(Unit(v, str(r.get("world_id")), str(r.get("family"))))
    return metric_block(key, title, units, len(asked), (str(r.get("family")) for r in asked),
                        seed=seed, counted=counted)


def _never_asked(key: str) -> dict[str, Any]:
    return metric_block(key, NEVER_ASKED[key], [], 0, ()) | {
        "why": "no item type asks for it (a response carries directed edges only)"}


# ------------------------------------------------------------------ revision


def revision_units(rows: Sequence[Row]) -> dict[str, list[Unit]]:
    """Per stage transition of every sequential-revision episode: ``revision_accuracy``
    units (transitions whose reference answer changes; 1 when the new answer is it) and
    ``collateral_retraction`` units (transitions whose previous answer stays in the
    identified set; 1 when it was dropped). Seed 003 "Revision items (multi-stage)"."""
    episodes: dict[tuple[str, str], list[Row]] = {}
    for r in rows:
        if r.get("family") == "sequential_revision":
            episodes.setdefault((str(r.get("world_id")), str(r.get("episode_id"))), []).append(r)
    out: dict[str, list[Unit]] = {"revision_accuracy": [], "collateral_retraction": []}
    for (world, _), stages in sorted(episodes.items()):
        ordered = sorted(stages, key=lambda r: int(r["stage"]))
        for prev, cur in itertools.pairwise(ordered):
            c = revision_metrics([(prev.get("identified_set") or [], prev.get("named")),
                                  (cur.get("identified_set") or [], cur.get("named"))])
            if c["should_change"]:
                out["revision_accuracy"].append(
                    Unit(float(c["revised_right"]), world, "sequential_revision"))
            if c["supported"]:
                out["collateral_retraction"].append(
                    Unit(float(c["retracted"]), world, "sequential_revision"))
    return out


def _revision_metrics(rows: Sequence[Row], seed: int) -> list[dict[str, Any]]:
    stages = [r for r in rows if r.get("family") == "sequential_revision"]
    transitions = len(stages) - len({(r.get("world_id"), r.get("episode_id")) for r in stages})
    units = revision_units(rows)
    titles = {"revision_accuracy": "Revision accuracy (changed to the answer the new "
                                   "evidence identifies, when it should change)",
              "collateral_retraction": "Collateral-retraction rate (dropped an answer the "
                                       "new evidence still supports)"}
    return [metric_block(key, titles[key], units[key], transitions,
                         (str(r.get("family")) for r in stages), seed=seed, counted=True,
                         unit="transitions")
            for key in ("revision_accuracy", "collateral_retraction")]


# ------------------------------------------------------------------ the table


def _metrics_of(name: str, rows: Sequence[Row], seed: int) -> list[dict[str, Any]]:
    m = _case_metric
    if name == "Hypothesis formation":
        return [m(rows, "recall_at_1", "Recall@1 of the true root cause (k = 1: a response "
                  "names one cause)", _is_root_cause_diagnosis,
                  lambda r: _outcome_in(r, _NAMED_TRUE_CAUSE), seed=seed, counted=True)]
    if name == "Confounder recognition":
        return [m(rows, "association_causation_accuracy", "Accuracy on association-vs-"
                  "causation and confounding items",
                  lambda r: r.get("family") in CONFOUNDER_FAMILIES,
                  lambda r: _outcome_in(r, _RIGHT), seed=seed, counted=True)]
    if name == "Mechanism representation":
        return [m(rows, "edge_f1", "Directed edge F1 vs the true DAG", _asks("edges"),
                  _edge_f1, seed=seed), _never_asked("sign_f1"), _never_asked("condition_f1")]
    if name == "Experimental discrimination":
        return [m(rows, "info_regret", "Information regret (bits): max EIG − EIG(chosen)",
                  _asks("experiment"), _verdict_number("info_regret"), seed=seed)]
    if name == "Effect estimation":
        return [m(rows, "effect_abs_error", "Absolute error vs the exact oracle, rung 2",
                  _asks("value", rung=2, identifiable=True), _verdict_number("abs_error"),
                  seed=seed)]
    if name == "Intervention selection":
        return [m(rows, "decision_regret", "Decision regret: E[L(a)] − min E[L]",
                  _asks("action"), _verdict_number("decision_regret"), seed=seed)]
    if name == "Counterfactual consistency":
        return [m(rows, "counterfactual_abs_error", "Absolute error vs the exact oracle, "
                  "rung 3", _asks("value", rung=3, identifiable=True),
                  _verdict_number("abs_error"), seed=seed),
                m(rows, "consistency_violations", "Consistency violations: rung-3 answers "
                  "matching the population rung-2 or the resampled value",
                  _asks("value", rung=3), consistency_violation, seed=seed, counted=True)]
    if name == "Model revision":
        return _revision_metrics(rows, seed)
    raise KeyError(name)


def subcapability_table(rows: Sequence[Row], *, seed: int = 0) -> list[dict[str, Any]]:
    """One row per seed sub-capability, in the seed's order, each with its metrics and the
    families that fed them (empty when no family of the run exercises it)."""
    out = []
    for sub in SEED_SUBCAPABILITIES:
        metrics = _metrics_of(sub.name, rows, seed)
        fed = sorted({f for mb in metrics for f in mb["families"]})
        out.append({"subcapability": sub.name, "behaviour": sub.behaviour,
                    "primary_metric": sub.primary_metric, "metrics": metrics,
                    "families": fed,
                    "exercised": any(mb["status"] != NOT_EXERCISED for mb in metrics)})
    return out


def metric_text(block: Mapping[str, Any]) -> str:
    """One metric as text: value, interval over worlds, n and worlds (or why there is none)."""
    if block["status"] == NOT_EXERCISED:
        return f"{block['title']}: {NOT_EXERCISED}"
    if block["value"] is None:
        why = "qualifies" if block["unit"] == "transitions" else "carried it"
        return f"{block['title']}: {NO_VALUE} (none of the {block['cases']} {block['unit']} {why})"
    ci = block["ci95_cluster_bootstrap"]
    interval = "—" if ci is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]"
    k = f"{block['k']}/" if "k" in block else ""
    return (f"{block['title']}: {block['value']:.3f}, 95% CI over worlds {interval}, "
            f"n = {k}{block['n']} of {block['cases']} {block['unit']}, "
            f"{block['n_worlds']} worlds")


def to_markdown_lines(table: Sequence[Mapping[str, Any]]) -> list[str]:
    """The sub-capability table as Markdown lines (one table row per sub-capability)."""
    lines = ["## Sub-capabilities (seed 003)", "",
             "Each seed sub-capability with its primary metric, computed from the scored "
             "cases of the families that ask for it; a metric no family of the run asks for "
             f"is '{NOT_EXERCISED}', never 0. Intervals resample whole worlds.", "",
             "| sub-capability | primary metric (seed) | result | families |",
             "| --- | --- | --- | --- |"]
    for row in table:
        results = "; ".join(metric_text(mb) for mb in row["metrics"])
        families = ", ".join(row["families"]) or "—"
        lines.append(f"| {row['subcapability']} | {row['primary_metric']} | {results} | "
                     f"{families} |")
    return [*lines, ""]
