"""One planted study, run through the real runner and loopback OpenAI server and evaluated
with Ethereal, shared by the study-table and study-analysis tests (built once per process).

Manifest: quota 0 training / 0 development / 4 held-out per class × colour cell of the
small label stage → 24 held-out positions (the small fixture's 1 held-out per cell, 6
positions, cannot pass a Holm-corrected gate 1 at 4 tests nor the 10-position subset
rule of gate 3; development positions add cells but no primary claim). Bindings:

* ``main`` (A105, the registered models): luna board-limited, deepseek-v4-flash null;
* ``interaction`` (A105): a complementary and a substitutable agent;
* ``blocked`` (A105): a board-limited agent whose board panel hurts in the
  legal-list-first order (sign reversal), and a board-limited agent whose board-only
  requests the server drops at a quarter of the positions (differential attrition);
* ``ladder`` (E020/E021): seed 001's ideas-limited (C 0.35, S 0.90) and vision-limited
  (C 0.90, S 0.35) agents, move-choice and probe runs;
* ``e023`` (E023, the 24 positions): the sharp and the diffuse softmax selectors.

The A105 agents plant P(best) 0.1 → 0.9 (base 0.1, lift 0.8) so that 24 positions carry
the effect through a 4-test Holm family; evaluator depth 6 (the registered one is 12).
At these test budgets (Stockfish 2,000 nodes, Ethereal depth 6) pass A's best move and
the evaluator's best set agree at only 13 of 36 positions, so the E020/E021 agents are
stipulated to know the *evaluator's* best sets (from the first published evaluation of
the same positions): C and S are then planted on the scale the analysis measures.
"""

from __future__ import annotations

import functools
import json
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tests.chess.studies import study_fixtures as fx

from rungbench.agents.protocol import Agent
from rungbench.agents.providers import serve_on_loopback
from rungbench.chess.studies import budget as bud
from rungbench.chess.studies import study as st
from rungbench.chess.studies.bindings import load_binding
from rungbench.chess.studies.evaluation import StageOptions, evaluate_run
from rungbench.chess.studies.evaluator import EvaluatorConfig
from rungbench.chess.studies.ladder import schedule_for
from rungbench.chess.studies.manifest import load_manifest
from rungbench.chess.studies.planted import (
    FaultFn,
    PanelAgent,
    SoftmaxSelector,
    TwoStageAgent,
    condition_drops,
)
from rungbench.design.registry import RegisteredDesign
from rungbench.evidence.canonical import digest
from rungbench.execute.policy import RetryPolicy

DEPTH = 6
"""Evaluator depth of the tests."""
QUOTA = {"training": 0, "development": 0, "held_out": 4}
"""Manifest quota per class × colour cell."""
ROUTE = "loop-a"
"""The one route every planted run goes through."""
NO_RETRY = RetryPolicy(max_attempts=1, backoff_s=(0.0,))
"""One attempt per session: a dropped cell stays a reliability outcome at once."""
BASE, LIFT = 0.1, 0.8
"""Planted A105 P(best) without and with the helpful panel."""


def a105_variant(models: list[str], name: str) -> RegisteredDesign:
    """A105 over the planted manifest's 12 + 24 positions, registering ``models``."""
    tests = ", ".join(f'"{m}:{f}"' for m in models for f in ("board", "legal_list"))
    return fx.variant("a105", {
        "positions_development = 150": "positions_development = 0",
        "positions_held_out = 150": "positions_held_out = 24",
        'models = ["luna", "deepseek-v4-flash"]': f"models = {models!r}".replace("'", '"'),
        'primary_tests = ["luna:board", "luna:legal_list", "deepseek-v4-flash:board", '
        '"deepseek-v4-flash:legal_list"]': f"primary_tests = [{tests}]"}, name=name)


def ladder_preset(models: list[str]) -> RegisteredDesign:
    """The small E020/E021 preset at the planted quota, registering ``models``."""
    base = fx.small_preset(QUOTA)
    document = {**base.document, "schedule": {**base.document["schedule"], "models": models}}
    return RegisteredDesign("e020_e021_planted", "<e020_e021_planted>", document,
                            digest(document))


AGENTS: dict[str, dict[str, Agent]] = {
    "main": {"luna": PanelAgent("board_limited", base=BASE, lift=LIFT, seed=1),
             "deepseek-v4-flash": PanelAgent("null", base=BASE, lift=LIFT, seed=2)},
    "interaction": {"complementary": PanelAgent("complementary", base=BASE, lift=LIFT, seed=3),
                    "substitutable": PanelAgent("substitutable", base=BASE, lift=LIFT,
                                                seed=4)},
    "blocked": {"reversal": PanelAgent("board_limited", base=0.3, lift=0.7, seed=5,
                                       reversed_order="legal_list_first", reversal=0.3),
                "attrition": PanelAgent("board_limited", base=BASE, lift=LIFT, seed=6)},
    "ladder": {"ideas": TwoStageAgent("ideas_limited", 0.35, 0.90, seed=7),
               "vision": TwoStageAgent("vision_limited", 0.90, 0.35, seed=8)},
    "e023": {"sharp": SoftmaxSelector("sharp", 0.25, seed=9),
             "diffuse": SoftmaxSelector("diffuse", 1.0, seed=10)},
}
"""Binding → model → planted agent."""
FAULTS: dict[str, FaultFn] = {"attrition": condition_drops("board_only", 0.25, seed=11)}
"""Model → planted loopback faults."""


