"""The key schemas of the factorial (A105) and counterbalanced-arms (E023) presets, and the
tables every study preset shares (docs/presets.md lists them, generated from these fields).

Each model is the whole preset: a key it does not name is refused, and a value outside its
allowed set is refused naming the key (:func:`rungbench.design.schema.parse_preset`).
Registered counts that follow from other keys (A105's planned cells and requests, the Holm
family size) are *checked*: a preset whose stated count disagrees with its schedule is
refused naming both keys.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Annotated, Literal

from pydantic import Field, model_validator

from rungbench.design.schema import KeyRefusal, PresetModel, key, require_distinct

Probability = Annotated[float, Field(gt=0.0, lt=1.0)]
"""A level strictly between 0 and 1."""
Multiplicity = Literal["holm", "bonferroni", "benjamini_hochberg"]
"""How a family of p-values is adjusted (rungbench.stats.multiplicity)."""
MULTIPLICITY: tuple[str, ...] = ("holm", "bonferroni", "benjamini_hochberg")
"""Every :data:`Multiplicity`."""
ClusterUnit = Literal["source_game", "position"]
"""What a cluster bootstrap resamples."""
Interval = Literal["wilson", "clopper_pearson"]
"""Interval method of every reported proportion (rungbench.stats.intervals)."""
E023_ARM_NAMES = ("near_strong", "mid_band", "mixed_tail", "far_tail")
"""The E023 arm names the cell table knows (``chess/studies/cells.py``)."""
PASS_A_DEPTH = 10
"""Ranks a candidate list may draw from: the label stage's pass A MultiPV (seed 002)."""
ArmsEndpoint = Literal["wdl_regret", "catastrophic_rate", "rank1_selection",
                       "order_disagreement", "legality", "latency", "tokens", "cost"]
"""An E023 endpoint (seed 001: WDL regret and the catastrophic-blunder rate are primary;
proposer-rank selection, order disagreement, legality, latency, tokens and cost secondary)."""


class StudyIdentity(PresetModel):
    """The ``[design]`` keys every chess study preset shares; each kind adds its ``id``,
    ``seed`` and ``kind`` (the registry ID the cell table, analysis and report dispatch on,
    the seed document it implements, and the binding body builder)."""

    version: Literal[1] = key("identity", "Version of this key schema.")
    outcome: Literal["wdl_regret"] = key("identity", "Cell outcome: WDL regret of the chosen "
                                         "move (a loss: lower is better).")


class FactorialIdentity(StudyIdentity):
    """A105's ``[design]`` table: which registered design this preset is."""

    id: Literal["A105"] = key("identity", "Registry ID.")
    seed: Literal["000_05fcc88b8ee88627"] = key("identity", "Seed 000.")
    kind: Literal["factorial_2x2"] = key("identity", "The 2x2 factorial schedule.")


FACTORIAL_CONDITIONS: dict[tuple[bool, bool], str] = {
    (False, False): "no_information", (True, False): "board_only",
    (False, True): "legal_list_only", (True, True): "board_plus_legal_list"}
"""The condition name of each (board, legal_list) cell."""


class FactorialCondition(PresetModel):
    """One ``[[conditions]]`` table: a cell of the 2x2 and its name."""

    name: Literal["no_information", "board_only", "legal_list_only",
                  "board_plus_legal_list"] = key(
        "schedule", "Condition name, fixed by its two panels (the renderer and the contrast "
        "coefficients use it).")
    board: bool = key("request", "Whether the prompt carries the correct root board panel.")
    legal_list: bool = key("request", "Whether the prompt carries the complete legal UCI list.")

    @model_validator(mode="after")
    def _named_by_its_panels(self) -> FactorialCondition:
        expected = FACTORIAL_CONDITIONS[(self.board, self.legal_list)]
        if self.name != expected:
            raise KeyRefusal("name", f"board = {self.board} and legal_list = {self.legal_list} is "
                             f"the condition {expected!r}, not {self.name!r}")
        return self


