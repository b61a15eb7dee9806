"""Seed 001's falsifiers ("Outcomes that can prove us wrong"): one named analysis per bullet,
each ending in a verdict worded as the seed words it.

A verdict is about the claim the bullet puts at risk, and it is read from an interval at the
registered level (and, where the preset registers a family, the adjusted p):

* ``holds`` — the interval lies wholly on the claim's side;
* ``fails`` — it lies wholly on the falsifying side;
* ``inconclusive`` — it straddles the boundary, or too few cells support the estimate. No
  preset registers an equivalence margin, so "does not reduce" is concluded only from an
  interval wholly below zero, never from a null.

The six analyses (``FALSIFIERS``):

1. :func:`proposal_availability` (E020/E021): the primary paired regret contrast, oracle
   top-2 against unaided play.
2. :func:`distractor_strength` (E023): the primary near − far WDL regret contrast; the
   endpoint-validity warning of the preset's synthetic audit is carried beside it.
3. :func:`width_after_value_gap` (E020/E021): every registered width contrast pooled and
   within each registered value-gap stratum, with the smallest-gap minus largest-gap
   interaction, on one shared cluster bootstrap.
4. :func:`order_instability` (E023): the share of paired presentations (A and its rotation
   B) whose selected move differs, by arm and pooled, against the registered
   ``rare_order_change``.
5. :func:`transition_search` (E022): each falsifier arm's paired regret benefit over the
   control and the share of the control's selection deficit it removes.
6. :func:`reversal`: the design's primary contrast within each level of each registered
   factor (model across models; colour, phase, tacticality, value gap within a model); every
   level pair's difference adjusted as registered. A significant difference whose levels
   point opposite ways is reported as the result, never averaged away.

Every figure carries ``source``, the digest of the rows it came from.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import combinations
from typing import Any, Literal

import numpy as np

from rungbench.chess.studies.analysis import Settings, stream
from rungbench.chess.studies.cells import CellRow, subset_digest
from rungbench.chess.studies.plan import Plan
from rungbench.stats import adjust, bootstrap_pvalue, cluster_ratio_draws, proportion_interval
from rungbench.stats.bootstrap import nan_interval

Outcome = Literal["holds", "fails", "inconclusive"]
"""A falsifier's verdict on the claim it puts at risk."""

FALSIFIERS: dict[str, tuple[str, str]] = {
    "proposal_availability": (
        "If oracle top-2 does not reduce paired regret versus unaided play, the claim that "
        "proposal availability repairs the system fails in that population.",
        "proposal availability repairs the system"),
    "distractor_strength": (
        "If near_strong does not worsen conditional regret relative to far_tail, E023 does "
        "not support the declared distractor-strength mechanism.",
        "E023 supports the declared distractor-strength mechanism"),
    "width_after_value_gap": (
        "If a width effect disappears after conditioning on value gap, generic "
        "\u201coverload\u201d weakens in favor of ambiguity-specific comparison.",
        "generic overload (a width effect that survives conditioning on value gap)"),
    "order_instability": (
        "If exact order derangement rarely changes the selected move, presentation "
        "instability is not a major explanation.",
        "presentation instability is a major explanation"),
    "transition_search": (
        "If successors or replies remove the deficit, a transition/search mechanism "
        "displaces pure comparison failure.",
        "pure comparison failure (successors and replies do not remove the deficit)"),
    "reversal": (
        "If effects reverse by model, color, phase, or tacticality, the interaction is the "
        "result; there is no license to average it into a universal story.",
        "one story across the strata (no reversal)"),
}
"""Falsifier name → (seed 001's bullet, verbatim; the claim it puts at risk)."""
DESIGN_FALSIFIERS: dict[str, tuple[str, ...]] = {
    "E020_E021": ("proposal_availability", "width_after_value_gap", "reversal"),
    "E022": ("transition_search", "reversal"),
    "E023": ("distractor_strength", "order_instability", "reversal")}
"""Which falsifiers each design's analysis computes."""
ALL_MODELS = "all models"
"""The ``model`` of a verdict about the model factor (levels are the models)."""
MIN_CLUSTERS = 2
"""Fewest clusters any estimate needs (a bootstrap of one cluster has no spread); a
stratum or level also needs the registered ``min_level_positions``."""


