"""The study pipeline: freeze → bind → run → evaluate → analyze, each step
content-addressed (seed 001, "The evidence boundary"; seed 000, "Hold the action interface
still too").

A study directory::

    <study>/manifest/        the frozen final manifest (sealed; :mod:`.manifest`)
    <study>/bindings/        content-addressed bindings (:mod:`.bindings`)
    <study>/budget/          content-addressed budget authorizations (:mod:`.budget`)
    <study>/runs/<run id>/   the runner's runs (:mod:`rungbench.execute.runner`)
    <study>/evaluations/     published evaluations (:mod:`.evaluation`)
    <study>/analyses/<id>/   a binding's cell table and analysis (:func:`analyze`;
                             :mod:`.study_table`, :mod:`.analysis_report`)

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
from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from rungbench.agents.models_file import ModelsFile
from rungbench.agents.protocol import Agent, Request, Response, close_agent
from rungbench.agents.spec import AgentSpec
from rungbench.chess.labels.stage_records import verify_stage_dir
from rungbench.chess.reference_agents import TASK, validate_move
from rungbench.chess.studies import budget as bud
from rungbench.chess.studies.analysis import Settings
from rungbench.chess.studies.analysis_report import analyze_table, markdown
from rungbench.chess.studies.bindings import (
    Binding,
    agent_identity,
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
from rungbench.chess.studies.study_presets import study_preset
from rungbench.chess.studies.study_table import binding_runs, bound_preset, study_table
from rungbench.design.registry import (
    RegisteredDesign,
    load_design,
    load_preset,
    registered_names,
)
from rungbench.errors import InputError, IntegrityError, Reason, Refusal
from rungbench.evidence.canonical import bytes_digest, canonical_bytes, digest, loads_canonical
from rungbench.evidence.sealed import publish_dir, verify_sealed
from rungbench.execute.executors import WorkerAgent
from rungbench.execute.policy import RetryPolicy
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
from rungbench.execute.tasks import build_agent, open_agent

GATE = "chess study run"
"""Gate name of run refusals."""


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


def bind(study: Path, reg: RegisteredDesign | str | Path, stage: Path,
         models: ModelsFile | None = None) -> dict[str, Any]:
    """Bind preset ``reg`` (a bundled preset's name, a preset file of one's own, or a parsed
    preset) to the study's current manifest; with ``models``, the preset's model labels are
    resolved through that models file and its specs pinned in the binding. An E023 summary
    carries the binding's ``endpoint_validity`` block (its regret profile and warnings) and
    both in words (``endpoint_profile``, ``endpoint_warnings``)."""
    preset = reg if isinstance(reg, RegisteredDesign) else load_preset(reg)
    manifest = current_manifest(study, stage)
    binding = freeze_binding(study, preset, manifest, models)
    doc = binding.document
    summary = {"binding": binding.digest, "design": doc["design"]["id"],
               "preset": doc["design"]["name"], "preset_source": preset.source,
               "manifest": manifest.digest, "positions": len(doc["positions"]),
               "models": doc.get("models", []), "models_file": doc.get("models_file")}
    validity = doc.get("endpoint_validity")
    if validity is not None:  # E023: flat rows for the CLI's summary table, then the block
        summary["endpoint_profile"] = (f"{validity['profile']['source']} "
                                       f"({validity['profile']['positions']} positions)")
        summary["endpoint_warnings"] = " | ".join(
            f"{w['code']}: {w['message']}" for w in validity["warnings"]) or "none"
        summary["endpoint_validity"] = validity
    return summary


def _check_design(binding: Binding) -> None:
    name = binding.design_name
    if binding.bundled and name in registered_names() and load_design(name).digest != \
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
        # an endpoint's description names its URL; an agent served on loopback is named by
        # what it serves, not by its server's port (which changes from run to resume)
        inner_description = describe_agent(inner)
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


def run_spec(study: Path, stage: Path, binding_name: str, spec: AgentSpec, *,
             route: str, authorization: str, concurrency: int = 1, probe: bool = False,
             progress: Callable[[int, int], None] | None = None,
             shortlist_from: str | None = None, policy: RetryPolicy | None = None,
             executor: Executor | None = None, environ: Mapping[str, str] | None = None,
             **server: Any) -> dict[str, Any]:
    """Run (or resume) the agent ``spec`` names as its label's part of a binding.

    The label must be one the binding registers; when the binding pinned a models file,
    the spec must be the pinned one (``agent_changed`` otherwise). An endpoint is sent
    ``spec.model``; a planted or reference agent is served on loopback with the schedule's
    requests registered (``server`` options, faults say, go to the loopback server). With
    ``executor`` every worker rebuilds the provider from its recipe.
    """
    manifest = current_manifest(study, stage)
    binding = load_binding(study, binding_name, manifest)
    reasons = agent_reasons(binding, spec)
    if reasons:
        raise Refusal(reasons, gate=GATE)
    schedule = schedule_for(binding, manifest, spec.label, route, probe=probe,
                            shortlist_from=None if shortlist_from is None
                            else runs_dir(study) / shortlist_from)
    with open_agent(spec, TASK, requests=[c.request for c in schedule], serve=True,
                    environ=environ, **server) as agent:
        sent: Agent = agent
        if executor is not None:
            recipe = getattr(agent, "recipe", None)  # a provider: it knows its key's mapping
            sent = WorkerAgent(agent, recipe() if callable(recipe)
                               else partial(build_agent, spec, TASK, None, environ))
        return run_study(study, stage, binding.digest, model=spec.label, route=route,
                         agent=sent, authorization=authorization, concurrency=concurrency,
                         probe=probe, progress=progress, shortlist_from=shortlist_from,
                         policy=policy, executor=executor)


def agent_reasons(binding: Binding, spec: AgentSpec) -> list[Reason]:
    """Why ``spec`` may not run in ``binding``: a label the binding does not register
    (``model_unknown``), or a spec other than the one the binding pinned
    (``agent_changed``; the endpoint URL and client processes may change)."""
    labels = [str(m) for m in binding.document.get("models") or []]
    if labels and spec.label not in labels:
        return [Reason("model_unknown", f"model {spec.label!r} is not registered by the "
                       f"binding's preset {binding.design_name} (its models: "
                       f"{', '.join(labels)})", subject=spec.label)]
    pinned = binding.agent(spec.label)
    if pinned is None:
        return []
    given = agent_identity(spec)
    changed = sorted(k for k in set(pinned) | set(given)
                     if k != "base_url" and pinned.get(k) != given.get(k))
    if changed:
        return [Reason("agent_changed", f"agent {spec.label!r} differs from the one the "
                       f"binding pinned in {', '.join(changed)}", subject=spec.label,
                       data={"pinned": pinned, "given": given})]
    return []


def run_id_of(schedule: Schedule) -> str:
    """The deterministic run id of a study schedule (resume = same id)."""
    return f"{schedule.name}-{schedule.digest()[7:19]}"


def _open_run(study: Path, schedule: Schedule, description: dict[str, Any],
              policy: RetryPolicy | None = None) -> Path:
    run_dir = runs_dir(study) / run_id_of(schedule)
    if run_dir.exists():
        manifest, _ = load_run(run_dir)
        if manifest["schedule"] != schedule.digest():
            raise InputError(f"{run_dir} holds another schedule", path=str(run_dir))
        return run_dir
    return create_run(study, schedule, description, run_id=run_id_of(schedule), policy=policy)


def _pending(run_dir: Path, schedule: Schedule) -> int:
    _, states = read_log(run_dir, schedule, validate_move)
    return sum(1 for s in states.values() if not s.finals)


def run_study(study: Path, stage: Path, binding_name: str, *, model: str, route: str,
              agent: Agent, authorization: str, concurrency: int = 1, probe: bool = False,
              progress: Callable[[int, int], None] | None = None,
              shortlist_from: str | None = None,
              policy: RetryPolicy | None = None,
              executor: Executor | None = None) -> dict[str, Any]:
    """Pass every gate, then run (or resume) one model × route of a binding under budget,
    sending through ``agent`` (:func:`run_spec` builds it from a spec).

    ``shortlist_from`` (a probe run id under ``<study>/runs``) runs the self-shortlist
    choice stage derived from that verified, complete probe run. ``policy`` is the retry
    policy a new run is created with (default: the runner's), with the preset's registered
    ``max_retries`` as its run-wide cap. ``executor`` (e.g. Ray tasks)
    runs the agent calls; the log and the budget stay on this driver.
    """
    manifest = current_manifest(study, stage)
    binding = load_binding(study, binding_name, manifest)
    _check_design(binding)
    schedule = schedule_for(binding, manifest, model, route, probe=probe,
                            shortlist_from=None if shortlist_from is None
                            else runs_dir(study) / shortlist_from)
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
    run_dir = _open_run(study, schedule, wrapped.describe(),
                        registered_policy(bound_preset(binding), policy))
    stopped, detail = _execute_chunks(study, run_dir, wrapped, auth, auth_digest, concurrency,
                                      progress, executor)
    check = verify_run(run_dir, validate_move)
    spend = bud.total_spend(runs_dir(study), auth_digest)
    return {"run": str(run_dir), "run_id": run_dir.name, "schedule": schedule.digest(),
            "binding": binding.digest, "manifest": manifest.digest, "model": model,
            "route": route, "cells": check.cells, "final": check.final, "complete": check.ok,
            "stopped": stopped, "stopped_detail": detail, "authorization": auth_digest,
            "spend": spend.to_json(),
            "run_spend": bud.run_spend(run_dir).to_json(), "previously_sent": sent_here,
            "ceilings": auth.to_json()}


def registered_policy(preset: RegisteredDesign, policy: RetryPolicy | None = None,
                      ) -> RetryPolicy:
    """The retry policy a new run of ``preset`` is created with: ``policy`` (default: the
    runner's) with the preset's registered ``max_retries`` as its run-wide cap, counted in
    the run's log across resumes."""
    return replace(policy or RetryPolicy(),
                   max_retries=study_preset(preset).schedule.max_retries)


def _resent(run_dir: Path, schedule: Schedule) -> int:
    """Pending cells of a run that were already sent once (their spend is counted)."""
    events, states = read_log(run_dir, schedule, validate_move)
    sent = {e["cell"] for e in events if e["kind"] == "attempt"}
    return sum(1 for cid, s in states.items() if not s.finals and cid in sent)


def _execute_chunks(study: Path, run_dir: Path, agent: StudyAgent, auth: bud.Authorization,
                    auth_digest: str, concurrency: int,
                    progress: Callable[[int, int], None] | None,
                    executor: Executor | None = None,
                    ) -> tuple[str | None, dict[str, Any] | None]:
    """Send the run's pending cells in chunks that fit every ceiling; why it stopped, if so
    (and the runner's account of a systematic failure).

    Other runs' spend under the authorization is read once; this run's spend is re-read
    from its own verified log before every chunk. The chunk sizes are the authorization's
    (``first_chunk`` before any spend is seen, at most ``chunk_cap`` after).
    """
    others = [r for r in bud.authorized_runs(runs_dir(study), auth_digest) if r != run_dir]
    base = [bud.run_spend(r) for r in others]
    per_tokens, per_cost = 0, 0.0
    chunk = auth.first_chunk
    _, schedule = load_run(run_dir)
    pending = _pending(run_dir, schedule)
    while pending:
        mine = bud.run_spend(run_dir)
        spent = bud.Spend(mine.cells + sum(p.cells for p in base),
                          mine.calls + sum(p.calls for p in base),
                          mine.tokens + sum(p.tokens for p in base),
                          mine.cost_usd + sum(p.cost_usd for p in base))
        if per_tokens or per_cost:
            chunk = bud.next_chunk(auth, spent, per_tokens, per_cost, cap=auth.chunk_cap)
        else:
            chunk = min(chunk, auth.max_cells - spent.cells)
        if chunk <= 0 or spent.tokens >= auth.max_tokens or spent.cost_usd >= auth.max_cost_usd:
            return "budget_ceiling", None
        summary = execute_run(run_dir, agent, validator=validate_move, concurrency=concurrency,
                              progress=progress, max_cells=chunk, executor=executor)
        if summary.sent:
            per_tokens = max(per_tokens, -(-(summary.tokens_in + summary.tokens_out)
                                           // summary.sent))
            per_cost = max(per_cost, summary.cost_usd / summary.sent)
        tried, pending = pending, summary.cells - sum(summary.outcomes.values())
        if summary.stopped is not None:
            return str(summary.stopped["reason"]), summary.stopped
        if summary.sent == 0:
            return "nothing_sent", None
        # nothing finalized: stuck when every pending cell was tried, or when a whole
        # chunk past the first single cell failed (the provider is down); one failing
        # first cell is not evidence of that
        if summary.unresolved and summary.finalized == 0 and (
                summary.sent >= tried or chunk > auth.first_chunk):
            return "unresolved", None
        if not (per_tokens or per_cost):  # nothing spent: pace by the workers, capped
            chunk = min(concurrency * 4, auth.chunk_cap)
    return None, None


def unevaluated_runs(study: Path) -> list[str]:
    """The study's move-choice runs (probe runs are never scored for regret) that have no
    published evaluation yet, in id order."""
    out = []
    for run_dir in sorted(p for p in runs_dir(study).glob("*")
                          if p.is_dir() and not p.name.startswith(".")):
        _, schedule = load_run(run_dir)
        part = (schedule.source or {}).get("part", "cells")
        if part != "probe" and not (study / "evaluations" / run_dir.name).exists():
            out.append(run_dir.name)
    return out


ANALYSIS_KIND = "rungbench.chess.study-analysis"
"""Seal kind of a published study analysis."""


def analyses_dir(study: Path) -> Path:
    """``<study>/analyses``."""
    return study / "analyses"


def analyze(study: Path, stage: Path, *, binding: str | None = None, proxy: str | None = None,
            settings: Settings | None = None, force: bool = False) -> dict[str, Any]:
    """Join a binding's runs and evaluations into its cell table, analyse it and publish
    ``<study>/analyses/<binding hex[:12]>/`` (``cells.jsonl``, ``analysis.json``,
    ``analysis.md``; sealed, atomic).

    With ``binding`` the analysis document is returned (plus ``out``); without it every
    binding of the current manifest that has runs is analysed and ``{"analyses": [...]}``
    returned. An existing analysis with the same bytes is kept; different bytes refuse
    (``exists``) unless ``force``.
    """
    manifest = current_manifest(study, stage)
    stage_record = bytes_digest((stage / "stage.json").read_bytes())
    if binding is not None:
        return _analyze_binding(study, load_binding(study, binding, manifest), manifest,
                                stage_record, proxy, settings, force)
    docs = []
    for path in list_bindings(study):
        bound = load_binding(study, path.stem, manifest) if loads_canonical(
            path.read_bytes(), path=str(path))["manifest"] == manifest.digest else None
        if bound is not None and binding_runs(study, bound):
            docs.append(_analyze_binding(study, bound, manifest, stage_record, proxy, settings,
                                         force))
    if not docs:
        raise Refusal([Reason("cells_missing", "no binding of the current manifest has a run",
                              subject=str(study))], gate="chess study analysis")
    return {"study": str(study), "manifest": manifest.digest, "analyses": docs}


def _analyze_binding(study: Path, bound: Binding, manifest: FrozenManifest, stage_record: str,
                     proxy: str | None, settings: Settings | None,
                     force: bool) -> dict[str, Any]:
    _check_design(bound)
    built = study_table(study, bound, manifest, stage_record)
    doc = analyze_table(built.table, settings, proxy=proxy, preset=bound_preset(bound),
                        endpoint_validity=bound.document.get("endpoint_validity"))
    doc["inputs"] = {"binding": bound.digest, "manifest": manifest.digest,
                     "label_stage": stage_record, "runs": built.inputs()}
    if built.not_run:  # the design is not complete: say so, never pretend it is
        doc["models_not_run"] = list(built.not_run)
    header = built.table.header
    lines = [canonical_bytes(header.model_dump(mode="json", by_alias=True)),
             *(canonical_bytes(r) for r in built.rows)]
    files = {"cells.jsonl": b"\n".join(lines) + b"\n",
             "analysis.json": canonical_bytes(doc) + b"\n",
             "analysis.md": markdown(doc).encode("utf-8")}
    doc["files"] = {name: bytes_digest(data) for name, data in files.items()}
    target = analyses_dir(study) / bound.digest[7:19]
    if target.exists() and not force and _same(target, files):
        return {**doc, "out": str(target), "reused": True}
    with publish_dir(target, kind=ANALYSIS_KIND, force=force) as temp:
        for name, data in files.items():
            (temp / name).write_bytes(data)
    return {**doc, "out": str(target), "reused": False}


def _same(target: Path, files: dict[str, bytes]) -> bool:
    try:
        verify_sealed(target, kind=ANALYSIS_KIND)
    except (InputError, IntegrityError):
        return False
    return all((target / n).is_file() and (target / n).read_bytes() == d
               for n, d in files.items())


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
                            "complete": check.ok,
                            "terminal_provider_failures": check.terminal,
                            "model": agent.get("model"),
                            "route": agent.get("route"), "binding": agent.get("binding")})
    out["evaluations"] = sorted(p.name for p in (study / "evaluations").glob("*")
                                if p.is_dir() and not p.name.startswith("."))
    out["analyses"] = [_analysis_status(p) for p in sorted(analyses_dir(study).glob("*"))
                       if p.is_dir() and not p.name.startswith(".")]
    return out


def _analysis_status(path: Path) -> dict[str, Any]:
    """One published analysis: its binding, design, table and whether its seal verifies."""
    try:
        verify_sealed(path, kind=ANALYSIS_KIND)
        doc = loads_canonical((path / "analysis.json").read_bytes().rstrip(b"\n"),
                              path=str(path / "analysis.json"))
    except (InputError, IntegrityError) as exc:
        return {"analysis": path.name, "verified": False, "problem": str(exc)}
    return {"analysis": path.name, "verified": True, "binding": doc["study"],
            "design": doc["design"], "table": doc["table"], "cells": doc["cells"],
            "evaluation": doc["evaluation"]}
