"""Outcome-blind design audits: the A105 schedule and the E023 order/selector audit.

Both make zero provider calls, zero engine calls and read no outcome. Each returns the
measured figures, the seed's printed figures beside them where the seed prints one,
and named exact-balance checks; a failed check means the design is not as registered.
Warnings say what a registered result could mean without failing the audit (E023's
endpoint validity, :mod:`rungbench.design.endpoint_validity`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rungbench.design.endpoint_validity import (
    EndpointValidity,
    endpoint_validity,
    rank_values,
)
from rungbench.design.factorial import Recovery, recovery_check
from rungbench.design.latin import (
    carryover_counts,
    is_exactly_balanced,
    ordinal_counts,
    ordinal_counts_by,
)
from rungbench.design.orders import (
    ExposureAudit,
    OrderArray,
    exposure_audit,
    independent_shuffles,
    project,
)
from rungbench.design.presets import ArmsDesign, FactorialDesign
from rungbench.design.selectors import (
    DistractorContrast,
    FloatArray,
    arm_orders,
    distractor_contrast,
    registered_selectors,
    simulate_two_stage,
    stage_signature,
)
from rungbench.stats import mde


@dataclass(frozen=True)
class Figure:
    """One audited quantity: ours beside the seed's printed value, when it prints one."""

    key: str
    """Stable identifier."""
    quantity: str
    """What the number is, in words."""
    ours: float
    """Our measured value."""
    seed: float | None
    """The value the seed prints, or None."""
    must_equal: bool
    """Whether ours must equal the seed's (a registered exact property)."""

    @property
    def ok(self) -> bool:
        """Whether an exact figure matches (always True for context-only figures)."""
        return (not self.must_equal or self.seed is None
                or math.isclose(self.ours, self.seed, rel_tol=0, abs_tol=1e-9))

    def to_json(self) -> dict[str, Any]:
        """Return the figure as a JSON-ready mapping."""
        return {"key": self.key, "quantity": self.quantity, "ours": self.ours,
                "seed": self.seed, "must_equal": self.must_equal, "ok": self.ok}


@dataclass(frozen=True)
class AuditReport:
    """An audit's figures, named checks and detail tables."""

    design: str
    """Registry ID of the audited design."""
    digest: str
    """Digest of the registered preset that was audited."""
    figures: list[Figure]
    """Measured figures beside the seed's."""
    checks: dict[str, bool]
    """Named exact-balance and recovery properties."""
    detail: dict[str, Any] = field(default_factory=dict)
    """Full tables (counts, per-arm audits, contrasts)."""
    warnings: list[dict[str, Any]] = field(default_factory=list)
    """JSON-ready warnings, each with a ``code`` and a ``message``: what a registered result
    could mean, never a failed check (the audit stays ok)."""

    @property
    def ok(self) -> bool:
        """Whether every check holds and every exact figure matches."""
        return all(self.checks.values()) and all(f.ok for f in self.figures)

    def failed(self) -> list[str]:
        """Names of failed checks and mismatched exact figures."""
        return ([k for k, v in self.checks.items() if not v]
                + [f.key for f in self.figures if not f.ok])

    def to_json(self) -> dict[str, Any]:
        """Return the report as a JSON-ready mapping."""
        return {"design": self.design, "digest": self.digest, "ok": self.ok,
                "failed": self.failed(), "figures": [f.to_json() for f in self.figures],
                "checks": dict(self.checks), "warnings": list(self.warnings),
                "detail": self.detail}


