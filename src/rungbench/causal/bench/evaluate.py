"""Evaluate an agent on a built bench: respond, score, label, summarise, record the run.

A scored run is a sealed directory (``evidence.sealed``; built in a temporary sibling,
renamed into place complete, refused ``exists`` without ``force``)::

    RUN/responses.jsonl          the agent_response lines scored
    RUN/run_manifest.json        the run_manifest record
    RUN/summary.json             aggregate counts only (what an agent side may read)
    RUN/private/   (0700)        verdicts.jsonl (one row per bench case: verdict, failure
                                 labels, cluster and cell keys) and score.json (0600)
    RUN/SEAL.json

The bench is read only through :func:`rungbench.causal.bench.verified.open_bench`.
Per case, the first response line naming it is its answer; a repeated case id is an
invalid line; a file mostly naming case ids of another bench is refused
(``foreign_cases``); cases no line names are missing, and stay in every denominator.
"""

from __future__ import annotations

import inspect
import json
import os
import pathlib
import sys
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from rungbench.causal.bench import scorer as scorer_module
from rungbench.causal.bench.records import (
    BENCH_VERSION,
    OUTCOMES,
    PrivateOracle,
    PublicCase,
    RunManifest,
    Verdict,
)
from rungbench.causal.bench.reference_agents import SIGNATURES, CaseAgent, reference_agent
from rungbench.causal.bench.scorer import ScoredLine, score_lines
from rungbench.causal.bench.taxonomy import failure_labels
from rungbench.causal.bench.verified import (
    PUBLIC_MANIFEST,
    RESPONSES,
    RUN_KIND,
    RUN_MANIFEST,
    SCORE,
    SUMMARY,
    VERDICTS,
    SealedDir,
    bench_cases,
    bench_oracles,
    hide_seal,
    open_bench,
)
from rungbench.errors import InputError, Reason, Refusal
from rungbench.evidence.canonical import bytes_digest, canonical_bytes, digest
from rungbench.evidence.sealed import ensure_absent, publish_dir


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


def verdict_row(s: ScoredLine, o: PrivateOracle) -> dict[str, Any]:
    """One private verdict row: the verdict, its failure labels and the case's keys."""
    return {
        "line": s.line,
        "missing": False,
        "verdict": s.verdict.model_dump(mode="json"),
        "labels": failure_labels(o, s.response, s.verdict),
        **case_keys(o),
        "confidence": s.response.confidence if s.response else None,
    }


def missing_row(o: PrivateOracle) -> dict[str, Any]:
    """The private row of a bench case no response line names (not right; no outcome cell)."""
    verdict = Verdict(case_id=o.case_id, outcome="invalid", error="no response")
    return {"line": None, "missing": True, "verdict": verdict.model_dump(mode="json"),
            "labels": [], **case_keys(o), "confidence": None}


def case_keys(o: PrivateOracle) -> dict[str, Any]:
    """The report keys of a case: world (cluster), family, rung, item type, truth, skin."""
    return {"world_id": o.world_id, "family": o.family, "rung": o.rung,
            "item_type": o.item_type, "identifiable": o.identifiable, "skin": o.skin}


@dataclass(frozen=True)
class CaseScoring:
    """A response file scored against a bench: one row per bench case, and every bad line."""

    rows: list[dict[str, Any]]
    """One private row per bench case, in bench order (missing cases included)."""
    invalid_lines: list[dict[str, Any]]
    """Every invalid line (line, case id, error): bad, duplicate, foreign or unparseable."""
    lines: int
    """Non-blank lines read."""
    named: int
    """Lines that name a case id (a string ``case_id``)."""
    foreign: list[str]
    """Distinct case ids named that the bench does not hold, in order of appearance."""
    foreign_lines: int
    """Lines naming such a case id."""


def _duplicate(s: ScoredLine, first: int, path: str) -> ScoredLine:
    """A repeated case id is an invalid line (unless the line is invalid already)."""
    if s.verdict.outcome == "invalid":
        return s
    why = str(InputError(f"duplicate case id {s.verdict.case_id!r} (first on line {first})",
                         path=path, line=s.line, field="case_id"))
    return ScoredLine(s.line, s.response, Verdict(case_id=s.verdict.case_id, outcome="invalid",
                                                  error=why))


