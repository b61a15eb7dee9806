"""A105 estimands over a verified cell table, and the settings every analysis shares
(seed 000).

A105 (seed 000, "Four cells answer more than three arms"): per model and split, R(B, L)
is the mean WDL regret of a cell; a position's R(B, L) averages its two panel orders
(pairing within position); the seven registered contrasts
(:data:`rungbench.stats.factorial.CONTRASTS`) are means of per-position contrasts with
intervals and two-sided p from one shared cluster bootstrap at source game
(:func:`rungbench.stats.bootstrap.cluster_tests`). Effects are benefits: positive means
regret fell. The primary estimate uses *complete* positions (all eight cells observed);
reliability outcomes are missing observations ("Provider and network failures remain
reliability outcomes"). Sensitivities: each panel order, each provider route, equal
source-game weighting, position clusters, intention-to-run with maximal regret for every
missing cell, and best/worst bounds (each missing cell set to 0 or 1, whichever moves the
contrast furthest up or down). Attrition: condition × route hazards, a chi-square test
of equal condition hazards, and the positions and games supporting each contrast.

E020/E021 and E023 live in :mod:`rungbench.chess.studies.arms_analysis`.

Every estimate carries ``source``: the digest of the exact rows it came from.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from rungbench.chess.studies.cells import (
    A105_CONDITIONS,
    PANEL_ORDERS,
    CellRow,
    CellTable,
    subset_digest,
)
from rungbench.chess.studies.plan import Plan, registered_plan
from rungbench.design.factorial import MaterialRules
from rungbench.errors import InputError
from rungbench.stats import adjust, cluster_tests, proportion_interval
from rungbench.stats.bootstrap import MeanTest
from rungbench.stats.factorial import CONTRASTS
from rungbench.stats.sums import dot_rows

CELL_ORDER: tuple[str, ...] = ("no_information", "legal_list_only", "board_only",
                               "board_plus_legal_list")
"""Conditions in the (R00, R01, R10, R11) order of the contrast coefficients."""
FACTOR_ESTIMANDS: dict[str, tuple[str, str, str]] = {
    "board": ("main_b", "simple_b_without_l", "simple_b_with_l"),
    "legal_list": ("main_l", "simple_l_without_b", "simple_l_with_b")}
"""Factor → (main effect, simple effect without the other panel, with it)."""
GATE = "chess analysis"
"""Gate name of analysis refusals."""


@dataclass(frozen=True)
class Settings:
    """Computation settings of one analysis run, and the registered plan it carries out."""

    n_boot: int = 2000
    """Cluster-bootstrap resamples."""
    seed: int = 0
    """Seed of every bootstrap (each analysis derives its own stream from it)."""
    plan: Plan | None = None
    """The preset's registered analysis (:func:`rungbench.chess.studies.plan.plan_of`);
    None only before :func:`with_plan` fills in the bound or bundled preset's."""

    @property
    def registered(self) -> Plan:
        """The plan; raise :class:`InputError` when none was given."""
        if self.plan is None:
            raise InputError("no registered analysis plan (the preset's [analysis])",
                             field="plan")
        return self.plan

    @property
    def alpha(self) -> float:
        """Level of every test; intervals are at ``1 - alpha`` (the plan's)."""
        return self.registered.alpha


@dataclass(frozen=True)
class Estimate:
    """One reported number with its interval, test and provenance."""

    analysis: str
    """Which analysis produced it (``primary``, ``panel_order=board_first`` …)."""
    estimand: str
    """Estimand name (``main_b`` …)."""
    test: MeanTest
    """Point, interval, p and counts."""
    n_games: int
    """Distinct source games supporting it."""
    source: str
    """Digest of the rows it came from."""

    @property
    def mean(self) -> float:
        """Point estimate."""
        return self.test.mean

    def to_json(self) -> dict[str, Any]:
        """Return the estimate as a JSON-ready mapping."""
        return {"analysis": self.analysis, "estimand": self.estimand, **self.test.to_json(),
                "n_positions": self.test.n, "n_games": self.n_games, "source": self.source}


def material_of(settings: Settings) -> MaterialRules:
    """The plan's materiality rules (A105's ``[analysis.material]``)."""
    rules = settings.registered.material
    if rules is None:
        raise InputError(f"the {settings.registered.design} plan has no [analysis.material]",
                         field="analysis.material")
    return rules