@dataclass(frozen=True)
class Verdict:
    """One falsifier's verdict for one model (or across models) and split."""

    falsifier: str
    """Key of :data:`FALSIFIERS`."""
    model: str
    """Model label, or :data:`ALL_MODELS`."""
    split: str
    """Split of the cells."""
    estimand: str
    """What was estimated."""
    test: str
    """The registered test and what decides the verdict."""
    verdict: Outcome
    """holds / fails / inconclusive (module docstring)."""
    wording: str
    """The verdict in the seed's words, with its interval."""
    estimate: float | None = None
    """Point estimate of the deciding figure."""
    low: float | None = None
    """Lower bound at the registered level."""
    high: float | None = None
    """Upper bound."""
    p: float | None = None
    """The deciding p (adjusted where the preset registers a family)."""
    detail: dict[str, Any] = field(default_factory=dict)
    """Every figure behind the verdict (strata, arms, level pairs)."""
    warnings: tuple[str, ...] = ()
    """Warnings stated beside the verdict."""
    source: str | None = None
    """Digest of the rows the deciding figure came from."""

    def to_json(self) -> dict[str, Any]:
        """Return the verdict as a JSON-ready mapping."""
        seed, claim = FALSIFIERS[self.falsifier]
        return {"falsifier": self.falsifier, "seed": seed, "claim": claim,
                "model": self.model, "split": self.split, "estimand": self.estimand,
                "test": self.test, "verdict": self.verdict, "wording": self.wording,
                "estimate": self.estimate, "low": self.low, "high": self.high, "p": self.p,
                "detail": self.detail, "warnings": list(self.warnings),
                "source": self.source}


def _fmt(x: float | None, spec: str = "+.4f") -> str:
    return "n/a" if x is None else format(x, spec)


def _span(est: float | None, low: float | None, high: float | None,
          spec: str = "+.4f") -> str:
    return f"{_fmt(est, spec)} [{_fmt(low, spec)}, {_fmt(high, spec)}]"


def _side(low: float | None, high: float | None, bound: float = 0.0) -> int:
    """+1 when the interval lies wholly above ``bound``, −1 wholly below, 0 otherwise."""
    if low is None or high is None:
        return 0
    return 1 if low > bound else -1 if high < bound else 0


def _by_side(side: int, above: tuple[Outcome, str], below: tuple[Outcome, str],
             straddle: str) -> tuple[Outcome, str]:
    """The verdict and its words when the interval lies above zero, below it, or across."""
    return above if side > 0 else below if side < 0 else ("inconclusive", straddle)


def _inconclusive(name: str, model: str, split: str, estimand: str, test: str,
                  why: str) -> Verdict:
    return Verdict(name, model, split, estimand, test, "inconclusive",
                   f"Inconclusive: {why}.")


# ----------------------------------------------------------------- 1. proposal availability


def proposal_availability(profile: Mapping[str, Any], plan: Plan) -> Verdict:
    """Oracle top-2 against unaided play: the preset's primary paired regret contrast
    (benefit = regret(unaided) − regret(oracle top-2), adjusted as registered)."""
    name, (a, b) = "proposal_availability", plan.contrasts[0]
    model, split = str(profile["model"]), str(profile["split"])
    estimand = f"paired regret({b}) − regret({a}) per position (positive = {a} lowers regret)"
    test = (f"cluster bootstrap by {plan.cluster}, {plan.multiplicity}-adjusted p ≤ "
            f"{plan.alpha:g} with the {100 * (1 - plan.alpha):g}% interval on one side of 0")
    c = profile["paired_regret_contrasts"].get(f"{a}-{b}")
    if c is None:
        return _inconclusive(name, model, split, estimand, test,
                             f"no position has scored cells in both {a} and {b}")
    side = _side(c["low"], c["high"]) if c["adjusted_p"] <= plan.alpha else 0
    span = _span(c["mean"], c["low"], c["high"])
    verdict, text = _by_side(
        side, ("holds", f"{a} reduces paired regret versus {b} by {span}: the claim that "
               "proposal availability repairs the system holds in this population."),
        ("fails", f"{a} does not reduce paired regret versus {b} (benefit {span}, wholly "
         "below zero): the claim that proposal availability repairs the system fails in "
         "this population."),
        f"Benefit {span} (adjusted p {c['adjusted_p']:.4f}): whether {a} reduces paired "
        f"regret versus {b} is not settled; with no registered equivalence margin, 'does "
        "not reduce' needs an interval wholly below zero.")
    return Verdict(name, model, split, estimand, test, verdict, text, c["mean"], c["low"],
                   c["high"], c["adjusted_p"], {"contrast": f"{a}-{b}", **c},
                   source=c["source"])