def schedule_audit(d: FactorialDesign) -> AuditReport:
    """Audit the abstract factorial schedule, its Latin ordinals and the MDE envelope."""
    cells = d.schedule()
    names = d.condition_names
    overall = ordinal_counts(cells, names)
    by_model = ordinal_counts_by(cells, names, "model")
    by_split = ordinal_counts_by(cells, names, "split")
    by_order = ordinal_counts_by(cells, names, "panel_order")
    per_model = {m: sum(1 for c in cells if c.level("model") == m) for m in d.models}
    carry = carryover_counts(cells)
    pairs = {(a, b) for a in names for b in names if a != b}
    per_cell = next(iter(overall.values()))[0]
    figures = [
        Figure("cells", "planned cells", len(cells), d.seed_figures.get("cells"), True),
        *[Figure(f"requests_{m}", f"requests for {m}", n,
                 d.seed_figures.get("requests_per_model"), True) for m, n in per_model.items()],
        Figure("condition_ordinal_count", "cells per condition per ordinal (every one)",
               per_cell, d.seed_figures.get("condition_ordinal_count"), True),
        *_mde_figures(d),
    ]
    checks = {
        "cells_as_registered": len(cells) == d.planned_cells,
        "requests_per_model_as_registered": all(
            n == d.planned_requests_per_model for n in per_model.values()),
        "ordinals_balanced": is_exactly_balanced(overall),
        "ordinals_balanced_per_model": all(is_exactly_balanced(v) for v in by_model.values()),
        "ordinals_balanced_per_split": all(is_exactly_balanced(v) for v in by_split.values()),
        "ordinals_balanced_per_panel_order": all(
            is_exactly_balanced(v) for v in by_order.values()),
        "carryover_balanced": set(carry) == pairs and len(set(carry.values())) == 1,
    }
    detail = {"ordinal_counts": overall, "ordinal_counts_by_model": by_model,
              "ordinal_counts_by_split": by_split, "ordinal_counts_by_panel_order": by_order,
              "carryover_counts": {f"{a}->{b}": n for (a, b), n in sorted(carry.items())},
              "requests_per_model": per_model}
    return AuditReport(d.id, d.digest, figures, checks, detail)


def _mde_figures(d: FactorialDesign) -> list[Figure]:
    out: list[Figure] = []
    for sd in d.mde_sds:
        tag = f"{round(sd * 100):03d}"
        for label, clusters in (("n", None), ("c", d.mde_clusters)):
            value = mde(d.mde_n, sd, tests=d.gate.family_size, power=d.mde_power,
                        alpha=d.gate.alpha, clusters=clusters).mde
            denom = d.mde_n if clusters is None else clusters
            key = f"mde_{label}{denom}_sd{tag}"
            out.append(Figure(key, f"MDE at {denom} {'clusters' if clusters else 'positions'}, "
                              f"paired SD {sd:g}", round(value, 4), d.seed_figures.get(key), True))
    return out


def recovery_figures(recoveries: list[Recovery]) -> tuple[list[Figure], dict[str, bool]]:
    """Figures and checks for the synthetic factorial recovery."""
    figures = [Figure(f"recovery_{r.signature}", f"noisy recovery share, {r.signature}",
                      r.noisy_recovery, None, False) for r in recoveries]
    checks = {f"exact_recovery_{r.signature}": r.recovered for r in recoveries}
    return figures, checks


def factorial_audit(d: FactorialDesign, *, replicates: int = 20) -> AuditReport:
    """Schedule audit plus synthetic-signature recovery by the registered estimands."""
    report = schedule_audit(d)
    recoveries = recovery_check(replicates=replicates)
    figures, checks = recovery_figures(recoveries)
    return AuditReport(d.id, d.digest, [*report.figures, *figures],
                       {**report.checks, **checks},
                       {**report.detail, "recovery": [r.to_json() for r in recoveries]})


def shuffled_arm_orders(d: ArmsDesign) -> dict[str, tuple[OrderArray, OrderArray]]:
    """Independent-shuffle orders for every arm (the protocol E023 replaces)."""
    return {arm.name: independent_shuffles(d.positions, d.width,
                                           np.random.default_rng([d.shuffle_seed, i]))
            for i, arm in enumerate(d.arms)}


def contrasts(d: ArmsDesign, orders: dict[str, tuple[OrderArray, OrderArray]],
              ) -> dict[str, dict[str, DistractorContrast]]:
    """Every selector's near − far contrasts (primary and secondary) under ``orders``."""
    out: dict[str, dict[str, DistractorContrast]] = {}
    for near, far in (d.primary_contrast, *d.secondary_contrasts):
        key = f"{near}-{far}"
        out[key] = {
            sel.name: distractor_contrast(
                (near, d.arm(near).ranks, orders[near]), (far, d.arm(far).ranks, orders[far]),
                sel)
            for sel in registered_selectors(d)}
    return out


