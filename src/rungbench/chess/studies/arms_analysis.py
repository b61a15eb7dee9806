"""E020/E021 and E023 estimands over a verified cell table (seed 001).

Every inference choice is the preset's (:class:`~rungbench.chess.studies.plan.Plan`): the
level, the proportion-interval method, the cluster unit, the contrasts and their
multiplicity adjustment, the catastrophic threshold.

E020/E021 ("One outcome, two hidden stages"; ``designs/e020_e021.toml``): coverage C (a
best move in the coverage probe's shortlist), conditional selection S per registered
selection arm (a best move chosen where one is shown), C × S, the unaided best-move rate,
and the registered paired regret contrasts (primary, widths, omission), adjusted as
registered. A profile label needs both stages: one cell's score is
never decomposed ("No single cell receives a psychological label").

E022 (:func:`falsifier_profile`): successor-state and reply arms against the bare
oracle top-5 at the same width — coverage, conditional selection, their difference and
paired regret contrasts.

E023 ("Hold the anchor and width fixed"): the registered primary contrast of WDL regret
at the registered level; secondaries — the registered secondary contrasts, the
catastrophic-blunder rate, proposer-rank-1 selection and order disagreement between the
two counterbalanced presentations — under the registered adjustment.

Every figure carries ``source``: the digest of the exact rows it came from.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rungbench.chess.studies.analysis import (
    GATE,
    Settings,
    catastrophic_rate,
    is_catastrophic,
    stream,
    with_plan,
)
from rungbench.chess.studies.cells import CellRow, CellTable, subset_digest
from rungbench.chess.studies.plan import Plan
from rungbench.errors import Reason, Refusal
from rungbench.stats import adjust, cluster_tests, proportion_interval
from rungbench.stats.bootstrap import MeanTest, cluster_ratio_draws, nan_interval

# ----------------------------------------------------------------------- E020 / E021


@dataclass(frozen=True)
class StageProfile:
    """Coverage, conditional selection and their product for one model (seed 001)."""

    model: str
    """Model snapshot."""
    split: str
    """Split."""
    figures: dict[str, dict[str, Any]]
    """``coverage``, ``selection:<arm>``, ``product:<arm>``,
    ``selection_minus_coverage:<arm>``, ``unaided_best_rate``: estimate, interval, counts,
    source."""
    label: str
    """``coverage-limited``, ``selection-limited`` or ``mixed or undetermined``."""
    contrasts: dict[str, dict[str, Any]]
    """Registered contrast ``a-b`` → paired regret benefit of a over b, adjusted p."""
    catastrophic: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Arm → catastrophic-blunder rate with its registered interval."""

    def to_json(self) -> dict[str, Any]:
        """Return the profile as a JSON-ready mapping."""
        return {"model": self.model, "split": self.split, "figures": self.figures,
                "label": self.label, "label_meaning": LABEL_MEANING.get(self.label, ""),
                "paired_regret_contrasts": self.contrasts, "catastrophic": self.catastrophic}


LABEL_MEANING = {
    "coverage-limited": "operational: the best move often fails to enter the system's own "
                        "candidate set, while it is chosen when present; not a claim about "
                        "cognition",
    "selection-limited": "operational: the best move is usually in the candidate set but "
                         "often not chosen among available actions; not a claim about "
                         "cognition",
    "mixed or undetermined": "the two stages' intervals do not separate",
    "falsifier arms (no stage label)": "E022: selection with each candidate's resulting "
                                       "position or the proposer's best reply, against the "
                                       "same candidates bare; a falsifier for a pure "
                                       "comparison account, not a stage label"}
"""What each stage-profile label means (seed 001: labels are operational shorthand)."""


def label_profile(coverage: dict[str, Any] | None,
                  differences: dict[str, dict[str, Any]] | None) -> str:
    """Name the stage profile from C and every S − C; refuse a label from one cell (seed
    001, "No single cell receives a psychological label")."""
    if coverage is None or not differences:
        raise Refusal([Reason("single_cell_label", "a profile label needs both separately "
                              "measured stages (the coverage probe and an oracle-list "
                              "selection arm); one cell's score cannot be decomposed",
                              "label")], gate=GATE)
    if all(d["low"] > 0 for d in differences.values()):
        return "coverage-limited"
    if all(d["high"] < 0 for d in differences.values()):
        return "selection-limited"
    return "mixed or undetermined"


