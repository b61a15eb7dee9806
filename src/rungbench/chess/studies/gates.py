"""The seven A105 claim gates, each pass/fail with its evidence (seed 000, "An effect must
survive attempts to explain it away").

1. The held-out model-specific main effect survives Holm over the four primary tests in
   the beneficial direction.
2. Both simple effects (with and without the other panel) are benefits.
3. No material reversal (:class:`rungbench.design.factorial.MaterialRules`, registered in
   the preset's ``[analysis.material]``) across panel
   order, provider route, equal-source-game weighting, position clusters or the
   maximal-regret attrition bounds, and no differential attrition.
4. Complete rendered-prompt bytes differ only at registered offsets (the prompt audit).
5. Tool-schema digests are one across every cell; action-universe digests are one
   across the arms of every position.
6. Legal-submission and all-request results are shown together, the legal-only subset
   labelled non-randomized.
7. The effect exists in held-out positions for the named model (its own interval lies
   on the beneficial side), never a pooled cross-model substitute.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rungbench.chess.studies.analysis import (
    FACTOR_ESTIMANDS,
    A105Analysis,
    A105Result,
    material_of,
)
from rungbench.chess.studies.cells import CellTable, PromptAudit
from rungbench.design.audit import AuditReport
from rungbench.errors import InputError
from rungbench.evidence.canonical import digest

GATE_NAMES: dict[int, str] = {
    1: "held-out main effect survives the registered multiplicity adjustment (Holm in A105) "
       "in the beneficial direction",
    2: "both simple effects agree in sign",
    3: "no material reversal across panel order, route, weighting, cluster or attrition bounds",
    4: "rendered prompt bytes differ only at registered offsets",
    5: "tool-schema and action-universe digests match across arms",
    6: "legal-only and all-request results shown together, legal-only non-randomized",
    7: "effect exists in held-out positions for the named model (no pooled substitute)"}
"""The seven gates, in seed order."""
INSTRUMENT_GATES = (4, 5, 6)
"""Gates on the instrument and report rather than on the effect."""


@dataclass(frozen=True)
class GateResult:
    """One gate's verdict for one model and factor."""

    number: int
    """Gate number 1–7."""
    passed: bool
    """Whether it passed."""
    evidence: dict[str, Any]
    """What it was decided on, with the source digests."""

    @property
    def name(self) -> str:
        """The gate's wording."""
        return GATE_NAMES[self.number]

    def to_json(self) -> dict[str, Any]:
        """Return the result as a JSON-ready mapping."""
        return {"gate": self.number, "name": self.name, "passed": self.passed,
                "evidence": self.evidence}


def prompt_audit(report: AuditReport) -> PromptAudit:
    """The gate-4 evidence of an A105 panels audit (:func:`~rungbench.chess.studies.panels.
    panel_audit`), named by the digest of the whole report."""
    figures = {f.key: f.ours for f in report.figures}
    try:
        return PromptAudit(digest=digest(report.to_json()), blocks=int(figures["audit_blocks"]),
                           stray_offsets=int(figures["stray_offsets"]),
                           length_mismatches=int(figures["byte_length_mismatches"]),
                           masked_token_leaks=int(figures["masked_token_leaks"]))
    except KeyError as exc:
        raise InputError(f"the audit report has no figure {exc.args[0]!r}",
                         field="figures") from exc


def evaluate_gates(analysis: A105Analysis, table: CellTable, model: str,
                   factor: str, *, split: str = "held_out") -> list[GateResult]:
    """All seven gates of the claim "``factor`` changed ``model``'s regret" (seed order)."""
    result = analysis.results.get((model, split))
    main, without, with_other = FACTOR_ESTIMANDS[factor]
    return [_gate1(analysis, model, factor), _gate2(result, without, with_other),
            _gate3(analysis, result, main), _gate4(table), _gate5(table, model),
            _gate6(result), _gate7(result, main, analysis, factor)]


def _gate1(analysis: A105Analysis, model: str, factor: str) -> GateResult:
    entry = analysis.family.get(f"{model}:{factor}")
    if entry is None or entry["estimate"] is None:
        return GateResult(1, False, {"reason": "no held-out estimate for the primary test",
                                     "test": f"{model}:{factor}"})
    mean = entry["estimate"]["mean"]
    return GateResult(1, bool(entry["rejected"] and mean > 0), {
        "test": f"{model}:{factor}", "mean": mean, "p": entry["p"],
        "adjusted_p": entry["adjusted_p"], "method": entry["method"], "alpha": entry["alpha"],
        "family_size": entry["family_size"],
        "beneficial": mean > 0, "source": entry["estimate"]["source"]})