def with_plan(settings: Settings, design_id: str) -> Settings:
    """``settings`` with the bundled preset's plan of ``design_id`` when it carries none."""
    if settings.plan is not None:
        return settings
    return replace(settings, plan=registered_plan(design_id))


def stream(settings: Settings, *labels: str) -> np.random.Generator:
    """A bootstrap stream derived from the seed and the analysis labels (stable order)."""
    words = [int.from_bytes(hashlib.sha256(label.encode()).digest()[:8], "little")
             for label in labels]
    return np.random.default_rng([settings.seed, *words, len(labels)])


# ------------------------------------------------------------------------------ A105


Fill = Callable[[str], float] | None
"""How a missing cell is filled, given the estimand: None drops incomplete positions."""


@dataclass(frozen=True)
class _Units:
    """Per-position R(B, L) of one model and split (rows R00, R01, R10, R11)."""

    positions: tuple[str, ...]
    games: tuple[str, ...]
    cells: np.ndarray
    rows: tuple[CellRow, ...]


def _cell_array(rows: Sequence[CellRow], orders: Sequence[str]
                ) -> tuple[list[str], dict[str, str], np.ndarray, dict[str, list[CellRow]]]:
    positions = sorted({r.position for r in rows})
    index = {p: i for i, p in enumerate(positions)}
    games = {r.position: r.source_game for r in rows}
    sums = np.zeros((len(positions), 4, len(orders)))
    counts = np.zeros((len(positions), 4, len(orders)))
    members: dict[str, list[CellRow]] = {p: [] for p in positions}
    for r in rows:
        if r.panel_order is None or r.panel_order not in orders:
            continue
        members[r.position].append(r)
        if r.regret is not None:
            at = (index[r.position], CELL_ORDER.index(r.condition),
                  list(orders).index(r.panel_order))
            sums[at] += r.regret
            counts[at] += 1
    # one model sent through several routes has one cell per route at each (position,
    # condition, order): the position's cell value is their mean (equal route weighting)
    with np.errstate(invalid="ignore", divide="ignore"):
        values = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    return positions, games, values, members


def _units(rows: Sequence[CellRow], orders: Sequence[str], *,
           fill: float | tuple[float, float, float, float] | None = None) -> _Units:
    """Per-position cell means; ``fill`` replaces missing cells (per condition when a tuple)."""
    positions, games, values, members = _cell_array(rows, orders)
    if fill is not None:
        per_cell = np.broadcast_to(np.asarray(fill, dtype=float).reshape(-1, 1)
                                   if isinstance(fill, tuple) else np.full((4, 1), fill),
                                   (4, len(orders)))
        values = np.where(np.isnan(values), per_cell[None, :, :], values)
    keep = ~np.isnan(values).any(axis=(1, 2))
    kept = [p for p, k in zip(positions, keep, strict=True) if k]
    return _Units(tuple(kept), tuple(games[p] for p in kept), values[keep].mean(axis=2),
                  tuple(r for p in kept for r in members[p]))


def _factorial(units: _Units, analysis: str, settings: Settings, *, cluster: str | None = None,
               weighting: str = "unit", estimands: Sequence[str] = tuple(CONTRASTS),
               label: str = "") -> dict[str, Estimate]:
    """The registered contrasts on per-position units, one shared bootstrap."""
    if len(units.positions) < 2 or len(set(units.games)) < 2:
        return {}
    unit = cluster or settings.registered.cluster
    clusters = units.games if unit == "source_game" else units.positions
    vectors = {name: dot_rows(units.cells, np.asarray(CONTRASTS[name], dtype=np.float64))
               for name in estimands}
    tests = cluster_tests(vectors, clusters, n_boot=settings.n_boot, alpha=settings.alpha,
                          rng=stream(settings, label, analysis),
                          weighting="cluster" if weighting == "cluster" else "unit")
    source = subset_digest(units.rows)
    return {name: Estimate(analysis, name, test, len(set(units.games)), source)
            for name, test in tests.items()}