# ------------------------------------------------------------------ 2. distractor strength


def distractor_strength(result: Mapping[str, Any], plan: Plan,
                        warnings: Sequence[str] = ()) -> Verdict:
    """E023's primary WDL regret contrast near − far (positive = near worsens regret)."""
    name, (near, far) = "distractor_strength", plan.contrasts[0]
    model, split = str(result["model"]), str(result["split"])
    estimand = (f"WDL regret({near}) − regret({far}) per position, both presentations "
                f"averaged (positive = {near} worsens regret)")
    test = (f"cluster bootstrap by {plan.cluster}, two-sided p ≤ {plan.alpha:g} with the "
            f"{100 * (1 - plan.alpha):g}% interval on one side of 0 (a primary endpoint)")
    c = result["primaries"].get("wdl_regret")
    if c is None:
        return _inconclusive(name, model, split, estimand, test, "no WDL regret primary")
    side = _side(c["low"], c["high"]) if c["p"] <= plan.alpha else 0
    span = _span(c["mean"], c["low"], c["high"])
    verdict, text = _by_side(
        side, ("holds", f"{near} worsens conditional regret relative to {far} by {span}: "
               "E023 supports the declared distractor-strength mechanism."),
        ("fails", f"{near} does not worsen conditional regret relative to {far} ({span}, "
         "wholly below zero): E023 does not support the declared distractor-strength "
         "mechanism."),
        f"{near} − {far} regret {span} (p {c['p']:.4f}): E023 neither supports nor rejects "
        "the declared distractor-strength mechanism.")
    if warnings:
        text += " Warning: " + " ".join(warnings)
    return Verdict(name, model, split, estimand, test, verdict, text, c["mean"], c["low"],
                   c["high"], c["p"], {"contrast": f"{near}-{far}", **c}, tuple(warnings),
                   c["source"])


# --------------------------------------------------------------- 3. width after value gap


def gap_stratum(value_gap: float | None, edges: Sequence[float]) -> str | None:
    """The registered value-gap stratum of a position (None when pass A ranked one move)."""
    if value_gap is None:
        return None
    bounds = [0.0, *edges]
    for lo, hi in zip(bounds, [*edges, None], strict=True):
        if hi is None or value_gap < hi:
            return f"<{hi:g}" if lo == 0.0 else (f"≥{lo:g}" if hi is None
                                                  else f"{lo:g}–{hi:g}")
    raise AssertionError("unreachable")


def _strata_labels(edges: Sequence[float]) -> list[str]:
    bounds = [0.0, *edges]
    return [gap_stratum((lo + (hi if hi is not None else 1.0)) / 2, edges) or ""
            for lo, hi in zip(bounds, [*edges, None], strict=True)]


@dataclass(frozen=True)
class _Unit:
    """One paired unit: a (model, position) contrast with its position's strata."""

    model: str
    position: str
    cluster: str
    value: float
    row: CellRow
    rows: tuple[CellRow, ...]


def _cluster(row: CellRow, plan: Plan) -> str:
    return row.source_game if plan.cluster == "source_game" else row.position


def paired_units(rows: Sequence[CellRow], a: str, b: str, plan: Plan) -> list[_Unit]:
    """regret(b) − regret(a) per (model, position) with scored cells in both arms."""
    scored = {(r.model, r.condition, r.position): r for r in rows if r.regret is not None
              and not r.is_reliability and r.presentation is None}
    out = []
    for (model, arm, pos), x in sorted(scored.items()):
        y = scored.get((model, b, pos))
        if arm == a and y is not None:
            out.append(_Unit(model, pos, _cluster(x, plan),
                             float(y.regret or 0.0) - float(x.regret or 0.0), x, (x, y)))
    return out


