"""Synthetic 2×2 surfaces, their recovery by the registered estimands, and the claim gate
(seed 000, "Four cells answer more than three arms" and "An effect must survive attempts
to explain it away").

R(B, L) is the mean outcome (lower is better) with factor B and factor L present (1)
or masked (0); the estimands are ``rungbench.stats.factorial_2x2``'s. Five stipulated
signatures must be told apart: B-limited, L-limited, substitutable (each helps only
without the other), complementary (only the package helps) and null. Recovering
them validates the instrument under known inputs; it says nothing about any model.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from rungbench.errors import InputError, Reason, Refusal
from rungbench.stats import PairedDelta, factorial_2x2, factorial_2x2_paired, holm
from rungbench.stats.factorial import FactorialEstimands, FactorialIntervals

Signature = Literal["b_limited", "l_limited", "substitutable", "complementary", "null"]
SIGNATURES: tuple[Signature, ...] = (
    "b_limited", "l_limited", "substitutable", "complementary", "null")
"""The stipulated mechanisms the A105 audit must tell apart (seed 000)."""

Classification = Literal[
    "b_limited", "l_limited", "substitutable", "complementary", "null", "additive",
    "unclassified"]


@dataclass(frozen=True)
class Surface:
    """Cell means R(B, L) of a stipulated signature."""

    signature: Signature
    """Which mechanism the cells encode."""
    r00: float
    """R(0,0): both masked."""
    r01: float
    """R(0,1): L only."""
    r10: float
    """R(1,0): B only."""
    r11: float
    """R(1,1): both present."""

    def cells(self) -> tuple[float, float, float, float]:
        """The four means in (R00, R01, R10, R11) order."""
        return (self.r00, self.r01, self.r10, self.r11)


def surface(signature: Signature, *, baseline: float = 0.5, effect: float = 0.2) -> Surface:
    """Return the cell means of ``signature``: ``effect`` is the regret drop where it acts."""
    low = baseline - effect
    cells = {
        "b_limited": (baseline, baseline, low, low),
        "l_limited": (baseline, low, baseline, low),
        "substitutable": (baseline, low, low, low),
        "complementary": (baseline, baseline, baseline, low),
        "null": (baseline, baseline, baseline, baseline),
    }
    if signature not in cells:
        raise InputError(f"unknown signature {signature!r}; known: {', '.join(SIGNATURES)}",
                         field="signature")
    return Surface(signature, *cells[signature])


@dataclass(frozen=True)
class _Calls:
    """Three-way calls on the estimands a classification reads: +1, 0 or −1."""

    main_b: int
    main_l: int
    interaction: int
    b_without_l: int
    l_without_b: int


def classify_estimands(est: FactorialEstimands, *, tol: float = 1e-9) -> Classification:
    """Name the signature of exact estimands; |x| ≤ ``tol`` counts as zero."""
    def call(x: float) -> int:
        return 0 if abs(x) <= tol else (1 if x > 0 else -1)

    return _classify(_Calls(call(est.main_b), call(est.main_l), call(est.interaction),
                            call(est.simple_b_without_l), call(est.simple_l_without_b)))


def classify_intervals(est: FactorialIntervals) -> Classification:
    """Name the signature from intervals: an estimand counts when its interval excludes 0."""
    def call(d: PairedDelta) -> int:
        return 1 if d.low > 0 else (-1 if d.high < 0 else 0)

    return _classify(_Calls(call(est.main_b), call(est.main_l), call(est.interaction),
                            call(est.simple_b_without_l), call(est.simple_l_without_b)))


def _classify(c: _Calls) -> Classification:
    if c.interaction == 0:
        mains = (c.main_b, c.main_l)
        return {(0, 0): "null", (1, 0): "b_limited", (0, 1): "l_limited",
                (1, 1): "additive"}.get(mains, "unclassified")  # type: ignore[return-value]
    if c.interaction < 0 and c.b_without_l > 0 and c.l_without_b > 0:
        return "substitutable"
    if c.interaction > 0 and c.b_without_l == 0 and c.l_without_b == 0:
        return "complementary"
    return "unclassified"


@dataclass(frozen=True)
class Recovery:
    """How the registered estimands classify one stipulated signature."""

    signature: Signature
    """The stipulated mechanism."""
    estimands: FactorialEstimands
    """Exact estimands of its surface."""
    exact_call: Classification
    """Classification of the exact estimands."""
    noisy_calls: dict[str, int]
    """Classification counts over simulated paired studies with cluster-bootstrap intervals."""
    replicates: int
    """Number of simulated studies."""

    @property
    def recovered(self) -> bool:
        """Whether the exact surface is classified as its own signature."""
        return self.exact_call == self.signature

    @property
    def noisy_recovery(self) -> float:
        """Share of simulated studies classified as the stipulated signature."""
        return self.noisy_calls.get(self.signature, 0) / self.replicates if self.replicates else 0.0

    def to_json(self) -> dict[str, Any]:
        """Return the recovery as a JSON-ready mapping."""
        return {"signature": self.signature, "estimands": self.estimands.to_json(),
                "exact_call": self.exact_call, "recovered": self.recovered,
                "noisy_calls": dict(self.noisy_calls), "replicates": self.replicates,
                "noisy_recovery": self.noisy_recovery}


@dataclass(frozen=True)
class NoiseModel:
    """Simulated paired study: units nested in clusters, every unit seen in all four cells."""

    units: int = 150
    """Paired units (A105: 150 held-out positions)."""
    clusters: int = 75
    """Independent clusters (A105's conservative source-game count)."""
    cluster_sd: float = 0.10
    """SD of a cluster's shared shift (common to its units and all four cells)."""
    unit_sd: float = 0.10
    """SD of a unit's shift common to its four cells."""
    cell_sd: float = 0.10
    """SD of independent noise per (unit, cell)."""
    n_boot: int = 400
    """Cluster-bootstrap resamples per study."""
    alpha: float = 0.01
    """Interval level of the calls: a signature needs up to three "absent" calls at
    once, so 99% intervals keep a true signature's joint specificity near 0.97."""


def simulate_cells(s: Surface, noise: NoiseModel,
                   rng: np.random.Generator) -> tuple[list[np.ndarray], np.ndarray]:
    """Draw per-unit outcomes of the four cells and their cluster labels."""
    if noise.units < noise.clusters or noise.clusters < 2:
        raise InputError(f"need units >= clusters >= 2, got {noise.units}/{noise.clusters}",
                         field="noise")
    labels = np.arange(noise.units) % noise.clusters
    shared = (rng.normal(0, noise.cluster_sd, noise.clusters)[labels]
              + rng.normal(0, noise.unit_sd, noise.units))
    cells = [mean + shared + rng.normal(0, noise.cell_sd, noise.units) for mean in s.cells()]
    return cells, labels


def recover(signature: Signature, *, effect: float = 0.2, replicates: int = 20,
            noise: NoiseModel | None = None, seed: int = 0) -> Recovery:
    """Classify ``signature``'s exact surface and ``replicates`` simulated noisy studies."""
    noise = noise or NoiseModel()
    s = surface(signature, effect=effect)
    est = factorial_2x2(*s.cells())
    rng = np.random.default_rng([seed, SIGNATURES.index(signature)])
    calls: dict[str, int] = {}
    for _ in range(replicates):
        cells, labels = simulate_cells(s, noise, rng)
        intervals = factorial_2x2_paired(cells[0], cells[1], cells[2], cells[3], labels,
                                         n_boot=noise.n_boot, alpha=noise.alpha, rng=rng)
        call = classify_intervals(intervals)
        calls[call] = calls.get(call, 0) + 1
    return Recovery(signature, est, classify_estimands(est), calls, replicates)


def recovery_check(*, effect: float = 0.2, replicates: int = 20,
                   noise: NoiseModel | None = None, seed: int = 0) -> list[Recovery]:
    """Recover every stipulated signature (seed 000 synthetic-surface audit)."""
    return [recover(sig, effect=effect, replicates=replicates, noise=noise, seed=seed)
            for sig in SIGNATURES]


@dataclass(frozen=True)
class GateRules:
    """Registered constants of the representation-claim gate."""

    alpha: float
    """Familywise error rate of the primary family."""
    family_size: int
    """Number of primary tests (A105: 2 models × 2 factors = 4)."""
    primary_split: str
    """Only this split supports primary claims (``held_out``)."""
    sensitivities: tuple[str, ...]
    """Analyses under which the conclusion must not reverse."""
    multiplicity: str = "holm"
    """How the primary family's p-values are adjusted (``holm``, ``bonferroni`` or
    ``benjamini_hochberg``)."""


@dataclass(frozen=True)
class MaterialRules:
    """What counts as a *material* reversal or differential attrition (seed 000, gate 3).

    Seed 000 requires that "the conclusion does not materially reverse across panel
    order, provider route, equal-position versus equal-source-game weighting,
    position-cluster sensitivity, or maximal-regret attrition bounds" and that
    "differential attrition or a sign reversal under those bounds blocks the causal
    headline". The values are registered in the preset's ``[analysis.material]`` table
    (``designs/a105.toml``), so the preset digest covers them (:meth:`from_table`).
    """

    subset_sensitivities: tuple[str, ...]
    """Sensitivities that re-estimate on a subset of cells (one panel order, one route):
    material when any subset's point estimate is not a benefit (≤ ``min_benefit``)."""
    full_sensitivities: tuple[str, ...]
    """Sensitivities on the full data (another weighting, another cluster): material when
    the interval no longer lies wholly on the beneficial side of ``min_benefit``."""
    bound_sensitivities: tuple[str, ...]
    """Maximal-regret attrition bounds: material when either bound's point estimate is not
    a benefit (a sign reversal under the bounds)."""
    min_benefit: float
    """Benefit at or below which an estimate counts as reversed (WDL regret units)."""
    attrition_spread: float
    """Differential attrition: the largest minus the smallest condition hazard of one
    model and split exceeds this share …"""
    attrition_alpha: float
    """… and the chi-square test of equal hazards across conditions rejects at this level."""
    min_subset_positions: int
    """A subset sensitivity with fewer complete positions than this is *unsupported*,
    which is material too (an untestable sensitivity cannot clear the gate)."""

    def to_json(self) -> dict[str, Any]:
        """Return the rules as a JSON-ready mapping."""
        return {"subset_sensitivities": list(self.subset_sensitivities),
                "full_sensitivities": list(self.full_sensitivities),
                "bound_sensitivities": list(self.bound_sensitivities),
                "min_benefit": self.min_benefit, "attrition_spread": self.attrition_spread,
                "attrition_alpha": self.attrition_alpha,
                "min_subset_positions": self.min_subset_positions}


@dataclass(frozen=True)
class ClaimGateInputs:
    """Everything the gate needs to decide whether one named representation effect publishes.

    Effects are benefits: positive means the outcome (regret) fell.
    """

    model: str
    """The named model snapshot."""
    factor: str
    """The named representation factor (e.g. ``board``)."""
    split: str
    """Split the estimate comes from."""
    main_effect: float
    """The model-specific main effect of the factor."""
    family_pvalues: Mapping[str, float]
    """p-value of every primary test, keyed ``model:factor``."""
    simple_effects: tuple[float, float]
    """The factor's simple effects without and with the other panel."""
    sensitivities: Mapping[str, float]
    """Main-effect estimate under each registered sensitivity analysis."""
    prompt_bytes_at_registered_offsets: bool
    """Whether complete rendered prompts differ only at registered content offsets."""
    tool_schema_digests: Mapping[str, str]
    """Digest of the tool schema in each arm."""
    action_universe_digests: Mapping[str, str]
    """Digest of the legal-action universe in each arm."""
    legal_and_all_shown_together: bool
    """Whether legal-submission and all-request results are reported side by side."""
    legal_subset_called_randomized: bool
    """Whether the report calls the legal-only subset randomized (it is not)."""
    pooled_across_models: bool
    """Whether the estimate pools models instead of naming one."""
    differential_attrition: bool = False
    """Whether attrition differs by condition beyond the registered tolerance."""
    notes: dict[str, Any] = field(default_factory=dict)
    """Free-form provenance carried into refusal data."""


def claim_gate(inputs: ClaimGateInputs, rules: GateRules) -> list[Reason]:
    """Return every failed condition of the seed 000 claim gate (empty: publishable)."""
    subject = f"{inputs.model}:{inputs.factor}"
    reasons = _multiplicity_reasons(inputs, rules, subject)
    reasons += _direction_reasons(inputs, subject)
    reasons += _instrument_reasons(inputs, subject)
    reasons += _scope_reasons(inputs, rules, subject)
    return reasons


def require_claim(inputs: ClaimGateInputs, rules: GateRules) -> None:
    """Raise :class:`Refusal` (gate ``representation_claim``) unless every condition holds."""
    reasons = claim_gate(inputs, rules)
    if reasons:
        raise Refusal(reasons, gate="representation_claim")


def _multiplicity_reasons(inputs: ClaimGateInputs, rules: GateRules,
                          subject: str) -> list[Reason]:
    keys = sorted(inputs.family_pvalues)
    if len(keys) != rules.family_size or subject not in inputs.family_pvalues:
        return [Reason("family_mismatch",
                       f"primary family has {len(keys)} tests {keys!r}; registered "
                       f"{rules.family_size} including {subject!r}", subject,
                       {"tests": keys})]
    pvalues = [inputs.family_pvalues[k] for k in keys]
    if not all(math.isfinite(p) and 0.0 <= p <= 1.0 for p in pvalues):
        raise InputError(f"p-values must be in [0, 1], got {pvalues!r}", field="family_pvalues")
    rejected = holm(pvalues, rules.alpha)[keys.index(subject)]
    out: list[Reason] = []
    if not rejected:
        out.append(Reason("not_significant_after_holm",
                          f"Holm at alpha {rules.alpha:g} over {len(keys)} tests does not "
                          f"reject {subject}", subject, {"p": inputs.family_pvalues[subject]}))
    if not inputs.main_effect > 0:
        out.append(Reason("not_beneficial", f"main effect {inputs.main_effect:.6g} is not a "
                          "benefit (regret did not fall)", subject))
    return out


def _direction_reasons(inputs: ClaimGateInputs, subject: str) -> list[Reason]:
    out: list[Reason] = []
    without, with_other = inputs.simple_effects
    if not (without > 0 and with_other > 0):
        out.append(Reason("simple_effects_disagree",
                          f"simple effects {without:.6g} (without other panel) and "
                          f"{with_other:.6g} (with) are not both beneficial", subject))
    return out


def _instrument_reasons(inputs: ClaimGateInputs, subject: str) -> list[Reason]:
    out: list[Reason] = []
    if not inputs.prompt_bytes_at_registered_offsets:
        out.append(Reason("prompt_bytes_unmatched", "rendered prompts differ outside the "
                          "registered content offsets", subject))
    for code, digests in (("tool_schema_mismatch", inputs.tool_schema_digests),
                          ("action_universe_mismatch", inputs.action_universe_digests)):
        if len(set(digests.values())) != 1:
            out.append(Reason(code, f"arms carry {len(set(digests.values()))} distinct "
                              "digests; every arm needs the same one", subject, dict(digests)))
    if not inputs.legal_and_all_shown_together:
        out.append(Reason("results_not_shown_together", "legal-submission and all-request "
                          "results must be reported together", subject))
    if inputs.legal_subset_called_randomized:
        out.append(Reason("legal_subset_called_randomized", "the legal-only subset is "
                          "selected by the outcome, not randomized", subject))
    return out


def _scope_reasons(inputs: ClaimGateInputs, rules: GateRules, subject: str) -> list[Reason]:
    out: list[Reason] = []
    for name in rules.sensitivities:
        value = inputs.sensitivities.get(name)
        if value is None:
            out.append(Reason("sensitivity_missing", f"no estimate under {name!r}", subject))
        elif not value > 0:
            out.append(Reason("sensitivity_reversal", f"estimate {value:.6g} under {name!r} "
                              "is not beneficial", subject, {"analysis": name}))
    if inputs.differential_attrition:
        out.append(Reason("differential_attrition", "attrition differs by condition", subject))
    if inputs.split != rules.primary_split:
        out.append(Reason("not_held_out", f"estimate from split {inputs.split!r}; primary "
                          f"claims need {rules.primary_split!r}", subject))
    if inputs.pooled_across_models:
        out.append(Reason("pooled_across_models", "a pooled cross-model average cannot "
                          "substitute for model-specific evidence", subject))
    return out


def primary_family(models: Sequence[str], factors: Sequence[str]) -> list[str]:
    """The primary test keys ``model:factor`` (A105: each factor separately per model)."""
    return [f"{m}:{f}" for m in models for f in factors]
