"""Typed views of the registered design presets (``designs/a105.toml``, ``designs/e023.toml``).

Each reader checks the types of the constants it uses and raises :class:`InputError`
naming the preset and the field; the digest of the parsed TOML travels with the view.
"""

from __future__ import annotations

from dataclasses import dataclass

from rungbench.design.factorial import GateRules, MaterialRules
from rungbench.design.latin import Cell, latin_schedule
from rungbench.design.preset_models import ArmsPreset, FactorialPreset
from rungbench.design.registry import RegisteredDesign, load_design
from rungbench.design.schema import PresetModel, parse_preset
from rungbench.errors import InputError


@dataclass(frozen=True)
class FactorialCondition:
    """One cell of a 2×2 design: which factors are present."""

    name: str
    """Condition name (e.g. ``board_only``)."""
    present: tuple[bool, bool]
    """Whether the first and second factor are present (revealed)."""


@dataclass(frozen=True)
class FactorialDesign:
    """A registered 2×2 factorial schedule (A105)."""

    id: str
    """Registry ID, e.g. ``A105``."""
    digest: str
    """Digest of the parsed preset."""
    factors: tuple[str, str]
    """Factor names; the first is B, the second L in the estimands."""
    conditions: tuple[FactorialCondition, ...]
    """The four cells, in registered order."""
    orders: tuple[str, ...]
    """Universal presentation (panel) orders."""
    models: tuple[str, ...]
    """Model families, analysed separately."""
    splits: tuple[tuple[str, int], ...]
    """(split name, position count) in unit order."""
    gate: GateRules
    """Claim-gate constants."""
    primary_tests: tuple[str, ...]
    """Registered primary test keys ``model:factor``."""
    mde_power: float
    """Power of the MDE envelope."""
    mde_n: int
    """Paired units in the MDE envelope."""
    mde_clusters: int
    """Conservative cluster count in the MDE envelope."""
    mde_sds: tuple[float, ...]
    """Paired SDs spanning the MDE envelope."""
    planned_cells: int
    """Registered total cell count."""
    planned_requests_per_model: int
    """Registered request count per model."""
    seed_figures: dict[str, float]
    """Figures the seed prints, for side-by-side reports."""
    material: MaterialRules
    """What counts as a material reversal (``[analysis.material]``)."""
    cluster: str
    """Cluster unit of the primary bootstrap (``source_game`` or ``position``)."""
    catastrophic_regret: float
    """WDL regret at or above which a cell is a catastrophic blunder."""
    max_retries: int
    """Provider retries per cell, counted across resumes."""

    @property
    def condition_names(self) -> tuple[str, ...]:
        """Condition names in registered order."""
        return tuple(c.name for c in self.conditions)

    def schedule(self) -> tuple[Cell, ...]:
        """The abstract cell schedule with its balanced Latin ordinals."""
        return latin_schedule(self.splits, self.condition_names,
                              [("panel_order", self.orders), ("model", self.models)])

    def condition(self, name: str) -> FactorialCondition:
        """Return the condition called ``name``."""
        for c in self.conditions:
            if c.name == name:
                return c
        raise InputError(f"unknown condition {name!r}; registered: "
                         f"{', '.join(self.condition_names)}", field="condition")


@dataclass(frozen=True)
class Arm:
    """One fixed-width candidate-list arm: the hidden proposer ranks it shows."""

    name: str
    """Arm name (e.g. ``near_strong``)."""
    ranks: tuple[int, ...]
    """Proposer ranks in the list, ascending; rank 1 always present."""


@dataclass(frozen=True)
class ArmsDesign:
    """A registered counterbalanced-arms design (E023)."""

    id: str
    """Registry ID, e.g. ``E023``."""
    digest: str
    """Digest of the parsed preset."""
    positions: int
    """Abstract positions."""
    width: int
    """List width."""
    rotation: int
    """Slots by which presentation B rotates presentation A."""
    construction_seed: int
    """Seed of the Latin first-presentation orders."""
    arms: tuple[Arm, ...]
    """Arms in registered order."""
    primary_contrast: tuple[str, str]
    """(near, far) arms of the primary contrast."""
    secondary_contrasts: tuple[tuple[str, str], ...]
    """Secondary (near, far) contrasts."""
    shuffle_widths: tuple[int, ...]
    """Widths of the independent-shuffle projection audit."""
    shuffle_seed: int
    """Seed of the independent-shuffle projection."""
    sharp_temperature: float
    """Sharp synthetic selector's temperature."""
    diffuse_temperature: float
    """Diffuse synthetic selector's temperature."""
    primacy_per_slot: float
    """Synthetic primacy bias per slot."""
    seed_figures: dict[str, float]
    """Figures the seed prints, for side-by-side reports."""
    alpha: float
    """Level of every interval and test."""
    multiplicity: str
    """Adjustment of the secondary family."""
    cluster: str
    """Cluster unit of every bootstrap (``position`` or ``source_game``)."""
    catastrophic_regret: float
    """WDL regret at or above which a cell is a catastrophic blunder."""
    max_retries: int
    """Provider retries per cell, counted across resumes."""
    models: tuple[str, ...]
    """Registered model labels (empty: each run names its model)."""
    wdl_regret_by_rank: tuple[float, ...]
    """Registered WDL regret of pass A ranks 1-10 against rank 1 (a controlled input of the
    endpoint-validity audit, :mod:`rungbench.design.endpoint_validity`)."""
    primary_endpoints: tuple[str, ...]
    """The primary endpoints, ``outcome`` first."""

    def arm(self, name: str) -> Arm:
        """Return the arm called ``name``."""
        for a in self.arms:
            if a.name == name:
                return a
        raise InputError(f"unknown arm {name!r}", field="arm")


