"""Demo stage: 12 puzzles through the real openai client against a loopback server, resumed once.

Faults are injected on five cells (rate limit, server error, garbage arguments, refusal,
a non-JSON body); the first session stops after six cells and the second finishes the
run. ``detail`` is the final run summary.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rungbench.agents.loopback import Fault, LoopbackServer
from rungbench.agents.providers import loopback_key, loopback_spec, open_provider
from rungbench.chess import reference_agents as chess_agents
from rungbench.chess.studies.move_choice import puzzle_schedule
from rungbench.demo import StageResult
from rungbench.errors import InputError
from rungbench.evidence.canonical import canonical_bytes, loads_canonical
from rungbench.evidence.paths import shared_data_dir
from rungbench.evidence.store import write_atomic
from rungbench.execute.events import read_events
from rungbench.execute.policy import RetryPolicy
from rungbench.execute.runner import RunSummary, create_run, describe_agent, execute_run, verify_run

SUMMARY = "demo-summary.json"
"""The stage's summary, kept beside the run so a later demo can verify and reuse both."""


def run(workdir: Path) -> StageResult:
    """Run 12 puzzles through the real openai client on loopback, resume once; or verify the
    finished run of an earlier demo and reuse it."""
    base = workdir / "run-demo"
    if (base / SUMMARY).is_file():
        return _reuse(base)
    result = _first_run(workdir)
    write_atomic(base / SUMMARY, canonical_bytes(result.summary), overwrite=True)
    return result


def _reuse(base: Path) -> StageResult:
    summary = loads_canonical((base / SUMMARY).read_bytes(), path=str(base / SUMMARY))
    run_dir = base / "runs" / Path(str(summary["run_dir"])).name  # the folder may have moved
    check = verify_run(run_dir, chess_agents.validate_move)
    if not check.ok:
        raise InputError(f"the demo run is unfinished: {'; '.join(check.problems)}",
                         path=str(run_dir))
    summary = {**summary, "run_dir": str(run_dir), "reused": True}
    return StageResult(summary, None)


def _first_run(workdir: Path) -> StageResult:
    schedule = puzzle_schedule(_puzzles(), limit=12)
    key = loopback_key()
    digests = [c.request.payload_digest() for c in schedule]
    faults = {
        digests[1]: [Fault.RATE_LIMIT],
        digests[2]: [Fault.SERVER_ERROR],
        digests[3]: [Fault.GARBAGE_ARGUMENTS],
        digests[4]: [Fault.REFUSAL],
        digests[8]: [Fault.NOT_JSON],
    }
    engine = chess_agents.EngineAgent(nodes=2_000)
    try:
        with LoopbackServer(
            engine,
            api_key=key,
            requests=[c.request for c in schedule],
            faults=faults,
            retry_after_s=0.2,
        ) as server:
            spec, environ = loopback_spec(server.base_url, key, "loopback-engine",
                                          timeout_s=10.0)
            provider = open_provider(spec, environ=environ)
            policy = RetryPolicy(max_attempts=3, backoff_s=(0.1,))
            run_dir = create_run(
                workdir / "run-demo", schedule, describe_agent(provider), policy=policy
            )
            first = execute_run(
                run_dir, provider, validator=chess_agents.validate_move, concurrency=4, max_cells=6
            )
            before = dict(server.counts)
            done_first = _final_cells(run_dir)
            second = execute_run(
                run_dir, provider, validator=chess_agents.validate_move, concurrency=4
            )
            provider.close()
        resent = sum(
            server.counts[c.request.payload_digest()] - before.get(c.request.payload_digest(), 0)
            for c in schedule
            if c.cell_id in done_first
        )
    finally:
        engine.close()
    check = verify_run(run_dir)
    leaked = [str(p) for p in run_dir.rglob("*") if p.is_file() and key.encode() in p.read_bytes()]
    result = _demo_result(first, second, check.ok, resent, leaked, server.served)
    return StageResult(result, {**second.to_json(), "cells_final": check.final})


def _demo_result(
    first: RunSummary,
    second: RunSummary,
    ok: bool,
    resent: int,
    leaked: list[str],
    served: list[tuple[str, str]],
) -> dict[str, Any]:
    return {
        "run_dir": second.run_dir,
        "cells": second.cells,
        "session1_finalized": first.finalized,
        "session2_finalized": second.finalized,
        "session2_skipped": second.skipped,
        "outcomes": second.outcomes,
        "http_requests": len(served),
        "faults_injected": sorted(v for _, v in served if v != "ok"),
        "every_cell_one_final": ok,
        "completed_cells_resent": resent,
        "api_key_in_files": len(leaked),
    }


def _final_cells(run_dir: Path) -> set[str]:
    return {str(e["cell"]) for e in read_events(run_dir / "events.jsonl") if e["kind"] == "final"}


def _puzzles() -> Path:
    path = shared_data_dir() / "lichess_puzzles" / "puzzles.csv"
    if not path.exists():
        raise InputError("bundled puzzle file is missing", path=str(path))
    return path
