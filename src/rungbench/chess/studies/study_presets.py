"""The key schemas of the intervention-ladder (E020/E021) and falsifier-arms (E022) presets
(docs/presets.md lists every key, generated from these fields).

The ``[analysis]`` table is the analysis: the best-move set rule, the interval method and
confidence, the cluster unit, the contrasts, their multiplicity adjustment and the
catastrophic-blunder threshold are read from it by :mod:`rungbench.chess.studies.
arms_analysis`; no constant there repeats a registered value. The ``[cells]`` counts are
checked against the schedule the other keys produce.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from rungbench.chess.studies.cells import E020_ARMS, E022_ARMS, PROBES
from rungbench.design.preset_models import (
    PASS_A_DEPTH,
    ArmsPreset,
    ClusterUnit,
    FactorialPreset,
    FalsifierTable,
    Interval,
    Multiplicity,
    Probability,
    StudyIdentity,
)
from rungbench.design.registry import RegisteredDesign, load_design
from rungbench.design.schema import (
    KeyRefusal,
    PresetModel,
    key,
    parse_preset,
    require_distinct,
)
from rungbench.errors import InputError

Partition = Literal["training", "development", "held_out"]
"""The manifest's partitions."""
BestSet = Literal["evaluator_ties", "pass_a_ties_with_rank1", "pass_a_rank1"]
"""Which moves count as best: every move the different-family evaluator values at the
maximum expectation, pass A rank 1 and every pass A candidate tied with it, or pass A rank 1
alone."""


class LadderIdentity(StudyIdentity):
    """E020/E021's ``[design]`` table."""

    id: Literal["E020_E021"] = key("identity", "Registry ID.")
    seed: Literal["001_7d2eca18a5a87f90"] = key("identity", "Seed 001.")
    kind: Literal["intervention_ladder"] = key("identity", "The paired intervention ladder.")


class FalsifierIdentity(StudyIdentity):
    """E022's ``[design]`` table."""

    id: Literal["E022"] = key("identity", "Registry ID.")
    seed: Literal["001_7d2eca18a5a87f90"] = key("identity", "Seed 001.")
    kind: Literal["falsifier_arms"] = key("identity", "Fixed-width falsifier arms.")


class ManifestTable(PresetModel):
    """``[manifest]``: the final position manifest's partitions and quotas."""

    positions: int = key("schedule", "Checked: quota sum x classes x colours.", ge=1)
    partition_seed: int = key("schedule", "Seed of sha256('<seed>:<game>') partition draws and "
                              "of the within-cell position order.", ge=0)
    partitions: list[list[str | int]] = key(
        "schedule", "[name, weight] per partition: a source game falls in one partition, "
        "drawn with these weights.", min_length=1)
    classes: list[Literal["tactical", "ambiguous", "quiet"]] = key(
        "schedule", "Label-stage classes stratified (quota cells).", min_length=1)
    colours: list[Literal["white", "black"]] = key("schedule", "Side-to-move strata.",
                                                   min_length=1)
    quota: dict[str, Annotated[int, Field(ge=0)]] = key(
        "schedule", "Positions per class x colour cell of each partition.")

    @model_validator(mode="after")
    def _quotas(self) -> ManifestTable:
        names = []
        for pair in self.partitions:
            if (len(pair) != 2 or not isinstance(pair[0], str) or not isinstance(pair[1], int)
                    or isinstance(pair[1], bool) or pair[1] < 1
                    or pair[0] not in ("training", "development", "held_out")):
                raise KeyRefusal("partitions",
                                 f"partitions entry {pair} is not [partition, weight >= 1]")
            names.append(pair[0])
        require_distinct(names, "partitions")
        require_distinct(list(self.classes), "classes")
        require_distinct(list(self.colours), "colours")
        if set(self.quota) != set(names):
            raise KeyRefusal("quota", f"quota must name exactly the partitions {names}")
        total = sum(self.quota.values()) * len(self.classes) * len(self.colours)
        if total != self.positions:
            quotas = " + ".join(f"{k} {v}" for k, v in self.quota.items())
            raise KeyRefusal("positions",
                             f"positions = {self.positions}, but quota ({quotas}) x "
                             f"{len(self.classes)} classes x {len(self.colours)} colours = "
                             f"{total}")
        return self