def factorial_design(reg: RegisteredDesign | None = None) -> FactorialDesign:
    """Read a factorial preset (default: the registered ``a105``), checked against
    :class:`~rungbench.design.preset_models.FactorialPreset`."""
    reg = reg or load_design("a105")
    p = parse_preset(FactorialPreset, reg.document, source=reg.source)
    a, m = p.analysis, p.mde
    gate = GateRules(alpha=a.alpha, family_size=a.family_size, primary_split=a.primary_split,
                     sensitivities=(*a.material.subset_sensitivities,
                                    *a.material.full_sensitivities,
                                    *a.material.bound_sensitivities),
                     multiplicity=a.multiplicity)
    mt = a.material
    material = MaterialRules(tuple(mt.subset_sensitivities), tuple(mt.full_sensitivities),
                             tuple(mt.bound_sensitivities), mt.min_benefit,
                             mt.attrition_spread, mt.attrition_alpha, mt.min_subset_positions)
    return FactorialDesign(
        id=p.design.id, digest=reg.digest, factors=("board", "legal_list"),
        conditions=tuple(FactorialCondition(c.name, (c.board, c.legal_list))
                         for c in p.conditions),
        orders=tuple(p.schedule.panel_orders), models=tuple(p.schedule.models),
        splits=(("development", p.schedule.positions_development),
                ("held_out", p.schedule.positions_held_out)),
        gate=gate, primary_tests=tuple(a.primary_tests), mde_power=m.power, mde_n=m.n,
        mde_clusters=m.clusters, mde_sds=tuple(m.paired_sd),
        planned_cells=p.schedule.planned_cells,
        planned_requests_per_model=p.schedule.planned_requests_per_model,
        seed_figures=_figures(p.seed_figures), material=material, cluster=a.cluster,
        catastrophic_regret=a.catastrophic_regret, max_retries=p.schedule.max_retries)


def arms_design(reg: RegisteredDesign | None = None) -> ArmsDesign:
    """Read a counterbalanced-arms preset (default: the registered ``e023``), checked against
    :class:`~rungbench.design.preset_models.ArmsPreset`."""
    reg = reg or load_design("e023")
    p = parse_preset(ArmsPreset, reg.document, source=reg.source)
    s, a, sel = p.schedule, p.analysis, p.selectors
    return ArmsDesign(
        id=p.design.id, digest=reg.digest, positions=s.positions, width=s.width,
        rotation=s.order_rotation, construction_seed=s.construction_seed,
        arms=tuple(Arm(x.name, tuple(sorted(x.ranks))) for x in p.arms),
        primary_contrast=(a.primary_contrast[0], a.primary_contrast[1]),
        secondary_contrasts=tuple((c[0], c[1]) for c in a.secondary_contrasts),
        shuffle_widths=tuple(p.shuffle_projection.widths), shuffle_seed=p.shuffle_projection.seed,
        sharp_temperature=sel.sharp_temperature, diffuse_temperature=sel.diffuse_temperature,
        primacy_per_slot=sel.primacy_per_slot, seed_figures=_figures(p.seed_figures),
        alpha=a.alpha, multiplicity=a.secondary_multiplicity, cluster=a.cluster,
        catastrophic_regret=a.catastrophic_regret, max_retries=s.max_retries,
        models=tuple(s.models or ()), wdl_regret_by_rank=tuple(sel.wdl_regret_by_rank),
        primary_endpoints=tuple(a.primary_endpoints))


def _figures(table: PresetModel) -> dict[str, float]:
    """The seed figures a preset states (absent ones are not figures)."""
    return {k: float(v) for k, v in table.model_dump().items() if v is not None}