def cluster_of(row: CellRow, plan: Plan) -> str:
    """The registered cluster unit of a cell: its source game or its position."""
    return row.source_game if plan.cluster == "source_game" else row.position


def stage_profile(table: CellTable, model: str, split: str, settings: Settings) -> StageProfile:
    """E020/E021 coverage C (probe), S per selection arm and C × S, jointly bootstrapped.

    C = share of probe cells whose shortlist holds a best move (model failures count as not
    covered); S(arm) = share of the arm's cells showing a best move in which one was chosen.
    Probe and arm cells share positions, so one resample of clusters draws both.
    """
    settings = with_plan(settings, "E020_E021")
    plan = settings.registered
    probe_name = plan.coverage_arm or ""
    rows = [r for r in table.rows if r.model == model and r.split == split
            and not r.is_reliability]
    probe = [r for r in rows if r.condition == probe_name]
    arms = [a for a in plan.selection_arms if any(r.condition == a and r.best_in_candidates
                                                 for r in rows)]
    if not probe or not arms:
        label_profile(None, None)
    units = [r for r in rows if r.condition in (probe_name, *arms)]
    is_probe = np.array([float(r.condition == probe_name) for r in units])
    covered = np.array([float(r.condition == probe_name and bool(r.best_in_candidates))
                        for r in units])
    ratios = {"coverage": (covered, is_probe)}
    for arm in arms:
        shown = np.array([float(r.condition == arm and bool(r.best_in_candidates))
                          for r in units])
        ratios[f"selection:{arm}"] = (shown * np.array([float(bool(r.chose_best))
                                                        for r in units]), shown)
    estimates, draws = cluster_ratio_draws(ratios, [cluster_of(r, plan) for r in units],
                                           n_boot=settings.n_boot,
                                           rng=stream(settings, "stage", model, split))
    for arm in arms:
        s = f"selection:{arm}"
        for name, value, drawn in (
                (f"product:{arm}", estimates["coverage"] * estimates[s],
                 draws["coverage"] * draws[s]),
                (f"selection_minus_coverage:{arm}", estimates[s] - estimates["coverage"],
                 draws[s] - draws["coverage"])):
            estimates[name], draws[name] = value, drawn
    figures: dict[str, dict[str, Any]] = {}
    for name, value in estimates.items():
        low, high, dropped = nan_interval(draws[name], settings.alpha)
        group = probe if name == "coverage" else [
            r for r in units if r.condition in (probe_name, name.split(":")[-1])]
        figures[name] = {"estimate": value, "low": low, "high": high,
                         "dropped_resamples": dropped, "cells": len(group),
                         "source": subset_digest(group)}
    figures["coverage"]["proportion_interval"] = _proportion(
        int(covered.sum()), len(probe), plan)
    figures |= _arm_rates(rows, plan)
    catastrophic = {arm: catastrophic_rate([r for r in rows if r.condition == arm], plan)
                    for arm in sorted({r.condition for r in rows} - {probe_name})}
    label = label_profile(figures["coverage"], {
        k: v for k, v in figures.items() if k.startswith("selection_minus_coverage:")})
    return StageProfile(model, split, figures, label,
                        _arm_contrasts(rows, settings, model, plan.contrasts), catastrophic)


def _proportion(k: int, n: int, plan: Plan) -> dict[str, Any]:
    """A proportion's registered interval, named by its method."""
    low, high = proportion_interval(plan.interval, k, n, plan.alpha)
    return {"method": plan.interval, "confidence": round(1.0 - plan.alpha, 12),
            "low": low, "high": high}