class ChoiceArm(PresetModel):
    """One move-choice ``[[arms]]`` table: what list (if any) the prompt shows."""

    name: str = key("schedule", "Arm name; the cell table's condition, so one it knows "
                    "(E020/E021: unaided, oracle_top2, oracle_top5, oracle_top10, "
                    "best_omitted; E022: oracle_top5, successor_top5, reply_top5).",
                    min_length=1)
    kind: Literal["unaided", "oracle", "omitted", "successor", "reply"] = key(
        "request", "unaided: no list; oracle: pass A ranks 1..width; omitted: the top-width "
        "list less every best move; successor / reply: the oracle list with each move's "
        "resulting position / the proposer's best reply.")
    width: int | None = key("request", "Candidates shown (not for unaided).", default=None,
                            ge=1, le=PASS_A_DEPTH)

    @model_validator(mode="after")
    def _width(self) -> ChoiceArm:
        if (self.kind == "unaided") != (self.width is None):
            raise KeyRefusal("width", f"arm {self.name!r}: width is required for a list arm and "
                             "refused for unaided")
        return self


class ProbeTable(PresetModel):
    """One ``[[probes]]`` table: a two-call self-shortlist arm."""

    name: str = key("schedule", "Probe name; the cell table's condition of the probe call "
                    "(self_shortlist).", min_length=1)
    kind: Literal["shortlist"] = key("request", "The model lists shortlist_k candidates "
                                     "through submit_shortlist, then chooses among them.")


class LadderSchedule(PresetModel):
    """``[schedule]`` of a ladder or falsifier preset."""

    models: list[str] = key("schedule", "Model labels; bound to agents through a models file.",
                            min_length=1)
    partitions: list[Partition] = key("schedule", "Manifest partitions bound, in order.",
                                      min_length=1)
    order_seed: int = key("schedule", "Seed of each list's slot order: default_rng([seed, "
                          "position, width]).", ge=0)
    shortlist_k: int | None = key("request", "Candidates a probe asks for (ladder only).",
                                  default=None, ge=1, le=PASS_A_DEPTH)
    max_retries: int = key("retry", "Provider retries per cell, counted in the run's event "
                           "log across resumes; a cell past it is a terminal provider failure.",
                           ge=0, le=20)

    @model_validator(mode="after")
    def _distinct_lists(self) -> LadderSchedule:
        require_distinct(self.models, "models")
        require_distinct(list(self.partitions), "partitions")
        return self


class FalsifierSchedule(LadderSchedule):
    """``[schedule]`` of a falsifier preset: names the manifest it binds."""

    manifest_preset: str = key("audit", "The ladder preset whose [manifest] quotas give the "
                               "positions this binds (the study's manifest is frozen by it); "
                               "[cells] is checked against them.", min_length=1)


class LadderAnalysis(PresetModel):
    """E020/E021's ``[analysis]``: the stage decomposition and the regret contrasts."""

    best_set: BestSet = key("analysis", "Which candidates count as a best move (chose_best, "
                            "best_in_candidates, coverage and selection).")
    coverage_arm: str = key("analysis", "The probe whose shortlist gives coverage C.")
    selection_arms: list[str] = key("analysis", "Oracle arms giving conditional selection S "
                                    "and C x S.", min_length=1)
    primary_contrast: list[str] = key("analysis", "(a, b): paired regret(b) - regret(a).",
                                      min_length=2, max_length=2)
    width_contrasts: list[list[str]] = key("analysis", "Secondary (wider, narrower) pairs.")
    omission_contrast: list[str] = key("analysis", "(omitted, full) pair: the cost of losing "
                                       "the best move from the list.", min_length=2,
                                       max_length=2)
    interval: Interval = key("analysis", "Interval of every reported proportion (coverage, "
                             "best-move rates, catastrophic rates).")
    confidence: Annotated[float, Field(ge=0.5, lt=1.0)] = key(
        "analysis", "Confidence of every interval; tests are at 1 - confidence.")
    cluster: ClusterUnit = key("analysis", "Cluster unit of every bootstrap.")
    multiplicity: Multiplicity = key("analysis", "Adjustment across the paired contrasts.")
    catastrophic_regret: Annotated[float, Field(gt=0.0, le=1.0)] = key(
        "analysis", "A cell is a catastrophic blunder when its WDL regret is at least this.")