def order_audit(d: ArmsDesign) -> AuditReport:
    """The E023 audit: shuffle projection vs cyclic counterbalance, selectors, aliasing."""
    shuffle = _shuffle_projection(d)
    cyclic = {name: exposure_audit(a, b) for name, (a, b) in arm_orders(d).items()}
    balanced = contrasts(d, arm_orders(d))
    shuffled = contrasts(d, shuffled_arm_orders(d))
    validity = endpoint_validity(d, orders=arm_orders(d))
    expected = 2 * d.positions // d.width
    primary = f"{d.primary_contrast[0]}-{d.primary_contrast[1]}"
    prim = balanced[primary]
    ideas, vision = stage_signature(0.35, 0.90), stage_signature(0.90, 0.35)
    figures = [*_shuffle_figures(d, shuffle), *_cyclic_figures(d, cyclic, expected),
               *_contrast_figures(balanced, shuffled, primary),
               *_endpoint_figures(validity),
               Figure("alias_ideas_limited", "C × S, ideas-limited (C 0.35, S 0.90)",
                      round(ideas.unaided_best_rate, 12),
                      d.seed_figures.get("coverage_selection_product"), True),
               Figure("alias_vision_limited", "C × S, vision-limited (C 0.90, S 0.35)",
                      round(vision.unaided_best_rate, 12),
                      d.seed_figures.get("coverage_selection_product"), True),
               Figure("alias_ideas_limited_mc", "simulated best rate, ideas-limited (200k)",
                      simulate_two_stage(ideas, 200_000, 1), None, False),
               Figure("alias_vision_limited_mc", "simulated best rate, vision-limited (200k)",
                      simulate_two_stage(vision, 200_000, 2), None, False)]
    checks = {
        **{f"cyclic_{n}_all_pairs_differ": a.differing_pairs == d.positions
           for n, a in cyclic.items()},
        **{f"cyclic_{n}_all_deranged": a.fully_deranged_pairs == d.positions
           for n, a in cyclic.items()},
        **{f"cyclic_{n}_every_assignment_moves": a.moved_share == 1.0
           for n, a in cyclic.items()},
        **{f"cyclic_{n}_rank_slot_exact": {v for r in a.rank_slot_counts for v in r} == {expected}
           for n, a in cyclic.items()},
        "diffuse_hurt_more_than_sharp":
            prim["diffuse"].anchor_miss_delta > 2 * prim["sharp"].anchor_miss_delta > 0,
        "primacy_keeps_contrast":
            prim["diffuse+primacy"].anchor_miss_delta > prim["sharp+primacy"].anchor_miss_delta
            > 0 and prim["diffuse+primacy"].anchor_miss_delta
            > 0.5 * prim["diffuse"].anchor_miss_delta,
        "primacy_alone_gives_no_contrast_when_balanced":
            abs(prim["primacy_only"].anchor_miss_delta) < 1e-12,
        **_endpoint_checks(d, validity),
        "aliased_scores_equal": math.isclose(ideas.unaided_best_rate, vision.unaided_best_rate),
        "ladder_separates_aliases": ideas.to_json() != vision.to_json(),
    }
    detail = {
        "shuffle_projection": {str(w): a.to_json() for w, a in shuffle.items()},
        "cyclic": {n: a.to_json() for n, a in cyclic.items()},
        "contrasts_cyclic": _contrast_json(balanced),
        "contrasts_independent_shuffle": _contrast_json(shuffled),
        "aliasing": {"ideas_limited": ideas.to_json(), "vision_limited": vision.to_json()},
        "arms": {a.name: list(a.ranks) for a in d.arms},
        "endpoint_validity": validity.to_json(),
    }
    return AuditReport(d.id, d.digest, figures, checks, detail,
                       [w.to_json() for w in validity.warnings])


def _shuffle_projection(d: ArmsDesign) -> dict[int, ExposureAudit]:
    top = max(d.shuffle_widths)
    a, b = independent_shuffles(d.positions, top, d.shuffle_seed)
    return {w: exposure_audit(project(a, w), project(b, w)) for w in d.shuffle_widths}


def _shuffle_figures(d: ArmsDesign, shuffle: dict[int, ExposureAudit]) -> list[Figure]:
    s = d.seed_figures.get
    out: list[Figure] = []
    for w, a in shuffle.items():
        out += [
            Figure(f"shuffle_identical_pairs_w{w}", f"independent shuffle, top-{w}: identical "
                   "pairs", a.identical_pairs, s(f"shuffle_identical_pairs_w{w}"), False),
            Figure(f"shuffle_moved_share_w{w}", f"independent shuffle, top-{w}: share of "
                   "assignments moved", a.moved_share, s(f"shuffle_moved_share_w{w}"), False),
            Figure(f"shuffle_deranged_pairs_w{w}", f"independent shuffle, top-{w}: fully "
                   "deranged pairs", a.fully_deranged_pairs, s(f"shuffle_deranged_pairs_w{w}"),
                   False),
            Figure(f"shuffle_max_imbalance_w{w}", f"independent shuffle, top-{w}: max "
                   "rank-by-slot imbalance", a.max_imbalance, s(f"shuffle_max_imbalance_w{w}"),
                   False)]
    return out