def presented_units(rows: Sequence[CellRow], near: str, far: str, plan: Plan) -> list[_Unit]:
    """E023: mean regret over both presentations, near − far, per (model, position)."""
    by: dict[tuple[str, str, str], list[CellRow]] = {}
    for r in rows:
        if r.regret is not None and not r.is_reliability and r.condition in (near, far):
            by.setdefault((r.model, r.condition, r.position), []).append(r)
    out = []
    for (model, arm, pos), xs in sorted(by.items()):
        ys = by.get((model, far, pos))
        if arm == near and len(xs) == 2 and ys is not None and len(ys) == 2:
            value = float(np.mean([r.regret or 0.0 for r in xs])
                          - np.mean([r.regret or 0.0 for r in ys]))
            out.append(_Unit(model, pos, _cluster(xs[0], plan), value, xs[0], (*xs, *ys)))
    return out


@dataclass(frozen=True)
class _Levels:
    """A contrast pooled and within each level, with the bootstrap draws of each level."""

    pooled: dict[str, Any]
    levels: dict[str, dict[str, Any]]
    draws: dict[str, np.ndarray]
    too_few: dict[str, int]


def _level_figures(units: Sequence[_Unit], level_of: Callable[[_Unit], str | None],
                   settings: Settings, label: str) -> _Levels:
    """Mean contrast pooled and within each level, on one shared cluster bootstrap (a level
    with fewer than the registered ``min_level_positions`` positions, or fewer than
    :data:`MIN_CLUSTERS` clusters, gets no estimate; it is listed in ``too_few``)."""
    values = np.array([u.value for u in units])
    ones = np.ones(len(units))
    ratios: dict[str, tuple[np.ndarray, np.ndarray]] = {"": (values, ones)}
    members: dict[str, list[_Unit]] = {"": list(units)}
    too_few: dict[str, int] = {}
    for lv in sorted({lv for u in units if (lv := level_of(u)) is not None}):
        inside = [u for u in units if level_of(u) == lv]
        if (len(inside) < settings.registered.min_level_positions
                or len({u.cluster for u in inside}) < MIN_CLUSTERS):
            too_few[lv] = len(inside)
            continue
        mask = np.array([float(level_of(u) == lv) for u in units])
        ratios[f"level:{lv}"] = (values * mask, mask)
        members[f"level:{lv}"] = inside
    estimates, draws = cluster_ratio_draws(ratios, [u.cluster for u in units],
                                           n_boot=settings.n_boot,
                                           rng=stream(settings, "falsifier", label))
    figures = {name: {**_summary(est, draws[name], settings.alpha),
                      "positions": len(members[name]),
                      "source": subset_digest([r for u in members[name] for r in u.rows])}
               for name, est in estimates.items()}
    return _Levels(figures.pop(""), {k.removeprefix("level:"): v for k, v in figures.items()},
                   {k.removeprefix("level:"): v for k, v in draws.items() if k}, too_few)


def _summary(estimate: float, draws: np.ndarray, alpha: float) -> dict[str, Any]:
    """Estimate, percentile interval and two-sided bootstrap p of ``draws`` (NaN dropped)."""
    low, high, dropped = nan_interval(draws, alpha)
    finite = draws[np.isfinite(draws)]
    return {"estimate": estimate, "low": low, "high": high,
            "p": bootstrap_pvalue(finite), "dropped_resamples": dropped}