class FalsifierAnalysis(PresetModel):
    """E022's ``[analysis]``."""

    best_set: BestSet = key("analysis", "Which candidates count as a best move.")
    control_arm: str = key("analysis", "The fixed-width control every falsifier is compared "
                           "with.")
    primary_contrasts: list[list[str]] = key("analysis", "(falsifier, control) pairs: paired "
                                             "regret(control) - regret(falsifier).",
                                             min_length=1)
    interval: Interval = key("analysis", "Interval of every reported proportion.")
    alpha: Probability = key("analysis", "Level of every interval and test.")
    cluster: ClusterUnit = key("analysis", "Cluster unit of every bootstrap.")
    multiplicity: Multiplicity = key("analysis", "Adjustment across the primary contrasts.")
    catastrophic_regret: Annotated[float, Field(gt=0.0, le=1.0)] = key(
        "analysis", "A cell is a catastrophic blunder when its WDL regret is at least this.")


class LadderCells(PresetModel):
    """``[cells]``: checked counts of the schedule the preset produces."""

    move_choice: int | None = key("audit", "Checked: positions x models x move-choice arms.",
                                  default=None, ge=0)
    probes: int | None = key("audit", "Checked: positions x models x probes.", default=None,
                             ge=0)
    choice: int | None = key("audit", "Checked: one choice cell per probe cell.", default=None,
                             ge=0)
    total: int = key("audit", "Checked: every cell of the schedule.", ge=1)


class LadderFigures(PresetModel):
    """E020/E021's ``[seed_figures]``: what seed 001 prints, shown beside ours."""

    coverage_selection_product: float | None = key(
        "audit", "Seed: C x S of the 31.5% example.", default=None)
    manifest_positions: int | None = key("audit", "Seed: manifest positions.", default=None)
    training_positions: int | None = key("audit", "Seed: training positions.", default=None)
    development_positions: int | None = key("audit", "Seed: development positions.",
                                            default=None)
    held_out_positions: int | None = key("audit", "Seed: held-out positions.", default=None)
    registered_cells_in_seed: int | None = key(
        "audit", "Seed: its stated cell count, printed beside the produced count with why "
        "they differ.", default=None)


class LadderPreset(PresetModel):
    """An intervention-ladder preset (``designs/e020_e021.toml``)."""

    design: LadderIdentity
    manifest: ManifestTable
    schedule: LadderSchedule
    arms: list[ChoiceArm] = Field(min_length=1)
    probes: list[ProbeTable] = Field(default_factory=list)
    analysis: LadderAnalysis
    falsifiers: FalsifierTable
    cells: LadderCells
    seed_figures: LadderFigures = Field(default_factory=LadderFigures)

    @model_validator(mode="after")
    def _names(self) -> LadderPreset:
        arms = _arm_names(self.arms, E020_ARMS)
        probes = [p.name for p in self.probes]
        for i, name in enumerate(probes):
            if name not in PROBES:
                raise KeyRefusal(f"probes[{i}].name", f"probe {name!r} is not a condition the "
                                 f"cell table knows ({', '.join(PROBES)})")
        if self.probes and self.schedule.shortlist_k is None:
            raise KeyRefusal("schedule.shortlist_k", "a probe needs schedule.shortlist_k")
        a = self.analysis
        if a.coverage_arm not in probes:
            raise KeyRefusal("analysis.coverage_arm",
                             f"analysis.coverage_arm {a.coverage_arm!r} is not a probe "
                             f"({probes})")
        oracle = [x.name for x in self.arms if x.kind == "oracle"]
        for arm in a.selection_arms:
            if arm not in oracle:
                raise KeyRefusal("analysis.selection_arms",
                                 f"analysis.selection_arms names {arm!r}, not an oracle arm "
                                 f"({oracle})")
        for pair in (a.primary_contrast, *a.width_contrasts, a.omission_contrast):
            _pair(pair, arms)
        _check_cells(self.cells, len(self.manifest_positions()), len(self.schedule.models),
                     len(self.arms), len(self.probes))
        if self.falsifiers.value_gap_edges is None:
            raise KeyRefusal("falsifiers.value_gap_edges", "the width falsifier conditions on "
                             "value gap: falsifiers.value_gap_edges is required")
        return self

    def manifest_positions(self) -> range:
        """Positions of the bound partitions (quota x classes x colours each)."""
        m = self.manifest
        per = len(m.classes) * len(m.colours)
        return range(sum(m.quota.get(p, 0) * per for p in self.schedule.partitions))


