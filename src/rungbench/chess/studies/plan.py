"""The registered analysis of a study preset: every inference choice the analysis makes,
read from the preset's ``[analysis]`` table (docs/presets.md).

:func:`plan_of` is the only way the analysis learns its level, interval method, cluster
unit, multiplicity method, contrasts, catastrophic-blunder threshold and best-move rule; a
binding's digest pins the preset, so it pins the analysis too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rungbench.chess.studies.study_presets import (
    FalsifierPreset,
    LadderPreset,
    study_preset,
)
from rungbench.design.factorial import MaterialRules
from rungbench.design.preset_models import (
    ArmsPreset,
    FactorialPreset,
    FalsifierTable,
    OrderFalsifiers,
)
from rungbench.design.registry import RegisteredDesign, load_design
from rungbench.errors import InputError

EVALUATOR_TIES = "evaluator_ties"
"""The best-move rule of kinds that register none (A105, E023): every move the evaluator
values at the maximum expectation."""
BUNDLED = {"A105": "a105", "E020_E021": "e020_e021", "E022": "e022", "E023": "e023"}
"""The bundled preset of each design ID."""


@dataclass(frozen=True)
class Plan:
    """The analysis a preset registers."""

    design: str
    """Design ID."""
    alpha: float
    """Level of every test; intervals are at ``1 - alpha``."""
    interval: str
    """Method of every reported proportion's interval (``wilson``, ``clopper_pearson``)."""
    cluster: str
    """Cluster unit of every bootstrap (``source_game`` or ``position``)."""
    multiplicity: str
    """Adjustment of the contrast family (``holm``, ``bonferroni``, ``benjamini_hochberg``)."""
    catastrophic_regret: float
    """WDL regret at or above which a cell is a catastrophic blunder."""
    best_set: str
    """Which moves count as best (``evaluator_ties``, ``pass_a_ties_with_rank1``,
    ``pass_a_rank1``)."""
    contrasts: tuple[tuple[str, str], ...] = ()
    """Registered (a, b) contrasts, the primary first."""
    selection_arms: tuple[str, ...] = ()
    """E020/E021: oracle arms giving conditional selection S."""
    coverage_arm: str | None = None
    """E020/E021: the probe giving coverage C."""
    control_arm: str | None = None
    """E022: the control every falsifier is compared with."""
    material: MaterialRules | None = None
    """A105: what counts as a material reversal (gate 3)."""
    primary_split: str | None = None
    """A105: the split of the primary family."""
    primary_tests: tuple[str, ...] = ()
    """A105: the primary family ``model:factor``."""
    panel_orders: tuple[str, ...] = ()
    """A105: the registered panel orders (a complete position has every one)."""
    unaided_arms: tuple[str, ...] = ()
    """E020/E021: the arms of kind ``unaided`` (their best-move rate is reported)."""
    width_contrasts: tuple[tuple[str, str], ...] = ()
    """E020/E021: the registered (wider, narrower) pairs the width falsifier conditions."""
    reversal_factors: tuple[str, ...] = ()
    """Strata the reversal falsifier crosses with the primary contrast."""
    interaction_multiplicity: str = "benjamini_hochberg"
    """Adjustment across the reversal falsifier's level-pair interaction tests."""
    min_level_positions: int = 10
    """Fewest paired positions a falsifier stratum or level needs for an estimate."""
    value_gap_edges: tuple[float, ...] = ()
    """Value-gap stratum edges (pass A rank 1 minus rank 2 WDL expectation)."""
    rare_order_change: float | None = None
    """E023: the order-disagreement share below which order 'rarely' changes the move."""
    primary_endpoints: tuple[str, ...] = ("wdl_regret",)
    """The endpoints of the primary contrast, each tested at ``alpha`` unadjusted."""

    def to_json(self) -> dict[str, Any]:
        """Return the plan as recorded in an analysis document."""
        return {"design": self.design, "alpha": self.alpha, "interval": self.interval,
                "cluster": self.cluster, "multiplicity": self.multiplicity,
                "catastrophic_regret": self.catastrophic_regret, "best_set": self.best_set,
                "contrasts": [list(c) for c in self.contrasts],
                "selection_arms": list(self.selection_arms), "coverage_arm": self.coverage_arm,
                "control_arm": self.control_arm,
                "material": None if self.material is None else self.material.to_json(),
                "primary_split": self.primary_split,
                "primary_tests": list(self.primary_tests),
                "panel_orders": list(self.panel_orders), "unaided_arms": list(self.unaided_arms),
                "width_contrasts": [list(c) for c in self.width_contrasts],
                "reversal_factors": list(self.reversal_factors),
                "interaction_multiplicity": self.interaction_multiplicity,
                "min_level_positions": self.min_level_positions,
                "value_gap_edges": list(self.value_gap_edges),
                "rare_order_change": self.rare_order_change,
                "primary_endpoints": list(self.primary_endpoints)}