def _arm_rates(rows: Sequence[CellRow], plan: Plan) -> dict[str, dict[str, Any]]:
    """The best-move rate of every registered unaided arm (``unaided_best_rate`` for the arm
    named unaided, ``best_rate:<arm>`` for another)."""
    out = {}
    for arm in plan.unaided_arms:
        group = [r for r in rows if r.condition == arm]
        if not group:
            continue
        k = sum(1 for r in group if r.chose_best)
        name = "unaided_best_rate" if arm == "unaided" else f"best_rate:{arm}"
        out[name] = {"estimate": k / len(group),
                     "proportion_interval": _proportion(k, len(group), plan),
                     "cells": len(group), "source": subset_digest(group)}
    return out


def _arm_contrasts(rows: Sequence[CellRow], settings: Settings, model: str,
                   registered: Sequence[tuple[str, str]]) -> dict[str, dict[str, Any]]:
    """Registered paired regret contrasts (benefit of a over b), adjusted as registered."""
    plan = settings.registered
    scored = {(r.condition, r.position): r for r in rows if r.regret is not None}
    tests: dict[str, tuple[MeanTest, str, int]] = {}
    for a, b in registered:
        pairs = [(scored[(b, p)], scored[(a, p)]) for (arm, p) in scored
                 if arm == a and (b, p) in scored]
        clusters = [cluster_of(x, plan) for x, _ in pairs]
        if len(pairs) < 2 or len(set(clusters)) < 2:
            continue
        vector = [float(x.regret or 0.0) - float(y.regret or 0.0) for x, y in pairs]
        name = f"{a}-{b}"
        test = cluster_tests({name: vector}, clusters, n_boot=settings.n_boot,
                             alpha=settings.alpha,
                             rng=stream(settings, "arm", model, name))[name]
        tests[name] = (test, subset_digest([x for pair in pairs for x in pair]),
                       len({x.source_game for x, _ in pairs}))
    adjusted = adjust(plan.multiplicity, [t.p for t, _, _ in tests.values()])
    return {name: {**t.to_json(), "meaning": "regret(b) − regret(a): positive = a lowers "
                   "regret", "adjusted_p": q, "method": plan.multiplicity, "n_games": g,
                   "source": s}
            for (name, (t, s, g)), q in zip(tests.items(), adjusted, strict=True)}


# ---------------------------------------------------------------------------- E022


def falsifier_profile(table: CellTable, model: str, split: str,
                      settings: Settings) -> StageProfile:
    """E022 at fixed width: per arm coverage of the shown list, conditional selection S,
    S(falsifier) − S(control) on one shared cluster bootstrap, and the registered paired
    regret contrasts (falsifier − control), adjusted as registered.

    The shown candidates are the same slice in every arm, so coverage is one figure per
    arm and should agree; a falsifier that removes the selection deficit (S rises, regret
    falls) displaces a pure comparison account (seed 001, "Outcomes that can prove us
    wrong"). No stage-profile label: E022 has no coverage probe.
    """
    settings = with_plan(settings, "E022")
    plan = settings.registered
    control_arm = plan.control_arm or ""
    falsifiers = tuple(a for a, _ in plan.contrasts)
    rows = [r for r in table.rows if r.model == model and r.split == split
            and not r.is_reliability]
    arms = [a for a in (control_arm, *falsifiers)
            if any(r.condition == a and r.best_in_candidates for r in rows)]
    if control_arm not in arms:
        raise Refusal([Reason("contrast_unsupported", f"{model}/{split}: no {control_arm} "
                              "cell shows a best move", "E022")], gate=GATE)
    units = [r for r in rows if r.condition in arms]
    ratios: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for arm in arms:
        mine = np.array([float(r.condition == arm) for r in units])
        shown = mine * np.array([float(bool(r.best_in_candidates)) for r in units])
        ratios[f"coverage:{arm}"] = (shown, mine)
        ratios[f"selection:{arm}"] = (shown * np.array([float(bool(r.chose_best))
                                                        for r in units]), shown)
    estimates, draws = cluster_ratio_draws(ratios, [cluster_of(r, plan) for r in units],
                                           n_boot=settings.n_boot,
                                           rng=stream(settings, "e022", model, split))
    control = f"selection:{control_arm}"
    for arm in arms[1:]:
        name = f"selection_minus_control:{arm}"
        estimates[name] = estimates[f"selection:{arm}"] - estimates[control]
        draws[name] = draws[f"selection:{arm}"] - draws[control]
    figures: dict[str, dict[str, Any]] = {}
    for name, value in estimates.items():
        low, high, dropped = nan_interval(draws[name], settings.alpha)
        arm = name.split(":")[-1]
        group = [r for r in units if r.condition in (arm, control_arm)
                 if name.startswith("selection_minus") or r.condition == arm]
        figures[name] = {"estimate": value, "low": low, "high": high,
                         "dropped_resamples": dropped, "cells": len(group),
                         "source": subset_digest(group)}
    catastrophic = {arm: catastrophic_rate([r for r in rows if r.condition == arm], plan)
                    for arm in arms}
    contrasts = _arm_contrasts(rows, settings, model, plan.contrasts)
    return StageProfile(model, split, figures, "falsifier arms (no stage label)", contrasts,
                        catastrophic)


