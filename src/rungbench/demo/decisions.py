"""Demo stage: question 3 ("do real decisions improve at acceptable cost?") from the demo
incidents (seed 003, "Three questions").

Builds a small incident bench, runs the P2 debugging protocol and premature commitment as
tool-use episodes through the real ``openai`` client on loopback — each as a stand-in for
a priced model (the models-file example's $0.15 / $0.60 per million tokens; the loopback
server's token counts are estimates from the message sizes) — and computes the
``decisions`` document (:mod:`rungbench.causal.bench.decisions`) and question 3's answer
with the weekly report's own rule (:func:`rungbench.causal.instrument.weekly.
answer_decisions`). The demo keeps no claim store, so it does not render the weekly report
itself. Bench and runs are built once and reused (a resume of a finished run sends
nothing). The stage fails unless P2 lowers the expected repair loss with an interval
wholly below 0 (seed 003's prediction for P2).
"""

from __future__ import annotations

import json
from pathlib import Path

from rungbench.agents.spec import Pricing, parse_agent
from rungbench.causal.bench.build import build_split
from rungbench.causal.bench.decisions import decisions_document
from rungbench.causal.bench.episode_runs import run_agent
from rungbench.causal.instrument.weekly import answer_decisions
from rungbench.demo import StageResult

WORLDS = 12
"""Incident worlds of the demo's episode bench."""
SEED = 20261003
"""Seed of the demo's episode bench."""
PRICES = Pricing(0.15, 0.60)
"""Stand-in prices per million tokens (the models-file example's)."""
POLICIES = ("p2_protocol", "premature_commitment")
"""Candidate (a) and baseline (b)."""


def _run(bench: Path, out: Path, policy: str) -> Path:
    done = sorted(out.glob("runs/*/manifest.json"))
    spec = parse_agent(f"reference:{policy}", pricing=PRICES)
    result = run_agent(bench, out, spec, resume=done[-1].parent if done else None,
                       families=frozenset({"root_cause_debugging"}))
    return Path(result["run"])


def run(workdir: Path) -> StageResult:
    """Build (or reuse) the bench and both runs; write ``decisions.json``; answer question 3."""
    root = workdir / "decisions"
    bench = root / "bench"
    if not bench.exists():
        build_split("dev", WORLDS, SEED, bench, None, families="incident")
    runs = [_run(bench, root / policy, policy) for policy in POLICIES]
    doc = decisions_document(bench, runs[0], runs[1])
    out = root / "decisions.json"
    out.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    answer = answer_decisions(doc)
    delta = doc["paired"]["delta"]
    outcomes = {k: {f: doc["runs"][k]["outcomes"][f] for f in (
        "n", "mean_expected_loss", "success_rate", "usd_per_incident", "success_per_usd")}
        for k in ("a", "b")}
    summary = {"agents": {k: doc["runs"][k]["agent"] for k in ("a", "b")},
               "outcomes": outcomes, "loss_delta": delta,
               "success_per_usd": doc["success_per_usd"], "cost": doc["cost"],
               "question_3": answer, "written": str(out)}
    failure = None if delta["high"] < 0 else (
        f"P2 did not lower the expected repair loss: a − b interval [{delta['low']:.3f}, "
        f"{delta['high']:.3f}]")
    return StageResult(summary, doc, failure)