@dataclass(frozen=True)
class PlantedStudy:
    """The built study."""

    root: Path
    """Study directory."""
    stage: Path
    """Label stage."""
    bindings: dict[str, str]
    """Fixture name → binding digest."""
    runs: dict[tuple[str, str], str]
    """(binding name, model[:probe]) → run id."""


def run_planted(root: Path, stage: Path, binding: str, model: str, agent: Agent, auth: str,
                *, probe: bool = False, faults: FaultFn | None = None,
                truth: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """Run one planted model of a binding through the loopback server (one route).

    ``truth`` (position key → best set) replaces the best set the agent is stipulated to
    know (the server-side metadata only; the schedule and every payload are unchanged).
    """
    manifest = load_manifest(root / "manifest")
    schedule = schedule_for(load_binding(root, binding, manifest), manifest, model, ROUTE,
                            probe=probe)
    requests = [c.request for c in schedule]
    if truth is not None:
        requests = [replace(r, metadata={**r.metadata, "best_moves": truth[r.metadata["key"]]})
                    for r in requests]
    with serve_on_loopback(agent, label=model, requests=requests, fault_for=faults) as provider:
        return st.run_study(root, stage, binding, model=model, route=ROUTE, agent=provider,
                            authorization=auth, concurrency=8, probe=probe, policy=NO_RETRY)


def evaluator_best(root: Path, run_id: str) -> dict[str, list[str]]:
    """Position key → the evaluator's best set, from a published evaluation."""
    data = json.loads((root / "evaluations" / run_id / "positions.json").read_text())
    return {p["key"]: list(p["best_moves"]) for p in data["positions"]}


def evaluate(root: Path, stage: Path, run_id: str, *, force: bool = False) -> dict[str, Any]:
    """Evaluate a study run with Ethereal at :data:`DEPTH` into ``<study>/evaluations``."""
    options = StageOptions(cache=root / "evaluation-cache",
                           out=root / "evaluations" / run_id, force=force)
    return evaluate_run(root / "runs" / run_id, stage, EvaluatorConfig(depth=DEPTH), options,
                        fx.OPEN)


@functools.cache
def planted_study() -> PlantedStudy:
    """Freeze, bind, run and evaluate every planted binding (see the module docstring)."""
    stage = fx.small_stage()
    root = Path(tempfile.mkdtemp(prefix="rungbench-planted-study-")) / "study"
    st.freeze(root, stage, fx.small_preset(QUOTA))
    presets = {"main": a105_variant(["luna", "deepseek-v4-flash"], "a105_planted_main"),
               "interaction": a105_variant(["complementary", "substitutable"],
                                           "a105_planted_interaction"),
               "blocked": a105_variant(["reversal", "attrition"], "a105_planted_blocked"),
               "ladder": ladder_preset(["ideas", "vision"]),
               "e023": fx.variant("e023", {"positions = 200": "positions = 24"},
                                  name="e023_planted")}
    bindings = {name: st.bind(root, preset, stage)["binding"] for name, preset in presets.items()}
    runs: dict[tuple[str, str], str] = {}
    truth: dict[str, list[str]] | None = None
    for name, agents in AGENTS.items():
        for model, agent in agents.items():
            # one authorization per model: a run's budget check then re-reads only its own
            # runs' logs, not every run of the study
            auth = authorization(root, model)
            known = truth if name == "ladder" else None
            result = run_planted(root, stage, bindings[name], model, agent, auth,
                                 faults=FAULTS.get(model), truth=known)
            runs[(name, model)] = result["run_id"]
            evaluate(root, stage, result["run_id"])
            truth = truth or evaluator_best(root, result["run_id"])
            if name == "ladder":
                probe = run_planted(root, stage, bindings[name], model, agent, auth,
                                    probe=True, truth=known)
                runs[(name, f"{model}:probe")] = probe["run_id"]
    return PlantedStudy(root, stage, bindings, runs)


def authorization(root: Path, model: str) -> str:
    """The fixture's budget authorization of ``model`` (frozen on first use)."""
    return bud.freeze_authorization(root, bud.Authorization(
        10**6, 10**9, 1000.0, (model,), (ROUTE,), f"planted study fixture: {model}"))


@functools.cache
def analysis(name: str) -> dict[str, Any]:
    """The published analysis document of binding ``name`` (1,000 bootstrap resamples)."""
    from rungbench.chess.studies.analysis import Settings

    built = planted_study()
    return st.analyze(built.root, built.stage, binding=built.bindings[name],
                      settings=Settings(n_boot=1000))


def claim(doc: dict[str, Any], model: str, factor: str) -> dict[str, Any]:
    """The A105 claim of ``model`` and ``factor`` in an analysis document."""
    return next(c for c in doc["a105"]["claims"] if (c["model"], c["factor"]) == (model, factor))


def held_out(doc: dict[str, Any], model: str) -> dict[str, Any]:
    """The held-out A105 result of ``model``."""
    return next(r for r in doc["a105"]["results"]
                if (r["model"], r["split"]) == (model, "held_out"))
