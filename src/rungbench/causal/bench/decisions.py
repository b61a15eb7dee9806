"""Question 3's endpoint from two episode runs on the same incidents: the ``decisions``
document the weekly report reads (:mod:`rungbench.causal.instrument.weekly`).

Seed 003, "Three questions": "Do real decisions improve at acceptable cost? Endpoint:
expected repair loss and sandbox repair success per dollar." Two runs of
``rungbench causal episodes`` on one bench — an agent with a tool against the same agent
without it, or two agents — are read back through their verified logs, every
``root_cause_debugging`` diagnosis case is scored by :mod:`repair_outcomes` on the
evidence its episode delivered, and the runs are paired case by case:

* ``paired.delta`` — expected repair loss, run a − run b (lower is better), mean and 95%
  percentile interval from resampling whole worlds (``stats.paired_cluster_bootstrap``);
* ``success_per_usd`` — sandbox successes per dollar of each run and their difference
  a − b, ratios of sums on the same world resamples (``stats.cluster_ratio_draws``);
* ``cost`` — dollars per incident of each run, their ratio a ÷ b and whether it is within
  the ceiling (default +25%: seed 003's cost ceiling for the P2 debugging protocol,
  "+25% tokens per incident").

Fail closed: a run whose log does not verify, is unfinished, is not an episode run, was
made on another bench, or whose incident cases differ from the other run's is refused
with one line naming it. Provenance names each run by its manifest digest and the head
of its event chain, so the document says exactly which bytes it was computed from.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rungbench.agents.spec import Pricing
from rungbench.causal.bench.episode_runs import episode_records
from rungbench.causal.bench.episode_tools import EPISODE_TASK, diagnosis_of
from rungbench.causal.bench.records import EpisodeCase, EpisodeOracle
from rungbench.causal.bench.repair_outcomes import (
    NO_PRICES,
    RepairCase,
    registered_prices,
    repair_case,
    run_outcomes,
    usd_of,
)
from rungbench.causal.bench.requests import validate_causal_answer
from rungbench.causal.bench.verified import (
    EPISODE_CASES,
    SealedDir,
    bench_episodes,
    has_episodes,
    open_bench,
)
from rungbench.errors import InputError, IntegrityError, Reason, Refusal
from rungbench.evidence.canonical import digest
from rungbench.execute.events import CHAIN, read_events
from rungbench.execute.runner import EVENTS, load_run, verify_run
from rungbench.stats import cluster_ratio_draws, nan_interval, paired_cluster_bootstrap

__all__ = [
    "DECISIONS_SCHEMA", "DEFAULT_COST_CEILING", "INCIDENT_FAMILY", "RunRepairs",
    "decisions_document", "paired_decisions", "read_run_repairs",
]

DECISIONS_SCHEMA = "rungbench.decisions/1"
"""Schema name and version of the decisions document."""

INCIDENT_FAMILY = "root_cause_debugging"
"""The family whose diagnosis cases are question 3's incidents."""

DEFAULT_COST_CEILING = 0.25
"""Largest accepted rise in dollars per incident, a ÷ b − 1 (seed 003, P2 debugging
protocol: "Cost ceiling: +25% tokens per incident")."""

GATE = "decisions"
"""Name of the refusing gate."""


@dataclass(frozen=True)
class RunRepairs:
    """One verified episode run's incidents, prices and provenance."""

    cases: tuple[RepairCase, ...]
    """Incident cases, in case-id order."""
    prices: Pricing | None
    """Registered prices; None when the run records none."""
    provenance: Mapping[str, Any]
    """Run id, manifest digest, event-chain head, schedule digest, agent label."""

    @property
    def by_case(self) -> dict[str, RepairCase]:
        """Case id -> case."""
        return {c.case_id: c for c in self.cases}


def _refuse(code: str, detail: str, subject: str) -> Refusal:
    return Refusal([Reason(code, detail, subject)], gate=GATE)


def _tokens_by_cell(run_dir: Path) -> dict[str, tuple[int, int]]:
    """Prompt and completion tokens of every attempt of each cell (its tool_events)."""
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for e in read_events(run_dir / EVENTS):
        if e["kind"] == "tool_event":
            totals[e["cell"]][0] += int(e.get("tokens_in") or 0)
            totals[e["cell"]][1] += int(e.get("tokens_out") or 0)
    return {c: (t[0], t[1]) for c, t in totals.items()}