class FactorialSchedule(PresetModel):
    """A105's ``[schedule]``: which cells exist and how they are ordered and retried."""

    panel_orders: list[Literal["board_first", "legal_list_first"]] = key(
        "schedule", "Universal panel orders; each crosses every condition (the Latin blocks "
        "rotate over them in this order).", min_length=1)
    models: list[str] = key("schedule", "Model labels, each analysed separately; bound to "
                            "agents through a models file.", min_length=1)
    positions_development: int = key("schedule", "Development positions bound.", ge=0)
    positions_held_out: int = key("schedule", "Held-out positions bound.", ge=0)
    ordinal_rotation: Literal["williams_balanced_latin"] = key(
        "schedule", "How execution ordinals rotate the conditions (the only implemented "
        "rotation).")
    max_retries: int = key("retry", "Provider retries per cell, counted in the run's event "
                           "log across resumes; a cell past it is a terminal provider failure.",
                           ge=0, le=20)
    planned_cells: int = key("audit", "Checked: positions x conditions x panel orders x "
                             "models.", ge=1)
    planned_requests_per_model: int = key("audit", "Checked: planned cells / models.", ge=1)

    @model_validator(mode="after")
    def _counts_follow(self) -> FactorialSchedule:
        require_distinct(self.panel_orders, "panel_orders")
        require_distinct(self.models, "models")
        cells = ((self.positions_development + self.positions_held_out) * 4
                 * len(self.panel_orders) * len(self.models))
        if self.planned_cells != cells:
            raise KeyRefusal(
                "planned_cells", f"planned_cells = {self.planned_cells}, but "
                f"(positions_development "
                f"{self.positions_development} + positions_held_out "
                f"{self.positions_held_out}) x 4 conditions x {len(self.panel_orders)} "
                f"panel_orders x {len(self.models)} models = {cells}")
        if self.planned_requests_per_model * len(self.models) != cells:
            raise KeyRefusal("planned_requests_per_model",
                             f"planned_requests_per_model = {self.planned_requests_per_model}, "
                             f"but {cells} cells / {len(self.models)} models = "
                             f"{cells / len(self.models):g}")
        return self


SENSITIVITIES = ("panel_order", "provider_route", "equal_source_game_weighting",
                 "position_cluster", "attrition_best", "attrition_worst")
"""Every sensitivity analysis A105 can run (rungbench.chess.studies.analysis)."""
Sensitivity = Literal["panel_order", "provider_route", "equal_source_game_weighting",
                      "position_cluster", "attrition_best", "attrition_worst"]


class MaterialTable(PresetModel):
    """``[analysis.material]``: what counts as a material reversal (seed 000, gate 3)."""

    subset_sensitivities: list[Sensitivity] = key(
        "gate", "Sensitivities on a subset (one panel order, one route): material when a "
        "subset's point estimate is not a benefit.")
    full_sensitivities: list[Sensitivity] = key(
        "gate", "Sensitivities on the full data: material when the interval no longer lies "
        "wholly above min_benefit.")
    bound_sensitivities: list[Sensitivity] = key(
        "gate", "Maximal-regret attrition bounds: material when either bound's point is not a "
        "benefit.")
    min_benefit: float = key("gate", "Benefit at or below which an estimate counts as "
                             "reversed (WDL regret).")
    attrition_spread: float = key("gate", "Differential attrition: largest minus smallest "
                                  "condition hazard above this ...", ge=0.0, le=1.0)
    attrition_alpha: Probability = key("gate", "... and the chi-square test of equal hazards "
                                       "rejects at this level.")
    min_subset_positions: int = key("gate", "A subset sensitivity on fewer complete positions "
                                    "is unsupported (material).", ge=2)


