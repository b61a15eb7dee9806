"""Evaluate an agent on a built bench: respond, score, label, summarise, record the run.

A run directory holds ``responses.jsonl`` (agent_response records),
``verdicts.jsonl`` (verdict + failure labels + cluster and cell keys per case) and
``run_manifest.json``. Scoring reads the responses back from disk, so a run made
by any external agent can be scored the same way (:func:`score_run`).
"""

from __future__ import annotations

import inspect
import json
import pathlib
import sys
from collections import Counter
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from rungbench.causal.bench import scorer as scorer_module
from rungbench.causal.bench.records import (
    BENCH_VERSION,
    OUTCOMES,
    PrivateOracle,
    PublicCase,
    RunManifest,
)
from rungbench.causal.bench.reference_agents import SIGNATURES, CaseAgent, reference_agent
from rungbench.causal.bench.scorer import ScoredLine, load_oracles, score_lines
from rungbench.causal.bench.taxonomy import failure_labels
from rungbench.errors import InputError
from rungbench.evidence.canonical import bytes_digest, canonical_bytes, digest


def load_cases(path: pathlib.Path) -> list[PublicCase]:
    """Load ``public_case`` JSONL; a bad line raises naming it."""
    out = []
    for n, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if text.strip():
            try:
                out.append(PublicCase.model_validate_json(text))
            except ValueError as exc:
                raise InputError(f"bad public_case: {exc}", path=str(path), line=n) from exc
    return out


def bench_paths(bench: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path, pathlib.Path]:
    """Return (cases, oracle, public manifest) paths of a built bench; InputError if absent."""
    paths = (
        bench / "public" / "cases.jsonl",
        bench / "private" / "oracle.jsonl",
        bench / "public" / "manifest.json",
    )
    for p in paths:
        if not p.is_file():
            raise InputError("bench file missing (run `rungbench causal build`)", path=str(p))
    return paths


def respond_all(
    agent: CaseAgent,
    cases: list[PublicCase],
    progress: Callable[[int], None] | None = None,
) -> list[str]:
    """Ask ``agent`` every case in order; return the response JSONL lines."""
    lines = []
    for i, case in enumerate(cases):
        lines.append(canonical_bytes(agent.answer(case).model_dump(mode="json")).decode())
        if progress is not None:
            progress(i + 1)
    return lines


def verdict_rows(
    scored: list[ScoredLine], oracles: Mapping[str, PrivateOracle]
) -> list[dict[str, Any]]:
    """Join each verdict with its failure labels and the case's family/rung/world keys."""
    rows = []
    for s in scored:
        o = oracles.get(s.verdict.case_id)
        labels = failure_labels(o, s.response, s.verdict) if o is not None else []
        rows.append({
            "line": s.line,
            "verdict": s.verdict.model_dump(mode="json"),
            "labels": labels,
            "world_id": o.world_id if o else None,
            "family": o.family if o else None,
            "rung": o.rung if o else None,
            "item_type": o.item_type if o else None,
            "identifiable": o.identifiable if o else None,
            "skin": o.skin if o else None,
            "confidence": s.response.confidence if s.response else None,
        })
    return rows


def summarise(rows: list[dict[str, Any]], agent: str) -> dict[str, Any]:
    """Outcome counts, label counts and (for reference agents) the signature rate."""
    outcomes = Counter(r["verdict"]["outcome"] for r in rows)
    failed = [r for r in rows if r["labels"]]
    labels = Counter(label for r in failed for label in r["labels"])
    out: dict[str, Any] = {
        "agent": agent,
        "n": len(rows),
        "outcomes": {k: outcomes.get(k, 0) for k in OUTCOMES},
        "failed": len(failed),
        "labels": dict(sorted(labels.items())),
    }
    name = agent.partition(":")[2]
    if name in SIGNATURES:
        sig = SIGNATURES[name]
        hits = sum(1 for r in failed if sig in r["labels"])
        out["signature"] = {
            "label": sig,
            "hits": hits,
            "failed": len(failed),
            "rate": hits / len(failed) if failed else None,
        }
    return out


def _module_digest(module: ModuleType) -> str:
    return bytes_digest(inspect.getsource(module).encode())


def score_run(
    bench: pathlib.Path, run: pathlib.Path, agent_name: str,
    source: pathlib.Path | None = None,
) -> dict[str, Any]:
    """Score ``run/responses.jsonl`` against the bench's private oracle; write verdicts.

    Bad lines are named by ``source`` (the file the responses were copied from,
    when given) and their line number, so errors point at the caller's file.
    """
    _, oracle_path, manifest_path = bench_paths(bench)
    oracles = load_oracles(oracle_path)
    name = str(source or run / "responses.jsonl")
    try:
        text = (run / "responses.jsonl").read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 at byte {exc.start}", path=name) from exc
    except OSError as exc:
        raise InputError(f"cannot read responses: {exc.strerror}", path=name) from exc
    scored = score_lines(text.splitlines(), oracles, name)
    rows = verdict_rows(scored, oracles)
    answered = {s.verdict.case_id for s in scored}
    missing = sorted(set(oracles) - answered)
    with (run / "verdicts.jsonl").open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(canonical_bytes(row).decode() + "\n")
    public = json.loads(manifest_path.read_text(encoding="utf-8"))
    manifest = RunManifest(
        run_id=digest({"bench": public["digest"], "agent": agent_name,
                       "responses": bytes_digest((run / "responses.jsonl").read_bytes())}),
        bench_version=public.get("bench_version", BENCH_VERSION),
        generator_commit=public["digest"],
        scorer_hash=_module_digest(scorer_module),
        harness_hash=_module_digest(sys.modules[__name__]),
        model=agent_name,
        arm=agent_name,
        split=public["split"],
        world_ids=sorted({o.world_id for o in oracles.values()}),
        budget={"tokens": 0, "tool_calls": 0},
        exclusions=[f"{cid}: no response" for cid in missing],
    )
    (run / "run_manifest.json").write_text(
        json.dumps(manifest.model_dump(mode="json"), indent=2, sort_keys=True) + "\n",
        encoding="utf-8",
    )
    summary = summarise(rows, agent_name)
    summary.update({
        "run_id": manifest.run_id, "split": manifest.split, "missing": len(missing),
        "invalid_lines": [
            {"line": r["line"], "case_id": r["verdict"]["case_id"], "error": r["verdict"]["error"]}
            for r in rows if r["verdict"]["outcome"] == "invalid"
        ],
    })
    return summary


def score_responses(
    bench: pathlib.Path, responses: pathlib.Path, run: pathlib.Path, arm: str
) -> dict[str, Any]:
    """Score an external agent's response JSONL: copy it into ``run`` and score it there."""
    try:
        data = responses.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read responses: {exc.strerror}", path=str(responses)) from exc
    run.mkdir(parents=True, exist_ok=True)
    (run / "responses.jsonl").write_bytes(data)
    return score_run(bench, run, arm, source=responses)


def evaluate(
    bench: pathlib.Path,
    agent_spec: str,
    run: pathlib.Path,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Run ``agent_spec`` (``reference:NAME``) on every public case, then score the run."""
    cases_path, oracle_path, _ = bench_paths(bench)
    cases = load_cases(cases_path)
    agent = reference_agent(agent_spec, load_oracles(oracle_path))
    run.mkdir(parents=True, exist_ok=True)
    lines = respond_all(agent, cases, progress)
    (run / "responses.jsonl").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return score_run(bench, run, agent_spec)