class FalsifierPreset(PresetModel):
    """A falsifier-arms preset (``designs/e022.toml``), bound to the E020/E021 manifest."""

    design: FalsifierIdentity
    schedule: FalsifierSchedule
    arms: list[ChoiceArm] = Field(min_length=2)
    analysis: FalsifierAnalysis
    falsifiers: FalsifierTable
    cells: LadderCells

    @model_validator(mode="after")
    def _names(self) -> FalsifierPreset:
        arms = _arm_names(self.arms, E022_ARMS)
        if self.analysis.control_arm not in arms:
            raise KeyRefusal("analysis.control_arm",
                             f"analysis.control_arm {self.analysis.control_arm!r} is not an "
                             f"arm ({arms})")
        widths = {x.width for x in self.arms}
        if len(widths) != 1 or None in widths:
            raise KeyRefusal("arms", "every falsifier arm shows the control's width")
        for pair in self.analysis.primary_contrasts:
            _pair(pair, arms)
            if pair[1] != self.analysis.control_arm:
                raise KeyRefusal("analysis.primary_contrasts",
                                 f"contrast {pair} must end with the control arm")
        return self


def _arm_names(arms: list[ChoiceArm], known: tuple[str, ...]) -> list[str]:
    """The arms' names, distinct, each a condition the cell table knows (a name it does not
    would be refused only when the runs are analysed: refused here, before any run)."""
    names = [a.name for a in arms]
    require_distinct(names, "arms")
    for i, name in enumerate(names):
        if name not in known:
            raise KeyRefusal(f"arms[{i}].name", f"arm {name!r} is not a condition the cell "
                             f"table knows ({', '.join(known)})")
    return names


def _pair(pair: list[str], arms: list[str]) -> None:
    if len(pair) != 2 or pair[0] == pair[1] or not set(pair) <= set(arms):
        raise KeyRefusal("analysis", f"contrast {pair} must name two registered arms ({arms})")


def _check_cells(cells: LadderCells, positions: int, models: int, arms: int,
                 probes: int) -> None:
    produced = {"move_choice": positions * models * arms, "probes": positions * models * probes,
                "choice": positions * models * probes}
    produced["total"] = sum(produced.values())
    for name, value in produced.items():
        stated = getattr(cells, name)
        if stated is not None and stated != value:
            raise KeyRefusal(f"cells.{name}",
                             f"cells.{name} = {stated}, but the schedule (partitions x quota: "
                             f"{positions} positions, {models} models, {arms} arms, {probes} "
                             f"probes) produces {value}")


StudyPreset = FactorialPreset | ArmsPreset | LadderPreset | FalsifierPreset
"""Any chess study preset."""
STUDY_PRESETS: dict[str, type[StudyPreset]] = {
    "factorial_2x2": FactorialPreset, "counterbalanced_arms": ArmsPreset,
    "intervention_ladder": LadderPreset, "falsifier_arms": FalsifierPreset}
"""The key schema of each chess study kind (``[design] kind``)."""


def study_preset(reg: RegisteredDesign) -> StudyPreset:
    """``reg`` checked against its kind's key schema (unknown keys, types, allowed values,
    checked counts); raise :class:`InputError` naming the file and key."""
    design = reg.document.get("design")
    kind = design.get("kind") if isinstance(design, dict) else None
    if kind not in STUDY_PRESETS:
        raise InputError(f"design kind {kind!r} is not a chess study; known: "
                         f"{', '.join(STUDY_PRESETS)}", path=reg.source, field="design.kind")
    preset = parse_preset(STUDY_PRESETS[str(kind)], reg.document, source=reg.source)
    if isinstance(preset, FalsifierPreset):
        _check_falsifier_cells(preset, reg)
    return preset


def _check_falsifier_cells(preset: FalsifierPreset, reg: RegisteredDesign) -> None:
    """E022 binds positions of a ladder preset's manifest (``[schedule] manifest_preset``): its
    [cells] follow from those quotas."""
    name = preset.schedule.manifest_preset
    try:
        ladder = study_preset(load_design(name))
    except InputError as exc:
        raise InputError(f"schedule.manifest_preset {name!r}: {exc}", path=reg.source,
                         field="schedule.manifest_preset") from None
    if not isinstance(ladder, LadderPreset):
        raise InputError(f"schedule.manifest_preset {name!r} is not a ladder preset",
                         path=reg.source, field="schedule.manifest_preset")
    m = ladder.manifest
    positions = sum(m.quota.get(p, 0) for p in preset.schedule.partitions) * len(m.classes) \
        * len(m.colours)
    try:
        _check_cells(preset.cells, positions, len(preset.schedule.models), len(preset.arms), 0)
    except ValueError as exc:
        raise InputError(str(exc), path=reg.source, field="cells") from None