class FactorialAnalysis(PresetModel):
    """A105's ``[analysis]``: the primary family, its inference and the claim gates."""

    primary_split: Literal["development", "held_out"] = key(
        "gate", "Only this split supports a primary claim.")
    alpha: Probability = key("analysis", "Two-sided level of every interval and test (the "
                             "family's error rate).")
    multiplicity: Multiplicity = key("analysis", "Adjustment of the primary family's "
                                     "p-values.")
    family_size: int = key("gate", "Checked: the number of primary_tests (also the MDE's "
                           "test count).", ge=1)
    primary_tests: list[str] = key("analysis", "The primary family, 'model:factor' for each "
                                   "registered model and factor (board, legal_list).",
                                   min_length=1)
    interval: Interval = key("analysis", "Interval of every reported proportion "
                             "(catastrophic rates).")
    cluster: ClusterUnit = key("analysis", "Cluster unit of the primary bootstrap (the "
                               "position_cluster sensitivity always clusters by position).")
    catastrophic_regret: Annotated[float, Field(gt=0.0, le=1.0)] = key(
        "analysis", "A cell is a catastrophic blunder when its WDL regret is at least this.")
    material: MaterialTable

    @model_validator(mode="after")
    def _family(self) -> FactorialAnalysis:
        require_distinct(self.primary_tests, "primary_tests")
        if self.family_size != len(self.primary_tests):
            raise KeyRefusal("family_size",
                             f"family_size = {self.family_size}, but primary_tests names "
                             f"{len(self.primary_tests)}")
        for test in self.primary_tests:
            factor = test.rpartition(":")[2]
            if ":" not in test or factor not in ("board", "legal_list"):
                raise KeyRefusal("primary_tests", f"primary test {test!r} is not 'model:board' or "
                                 "'model:legal_list'")
        return self


class MdeTable(PresetModel):
    """A105's ``[mde]``: the minimum-detectable-effect envelope stated beside every claim."""

    power: Probability = key("wording", "Power of the envelope.")
    n: int = key("wording", "Paired positions of the envelope.", ge=2)
    clusters: int = key("wording", "Conservative cluster count of the envelope.", ge=2)
    paired_sd: list[Annotated[float, Field(gt=0.0)]] = key(
        "wording", "Paired standard deviations spanning the envelope.", min_length=1)


class FactorialFigures(PresetModel):
    """A105's ``[seed_figures]``: what seed 000 prints; the audit recomputes each and fails
    on a mismatch (``rungbench design audit``)."""

    cells: int | None = key("audit", "Seed: cells in the schedule.", default=None)
    requests_per_model: int | None = key("audit", "Seed: requests per model.", default=None)
    condition_ordinal_count: int | None = key(
        "audit", "Seed: cells per condition per execution ordinal.", default=None)
    audit_blocks: int | None = key("audit", "Seed: byte-matched audit blocks.", default=None)
    byte_length_mismatches: int | None = key("audit", "Seed: byte-length mismatches.",
                                             default=None)
    masked_token_leaks: int | None = key("audit", "Seed: masked-token leaks.", default=None)
    panel_bytes_per_condition: int | None = key("audit", "Seed: panel bytes per condition.",
                                                default=None)
    mde_n150_sd010: float | None = key("audit", "Seed: MDE at 150 positions, SD 0.10.",
                                       default=None)
    mde_n150_sd040: float | None = key("audit", "Seed: MDE at 150 positions, SD 0.40.",
                                       default=None)
    mde_c75_sd010: float | None = key("audit", "Seed: MDE at 75 clusters, SD 0.10.",
                                      default=None)
    mde_c75_sd040: float | None = key("audit", "Seed: MDE at 75 clusters, SD 0.40.",
                                      default=None)


class FactorialPreset(PresetModel):
    """A 2x2 factorial preset (``designs/a105.toml``)."""

    design: FactorialIdentity
    conditions: list[FactorialCondition] = Field(min_length=4, max_length=4)
    schedule: FactorialSchedule
    analysis: FactorialAnalysis
    mde: MdeTable
    seed_figures: FactorialFigures = Field(default_factory=FactorialFigures)

    @model_validator(mode="after")
    def _cells_and_tests(self) -> FactorialPreset:
        if len({c.name for c in self.conditions}) != 4:
            raise KeyRefusal("conditions",
                             "conditions must be the four cells of the 2x2, each once")
        for test in self.analysis.primary_tests:
            model = test.rpartition(":")[0]
            if model not in self.schedule.models:
                raise KeyRefusal("analysis.primary_tests",
                                 f"primary test {test!r} names model {model!r}, not in "
                                 f"schedule.models")
        return self


