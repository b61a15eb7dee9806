"""The only claim language the A105 gates allow (seed 000, "What A105 will still not prove").

Each (model, factor) gets one verdict:

* ``claim`` — all seven gates pass: the seed's narrow sentence, the names it refers to,
  and the list of what it does not prove;
* ``null`` — gate 1 fails while the instrument gates (4, 5, 6) pass: a protocol-specific
  null with the MDE envelope that bounds it (registered and at the observed paired SD);
* ``blocked`` — gate 1 passes but another gate fails, or an instrument gate fails, or
  Holm rejects in the harmful direction (gate 1 admits only a benefit, and a significant
  harm is not a null), or the table carries bad input: the blocking gate is named.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rungbench.chess.studies.analysis import FACTOR_ESTIMANDS, A105Analysis
from rungbench.chess.studies.gates import GATE_NAMES, INSTRUMENT_GATES, GateResult
from rungbench.design.presets import FactorialDesign
from rungbench.stats import mde

NARROW_SENTENCE = ("In the frozen A105 positions and interface, randomized assignment to the "
                   "named redundant root representation changed total systems WDL regret for "
                   "the named model snapshot.")
"""Seed 000's only authorized wording of a clean positive result."""
DOES_NOT_PROVE: tuple[str, ...] = (
    "that A104's historical board or legal-list calls caused Luna to recover",
    "that the model acquired otherwise unavailable state",
    "that the model consciously read or internally used the panel",
    "that the intervention improved search, value estimation, long-horizon play, Elo, or "
    "production reliability",
    "that the result generalizes beyond the frozen positions, prompts, providers, routes, "
    "models, evaluator, and time window")
"""What even a clean positive result does not prove (seed 000)."""
NULL_SENTENCE = ("A protocol-specific null within a known precision envelope: it does not "
                 "prove that representation never matters.")
"""Seed 000's reading of a null bounded by the registered MDE."""
REPRESENTATIONS = {"board": "the correct root board panel",
                   "legal_list": "the complete correct legal UCI list"}
"""Factor → the redundant root representation it names."""

Verdict = Literal["claim", "null", "blocked"]


@dataclass(frozen=True)
class Wording:
    """The verdict and the exact text a report may print for one model and factor."""

    model: str
    """Model snapshot."""
    factor: str
    """Factor."""
    verdict: Verdict
    """``claim``, ``null`` or ``blocked``."""
    text: str
    """The sentence(s) the report prints."""
    blocking_gates: tuple[int, ...]
    """Every failed gate (the first one blocks when the verdict is ``blocked``)."""
    mde_envelope: dict[str, Any] | None
    """For a null: registered and observed MDEs."""
    does_not_prove: tuple[str, ...] = DOES_NOT_PROVE
    """Printed beside a claim."""

    def to_json(self) -> dict[str, Any]:
        """Return the wording as a JSON-ready mapping."""
        return {"model": self.model, "factor": self.factor, "verdict": self.verdict,
                "text": self.text, "blocking_gates": list(self.blocking_gates),
                "blocked_by": self.blocking_gates[0] if self.verdict == "blocked" else None,
                "mde_envelope": self.mde_envelope,
                "does_not_prove": list(self.does_not_prove) if self.verdict == "claim" else []}


def mde_envelope(analysis: A105Analysis, design: FactorialDesign, model: str,
                 factor: str, *, split: str = "held_out") -> dict[str, Any]:
    """The registered MDE envelope and the MDE at this analysis's paired SD and support."""
    tests = design.gate.family_size
    registered = [{"sd": sd, "n": design.mde_n, "mde": mde(design.mde_n, sd, tests=tests,
                                                           power=design.mde_power).mde,
                   "mde_clusters": mde(design.mde_n, sd, tests=tests, power=design.mde_power,
                                       clusters=design.mde_clusters).mde,
                   "clusters": design.mde_clusters} for sd in design.mde_sds]
    out: dict[str, Any] = {"registered": registered, "power": design.mde_power,
                           "tests": tests, "source": design.digest}
    result = analysis.results.get((model, split))
    est = None if result is None else result.primary.get(FACTOR_ESTIMANDS[factor][0])
    if est is not None and est.test.sd and est.test.sd > 0:
        n, games = est.test.n, min(est.n_games, est.test.n)
        # The main effect is the mean of per-position contrasts: its paired SD is theirs.
        out["observed"] = {"sd": est.test.sd, "n": n, "clusters": games,
                           "mde": mde(n, est.test.sd, tests=tests, power=design.mde_power).mde,
                           "mde_clusters": mde(n, est.test.sd, tests=tests,
                                               power=design.mde_power, clusters=games).mde,
                           "estimate": est.mean, "low": est.test.low, "high": est.test.high,
                           "source": est.source}
    return out