def _bound_fill(estimand: str, upper: bool) -> tuple[float, float, float, float]:
    """Missing-cell values that push ``estimand`` to its upper (or lower) bound."""
    return tuple(float((c > 0) == upper) if c != 0 else 1.0  # type: ignore[return-value]
                 for c in CONTRASTS[estimand])


@dataclass(frozen=True)
class A105Result:
    """Every A105 number of one model and split."""

    model: str
    """Model snapshot."""
    split: str
    """Split."""
    cell_means: dict[str, dict[str, Any]]
    """Per condition: mean regret over observed cells, counts and source digest."""
    primary: dict[str, Estimate]
    """Complete-position estimands (game clusters, equal-position weighting)."""
    sensitivities: dict[str, dict[str, Estimate]]
    """Analysis name → estimands under that sensitivity."""
    legal_only: dict[str, Any]
    """Mean regret among legal submissions per condition (not randomized)."""
    attrition: dict[str, Any]
    """Hazards, differential-attrition test and support counts."""
    catastrophic: dict[str, dict[str, Any]]
    """Per condition: catastrophic-blunder rate with Clopper–Pearson interval."""

    def to_json(self) -> dict[str, Any]:
        """Return the result as a JSON-ready mapping."""
        return {"model": self.model, "split": self.split, "cell_means": self.cell_means,
                "primary": {k: v.to_json() for k, v in self.primary.items()},
                "sensitivities": {a: {k: v.to_json() for k, v in est.items()}
                                  for a, est in self.sensitivities.items()},
                "legal_only": self.legal_only, "attrition": self.attrition,
                "catastrophic": self.catastrophic}


def a105_result(rows: Sequence[CellRow], model: str, split: str,
                settings: Settings) -> A105Result:
    """All A105 estimands, sensitivities and attrition of one model and split."""
    if not rows:
        raise InputError(f"no A105 cells for {model} / {split}", field="rows")
    tag = f"{model}|{split}"
    orders = settings.registered.panel_orders
    primary = _factorial(_units(rows, orders), "primary", settings, label=tag)
    return A105Result(model, split, _cell_means(rows), primary,
                      _sensitivities(rows, settings, tag), _legal_only(rows),
                      attrition(rows, material_of(settings), orders),
                      _catastrophic(rows, settings))


def _sensitivities(rows: Sequence[CellRow], settings: Settings,
                   tag: str) -> dict[str, dict[str, Estimate]]:
    out: dict[str, dict[str, Estimate]] = {}
    orders = settings.registered.panel_orders
    for order in orders:
        out[f"panel_order={order}"] = _factorial(_units(rows, (order,)),
                                                 f"panel_order={order}", settings, label=tag)
    for route in sorted({r.route for r in rows}):
        subset = [r for r in rows if r.route == route]
        out[f"provider_route={route}"] = _factorial(_units(subset, orders),
                                                    f"provider_route={route}",
                                                    settings, label=tag)
    complete = _units(rows, orders)
    out["equal_source_game_weighting"] = _factorial(
        complete, "equal_source_game_weighting", settings, weighting="cluster", label=tag)
    out["position_cluster"] = _factorial(complete, "position_cluster", settings,
                                         cluster="position", label=tag)
    out["intention_to_run_max_regret"] = _factorial(
        _units(rows, orders, fill=1.0), "intention_to_run_max_regret", settings, label=tag)
    for name, upper in (("attrition_best", True), ("attrition_worst", False)):
        bound: dict[str, Estimate] = {}
        for estimand in CONTRASTS:
            bound |= _factorial(_units(rows, orders, fill=_bound_fill(estimand, upper)), name,
                                settings, estimands=(estimand,), label=tag)
        out[name] = bound
    return out