# ------------------------------------------------------------------------------ E023


class ArmsIdentity(StudyIdentity):
    """E023's ``[design]`` table."""

    id: Literal["E023"] = key("identity", "Registry ID.")
    seed: Literal["001_7d2eca18a5a87f90"] = key("identity", "Seed 001.")
    kind: Literal["counterbalanced_arms"] = key("identity", "Fixed-width arms in cyclic "
                                                "counterbalanced orders.")


class ArmsSchedule(PresetModel):
    """E023's ``[schedule]``."""

    positions: int = key("schedule", "Positions bound (outside the training partition).",
                         ge=2)
    width: int = key("schedule", "Candidates shown per list.", ge=2, le=PASS_A_DEPTH)
    presentations: Literal[2] = key("schedule", "Presentations per position and arm (the "
                                    "two periods of the cyclic counterbalance).")
    order_design: Literal["cyclic_counterbalance"] = key(
        "schedule", "How presentation B's order follows A's (the only implemented design).")
    order_rotation: int = key("schedule", "Slots by which presentation B rotates A.", ge=1)
    construction_seed: int = key("schedule", "Seed of the Latin first-presentation orders "
                                 "(arm i uses construction_seed + i).", ge=0)
    models: list[str] | None = key("schedule", "Model labels; without it the binding names "
                                   "none and each run names its model.", default=None)
    max_retries: int = key("retry", "Provider retries per cell, counted in the run's event "
                           "log across resumes.", ge=0, le=20)

    @model_validator(mode="after")
    def _rotation(self) -> ArmsSchedule:
        if self.order_rotation >= self.width:
            raise KeyRefusal("order_rotation",
                             f"order_rotation = {self.order_rotation} must be below width "
                             f"{self.width}")
        if self.models is not None:
            require_distinct(self.models, "models")
        return self


class RankArm(PresetModel):
    """One ``[[arms]]`` table of E023: the hidden proposer ranks its list shows."""

    name: str = key("schedule", "Arm name (contrasts name it); one the cell table knows: "
                    "near_strong, mid_band, mixed_tail, far_tail.", min_length=1)
    ranks: list[Annotated[int, Field(ge=1, le=PASS_A_DEPTH)]] = key(
        "request", "Pass A ranks shown, rank 1 included (ranks 1-10: the label stage's "
        "MultiPV).")


class ArmsAnalysis(PresetModel):
    """E023's ``[analysis]``."""

    primary_contrast: list[str] = key("analysis", "(near, far) arms of the primary contrast.",
                                      min_length=2, max_length=2)
    secondary_contrasts: list[list[str]] = key("analysis", "Secondary (near, far) contrasts.")
    alpha: Probability = key("analysis", "Level of every interval and test.")
    secondary_multiplicity: Multiplicity = key("analysis", "Adjustment of the secondary "
                                               "family.")
    interval: Interval = key("analysis", "Interval of every reported proportion "
                             "(catastrophic rates).")
    cluster: ClusterUnit = key("analysis", "Cluster unit of every bootstrap.")
    catastrophic_regret: Annotated[float, Field(gt=0.0, le=1.0)] = key(
        "analysis", "A cell is a catastrophic blunder when its WDL regret is at least this.")
    primary_endpoints: list[ArmsEndpoint] = key(
        "audit", "The primary endpoints, design.outcome first (seed 001: WDL regret and the "
        "catastrophic-blunder rate); the endpoint-validity audit warns when one moves against "
        "the declared mechanism for the diffuse selector (design/endpoint_validity.py).",
        min_length=1)

    @model_validator(mode="after")
    def _primaries(self) -> ArmsAnalysis:
        require_distinct(list(self.primary_endpoints), "primary_endpoints")
        return self