def _verified(run_dir: Path, cases_digest: str) -> dict[str, Any]:
    """Verify ``run_dir`` (chain, finals, complete, episode task, this bench); its provenance."""
    check = verify_run(run_dir, validate_causal_answer)
    if not check.ok:
        raise _refuse("unfinished", f"run {run_dir} is not finished: {check.problems[0]}",
                      str(run_dir))
    manifest, schedule = load_run(run_dir)
    if schedule.task != EPISODE_TASK:
        raise _refuse("not_episodes", f"run {run_dir} is a {schedule.task} run, not "
                      f"{EPISODE_TASK} episodes", str(run_dir))
    made_on = (schedule.source or {}).get("cases_v2")
    if made_on != cases_digest:
        raise _refuse("other_bench", f"run {run_dir} was made on cases {made_on}, the bench "
                      f"holds {cases_digest}", str(run_dir))
    events = read_events(run_dir / EVENTS)
    agent = manifest["agent"]
    return {"run": run_dir.name, "manifest": events[0]["manifest"],
            "log_head": events[-1][CHAIN], "schedule": manifest["schedule"],
            "agent": str(agent.get("label") or agent.get("name"))}


def _answered_action(line: str) -> str | None:
    doc = json.loads(line)
    action = doc.get("action") if isinstance(doc, dict) else None
    return action if isinstance(action, str) else None


def _episode_bench(bench_dir: Path) -> SealedDir:
    """The verified bench, refused (``no_episodes``) when it holds no records/2 cases."""
    bench = open_bench(bench_dir)
    if not has_episodes(bench):
        raise _refuse("no_episodes", f"bench {bench_dir} holds no incident episodes (build it "
                      "with --families incident)", str(bench_dir))
    return bench


def read_run_repairs(bench_dir: Path, run_dir: Path) -> RunRepairs:
    """The incidents of a verified, finished episode run on ``bench_dir``, scored."""
    bench = _episode_bench(bench_dir)
    cases, oracles = bench_episodes(bench)
    return _run_repairs(bench.digests[EPISODE_CASES], cases, oracles, run_dir)


def _run_repairs(cases_digest: str, cases: Sequence[EpisodeCase],
                 oracles: Mapping[str, EpisodeOracle], run_dir: Path) -> RunRepairs:
    provenance = _verified(run_dir, cases_digest)
    by_id: dict[str, EpisodeCase] = {c.case_id: c for c in cases}
    tokens = _tokens_by_cell(run_dir)
    out: list[RepairCase] = []
    for row, _, line in episode_records(run_dir, oracles):
        if row["family"] != INCIDENT_FAMILY or row["item_type"] != "diagnosis":
            continue
        cid = str(row["case_id"])
        out.append(_scored(by_id[cid], oracles[cid], row, line, tokens.get(cid, (0, 0))))
    if not out:
        raise _refuse("no_incidents", f"run {run_dir} holds no {INCIDENT_FAMILY} diagnosis "
                      "case", str(run_dir))
    manifest, _ = load_run(run_dir)
    return RunRepairs(tuple(sorted(out, key=lambda c: c.case_id)),
                      registered_prices(manifest["agent"]), provenance)


def _scored(case: EpisodeCase, sealed: EpisodeOracle, row: Mapping[str, Any], line: str,
            tokens: tuple[int, int]) -> RepairCase:
    if sealed.true_cause is None:
        raise InputError(f"case {case.case_id!r} has no true cause", field="true_cause")
    d = diagnosis_of(case.model_dump(mode="json"), row["evidence"]["observed"])
    return repair_case(case.case_id, case.world_id, d, sealed.true_cause,
                       _answered_action(line), tokens, float(row["evidence"]["spent"]))


def _same_cases(a: RunRepairs, b: RunRepairs) -> list[str]:
    ids_a, ids_b = set(a.by_case), set(b.by_case)
    if ids_a != ids_b:
        only_a, only_b = sorted(ids_a - ids_b), sorted(ids_b - ids_a)
        first = (only_a or only_b)[0]
        raise _refuse("different_cases", f"the runs cover different incidents: "
                      f"{len(only_a)} only in {a.provenance['run']}, {len(only_b)} only in "
                      f"{b.provenance['run']} (first: {first})", "cases")
    worlds_a = {c.case_id: c.world_id for c in a.cases}
    if any(worlds_a[c.case_id] != c.world_id for c in b.cases):
        raise _refuse("different_cases", "a case id names different worlds in the two runs",
                      "cases")
    return sorted(ids_a)