# ------------------------------------------------------------------------------ E023


@dataclass(frozen=True)
class E023Result:
    """E023 primary and secondary contrasts of one model and split."""

    model: str
    """Model snapshot."""
    split: str
    """Split."""
    primaries: dict[str, dict[str, Any]]
    """Each registered primary endpoint's near − far contrast: estimate, interval, p at the
    registered level (unadjusted), rejected."""
    secondaries: dict[str, dict[str, Any]]
    """Every other endpoint × contrast, with its adjusted p (``endpoint:near-far``)."""
    arms: dict[str, dict[str, Any]]
    """Per arm: the mean of each endpoint and the catastrophic rate with its interval."""
    not_estimable: dict[str, str] = field(default_factory=dict)
    """Secondary → why it has no estimate (e.g. no cell recorded a latency)."""

    def to_json(self) -> dict[str, Any]:
        """Return the result as a JSON-ready mapping."""
        return {"model": self.model, "split": self.split, "primaries": self.primaries,
                "secondaries": self.secondaries, "arms": self.arms,
                "not_estimable": self.not_estimable}


E023_ENDPOINTS: dict[str, str] = {
    "wdl_regret": "WDL regret (model failures at the registered maximum)",
    "catastrophic_rate": "share of cells at or above the catastrophic threshold",
    "rank1_selection": "share of cells choosing proposer rank 1",
    "order_disagreement": "share of positions whose two presentations chose different moves",
    "legality": "share of cells answered with a legal move",
    "latency_s": "seconds of the deciding attempt",
    "tokens_in": "prompt tokens of the deciding attempt",
    "tokens_out": "completion tokens of the deciding attempt",
    "cost_usd": "dollars of the deciding attempt"}
"""E023's endpoints: the registered primaries and every secondary (seed 001: regret,
catastrophic blunders, selected rank, order; legality, latency, tokens and cost)."""


def _per_position(rows: Sequence[CellRow], arm: str,
                  value: Callable[[CellRow], float | None]) -> dict[str, float]:
    """Arm value per position: mean over both presentations; complete positions only (a
    cell without the value, e.g. no recorded latency, leaves its position out)."""
    by: dict[str, list[float]] = {}
    for r in rows:
        if r.condition == arm and not r.is_reliability:
            v = value(r)
            if v is not None:
                by.setdefault(r.position, []).append(float(v))
    return {p: float(np.mean(v)) for p, v in by.items() if len(v) == 2}


def _disagreement(rows: Sequence[CellRow], arm: str) -> dict[str, float]:
    by: dict[str, dict[str, CellRow]] = {}
    for r in rows:
        if r.condition == arm and not r.is_reliability and r.presentation:
            by.setdefault(r.position, {})[r.presentation] = r
    return {p: float(v["A"].selected_move != v["B"].selected_move)
            for p, v in by.items() if len(v) == 2}