def width_after_value_gap(rows: Sequence[CellRow], model: str, split: str,
                          settings: Settings) -> list[Verdict]:
    """Every registered width contrast, pooled and per value-gap stratum (module docstring).

    benefit = regret(narrower) − regret(wider): negative = the wider list hurts (overload).
    ``holds``: the pooled effect survives in the clear-best-move stratum (largest gap);
    ``fails``: the pooled effect is present, absent there, and larger at the smallest gap
    (the interaction excludes 0 in the pooled direction); else ``inconclusive``.
    """
    plan = settings.registered
    name = "width_after_value_gap"
    mine = [r for r in rows if r.model == model and r.split == split]
    labels = _strata_labels(plan.value_gap_edges)
    out = []
    for wider, narrower in plan.width_contrasts:
        estimand = (f"paired regret({narrower}) − regret({wider}) pooled and within value-gap "
                    f"strata {', '.join(labels)} (negative = the wider list hurts)")
        test = (f"one cluster bootstrap by {plan.cluster}: pooled, each stratum, and "
                f"stratum {labels[0]} minus stratum {labels[-1]}, "
                f"{100 * (1 - plan.alpha):g}% intervals")
        units = paired_units(mine, wider, narrower, plan)
        if len({u.cluster for u in units}) < MIN_CLUSTERS:
            out.append(_inconclusive(name, model, split, estimand, test,
                                     f"{len(units)} positions pair {wider} with {narrower}"))
            continue
        lv = _level_figures(
            units, lambda u: gap_stratum(u.row.value_gap, plan.value_gap_edges), settings,
            f"width|{model}|{split}|{wider}|{narrower}")
        figures, draws, pooled = lv.levels, lv.draws, lv.pooled
        strata = [s for s in labels if s in figures]
        detail: dict[str, Any] = {"contrast": f"{wider}-{narrower}", "pooled": pooled,
                                  "strata": {s: figures[s] for s in strata},
                                  "too_few": lv.too_few}
        if strata:
            detail["standardised"] = {"estimate": float(np.mean(
                [figures[s]["estimate"] for s in strata])), "meaning": "equal weight per "
                "stratum"}
        direction = _side(pooled["low"], pooled["high"])
        interaction = None
        if len(strata) >= 2:
            diff = draws[strata[0]] - draws[strata[-1]]
            interaction = _summary(figures[strata[0]]["estimate"]
                                   - figures[strata[-1]]["estimate"], diff, plan.alpha)
            detail["interaction"] = {"strata": [strata[0], strata[-1]], **interaction}
        pspan = _span(pooled["estimate"], pooled["low"], pooled["high"])
        clear = figures.get(labels[-1])
        if direction == 0:
            verdict: Outcome = "inconclusive"
            text = (f"No width effect to condition on: {wider} versus {narrower} pooled "
                    f"{pspan}.")
        elif clear is not None and _side(clear["low"], clear["high"]) == direction:
            verdict, text = "holds", (
                f"The width effect {pspan} survives conditioning on value gap: in the "
                f"clear-best-move stratum {labels[-1]} it is "
                f"{_span(clear['estimate'], clear['low'], clear['high'])}; generic overload is "
                "not weakened.")
        elif (interaction is not None and clear is not None
              and _side(interaction["low"], interaction["high"]) == direction):
            small = figures[strata[0]]
            verdict, text = "fails", (
                f"The width effect {pspan} disappears after conditioning on value gap: "
                f"stratum {labels[-1]} {_span(clear['estimate'], clear['low'], clear['high'])}"
                f", stratum {strata[0]} "
                f"{_span(small['estimate'], small['low'], small['high'])}; generic "
                "\u201coverload\u201d weakens in favor of ambiguity-specific comparison.")
        else:
            verdict, text = "inconclusive", (
                f"The width effect {pspan} is present but the strata do not separate "
                "whether it survives conditioning on value gap.")
        decide = pooled if direction == 0 or clear is None else clear
        out.append(Verdict(name, model, split, estimand, test, verdict, text,
                           decide["estimate"], decide["low"], decide["high"], decide["p"],
                           detail, source=pooled["source"]))
    return out


# ------------------------------------------------------------------- 4. order instability


def order_pairs(rows: Sequence[CellRow]) -> dict[str, list[tuple[CellRow, CellRow]]]:
    """Arm → the (A, B) presentation pairs of one position whose both cells chose a move."""
    by: dict[tuple[str, str], dict[str, CellRow]] = {}
    for r in rows:
        if r.presentation and not r.is_reliability and r.selected_move is not None:
            by.setdefault((r.condition, r.position), {})[r.presentation] = r
    out: dict[str, list[tuple[CellRow, CellRow]]] = {}
    for (arm, _), pres in sorted(by.items()):
        if "A" in pres and "B" in pres:
            out.setdefault(arm, []).append((pres["A"], pres["B"]))
    return out