def _harmful(gate1: GateResult, analysis: A105Analysis, model: str, factor: str) -> bool:
    """Whether the primary test rejects after the registered adjustment with the regret
    rising."""
    entry = analysis.family.get(f"{model}:{factor}")
    return bool(entry and entry["estimate"] is not None and entry["rejected"]
                and entry["estimate"]["mean"] < 0 and not gate1.passed)


def word(gates: Sequence[GateResult], analysis: A105Analysis, design: FactorialDesign,
         model: str, factor: str, *, bad_input: dict[str, int] | None = None,
         proxy: bool = False) -> Wording:
    """Decide the verdict from the gates and return the only text it allows."""
    failed = tuple(g.number for g in gates if not g.passed)
    passed = {g.number: g.passed for g in gates}
    label = " [internal proxy (same family as the labeller)]" if proxy else ""
    if bad_input and any(bad_input.values()):
        counts = ", ".join(f"{k}={v}" for k, v in sorted(bad_input.items()) if v)
        return Wording(model, factor, "blocked", f"Headline blocked by bad input ({counts}): "
                       "rows the schedule does not name or names twice." + label,
                       (0, *failed), None)
    instrument = [n for n in INSTRUMENT_GATES if not passed.get(n, False)]
    gate1 = next((g for g in gates if g.number == 1), None)
    if gate1 is not None and _harmful(gate1, analysis, model, factor):
        return Wording(model, factor, "blocked", f"Headline blocked at gate 1 "
                       f"({GATE_NAMES[1]}) for {model}:{factor}: the "
                       f"{design.gate.multiplicity.replace('_', '-')}-adjusted test rejects in "
                       "the harmful "
                       "direction (regret rose), and gate 1 admits only a beneficial effect; "
                       "this is not a null." + label, failed, None)
    if not failed:
        named = (f" Named representation: {REPRESENTATIONS[factor]} ({factor}). Named model "
                 f"snapshot: {model}.")
        return Wording(model, factor, "claim", NARROW_SENTENCE + named + label, (), None)
    if passed.get(1, False) or instrument:
        first = instrument[0] if instrument and not passed.get(1, False) else failed[0]
        order = (first, *[n for n in failed if n != first])
        return Wording(model, factor, "blocked", f"Headline blocked at gate {first} "
                       f"({GATE_NAMES[first]}) for {model}:{factor}." + label, order, None)
    envelope = mde_envelope(analysis, design, model, factor)
    reg = envelope["registered"]
    observed = envelope.get("observed")
    text = (f"No {factor} effect for {model} survives gate 1. {NULL_SENTENCE} Registered "
            f"envelope: MDE {reg[0]['mde']:.4f}–{reg[-1]['mde']:.4f} WDL at {reg[0]['n']} "
            f"positions ({reg[0]['mde_clusters']:.4f}–{reg[-1]['mde_clusters']:.4f} at "
            f"{reg[0]['clusters']} game clusters), paired SD {reg[0]['sd']:.2f}–"
            f"{reg[-1]['sd']:.2f}.")
    if observed:
        text += (f" At the observed paired SD {observed['sd']:.4f}: MDE "
                 f"{observed['mde']:.4f} ({observed['mde_clusters']:.4f} at "
                 f"{observed['clusters']} games); estimate {observed['estimate']:+.4f} "
                 f"[{observed['low']:+.4f}, {observed['high']:+.4f}].")
    return Wording(model, factor, "null", text + label, failed, envelope)
