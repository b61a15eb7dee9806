"""Question 3's per-case and per-run numbers: expected repair loss, sandbox repair success,
dollars (seed 003, "Three questions": "Do real decisions improve at acceptable cost?
Endpoint: expected repair loss and sandbox repair success per dollar").

All pure; :mod:`rungbench.causal.bench.decisions` reads the runs and pairs them.

Per incident (a ``root_cause_debugging`` diagnosis case of an episode run):

* **expected repair loss** — E[L(a) | e] of the chosen repair a under the posterior given
  the evidence the episode delivered (:attr:`incidents.Diagnosis.expected_loss`: repair cost
  + 10 · Σ_h P(h | e) · P(outage | do(F = onehot(h), a))), the quantity whose difference to
  the best repair is the scorer's ``decision_regret`` (:mod:`episode_scorer`);
* **sandbox repair success** — the probability the symptom is gone after the repair is
  applied in the case's private world: 1 − P(outage = 1 | do(F = onehot(true cause), a)),
  computed *exactly* by the oracle (no simulation, so no seed). For the generator's worlds
  the outage is a deterministic function of the faults, so it is 0 or 1;
* **dollars** — the episode's prompt and completion tokens × the agent's registered prices.

A case whose episode named no repair on the menu (an abstention, an invalid or missing
answer) is scored as :data:`~incidents.LEAVE_ALONE`: nothing was repaired, so the outage
persists and the loss is the do-nothing loss. Without registered prices there are no
dollars: :data:`NO_PRICES` stands where a dollar figure would, never 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from rungbench.agents.spec import Pricing
from rungbench.causal.bench.incidents import LEAVE_ALONE, OUTAGE, Diagnosis, IncidentWorld
from rungbench.causal.scm import oracle
from rungbench.causal.scm.world import Query
from rungbench.errors import InputError

__all__ = [
    "NO_PRICES", "RepairCase", "chosen_repair", "expected_repair_loss", "registered_prices",
    "repair_case", "run_outcomes", "sandbox_success", "usd_of",
]

NO_PRICES = "no_prices"
"""What a dollar figure reads when the agent has no registered prices."""


@dataclass(frozen=True)
class RepairCase:
    """One incident of one run, as question 3 counts it."""

    case_id: str
    """The diagnosis case."""
    world_id: str
    """Its world (the bootstrap cluster)."""
    action: str
    """The repair applied (:data:`~incidents.LEAVE_ALONE` when none was named)."""
    expected_loss: float
    """E[L(action) | delivered evidence]."""
    success: float
    """P(symptom gone | do(true cause, action)) in the private world."""
    tokens_in: int
    """Prompt tokens of the episode (every attempt)."""
    tokens_out: int
    """Completion tokens of the episode (every attempt)."""
    spent: float
    """Experiment cost the episode spent (cost units; reported, not in the loss)."""

    def to_json(self) -> dict[str, Any]:
        """The case as a JSON-ready mapping."""
        return asdict(self)


def chosen_repair(d: Diagnosis, action: str | None) -> str:
    """The repair the answer applies: ``action`` if it is on the menu, else leave alone."""
    return action if action is not None and action in d.actions else LEAVE_ALONE


def expected_repair_loss(d: Diagnosis, action: str) -> float:
    """E[L(action) | evidence] (seed 003 "Decision regret", the loss before the minimum)."""
    if action not in d.actions:
        raise InputError(f"{action!r} is not on the repair menu", field="action")
    return d.expected_loss[action]


def sandbox_success(iw: IncidentWorld, truth: str, action: str) -> float:
    """1 − P(outage = 1 | do(F = onehot(truth), action)), exact, in the private world."""
    if truth not in iw.hypotheses:
        raise InputError(f"true cause {truth!r} is not a hypothesis of the world",
                         field="true_cause")
    do = iw.onehot(truth)
    if action.startswith("repair:"):
        fault = action.removeprefix("repair:")
        if fault not in iw.faults:
            raise InputError(f"{action!r} repairs no fault of the world", field="action")
        do[fault] = 0
    return 1.0 - oracle.probability(iw.world, Query(2, {OUTAGE: 1}, do))


def repair_case(case_id: str, world_id: str, d: Diagnosis, truth: str, action: str | None,
                tokens: tuple[int, int], spent: float = 0.0) -> RepairCase:
    """One incident's loss, success and tokens (``d``: the diagnosis given the delivered
    evidence; ``truth``: the private true cause; ``action``: the answer's repair)."""
    applied = chosen_repair(d, action)
    return RepairCase(case_id, world_id, applied, expected_repair_loss(d, applied),
                      sandbox_success(d.iw, truth, applied), int(tokens[0]), int(tokens[1]),
                      float(spent))


def registered_prices(description: Mapping[str, Any]) -> Pricing | None:
    """The prices a run manifest's agent description records; None when it records none.

    Zero prices are the unset default of :class:`~rungbench.agents.spec.Pricing`, so a
    description whose prices are both 0 has no registered prices either.
    """
    raw = description.get("pricing")
    if not isinstance(raw, Mapping):
        return None
    try:
        prices = Pricing(raw["usd_per_mtok_in"], raw["usd_per_mtok_out"])
    except (KeyError, InputError):
        return None
    if prices.usd_per_mtok_in == 0 and prices.usd_per_mtok_out == 0:
        return None
    return prices


def usd_of(case: RepairCase, prices: Pricing) -> float:
    """The episode's tokens × the registered prices, in US dollars."""
    return prices.cost(case.tokens_in, case.tokens_out)


def run_outcomes(cases: Sequence[RepairCase], prices: Pricing | None) -> dict[str, Any]:
    """Per run: mean loss, success rate, dollars, loss per dollar and success per dollar.

    Per-dollar figures are ratios of sums (total loss or successes ÷ total dollars);
    without prices every dollar figure is :data:`NO_PRICES`.
    """
    if not cases:
        raise InputError("no incident case to summarize", field="cases")
    n = len(cases)
    loss = sum(c.expected_loss for c in cases)
    success = sum(c.success for c in cases)
    out: dict[str, Any] = {
        "n": n, "mean_expected_loss": loss / n, "success_rate": success / n,
        "tokens_in": sum(c.tokens_in for c in cases),
        "tokens_out": sum(c.tokens_out for c in cases),
        "mean_experiment_spent": sum(c.spent for c in cases) / n}
    if prices is None:
        out.update(prices=NO_PRICES, usd=NO_PRICES, usd_per_incident=NO_PRICES,
                   loss_per_usd=NO_PRICES, success_per_usd=NO_PRICES)
        return out
    usd = sum(usd_of(c, prices) for c in cases)
    out.update(prices=prices.to_json(), usd=usd, usd_per_incident=usd / n,
               loss_per_usd=loss / usd if usd > 0 else None,
               success_per_usd=success / usd if usd > 0 else None)
    return out
