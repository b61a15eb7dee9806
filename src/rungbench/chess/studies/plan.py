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
from rungbench.design.preset_models import ArmsPreset, FactorialPreset
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
                "panel_orders": list(self.panel_orders), "unaided_arms": list(self.unaided_arms)}


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
                    contrasts=tuple((c[0], c[1]) for c in pairs))
    if isinstance(p, LadderPreset):
        la = p.analysis
        pairs = (la.primary_contrast, *la.width_contrasts, la.omission_contrast)
        return Plan(p.design.id, round(1.0 - la.confidence, 12), la.interval, la.cluster,
                    la.multiplicity, la.catastrophic_regret, la.best_set,
                    contrasts=tuple((c[0], c[1]) for c in pairs),
                    selection_arms=tuple(la.selection_arms), coverage_arm=la.coverage_arm,
                    unaided_arms=tuple(x.name for x in p.arms if x.kind == "unaided"))
    assert isinstance(p, FalsifierPreset)
    f = p.analysis
    return Plan(p.design.id, f.alpha, f.interval, f.cluster, f.multiplicity,
                f.catastrophic_regret, f.best_set,
                contrasts=tuple((c[0], c[1]) for c in f.primary_contrasts),
                control_arm=f.control_arm)


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