def score_cases(
    lines: list[str], oracles: Mapping[str, PrivateOracle], path: str
) -> CaseScoring:
    """Score response ``lines`` per bench case: the first line naming a case is its answer.

    A later line naming the same case is an invalid line (counted, not scored); a line
    naming no bench case is an invalid line; a case no line names is missing. The
    denominator of every accuracy is the bench's cases.
    """
    first: dict[str, ScoredLine] = {}
    invalid: list[ScoredLine] = []
    named = foreign_lines = 0
    foreign: dict[str, None] = {}
    scored = score_lines(lines, oracles, path)
    for s in scored:
        cid = s.verdict.case_id
        is_named = not cid.startswith("<line ")
        named += is_named
        if cid in oracles and cid not in first:
            first[cid] = s
        elif cid in oracles:
            s = _duplicate(s, first[cid].line, path)
        elif is_named:
            foreign_lines += 1
            foreign.setdefault(cid)
        if s.verdict.outcome == "invalid":
            invalid.append(s)
    rows = [verdict_row(first[cid], o) if cid in first else missing_row(o)
            for cid, o in oracles.items()]
    return CaseScoring(
        rows=rows,
        invalid_lines=[{"line": s.line, "case_id": s.verdict.case_id, "error": s.verdict.error}
                       for s in invalid],
        lines=len(scored), named=named, foreign=list(foreign), foreign_lines=foreign_lines,
    )


def check_not_foreign(scoring: CaseScoring, path: str) -> None:
    """Refuse (``foreign_cases``) a file most of whose named case ids the bench lacks.

    More than half of the lines that name a case id naming ids outside the bench means
    the responses were made for another bench: scoring them would report every line
    invalid and exit 0. Fewer such lines are invalid lines of an otherwise scored file.
    """
    if scoring.foreign_lines and 2 * scoring.foreign_lines > scoring.named:
        raise Refusal([Reason(
            "foreign_cases",
            f"{scoring.foreign_lines} of {scoring.named} lines name case ids this bench does "
            f"not hold (e.g. {scoring.foreign[0]!r}); were they made for another bench?",
            subject=path,
            data={"foreign_lines": scoring.foreign_lines, "named_lines": scoring.named,
                  "examples": scoring.foreign[:5]},
        )], gate="causal score")