def plan_of(reg: RegisteredDesign) -> Plan:
    """The analysis ``reg`` registers (checked against its kind's key schema)."""
    p = study_preset(reg)
    if isinstance(p, FactorialPreset):
        a = p.analysis
        m = a.material
        rules = MaterialRules(tuple(m.subset_sensitivities), tuple(m.full_sensitivities),
                              tuple(m.bound_sensitivities), m.min_benefit, m.attrition_spread,
                              m.attrition_alpha, m.min_subset_positions)
        return Plan(p.design.id, a.alpha, a.interval, a.cluster, a.multiplicity,
                    a.catastrophic_regret, EVALUATOR_TIES, material=rules,
                    primary_split=a.primary_split, primary_tests=tuple(a.primary_tests),
                    panel_orders=tuple(p.schedule.panel_orders))
    if isinstance(p, ArmsPreset):
        e = p.analysis
        pairs = (e.primary_contrast, *e.secondary_contrasts)
        return Plan(p.design.id, e.alpha, e.interval, e.cluster,
                    e.secondary_multiplicity, e.catastrophic_regret, EVALUATOR_TIES,
                    contrasts=tuple((c[0], c[1]) for c in pairs),
                    primary_endpoints=tuple(e.primary_endpoints), **_falsifiers(p.falsifiers))
    if isinstance(p, LadderPreset):
        la = p.analysis
        pairs = (la.primary_contrast, *la.width_contrasts, la.omission_contrast)
        return Plan(p.design.id, round(1.0 - la.confidence, 12), la.interval, la.cluster,
                    la.multiplicity, la.catastrophic_regret, la.best_set,
                    contrasts=tuple((c[0], c[1]) for c in pairs),
                    selection_arms=tuple(la.selection_arms), coverage_arm=la.coverage_arm,
                    unaided_arms=tuple(x.name for x in p.arms if x.kind == "unaided"),
                    width_contrasts=tuple((c[0], c[1]) for c in la.width_contrasts),
                    **_falsifiers(p.falsifiers))
    assert isinstance(p, FalsifierPreset)
    f = p.analysis
    return Plan(p.design.id, f.alpha, f.interval, f.cluster, f.multiplicity,
                f.catastrophic_regret, f.best_set,
                contrasts=tuple((c[0], c[1]) for c in f.primary_contrasts),
                control_arm=f.control_arm, **_falsifiers(p.falsifiers))


def _falsifiers(t: FalsifierTable) -> dict[str, Any]:
    """The plan fields a ``[falsifiers]`` table registers."""
    return {"reversal_factors": tuple(t.reversal_factors),
            "interaction_multiplicity": t.interaction_multiplicity,
            "min_level_positions": t.min_level_positions,
            "value_gap_edges": tuple(t.value_gap_edges or ()),
            "rare_order_change": t.rare_order_change if isinstance(t, OrderFalsifiers)
            else None}


def registered_plan(design_id: str) -> Plan:
    """The plan of the bundled preset of ``design_id``."""
    return plan_of(load_design(BUNDLED[design_id]))


def best_moves(rule: str, evaluator_best: Sequence[str], metadata: Mapping[str, Any],
               ) -> set[str]:
    """The moves that count as best under the registered ``rule``: the evaluator's
    maximum-expectation moves, or pass A's rank 1 with (``pass_a_ties_with_rank1``) or
    without (``pass_a_rank1``) its ties, as the request's metadata froze them."""
    if rule == EVALUATOR_TIES:
        return set(evaluator_best)
    if rule == "pass_a_ties_with_rank1":
        return {str(m) for m in metadata["best_moves"]}
    if rule == "pass_a_rank1":
        return {str(metadata["best_move"])}
    raise InputError(f"unknown best-move rule {rule!r}", field="analysis.best_set")
