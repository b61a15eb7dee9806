"""The study pipeline: freeze → bind → run → evaluate, each step content-addressed (seed 001,
"The evidence boundary"; seed 000, "Hold the action interface still too").

A study directory::

    <study>/manifest/        the frozen final manifest (sealed; :mod:`.manifest`)
    <study>/bindings/        content-addressed bindings (:mod:`.bindings`)
    <study>/budget/          content-addressed budget authorizations (:mod:`.budget`)
    <study>/runs/<run id>/   the runner's runs (:mod:`rungbench.execute.runner`)
    <study>/evaluations/     published evaluations (:mod:`.evaluation`)

:func:`run_study` refuses unless, in order: the label stage verifies; the manifest
verifies and was frozen from that stage (``manifest_stale``); the binding re-hashes and
names that manifest (``binding_stale``) and its preset is still the registered one
(``design_changed``); every cell offers the one ``submit_move`` schema and every arm of
a position shares one legal-action universe (``interface_mismatch``); and a frozen
authorization covers the binding, model and route with room for the pending cells
(``budget_*``). It then executes through :func:`rungbench.execute.runner.execute_run` in
chunks that never cross a ceiling at the largest per-cell spend seen, and stops at the
ceiling (``stopped: budget_ceiling``). A run's id is a function of its schedule, so
re-running the same step resumes it; nothing already final is sent again.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rungbench.agents.protocol import Agent, Request, Response, close_agent
from rungbench.chess.labels.stage_records import verify_stage_dir
from rungbench.chess.reference_agents import validate_move
from rungbench.chess.studies import budget as bud
from rungbench.chess.studies.bindings import (
    Binding,
    freeze_binding,
    list_bindings,
    load_binding,
)
from rungbench.chess.studies.ladder import SCHEMA_DIGEST, schedule_for
from rungbench.chess.studies.manifest import (
    FrozenManifest,
    freeze_manifest,
    load_manifest,
    stale_reasons,
)
from rungbench.design.registry import RegisteredDesign, load_design, registered_names
from rungbench.errors import InputError, Reason, Refusal
from rungbench.evidence.canonical import digest, loads_canonical
from rungbench.execute.runner import (
    MANIFEST,
    create_run,
    describe_agent,
    execute_run,
    load_run,
    read_log,
    verify_run,
)
from rungbench.execute.schedule import Schedule

GATE = "chess study run"
"""Gate name of run refusals."""
FIRST_CHUNK = 1
"""Cells sent before any per-cell spend has been observed."""


def manifest_dir(study: Path) -> Path:
    """``<study>/manifest``."""
    return study / "manifest"


def runs_dir(study: Path) -> Path:
    """``<study>/runs``."""
    return study / "runs"


def freeze(study: Path, stage: Path, reg: RegisteredDesign | None = None, *,
           force: bool = False) -> dict[str, Any]:
    """Freeze the study's final manifest from the published label ``stage``."""
    return freeze_manifest(stage, manifest_dir(study), reg, force=force)


def current_manifest(study: Path, stage: Path) -> FrozenManifest:
    """Verify the stage and the study manifest, and that one was frozen from the other."""
    verify_stage_dir(stage)
    manifest = load_manifest(manifest_dir(study))
    reasons = stale_reasons(manifest, stage)
    if reasons:
        raise Refusal(reasons, gate=GATE)
    return manifest


def bind(study: Path, reg: RegisteredDesign | str, stage: Path) -> dict[str, Any]:
    """Bind preset ``reg`` (or its registered name) to the study's current manifest."""
    preset = load_design(reg) if isinstance(reg, str) else reg
    manifest = current_manifest(study, stage)
    binding = freeze_binding(study, preset, manifest)
    doc = binding.document
    return {"binding": binding.digest, "design": doc["design"]["id"],
            "preset": doc["design"]["name"], "manifest": manifest.digest,
            "positions": len(doc["positions"]), "models": doc.get("models", [])}


def _check_design(binding: Binding) -> None:
    name = binding.design_name
    if name in registered_names() and load_design(name).digest != \
            binding.document["design"]["digest"]:
        raise Refusal([Reason("design_changed", f"preset {name!r} now hashes "
                              f"{load_design(name).digest}, bound as "
                              f"{binding.document['design']['digest']}", subject=name)],
                      gate=GATE)