def _cyclic_figures(d: ArmsDesign, cyclic: dict[str, ExposureAudit],
                    expected: int) -> list[Figure]:
    s = d.seed_figures.get
    out: list[Figure] = []
    for name, a in cyclic.items():
        counts = {v for row in a.rank_slot_counts for v in row}
        out += [
            Figure(f"cyclic_{name}_differing_pairs", f"cyclic, {name}: paired orders differing",
                   a.differing_pairs, s("cyclic_differing_pairs"), True),
            Figure(f"cyclic_{name}_deranged_pairs", f"cyclic, {name}: fully deranged pairs",
                   a.fully_deranged_pairs, s("cyclic_deranged_pairs"), True),
            Figure(f"cyclic_{name}_moved_share", f"cyclic, {name}: share of assignments moved",
                   a.moved_share, s("cyclic_moved_share"), True),
            Figure(f"cyclic_{name}_rank_slot_count", f"cyclic, {name}: exposures per rank "
                   "and slot", min(counts) if len(counts) == 1 else -1,
                   s("cyclic_rank_slot_count", expected), True),
            Figure(f"cyclic_{name}_max_imbalance", f"cyclic, {name}: max rank-by-slot "
                   "imbalance", a.max_imbalance, s("cyclic_max_imbalance"), True)]
    return out


def _contrast_figures(balanced: dict[str, dict[str, DistractorContrast]],
                      shuffled: dict[str, dict[str, DistractorContrast]],
                      primary: str) -> list[Figure]:
    out: list[Figure] = []
    for sel, c in balanced[primary].items():
        out.append(Figure(f"anchor_miss_delta_{sel}", f"{primary}, {sel}: Δ P(miss rank 1), "
                          "cyclic orders", round(c.anchor_miss_delta, 12), None, False))
        out.append(Figure(f"regret_delta_{sel}", f"{primary}, {sel}: Δ utility regret, "
                          "cyclic orders", round(c.regret_delta, 12), None, False))
    c = shuffled[primary]["primacy_only"]
    out.append(Figure("anchor_miss_delta_primacy_only_shuffled", f"{primary}, primacy only: "
                      "Δ P(miss rank 1), independent shuffles", c.anchor_miss_delta, None, False))
    return out


def _endpoint_figures(validity: EndpointValidity) -> list[Figure]:
    """Every selector's primary contrast on each endpoint the selectors model (the
    utility regret is :func:`_contrast_figures`' ``regret_delta``)."""
    primary = validity.primary_contrast
    return [Figure(f"{c.endpoint}_delta_{c.selector}", f"{primary}, {c.selector}: Δ "
                   f"{c.endpoint} (near − far), cyclic orders, {validity.profile.source} "
                   "regret profile", round(c.delta, 12), None, False)
            for c in validity.cells
            if c.contrast == primary and c.delta is not None and c.endpoint != "utility_regret"]


def _endpoint_checks(d: ArmsDesign, validity: EndpointValidity) -> dict[str, bool]:
    """Exact balance seen through every endpoint: with each rank in each slot equally often
    a utility-blind (primacy-only) selector picks every rank of an arm with probability
    1 / width, so on an endpoint of the chosen rank each arm scores the plain mean over its
    ranks (the contrast is composition only), and its two presentations disagree equally
    often in every arm."""
    values = rank_values(validity.profile)
    checks: dict[str, bool] = {}
    for endpoint, by_rank in values.items():
        cells = [c for c in validity.cells
                 if c.selector == "primacy_only" and c.endpoint == endpoint]
        checks[f"primacy_alone_gives_composition_only_{endpoint}_when_balanced"] = all(
            c.near is not None and c.far is not None
            and math.isclose(c.near, _rank_mean(d, c.contrast, 0, by_rank), abs_tol=1e-9)
            and math.isclose(c.far, _rank_mean(d, c.contrast, 1, by_rank), abs_tol=1e-9)
            for c in cells)
    checks["primacy_alone_gives_no_order_disagreement_contrast_when_balanced"] = all(
        c.sign == 0 for c in validity.cells
        if c.selector == "primacy_only" and c.endpoint == "order_disagreement")
    return checks


def _rank_mean(d: ArmsDesign, contrast: str, side: int, by_rank: FloatArray) -> float:
    """The plain mean of ``by_rank`` over the ranks of one arm of ``contrast``."""
    ranks = d.arm(contrast.split("-")[side]).ranks
    return float(np.mean([by_rank[r - 1] for r in ranks]))


def _contrast_json(table: dict[str, dict[str, DistractorContrast]]) -> dict[str, Any]:
    return {k: {sel: c.to_json() for sel, c in row.items()} for k, row in table.items()}