def order_instability(rows: Sequence[CellRow], model: str, split: str,
                      settings: Settings) -> Verdict:
    """Share of paired presentations whose selected move differs, by arm and pooled."""
    plan = settings.registered
    name = "order_instability"
    rare = plan.rare_order_change
    estimand = ("share of (position, arm) pairs whose two counterbalanced presentations "
                "selected different moves (pairs where both chose a legal move)")
    test = (f"pooled share with a cluster-bootstrap {100 * (1 - plan.alpha):g}% interval by "
            f"{plan.cluster}; 'rarely' = below {rare:g} (upper bound below: not a major "
            f"explanation; lower bound at or above: a major one); by arm, {plan.interval} "
            "intervals" if rare is not None else "no rare_order_change registered")
    pairs = order_pairs([r for r in rows if r.model == model and r.split == split])
    units = [(a, b) for arm in pairs for a, b in pairs[arm]]
    if rare is None or len({_cluster(a, plan) for a, _ in units}) < MIN_CLUSTERS:
        return _inconclusive(name, model, split, estimand, test,
                             f"{len(units)} complete presentation pairs"
                             if rare is not None else "no rare_order_change registered")
    by_arm = {}
    for arm, ps in pairs.items():
        k = sum(a.selected_move != b.selected_move for a, b in ps)
        low, high = proportion_interval(plan.interval, k, len(ps), plan.alpha)
        by_arm[arm] = {"differ": k, "pairs": len(ps), "share": k / len(ps), "low": low,
                       "high": high, "method": plan.interval,
                       "source": subset_digest([r for p in ps for r in p])}
    differ = np.array([float(a.selected_move != b.selected_move) for a, b in units])
    estimates, draws = cluster_ratio_draws({"share": (differ, np.ones(len(units)))},
                                           [_cluster(a, plan) for a, _ in units],
                                           n_boot=settings.n_boot,
                                           rng=stream(settings, "falsifier", "order", model,
                                                      split))
    low, high, _ = nan_interval(draws["share"], plan.alpha)
    share = estimates["share"]
    span = _span(share, low, high, ".3f")
    if high < rare:
        verdict: Outcome = "fails"
        text = (f"Exact order derangement rarely changes the selected move ({span} of pairs, "
                f"below {rare:g}): presentation instability is not a major explanation.")
    elif low >= rare:
        verdict, text = "holds", (
            f"Exact order derangement changes the selected move in {span} of pairs (at or "
            f"above {rare:g}): presentation instability remains a candidate explanation.")
    else:
        verdict, text = "inconclusive", (
            f"Order derangement changes the selected move in {span} of pairs, straddling "
            f"{rare:g}: whether it is rare is not settled.")
    return Verdict(name, model, split, estimand, test, verdict, text, share, low, high, None,
                   {"pairs": len(units), "rare_order_change": rare, "by_arm": by_arm},
                   source=subset_digest([r for p in units for r in p]))


# -------------------------------------------------------------------- 5. transition search