def _cell_means(rows: Sequence[CellRow]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for condition in CELL_ORDER:
        group = [r for r in rows if r.condition == condition]
        scored = [r for r in group if r.regret is not None]
        out[condition] = {
            "board": A105_CONDITIONS[condition][0], "legal_list": A105_CONDITIONS[condition][1],
            "mean_regret": float(np.mean([r.regret for r in scored])) if scored else None,
            "cells": len(group), "scored": len(scored), "source": subset_digest(scored)}
    return out


def _legal_only(rows: Sequence[CellRow]) -> dict[str, Any]:
    means: dict[str, Any] = {}
    for condition in CELL_ORDER:
        legal = [r for r in rows if r.condition == condition and r.outcome == "legal"]
        means[condition] = {"mean_regret": float(np.mean([r.regret for r in legal]))
                            if legal else None, "cells": len(legal),
                            "source": subset_digest(legal)}
    return {"randomized": False, "label": "legal submissions only: selected by the outcome, "
            "not randomized", "cells": means}


def _catastrophic(rows: Sequence[CellRow], settings: Settings) -> dict[str, dict[str, Any]]:
    return {condition: catastrophic_rate([r for r in rows if r.condition == condition],
                                         settings.registered)
            for condition in CELL_ORDER}


def is_catastrophic(row: CellRow, plan: Plan) -> bool:
    """Whether a scored cell's regret reaches the registered catastrophic threshold."""
    return row.regret is not None and row.regret >= plan.catastrophic_regret


def catastrophic_rate(rows: Sequence[CellRow], plan: Plan) -> dict[str, Any]:
    """Share of scored cells with regret at or above the registered threshold, with the
    registered interval, over all cells and over legal submissions."""
    scored = [r for r in rows if r.regret is not None]
    legal = [r for r in scored if r.outcome == "legal"]
    out: dict[str, Any] = {"threshold": plan.catastrophic_regret, "method": plan.interval,
                           "source": subset_digest(scored)}
    for key, group in (("all", scored), ("legal", legal)):
        k = sum(1 for r in group if is_catastrophic(r, plan))
        out[key] = ({"k": k, "n": len(group), "rate": k / len(group),
                     "interval": list(proportion_interval(plan.interval, k, len(group),
                                                          plan.alpha))}
                    if group else {"k": 0, "n": 0, "rate": None, "interval": None})
    return out


def attrition(rows: Sequence[CellRow], rules: MaterialRules,
              orders: Sequence[str] = PANEL_ORDERS) -> dict[str, Any]:
    """Condition × route hazards, the differential-attrition call and support counts (a
    position is complete when every condition of every registered panel order was scored)."""
    conditions = sorted({r.condition for r in rows})
    routes = sorted({r.route for r in rows})
    table = []
    for condition in conditions:
        for route in routes:
            group = [r for r in rows if r.condition == condition and r.route == route]
            if group:
                lost = [r for r in group if r.is_reliability]
                table.append({"condition": condition, "route": route, "cells": len(group),
                              "missing": len(lost), "hazard": len(lost) / len(group),
                              "source": subset_digest(group),
                              "by_class": {c: sum(1 for r in lost if r.outcome == c)
                                           for c in sorted({r.outcome for r in lost})}})
    per_condition = {c: (sum(1 for r in rows if r.condition == c and r.is_reliability),
                         sum(1 for r in rows if r.condition == c)) for c in conditions}
    hazards = {c: lost / n for c, (lost, n) in per_condition.items()}
    spread = max(hazards.values()) - min(hazards.values()) if hazards else 0.0
    p = _homogeneity_p(list(per_condition.values()))
    complete = _units(rows, orders)
    return {"hazards": table, "condition_hazards": hazards, "spread": spread,
            "homogeneity_p": p, "differential": bool(spread > rules.attrition_spread
                                                     and p < rules.attrition_alpha),
            "rule": {"spread": rules.attrition_spread, "alpha": rules.attrition_alpha},
            "support": {"positions": len({r.position for r in rows}),
                        "games": len({r.source_game for r in rows}),
                        "complete_positions": len(complete.positions),
                        "complete_games": len(set(complete.games))},
            "missing": sum(1 for r in rows if r.is_reliability), "cells": len(rows),
            "source": subset_digest(rows)}


def _homogeneity_p(counts: Sequence[tuple[int, int]]) -> float:
    """Chi-square p of equal hazards across conditions (1.0 when nothing or all is lost)."""
    lost = sum(c[0] for c in counts)
    total = sum(c[1] for c in counts)
    if lost == 0 or lost == total or len(counts) < 2:
        return 1.0
    from scipy.stats import chi2_contingency  # lazy: scipy.stats is slow to import

    observed = np.array([[k, n - k] for k, n in counts], dtype=float)
    return float(chi2_contingency(observed, correction=False)[1])


@dataclass(frozen=True)
class A105Analysis:
    """A105 over a whole table: per model and split, the Holm family and the pooled view."""

    results: dict[tuple[str, str], A105Result]
    """(model, split) → result."""
    family: dict[str, dict[str, Any]]
    """Primary test key ``model:factor`` → held-out main effect, p and Holm-adjusted p."""
    pooled: dict[str, Estimate]
    """Factor → held-out main effect pooled across models (never a substitute, gate 7)."""
    settings: Settings
    """Computation settings and the plan carried out."""

    def to_json(self) -> dict[str, Any]:
        """Return the analysis as a JSON-ready mapping."""
        return {"results": [r.to_json() for r in self.results.values()],
                "primary_family": self.family,
                "pooled_across_models": {"label": "pooled cross-model average: not a "
                                         "substitute for model-specific evidence",
                                         **{k: v.to_json() for k, v in self.pooled.items()}},
                "settings": {"n_boot": self.settings.n_boot, "seed": self.settings.seed,
                             "plan": self.settings.registered.to_json()}}


def analyze_a105(table: CellTable, settings: Settings, *,
                 models: Sequence[str] | None = None) -> A105Analysis:
    """Every A105 estimand of ``table``; the registered multiplicity adjustment across the
    registered primary tests on the registered primary split.

    The family is the plan's ``primary_tests`` (A105: 2 models × 2 factors) plus any test of
    a model in the table; a registered test without an estimate stays in the family with
    p = 1, so a missing model never shrinks the correction.
    """
    if table.header.design_id != "A105":
        raise InputError(f"table carries {table.header.design_id}, not A105", field="design_id")
    settings = with_plan(settings, "A105")
    plan = settings.registered
    primary_split = plan.primary_split or "held_out"
    names = list(models) if models is not None else sorted({r.model for r in table.rows})
    results = {}
    for model in names:
        for split in ("development", "held_out"):
            rows = [r for r in table.rows if r.model == model and r.split == split]
            if rows:
                results[(model, split)] = a105_result(rows, model, split, settings)
    family = _primary_family(results, names, primary_split, plan)
    return A105Analysis(results, family, _pooled(table, names, primary_split, settings),
                        settings)


def _primary_family(results: dict[tuple[str, str], A105Result], models: Sequence[str],
                    split: str, plan: Plan) -> dict[str, dict[str, Any]]:
    alpha = plan.alpha
    keys = list(dict.fromkeys([*plan.primary_tests, *(f"{m}:{f}" for m in models
                                               for f in FACTOR_ESTIMANDS)]))
    estimates: list[Estimate | None] = []
    for key in keys:
        model, _, factor = key.rpartition(":")
        if factor not in FACTOR_ESTIMANDS:
            raise InputError(f"primary test {key!r} names no factor", field="primary_tests")
        result = results.get((model, split))
        estimates.append(None if result is None
                         else result.primary.get(FACTOR_ESTIMANDS[factor][0]))
    # A registered test without an estimate is kept at p = 1 (never shrinks the family).
    adjusted = adjust(plan.multiplicity, [1.0 if e is None else e.test.p for e in estimates])
    return {k: {"estimate": None if e is None else e.to_json(),
                "p": 1.0 if e is None else e.test.p, "adjusted_p": q,
                "method": plan.multiplicity, "alpha": alpha,
                "rejected": e is not None and q <= alpha, "missing": e is None,
                "family_size": len(keys)}
            for k, e, q in zip(keys, estimates, adjusted, strict=True)}


def _pooled(table: CellTable, models: Sequence[str], split: str,
            settings: Settings) -> dict[str, Estimate]:
    units = [_units([r for r in table.rows if r.model == m and r.split == split],
                    settings.registered.panel_orders)
             for m in models]
    if len(units) < 2:
        return {}
    merged = _Units(tuple(p for u in units for p in u.positions),
                    tuple(g for u in units for g in u.games),
                    np.vstack([u.cells for u in units]),
                    tuple(r for u in units for r in u.rows))
    est = _factorial(merged, "pooled_across_models", settings, estimands=("main_b", "main_l"),
                     label="pooled")
    return {factor: est[names[0]] for factor, names in FACTOR_ESTIMANDS.items()
            if names[0] in est}