def _gate2(result: A105Result | None, without: str, with_other: str) -> GateResult:
    if result is None or without not in result.primary:
        return GateResult(2, False, {"reason": "no held-out estimate"})
    a, b = result.primary[without], result.primary[with_other]
    return GateResult(2, a.mean > 0 and b.mean > 0, {
        without: a.mean, with_other: b.mean, "source": a.source})


def _gate3(analysis: A105Analysis, result: A105Result | None, main: str) -> GateResult:
    if result is None:
        return GateResult(3, False, {"reason": "no held-out estimate"})
    rules = material_of(analysis.settings)
    checks = []
    for name, estimates in result.sensitivities.items():
        kind = name.split("=")[0]
        est = estimates.get(main)
        if kind in rules.subset_sensitivities:
            ok = (est is not None and est.mean > rules.min_benefit
                  and est.test.n >= rules.min_subset_positions)
            rule = f"point > {rules.min_benefit:g} on >= {rules.min_subset_positions} positions"
        elif kind in rules.full_sensitivities:
            ok = est is not None and est.test.low > rules.min_benefit
            rule = f"interval above {rules.min_benefit:g}"
        elif kind in rules.bound_sensitivities:
            ok = est is not None and est.mean > rules.min_benefit
            rule = f"bound > {rules.min_benefit:g}"
        else:
            continue
        checks.append({"analysis": name, "rule": rule, "passed": bool(ok),
                       "mean": None if est is None else est.mean,
                       "low": None if est is None else est.test.low,
                       "n_positions": 0 if est is None else est.test.n,
                       "source": None if est is None else est.source})
    differential = bool(result.attrition["differential"])
    reversals = [c["analysis"] for c in checks if not c["passed"]]
    return GateResult(3, not reversals and not differential, {
        "checks": checks, "reversed_under": reversals, "differential_attrition": differential,
        "condition_hazards": result.attrition["condition_hazards"],
        "homogeneity_p": result.attrition["homogeneity_p"]})


def _gate4(table: CellTable) -> GateResult:
    audit = table.header.prompt_audit
    if audit is None:
        return GateResult(4, False, {"reason": "no prompt-byte audit in the cell table"})
    ok = audit.stray_offsets == 0 and audit.length_mismatches == 0 and \
        audit.masked_token_leaks == 0 and audit.blocks > 0
    return GateResult(4, ok, {**audit.model_dump(mode="json"), "source": audit.digest})


def _gate5(table: CellTable, model: str) -> GateResult:
    rows = [r for r in table.rows if r.model == model]
    tools = sorted({r.tool_schema_digest for r in rows})
    universes: dict[str, set[str]] = {}
    for r in rows:
        universes.setdefault(r.position, set()).add(r.action_universe_digest)
    split = sorted(p for p, d in universes.items() if len(d) > 1)
    return GateResult(5, len(tools) == 1 and not split, {
        "tool_schema_digests": tools, "positions": len(universes),
        "positions_with_differing_universe": len(split), "first": split[:5]})


def _gate6(result: A105Result | None) -> GateResult:
    if result is None:
        return GateResult(6, False, {"reason": "no held-out estimate"})
    legal = result.legal_only
    available = all(c["mean_regret"] is not None for c in legal["cells"].values())
    all_requests = all(c["mean_regret"] is not None for c in result.cell_means.values())
    return GateResult(6, available and all_requests and legal["randomized"] is False, {
        "legal_only": {k: v["mean_regret"] for k, v in legal["cells"].items()},
        "all_requests": {k: v["mean_regret"] for k, v in result.cell_means.items()},
        "legal_only_randomized": legal["randomized"], "label": legal["label"]})


def _gate7(result: A105Result | None, main: str, analysis: A105Analysis,
           factor: str) -> GateResult:
    pooled = analysis.pooled.get(factor)
    pooled_json = None if pooled is None else {"mean": pooled.mean, "low": pooled.test.low,
                                               "high": pooled.test.high,
                                               "source": pooled.source}
    if result is None or main not in result.primary:
        return GateResult(7, False, {"reason": "no held-out estimate for the model",
                                     "pooled_not_a_substitute": pooled_json})
    est = result.primary[main]
    return GateResult(7, est.test.low > 0, {
        "model": result.model, "mean": est.mean, "low": est.test.low, "high": est.test.high,
        "n_positions": est.test.n, "n_games": est.n_games, "source": est.source,
        "pooled_not_a_substitute": pooled_json})