def transition_search(profile: Mapping[str, Any], plan: Plan) -> list[Verdict]:
    """Each E022 falsifier arm against the control at the same width: the paired regret
    benefit (adjusted as registered) decides; the share of the control's selection deficit
    the arm removes, (S(arm) − S(control)) / (1 − S(control)), is reported beside it."""
    name = "transition_search"
    model, split = str(profile["model"]), str(profile["split"])
    figures = profile["figures"]
    out = []
    for arm, control in plan.contrasts:
        estimand = (f"paired regret({control}) − regret({arm}) per position (positive = the "
                    f"{arm} information lowers regret)")
        test = (f"cluster bootstrap by {plan.cluster}, {plan.multiplicity}-adjusted p ≤ "
                f"{plan.alpha:g} with the interval on one side of 0")
        c = profile["paired_regret_contrasts"].get(f"{arm}-{control}")
        if c is None:
            out.append(_inconclusive(name, model, split, estimand, test,
                                     f"no position has scored cells in both {arm} and "
                                     f"{control}"))
            continue
        detail: dict[str, Any] = {"contrast": f"{arm}-{control}", **c}
        s_control = figures.get(f"selection:{control}", {}).get("estimate")
        diff = figures.get(f"selection_minus_control:{arm}")
        if diff is not None and s_control is not None and s_control < 1.0:
            detail["deficit_removed"] = {
                "estimate": diff["estimate"] / (1.0 - s_control),
                "control_selection": s_control, "selection_gain": diff["estimate"],
                "selection_gain_interval": [diff["low"], diff["high"]]}
        side = _side(c["low"], c["high"]) if c["adjusted_p"] <= plan.alpha else 0
        span = _span(c["mean"], c["low"], c["high"])
        removed = detail.get("deficit_removed", {}).get("estimate")
        share = "" if removed is None else (
            f" (selection {detail['deficit_removed']['selection_gain']:+.3f}: "
            f"{removed:+.0%} of the control's selection deficit)")
        verdict, text = _by_side(
            side, ("fails", f"{arm} lowers regret against {control} by {span}{share}: a "
                   "transition/search mechanism displaces pure comparison failure."),
            ("holds", f"{arm} does not remove the deficit (benefit {span}, wholly below "
             "zero): pure comparison failure is not displaced."),
            f"{arm} against {control}: benefit {span} (adjusted p {c['adjusted_p']:.4f})"
            f"{share}; whether it removes the deficit is not settled.")
        out.append(Verdict(name, model, split, estimand, test, verdict, text, c["mean"],
                           c["low"], c["high"], c["adjusted_p"], detail, source=c["source"]))
    return out


# ----------------------------------------------------------------------------- 6. reversal


def _level(factor: str, edges: Sequence[float]) -> Callable[[_Unit], str | None]:
    if factor == "model":
        return lambda u: u.model
    if factor == "value_gap":
        return lambda u: gap_stratum(u.row.value_gap, edges)
    return lambda u: getattr(u.row, factor)