def interface_reasons(schedule: Schedule, *, probe: bool) -> list[Reason]:
    """Reasons a schedule breaks the action interface (seed 000 claim gates 5)."""
    reasons = []
    tools = {digest(list(c.request.tools)) for c in schedule}
    if not probe and tools != {SCHEMA_DIGEST}:
        reasons.append(Reason("interface_mismatch", f"cells offer {len(tools)} tool schemas, "
                              "not the one submit_move schema", subject="tools"))
    universes: dict[str, set[str]] = defaultdict(set)
    for cell in schedule:
        universes[str(cell.request.metadata["key"])].add(
            str(cell.request.metadata["universe_digest"]))
    split = [k for k, v in universes.items() if len(v) != 1]
    if split:
        reasons.append(Reason("interface_mismatch", f"{len(split)} positions show more than "
                              "one legal-action universe across arms", subject=split[0]))
    return reasons


class StudyAgent:
    """The agent a study run sends through, described by model, route and authorization."""

    def __init__(self, inner: Agent, *, model: str, route: str, binding: str,
                 authorization: str) -> None:
        self.inner = inner
        self.name = f"study:{model}@{route}"
        inner_description = describe_agent(inner)
        # the route label names the endpoint; its URL (a loopback port, a proxy) may change
        # between a run and its resume without changing what is sent
        inner_description.pop("base_url", None)
        self._description = {"kind": "study", "model": model, "route": route,
                             "binding": binding, "authorization": authorization,
                             "agent": inner_description}

    def respond(self, request: Request) -> Response:
        """Delegate to the wrapped agent."""
        return self.inner.respond(request)

    def describe(self) -> dict[str, Any]:
        """The run manifest's agent record."""
        return dict(self._description)

    def close(self) -> None:
        """Close the wrapped agent."""
        close_agent(self.inner)


def run_id_of(schedule: Schedule) -> str:
    """The deterministic run id of a study schedule (resume = same id)."""
    return f"{schedule.name}-{schedule.digest()[7:19]}"


def _open_run(study: Path, schedule: Schedule, description: dict[str, Any]) -> Path:
    run_dir = runs_dir(study) / run_id_of(schedule)
    if run_dir.exists():
        manifest, _ = load_run(run_dir)
        if manifest["schedule"] != schedule.digest():
            raise InputError(f"{run_dir} holds another schedule", path=str(run_dir))
        return run_dir
    return create_run(study, schedule, description, run_id=run_id_of(schedule))


def _pending(run_dir: Path, schedule: Schedule) -> int:
    _, states = read_log(run_dir, schedule, validate_move)
    return sum(1 for s in states.values() if not s.finals)


def run_study(study: Path, stage: Path, binding_name: str, *, model: str, route: str,
              agent: Agent, authorization: str, concurrency: int = 1, probe: bool = False,
              progress: Callable[[int, int], None] | None = None,
              chunk_cap: int = 256) -> dict[str, Any]:
    """Pass every gate, then run (or resume) one model × route of a binding under budget."""
    manifest = current_manifest(study, stage)
    binding = load_binding(study, binding_name, manifest)
    _check_design(binding)
    schedule = schedule_for(binding, manifest, model, route, probe=probe)
    reasons = interface_reasons(schedule, probe=probe)
    if reasons:
        raise Refusal(reasons, gate=GATE)
    auth_digest, auth = bud.load_authorization(study, authorization)
    wrapped = StudyAgent(agent, model=model, route=route, binding=binding.digest,
                         authorization=auth_digest)
    run_dir = runs_dir(study) / run_id_of(schedule)
    pending = _pending(run_dir, schedule) if run_dir.exists() else len(schedule)
    spent = bud.total_spend(runs_dir(study), auth_digest)
    sent_here = bud.run_spend(run_dir).cells if run_dir.exists() else 0
    unsent = pending - _resent(run_dir, schedule) if run_dir.exists() else pending
    reasons = bud.coverage_reasons(auth, binding=binding.digest, model=model, route=route,
                                   pending=max(0, unsent), spent=spent)
    if reasons:
        raise Refusal(reasons, gate="chess study budget")
    run_dir = _open_run(study, schedule, wrapped.describe())
    stopped = _execute_chunks(study, run_dir, wrapped, auth, auth_digest, concurrency, progress,
                              chunk_cap)
    check = verify_run(run_dir, validate_move)
    spend = bud.total_spend(runs_dir(study), auth_digest)
    return {"run": str(run_dir), "run_id": run_dir.name, "schedule": schedule.digest(),
            "binding": binding.digest, "manifest": manifest.digest, "model": model,
            "route": route, "cells": check.cells, "final": check.final, "complete": check.ok,
            "stopped": stopped, "authorization": auth_digest, "spend": spend.to_json(),
            "run_spend": bud.run_spend(run_dir).to_json(), "previously_sent": sent_here,
            "ceilings": auth.to_json()}