class ShuffleProjection(PresetModel):
    """E023's ``[shuffle_projection]``: the protocol E023 replaces, audited for contrast."""

    widths: list[Annotated[int, Field(ge=2, le=PASS_A_DEPTH)]] = key(
        "audit", "Oracle-list widths projected from one shuffle of the widest.", min_length=1)
    seed: int = key("audit", "Seed of the independent shuffles.", ge=0)


class SelectorsTable(PresetModel):
    """E023's ``[selectors]``: the outcome-blind synthetic selectors of the audit."""

    utility: Literal["neg_log_rank"] = key("audit", "Candidate utility u(rank) = -log(rank) "
                                           "(the only implemented utility).")
    sharp_temperature: Annotated[float, Field(gt=0.0)] = key("audit", "Sharp selector's "
                                                             "softmax temperature.")
    diffuse_temperature: Annotated[float, Field(gt=0.0)] = key("audit", "Diffuse selector's "
                                                               "softmax temperature.")
    primacy_per_slot: float = key("audit", "Primacy bias: -primacy_per_slot x slot added to "
                                  "each logit.")
    wdl_regret_by_rank: list[Annotated[float, Field(ge=0.0, le=1.0)]] = key(
        "audit", "WDL regret of pass A ranks 1-10 against rank 1 (0 first, non-decreasing): a "
        "registered controlled input to the endpoint-validity audit, replaced at binding by "
        "pass A's own WDL expectations (design/endpoint_validity.py).",
        min_length=PASS_A_DEPTH, max_length=PASS_A_DEPTH)

    @model_validator(mode="after")
    def _profile(self) -> SelectorsTable:
        profile = self.wdl_regret_by_rank
        if profile[0] != 0.0 or any(b < a for a, b in pairwise(profile)):
            raise KeyRefusal("wdl_regret_by_rank", "wdl_regret_by_rank must start at 0 and "
                             f"never decrease (a rank's regret against rank 1), got {profile}")
        return self


class ArmsFigures(PresetModel):
    """E023's ``[seed_figures]``: what seed 001 prints, beside the audit's figures."""

    shuffle_identical_pairs_w2: int | None = key("audit", "Seed: identical pairs, top-2 "
                                                 "shuffles.", default=None)
    shuffle_moved_share_w2: float | None = key("audit", "Seed: moved share, top-2 shuffles.",
                                               default=None)
    shuffle_deranged_pairs_w5: int | None = key("audit", "Seed: deranged pairs, top-5.",
                                                default=None)
    shuffle_deranged_pairs_w10: int | None = key("audit", "Seed: deranged pairs, top-10.",
                                                 default=None)
    shuffle_max_imbalance_w5: int | None = key("audit", "Seed: max imbalance, top-5.",
                                               default=None)
    shuffle_max_imbalance_w10: int | None = key("audit", "Seed: max imbalance, top-10.",
                                                default=None)
    cyclic_differing_pairs: int | None = key("audit", "Checked: paired orders differing.",
                                             default=None)
    cyclic_deranged_pairs: int | None = key("audit", "Checked: fully deranged pairs.",
                                            default=None)
    cyclic_moved_share: float | None = key("audit", "Checked: share of assignments moved.",
                                           default=None)
    cyclic_rank_slot_count: int | None = key("audit", "Checked: exposures per rank and slot.",
                                             default=None)
    cyclic_max_imbalance: int | None = key("audit", "Checked: max rank-by-slot imbalance.",
                                           default=None)
    coverage_selection_product: float | None = key(
        "audit", "Checked: the seed's C x S example (0.35 x 0.90 = 0.90 x 0.35 = 0.315).",
        default=None)


ReversalFactor = Literal["model", "side_to_move", "phase", "tacticality", "value_gap"]
"""A stratum the reversal falsifier crosses with the primary contrast (a cell row's column;
``value_gap`` is cut at ``value_gap_edges``)."""