def reversal(units: Sequence[_Unit], split: str, contrast: str, settings: Settings,
             ) -> list[Verdict]:
    """The primary contrast within each level of each registered factor: the model factor
    across models, every other factor within each model; every level pair's difference on
    the scope's shared bootstrap, the whole family adjusted as registered."""
    plan = settings.registered
    scopes: list[tuple[str, str, list[_Unit]]] = []
    for factor in plan.reversal_factors:
        if factor == "model":
            scopes.append((ALL_MODELS, factor, list(units)))
        else:
            scopes += [(m, factor, [u for u in units if u.model == m])
                       for m in sorted({u.model for u in units})]
    computed: list[_Levels | None] = []
    tests: list[tuple[int, str, str, dict[str, Any]]] = []
    for i, (model, factor, mine) in enumerate(scopes):
        if len({u.cluster for u in mine}) < MIN_CLUSTERS:
            computed.append(None)
            continue
        found = _level_figures(mine, _level(factor, plan.value_gap_edges), settings,
                               f"reversal|{model}|{split}|{factor}|{contrast}")
        computed.append(found)
        for x, y in combinations(found.levels, 2):
            pair = _summary(found.levels[x]["estimate"] - found.levels[y]["estimate"],
                            found.draws[x] - found.draws[y], plan.alpha)
            tests.append((i, x, y, pair))
    adjusted = adjust(plan.interaction_multiplicity, [t[3]["p"] for t in tests]) if tests \
        else []
    out = []
    for i, ((model, factor, _), lv) in enumerate(zip(scopes, computed, strict=True)):
        estimand = (f"{contrast} within each {factor} level; each level pair's difference "
                    "(interaction)")
        test = (f"cluster bootstrap by {plan.cluster}; {plan.interaction_multiplicity}-adjusted "
                f"p ≤ {plan.alpha:g} across every level pair of this analysis; a reversal = "
                "an adjusted-significant difference between levels of opposite sign")
        if lv is None or len(lv.levels) < 2:
            short = "" if lv is None or not lv.too_few else " (" + ", ".join(
                f"{k}: {n}" for k, n in lv.too_few.items()) + " positions)"
            none = _inconclusive("reversal", model, split, estimand, test,
                                 f"fewer than two {factor} levels with "
                                 f"{plan.min_level_positions}+ paired positions{short}")
            out.append(replace(none, detail={"factor": factor, "contrast": contrast,
                                             "too_few": {} if lv is None else lv.too_few}))
            continue
        pairs = [{"levels": [x, y], **t, "adjusted_p": q, "method":
                  plan.interaction_multiplicity}
                 for (j, x, y, t), q in zip(tests, adjusted, strict=True) if j == i]
        levels = lv.levels
        flips = [p for p in pairs if p["adjusted_p"] <= plan.alpha
                 and levels[p["levels"][0]]["estimate"] * levels[p["levels"][1]]["estimate"]
                 < 0]
        sides = {_side(v["low"], v["high"]) for v in levels.values()} - {0}
        detail = {"factor": factor, "contrast": contrast, "pooled": lv.pooled,
                  "levels": levels, "pairs": pairs, "too_few": lv.too_few}
        if flips:
            top = min(flips, key=lambda p: p["adjusted_p"])
            x, y = top["levels"]
            fx, fy = levels[x], levels[y]
            verdict: Outcome = "fails"
            text = (f"The contrast reverses by {factor}: {x} "
                    f"{_span(fx['estimate'], fx['low'], fx['high'])}, {y} "
                    f"{_span(fy['estimate'], fy['low'], fy['high'])} (difference adjusted p "
                    f"{top['adjusted_p']:.4f}): the interaction is the result; there is no "
                    "license to average it into a universal story.")
            decide = top
        elif len(sides) == 1:
            verdict, text = "holds", (
                f"No reversal by {factor}: every level whose interval excludes zero points the "
                f"same way (levels {', '.join(levels)}).")
            decide = None
        elif sides:
            verdict, text = "inconclusive", (
                f"Levels of {factor} point opposite ways, but no level pair's difference "
                f"survives the {plan.interaction_multiplicity} adjustment: a reversal is "
                "neither shown nor ruled out.")
            decide = None
        else:
            verdict, text = "inconclusive", (
                f"No adjusted-significant reversal by {factor}, but no level's interval "
                "excludes zero either way: a reversal is not ruled out.")
            decide = None
        out.append(Verdict("reversal", model, split, estimand, test, verdict, text,
                           None if decide is None else decide["estimate"],
                           None if decide is None else decide["low"],
                           None if decide is None else decide["high"],
                           None if decide is None else decide["adjusted_p"], detail,
                           source=lv.pooled["source"]))
    return out


def reversal_units(rows: Sequence[CellRow], plan: Plan) -> tuple[list[_Unit], str]:
    """The units of the design's primary contrast (E023: near − far over both
    presentations; otherwise the paired regret benefit of a over b) and its name."""
    a, b = plan.contrasts[0]
    if plan.design == "E023":
        return presented_units(rows, a, b, plan), f"regret({a}) − regret({b})"
    return paired_units(rows, a, b, plan), f"regret({b}) − regret({a})"


# ------------------------------------------------------------------------------- assembly


def design_verdicts(rows: Sequence[CellRow], settings: Settings,
                    results: Sequence[Mapping[str, Any]],
                    warnings: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Every falsifier the design of ``rows`` computes (:data:`DESIGN_FALSIFIERS`), per
    model and split, from the design's own results (stage profiles or E023 results, as
    JSON) and the rows; ``warnings`` are stated beside E023's distractor verdict."""
    plan = settings.registered
    out: list[Verdict] = []
    for r in results:
        model, split = str(r["model"]), str(r["split"])
        if plan.design == "E020_E021":
            out.append(proposal_availability(r, plan))
            out += width_after_value_gap(rows, model, split, settings)
        elif plan.design == "E022":
            out += transition_search(r, plan)
        elif plan.design == "E023":
            out.append(distractor_strength(r, plan, warnings))
            out.append(order_instability(rows, model, split, settings))
    for split in sorted({str(r["split"]) for r in results}):
        units, contrast = reversal_units([x for x in rows if x.split == split], plan)
        out += reversal(units, split, contrast, settings)
    return [v.to_json() for v in out]