def _resent(run_dir: Path, schedule: Schedule) -> int:
    """Pending cells of a run that were already sent once (their spend is counted)."""
    events, states = read_log(run_dir, schedule, validate_move)
    sent = {e["cell"] for e in events if e["kind"] == "attempt"}
    return sum(1 for cid, s in states.items() if not s.finals and cid in sent)


def _execute_chunks(study: Path, run_dir: Path, agent: StudyAgent, auth: bud.Authorization,
                    auth_digest: str, concurrency: int,
                    progress: Callable[[int, int], None] | None, cap: int) -> str | None:
    """Send the run's pending cells in chunks that fit every ceiling; why it stopped, if so.

    Other runs' spend under the authorization is read once; this run's spend is re-read
    from its own verified log before every chunk.
    """
    others = [r for r in bud.authorized_runs(runs_dir(study), auth_digest) if r != run_dir]
    base = [bud.run_spend(r) for r in others]
    per_tokens, per_cost = 0, 0.0
    chunk = FIRST_CHUNK
    _, schedule = load_run(run_dir)
    pending = _pending(run_dir, schedule)
    while pending:
        mine = bud.run_spend(run_dir)
        spent = bud.Spend(mine.cells + sum(p.cells for p in base),
                          mine.calls + sum(p.calls for p in base),
                          mine.tokens + sum(p.tokens for p in base),
                          mine.cost_usd + sum(p.cost_usd for p in base))
        if per_tokens or per_cost:
            chunk = bud.next_chunk(auth, spent, per_tokens, per_cost, cap=cap)
        else:
            chunk = min(chunk, auth.max_cells - spent.cells)
        if chunk <= 0 or spent.tokens >= auth.max_tokens or spent.cost_usd >= auth.max_cost_usd:
            return "budget_ceiling"
        summary = execute_run(run_dir, agent, validator=validate_move, concurrency=concurrency,
                              progress=progress, max_cells=chunk)
        if summary.sent:
            per_tokens = max(per_tokens, -(-(summary.tokens_in + summary.tokens_out)
                                           // summary.sent))
            per_cost = max(per_cost, summary.cost_usd / summary.sent)
        pending = summary.cells - sum(summary.outcomes.values())
        if summary.sent == 0:
            return "nothing_sent"
        if summary.unresolved and summary.finalized == 0:
            return "unresolved"
        chunk = concurrency * 4 if not (per_tokens or per_cost) else chunk
    return None


def status(study: Path) -> dict[str, Any]:
    """Where a study stands: manifest, bindings, authorizations, runs and evaluations."""
    out: dict[str, Any] = {"study": str(study)}
    try:
        manifest = load_manifest(manifest_dir(study))
        out["manifest"] = {"digest": manifest.digest, "counts": manifest.document["counts"],
                           "positions": len(manifest.document["positions"])}
    except InputError:
        out["manifest"] = None
    out["bindings"] = []
    for path in list_bindings(study):
        doc = loads_canonical(path.read_bytes(), path=str(path))
        out["bindings"].append({"binding": f"sha256:{path.stem}", "design": doc["design"]["id"],
                                "manifest": doc["manifest"], "positions": len(doc["positions"]),
                                "current": out["manifest"] is not None
                                and doc["manifest"] == out["manifest"]["digest"]})
    out["authorizations"] = []
    for path in sorted(bud.budget_dir(study).glob("*.json")):
        name = f"sha256:{path.stem}"
        spend = bud.total_spend(runs_dir(study), name) if runs_dir(study).exists() else None
        out["authorizations"].append({"authorization": name,
                                      "spend": spend.to_json() if spend else None})
    out["runs"] = []
    for run_dir in sorted(p for p in runs_dir(study).glob("*")
                          if p.is_dir() and not p.name.startswith(".")):
        check = verify_run(run_dir, validate_move)
        agent = loads_canonical((run_dir / MANIFEST).read_bytes().rstrip(b"\n"))["agent"]
        out["runs"].append({"run_id": run_dir.name, "cells": check.cells, "final": check.final,
                            "complete": check.ok, "model": agent.get("model"),
                            "route": agent.get("route"), "binding": agent.get("binding")})
    out["evaluations"] = sorted(p.name for p in (study / "evaluations").glob("*")
                                if p.is_dir() and not p.name.startswith("."))
    return out