def summarise(rows: list[dict[str, Any]], agent: str) -> dict[str, Any]:
    """Outcome counts over the answered cases, missing cases, label counts, signature rate.

    ``n`` is every bench case (the accuracy denominator); ``outcomes`` count the cases a
    response line names, ``missing`` the rest.
    """
    given = [r for r in rows if not r.get("missing")]
    outcomes = Counter(r["verdict"]["outcome"] for r in given)
    failed = [r for r in given if r["labels"]]
    labels = Counter(label for r in failed for label in r["labels"])
    out: dict[str, Any] = {
        "agent": agent,
        "n": len(rows),
        "outcomes": {k: outcomes.get(k, 0) for k in OUTCOMES},
        "missing": len(rows) - len(given),
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


SCORED = "scored"
"""Folder :func:`score_run` publishes a scored run into, inside a run made by ``rungbench run``."""


def publish_scored(
    bench: SealedDir,
    oracles: Mapping[str, PrivateOracle],
    data: bytes,
    target: pathlib.Path,
    agent_name: str,
    *,
    source: pathlib.Path | None = None,
    force: bool = False,
) -> dict[str, Any]:
    """Score response bytes ``data`` against a verified bench; publish the sealed run ``target``.

    Layout: ``responses.jsonl``, ``run_manifest.json`` and ``summary.json`` (aggregates
    only) readable by anyone; ``private/`` (0700) holds ``verdicts.jsonl`` and
    ``score.json`` (0600), the per-case results. Bad lines are named by ``source``
    (the caller's file, when given) and their line number.
    """
    name = str(source or target / RESPONSES)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 at byte {exc.start}", path=name) from exc
    scoring = score_cases(text.splitlines(), oracles, name)
    check_not_foreign(scoring, name)
    public = bench.json(PUBLIC_MANIFEST)
    manifest = run_manifest(public, agent_name, data, scoring.rows)
    summary = summarise(scoring.rows, agent_name)
    summary.update({"run_id": manifest.run_id, "split": manifest.split, "lines": scoring.lines,
                    "invalid_lines": scoring.invalid_lines})
    with publish_dir(target, kind=RUN_KIND, force=force) as temp:
        _write(temp / RESPONSES, data, 0o644)
        _write(temp / RUN_MANIFEST, _pretty(manifest.model_dump(mode="json")), 0o644)
        _write(temp / SUMMARY, _pretty(public_summary(summary)), 0o644)
        (temp / "private").mkdir(mode=0o700)
        os.chmod(temp / "private", 0o700)
        _write(temp / VERDICTS, b"".join(canonical_bytes(r) + b"\n" for r in scoring.rows),
               0o600)
        _write(temp / SCORE, _pretty(summary), 0o600)
    hide_seal(target)
    return summary


def public_summary(summary: Mapping[str, Any]) -> dict[str, Any]:
    """What an agent-side process may read of a score: aggregates only, no per-case field."""
    keep = ("agent", "run_id", "split", "n", "lines", "outcomes", "missing", "failed",
            "labels", "signature")
    out = {k: summary[k] for k in keep if k in summary}
    out["invalid_lines"] = len(summary["invalid_lines"])
    return {"schema": RUN_SUMMARY_SCHEMA, **out}


RUN_SUMMARY_SCHEMA = "rungbench.causal.run_summary/1"
"""Schema tag of a scored run's public ``summary.json``."""


def run_manifest(public: Mapping[str, Any], agent_name: str, data: bytes,
                 rows: list[dict[str, Any]]) -> RunManifest:
    """The run_manifest record of a scored run."""
    return RunManifest(
        run_id=digest({"bench": public["digest"], "agent": agent_name,
                       "responses": bytes_digest(data)}),
        bench_version=public.get("bench_version", BENCH_VERSION),
        generator_commit=public["digest"],
        scorer_hash=_module_digest(scorer_module),
        harness_hash=_module_digest(sys.modules[__name__]),
        model=agent_name,
        arm=agent_name,
        split=public["split"],
        world_ids=sorted({str(r["world_id"]) for r in rows}),
        budget={"tokens": 0, "tool_calls": 0},
        exclusions=[f"{r['verdict']['case_id']}: no response" for r in rows if r["missing"]],
    )


def _write(path: pathlib.Path, data: bytes, mode: int) -> None:
    path.write_bytes(data)
    os.chmod(path, mode)


def _pretty(doc: Mapping[str, Any]) -> bytes:
    return (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode()


def _read_input(path: pathlib.Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read responses: {exc.strerror}", path=str(path)) from exc


def score_run(
    bench: pathlib.Path, run: pathlib.Path, agent_name: str,
    source: pathlib.Path | None = None, *, force: bool = False,
) -> dict[str, Any]:
    """Score ``run/responses.jsonl`` (e.g. written by ``rungbench run``) against ``bench``.

    The scored run is published as the sealed folder ``run/scored`` (see
    :func:`publish_scored`); an existing one is refused unless ``force``.
    """
    target = run / SCORED
    ensure_absent(target, force=force, what="causal run")
    verified = open_bench(bench)
    data = _read_input(run / RESPONSES)
    return publish_scored(verified, bench_oracles(verified), data, target, agent_name,
                          source=source or run / RESPONSES, force=force)


def score_responses(
    bench: pathlib.Path, responses: pathlib.Path, run: pathlib.Path, arm: str, *,
    force: bool = False,
) -> dict[str, Any]:
    """Score an external agent's response JSONL into the sealed run directory ``run``."""
    ensure_absent(run, force=force, what="causal run")
    verified = open_bench(bench)
    data = _read_input(responses)
    return publish_scored(verified, bench_oracles(verified), data, run, arm, source=responses,
                          force=force)


def evaluate(
    bench: pathlib.Path,
    agent_spec: str,
    run: pathlib.Path,
    progress: Callable[[int], None] | None = None,
    *,
    force: bool = False,
) -> dict[str, Any]:
    """Run ``agent_spec`` (``reference:NAME``) on every public case; publish the scored run."""
    ensure_absent(run, force=force, what="causal run")
    verified = open_bench(bench)
    oracles = bench_oracles(verified)
    agent = reference_agent(agent_spec, oracles)
    lines = respond_all(agent, bench_cases(verified), progress)
    data = "".join(line + "\n" for line in lines).encode()
    return publish_scored(verified, oracles, data, run, agent_spec, force=force)