def e023_measures(rows: Sequence[CellRow], plan: Plan,
                  ) -> dict[str, Callable[[str], dict[str, float]]]:
    """Endpoint → (arm → value per complete position), for :data:`E023_ENDPOINTS`."""
    def usage(name: str) -> Callable[[str], dict[str, float]]:
        def value(r: CellRow) -> float | None:
            v = getattr(r, name)
            return None if v is None else float(v)
        return lambda a: _per_position(rows, a, value)

    return {
        "wdl_regret": lambda a: _per_position(rows, a, lambda r: float(r.regret or 0.0)),
        "catastrophic_rate": lambda a: _per_position(
            rows, a, lambda r: float(is_catastrophic(r, plan))),
        "rank1_selection": lambda a: _per_position(rows, a, lambda r: float(r.selected_rank
                                                                            == 1)),
        "order_disagreement": lambda a: _disagreement(rows, a),
        "legality": lambda a: _per_position(rows, a, lambda r: float(r.outcome == "legal")),
        **{name: usage(name) for name in ("latency_s", "tokens_in", "tokens_out", "cost_usd")}}


def analyze_e023(table: CellTable, model: str, split: str,
                 settings: Settings) -> E023Result:
    """E023 as registered: every primary endpoint's primary contrast near − far at the
    registered level; every other endpoint × contrast a secondary under the registered
    adjustment. Positive = near is higher (worse for every endpoint but rank-1 selection and
    legality)."""
    settings = with_plan(settings, "E023")
    plan = settings.registered
    primary, *secondary = plan.contrasts
    rows = [r for r in table.rows if r.model == model and r.split == split]
    measures = e023_measures(rows, plan)
    games = {r.position: r.source_game for r in rows}
    label = f"{primary[0]}-{primary[1]}"
    primaries = {}
    for m in plan.primary_endpoints:
        test = _contrast(measures[m](primary[0]), measures[m](primary[1]), settings,
                         f"{model}|{split}|{m}|{primary[0]}|{primary[1]}",
                         [r for r in rows if r.condition in primary], games)
        primaries[m] = {"contrast": label, "endpoint": m, **test,
                        "rejected": test["p"] <= settings.alpha, "alpha": settings.alpha}
    tests: dict[str, dict[str, Any]] = {}
    skipped: dict[str, str] = {}
    for m in E023_ENDPOINTS:
        for near, far in (primary, *secondary):
            key = f"{m}:{near}-{far}"
            if (near, far) == primary and m in plan.primary_endpoints:
                continue
            a, b = measures[m](near), measures[m](far)
            if len(set(a) & set(b)) < 2:
                skipped[key] = (f"{len(set(a) & set(b))} positions have the endpoint in both "
                                "arms")
                continue
            tests[key] = _contrast(a, b, settings, f"{model}|{split}|{m}|{near}|{far}",
                                   [r for r in rows if r.condition in (near, far)], games)
    q = adjust(plan.multiplicity, [t["p"] for t in tests.values()]) if tests else []
    second = {k: {**t, "adjusted_p": qv, "method": plan.multiplicity,
                  "rejected": qv <= settings.alpha}
              for (k, t), qv in zip(tests.items(), q, strict=True)}
    arms = {arm: {**{m: (float(np.mean(list(v.values()))) if (v := measures[m](arm)) else None)
                     for m in E023_ENDPOINTS},
                  "catastrophic": catastrophic_rate([r for r in rows if r.condition == arm],
                                                    plan),
                  "source": subset_digest([r for r in rows if r.condition == arm])}
            for arm in sorted({r.condition for r in rows})}
    return E023Result(model, split, primaries, second, arms, skipped)


def _contrast(near: dict[str, float], far: dict[str, float], settings: Settings, label: str,
              rows: Sequence[CellRow], games: dict[str, str]) -> dict[str, Any]:
    common = sorted(set(near) & set(far))
    if len(common) < 2:
        raise Refusal([Reason("contrast_unsupported", f"{label}: {len(common)} complete "
                              "positions", label)], gate=GATE)
    vector = [near[p] - far[p] for p in common]
    clusters = common if settings.registered.cluster == "position" else [games[p]
                                                                          for p in common]
    test = cluster_tests({"c": vector}, clusters, n_boot=settings.n_boot,
                         alpha=settings.alpha, rng=stream(settings, label))["c"]
    keep = set(common)
    return {**test.to_json(), "n_positions": len(common),
            "source": subset_digest([r for r in rows if r.position in keep])}
