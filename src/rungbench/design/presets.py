"""Typed views of the registered design presets (``designs/a105.toml``, ``designs/e023.toml``).

Each reader checks the types of the constants it uses and raises :class:`InputError`
naming the preset and the field; the digest of the parsed TOML travels with the view.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rungbench.design.factorial import GateRules, MaterialRules
from rungbench.design.latin import Cell, latin_schedule
from rungbench.design.registry import RegisteredDesign, load_design, require
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
    panels: dict[str, Any]
    """Renderer constants (mask character, separators)."""
    seed_figures: dict[str, float]
    """Figures the seed prints, for side-by-side reports."""
    material: MaterialRules | None = None
    """What counts as a material reversal (``[analysis.material]``; None when the preset
    registers none, and then no gate-3 analysis can run on it)."""

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

    def arm(self, name: str) -> Arm:
        """Return the arm called ``name``."""
        for a in self.arms:
            if a.name == name:
                return a
        raise InputError(f"unknown arm {name!r}", field="arm")


def factorial_design(reg: RegisteredDesign | None = None) -> FactorialDesign:
    """Read a factorial preset (default: the registered ``a105``)."""
    reg = reg or load_design("a105")
    src = reg.source
    factors = require(reg.section("factors"), "names", list, source=src, prefix="factors")
    if len(factors) != 2:
        raise InputError(f"a 2x2 design needs two factors, got {factors!r}", path=src,
                         field="factors.names")
    conditions = tuple(_condition(t, factors, src, i)
                       for i, t in enumerate(reg.table_list("conditions")))
    if sorted(c.present for c in conditions) != [(False, False), (False, True),
                                                  (True, False), (True, True)]:
        raise InputError("conditions must be the four cells of the 2x2", path=src,
                         field="conditions")
    sched, analysis, mde = reg.section("schedule"), reg.section("analysis"), reg.section("mde")

    def s(key: str, kind: type) -> Any:
        return require(sched, key, kind, source=src, prefix="schedule")

    def a(key: str, kind: type | tuple[type, ...]) -> Any:
        return require(analysis, key, kind, source=src, prefix="analysis")

    def m(key: str, kind: type | tuple[type, ...]) -> Any:
        return require(mde, key, kind, source=src, prefix="mde")

    gate = GateRules(alpha=float(a("alpha", float)),
                     holm_family_size=a("holm_family_size", int),
                     primary_split=a("primary_split", str),
                     sensitivities=tuple(a("sensitivities", list)))
    return FactorialDesign(
        id=str(reg.section("design").get("id", reg.name)), digest=reg.digest,
        factors=(str(factors[0]), str(factors[1])), conditions=conditions,
        orders=tuple(s("panel_orders", list)), models=tuple(s("models", list)),
        splits=(("development", s("positions_development", int)),
                ("held_out", s("positions_held_out", int))),
        gate=gate, primary_tests=tuple(a("primary_tests", list)),
        mde_power=float(m("power", float)), mde_n=m("n", int), mde_clusters=m("clusters", int),
        mde_sds=tuple(float(x) for x in m("paired_sd", list)),
        planned_cells=s("planned_cells", int),
        planned_requests_per_model=s("planned_requests_per_model", int),
        panels=dict(reg.section("panels")), seed_figures=_figures(reg),
        material=MaterialRules.from_table(a("material", dict), source=src)
        if "material" in analysis else None)


def arms_design(reg: RegisteredDesign | None = None) -> ArmsDesign:
    """Read a counterbalanced-arms preset (default: the registered ``e023``)."""
    reg = reg or load_design("e023")
    src = reg.source
    sched, analysis = reg.section("schedule"), reg.section("analysis")
    shuffle, selectors = reg.section("shuffle_projection"), reg.section("selectors")

    def get(table: dict[str, Any], prefix: str, key: str, kind: type) -> Any:
        return require(table, key, kind, source=src, prefix=prefix)

    width = get(sched, "schedule", "width", int)
    arms = tuple(_arm(t, width, src, i) for i, t in enumerate(reg.table_list("arms")))
    names = {arm.name for arm in arms}
    primary = tuple(get(analysis, "analysis", "primary_contrast", list))
    secondary = tuple(tuple(pair) for pair in get(analysis, "analysis",
                                                  "secondary_contrasts", list))
    for pair in (primary, *secondary):
        if len(pair) != 2 or not set(pair) <= names:
            raise InputError(f"contrast {list(pair)!r} must name two registered arms",
                             path=src, field="analysis")
    return ArmsDesign(
        id=str(reg.section("design").get("id", reg.name)), digest=reg.digest,
        positions=get(sched, "schedule", "positions", int), width=width,
        rotation=get(sched, "schedule", "order_rotation", int),
        construction_seed=get(sched, "schedule", "construction_seed", int), arms=arms,
        primary_contrast=(str(primary[0]), str(primary[1])),
        secondary_contrasts=tuple((str(p[0]), str(p[1])) for p in secondary),
        shuffle_widths=tuple(get(shuffle, "shuffle_projection", "widths", list)),
        shuffle_seed=get(shuffle, "shuffle_projection", "seed", int),
        sharp_temperature=float(get(selectors, "selectors", "sharp_temperature", float)),
        diffuse_temperature=float(get(selectors, "selectors", "diffuse_temperature", float)),
        primacy_per_slot=float(get(selectors, "selectors", "primacy_per_slot", float)),
        seed_figures=_figures(reg))


def _condition(table: dict[str, Any], factors: list[Any], src: str,
               i: int) -> FactorialCondition:
    prefix = f"conditions[{i}]"
    name = require(table, "name", str, source=src, prefix=prefix)
    present = tuple(require(table, str(f), bool, source=src, prefix=prefix) for f in factors)
    return FactorialCondition(name=name, present=(bool(present[0]), bool(present[1])))


def _arm(table: dict[str, Any], width: int, src: str, i: int) -> Arm:
    prefix = f"arms[{i}]"
    name = require(table, "name", str, source=src, prefix=prefix)
    ranks = require(table, "ranks", list, source=src, prefix=prefix)
    if (len(ranks) != width or len(set(ranks)) != width or 1 not in ranks
            or not all(isinstance(r, int) and not isinstance(r, bool) and r >= 1
                       for r in ranks)):
        raise InputError(f"arm {name!r} needs {width} distinct ranks >= 1 including rank 1, "
                         f"got {ranks!r}", path=src, field=f"{prefix}.ranks")
    return Arm(name=name, ranks=tuple(sorted(ranks)))


def _figures(reg: RegisteredDesign) -> dict[str, float]:
    return {str(k): float(v) for k, v in reg.section("seed_figures").items()}