class FalsifierTable(PresetModel):
    """``[falsifiers]``: what seed 001's "Outcomes that can prove us wrong" analyses read
    (``chess/studies/falsifiers.py``)."""

    reversal_factors: list[ReversalFactor] = key(
        "analysis", "Strata crossed with the primary contrast; a sign reversal between two "
        "levels whose difference survives the adjustment is reported as the result.",
        min_length=1)
    interaction_multiplicity: Multiplicity = key(
        "analysis", "Adjustment across every level-pair interaction test of an analysis "
        "(seed 001: interactions use Benjamini-Hochberg).")
    min_level_positions: int = key(
        "analysis", "Fewest paired positions a stratum or level needs before it gets an "
        "estimate (a bootstrap over a handful of positions is not a test).", ge=2)
    value_gap_edges: list[Annotated[float, Field(gt=0.0, lt=1.0)]] | None = key(
        "analysis", "Value-gap strata: pass A's rank-1 minus rank-2 WDL expectation, cut at "
        "these increasing edges (needed by E020/E021's width falsifier and a value_gap "
        "reversal factor).", default=None)

    @model_validator(mode="after")
    def _edges(self) -> FalsifierTable:
        require_distinct(list(self.reversal_factors), "reversal_factors")
        edges = self.value_gap_edges
        if edges is not None and (not edges or any(b <= a for a, b in pairwise(edges))):
            raise KeyRefusal("falsifiers.value_gap_edges",
                             f"falsifiers.value_gap_edges must increase strictly, got {edges}")
        if "value_gap" in self.reversal_factors and edges is None:
            raise KeyRefusal("falsifiers.value_gap_edges", "a value_gap reversal factor needs "
                             "falsifiers.value_gap_edges")
        return self


class OrderFalsifiers(FalsifierTable):
    """E023's ``[falsifiers]``: adds the order-derangement threshold."""

    rare_order_change: Probability = key(
        "analysis", "The share of paired presentations whose selected move differs below "
        "which order derangement 'rarely changes the selected move' (its upper bound below: "
        "presentation instability is not a major explanation; its lower bound at or above: "
        "it is one).")


class ArmsPreset(PresetModel):
    """A counterbalanced-arms preset (``designs/e023.toml``)."""

    design: ArmsIdentity
    schedule: ArmsSchedule
    arms: list[RankArm] = Field(min_length=2)
    analysis: ArmsAnalysis
    shuffle_projection: ShuffleProjection
    selectors: SelectorsTable
    falsifiers: OrderFalsifiers
    seed_figures: ArmsFigures = Field(default_factory=ArmsFigures)

    @model_validator(mode="after")
    def _arms_and_contrasts(self) -> ArmsPreset:
        names = [a.name for a in self.arms]
        require_distinct(names, "arms")
        for i, name in enumerate(names):
            if name not in E023_ARM_NAMES:
                raise KeyRefusal(f"arms[{i}].name", f"arm {name!r} is not a condition the cell "
                                 f"table knows ({', '.join(E023_ARM_NAMES)})")
        for i, arm in enumerate(self.arms):
            ranks = arm.ranks
            if len(ranks) != self.schedule.width or len(set(ranks)) != len(ranks) \
                    or 1 not in ranks:
                raise KeyRefusal(f"arms[{i}].ranks",
                                 f"arm {arm.name!r} needs {self.schedule.width} distinct "
                                 f"ranks including rank 1 (schedule.width), got {ranks}")
        for pair in (self.analysis.primary_contrast, *self.analysis.secondary_contrasts):
            if len(pair) != 2 or not set(pair) <= set(names) or pair[0] == pair[1]:
                raise KeyRefusal("analysis", f"contrast {pair} must name two registered arms")
        if self.analysis.primary_endpoints[0] != self.design.outcome:
            raise KeyRefusal("analysis.primary_endpoints",
                             f"analysis.primary_endpoints must start with design.outcome "
                             f"{self.design.outcome!r}, got {self.analysis.primary_endpoints}")
        if max(self.shuffle_projection.widths) > PASS_A_DEPTH:
            raise KeyRefusal("shuffle_projection.widths",
                             "shuffle_projection.widths exceed pass A's ranks")
        return self