def paired_decisions(a: RunRepairs, b: RunRepairs, *,
                     cost_ceiling: float = DEFAULT_COST_CEILING, n_boot: int = 2000,
                     seed: int = 20261003) -> dict[str, Any]:
    """The paired comparison a − b on the incidents both runs cover (the same set)."""
    ids = _same_cases(a, b)
    ca, cb = a.by_case, b.by_case
    worlds = [ca[i].world_id for i in ids]
    loss = paired_cluster_bootstrap([ca[i].expected_loss for i in ids],
                                    [cb[i].expected_loss for i in ids], worlds,
                                    n_boot=n_boot, rng=seed)
    success = paired_cluster_bootstrap([ca[i].success for i in ids],
                                       [cb[i].success for i in ids], worlds,
                                       n_boot=n_boot, rng=seed)
    return {"n": len(ids), "paired": {"delta": loss.to_json()},
            "success_rate_delta": success.to_json(),
            "success_per_usd": _success_per_usd(a, b, ids, worlds, n_boot, seed),
            "cost": _cost(a, b, cost_ceiling)}


def _success_per_usd(a: RunRepairs, b: RunRepairs, ids: list[str], worlds: list[str],
                     n_boot: int, seed: int) -> dict[str, Any]:
    if a.prices is None or b.prices is None:
        missing = [r.provenance["agent"] for r in (a, b) if r.prices is None]
        return {"delta": NO_PRICES, "why": f"no registered prices: {', '.join(missing)}"}
    ca, cb = a.by_case, b.by_case
    ratios = {"a": ([ca[i].success for i in ids], [usd_of(ca[i], a.prices) for i in ids]),
              "b": ([cb[i].success for i in ids], [usd_of(cb[i], b.prices) for i in ids])}
    estimates, draws = cluster_ratio_draws(ratios, worlds, n_boot=n_boot, rng=seed)
    low, high, dropped = nan_interval(draws["a"] - draws["b"])
    return {"a": estimates["a"], "b": estimates["b"],
            "delta": {"mean": estimates["a"] - estimates["b"], "low": low, "high": high,
                      "n": len(ids), "n_clusters": len(set(worlds)), "n_boot": n_boot,
                      "dropped_resamples": dropped}}


def _usd_per_incident(cases: tuple[RepairCase, ...], prices: Pricing) -> float:
    return sum(usd_of(c, prices) for c in cases) / len(cases)


def _cost(a: RunRepairs, b: RunRepairs, ceiling: float) -> dict[str, Any]:
    if not (np.isfinite(ceiling) and ceiling >= 0):
        raise InputError(f"cost ceiling must be a number >= 0, got {ceiling!r}",
                         field="cost_ceiling")
    if a.prices is None or b.prices is None:
        return {"ceiling": ceiling, "usd_per_incident": NO_PRICES, "ratio": NO_PRICES,
                "acceptable": NO_PRICES}
    per = {"a": _usd_per_incident(a.cases, a.prices),
           "b": _usd_per_incident(b.cases, b.prices)}
    ratio = per["a"] / per["b"] if per["b"] > 0 else None
    return {"ceiling": ceiling, "usd_per_incident": per, "ratio": ratio,
            "acceptable": ratio is not None and ratio <= 1.0 + ceiling}


def decisions_document(bench_dir: Path, run_a: Path, run_b: Path, *,
                       cost_ceiling: float = DEFAULT_COST_CEILING, n_boot: int = 2000,
                       seed: int = 20261003) -> dict[str, Any]:
    """The ``decisions`` document of run a (candidate) against run b (baseline)."""
    bench = _episode_bench(bench_dir)
    cases, oracles = bench_episodes(bench)
    a, b = (_run_repairs(bench.digests[EPISODE_CASES], cases, oracles, r)
            for r in (run_a, run_b))
    paired = paired_decisions(a, b, cost_ceiling=cost_ceiling, n_boot=n_boot, seed=seed)
    doc = {"schema": DECISIONS_SCHEMA,
            "endpoint": "expected repair loss (posterior given the delivered evidence) and "
                        "sandbox repair success (exact, private world) per dollar",
            "bench": {"name": bench_dir.name, "cases_v2": bench.digests[EPISODE_CASES]},
            "runs": {k: {**dict(r.provenance), "outcomes": run_outcomes(r.cases, r.prices)}
                     for k, r in (("a", a), ("b", b))},
            "cases": {k: [c.to_json() for c in r.cases] for k, r in (("a", a), ("b", b))},
            "bootstrap": {"n_boot": n_boot, "seed": seed, "clusters": "world_id"},
            **paired}
    return {**doc, "digest": digest(doc)}


def verify_decisions(doc: Mapping[str, Any], path: Path) -> None:
    """Refuse a ``decisions`` document whose content does not match the digest it was
    written with (an edited interval or case would otherwise answer question 3)."""
    body = {k: v for k, v in doc.items() if k != "digest"}
    try:
        ok = doc.get("digest") == digest(body)
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise IntegrityError(f"{path}: the decisions document does not match its digest "
                             "(edited after causal decisions wrote it?)")
