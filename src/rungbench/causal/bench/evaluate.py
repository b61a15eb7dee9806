"""Evaluate an agent on a built bench: respond, score, label, summarise, record the run.

A scored run is a sealed directory (``evidence.sealed``; built in a temporary sibling,
renamed into place complete, refused ``exists`` without ``force``)::

    RUN/responses.jsonl          the agent_response lines scored
    RUN/run_manifest.json        the run_manifest record
    RUN/summary.json             aggregate counts only (what an agent side may read)
    RUN/private/   (0700)        verdicts.jsonl (one row per bench case: verdict, failure
                                 labels, cluster and cell keys) and score.json (0600)
    RUN/SEAL.json

The bench is read only through :func:`rungbench.causal.bench.verified.open_bench`; its
episode-family cases (records/2, built with ``--families``) through
``verified.bench_episodes``, scored by ``episode_scorer`` and labelled by
``taxonomy.episode_failure_labels`` in the same run (one response file answers both record
versions; the denominator is every case).
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
from rungbench.causal.bench.episode_scorer import score_episode_case
from rungbench.causal.bench.records import (
    BENCH_VERSION,
    EPISODE_OUTCOMES,
    OUTCOMES,
    AgentResponse,
    EpisodeCase,
    EpisodeOracle,
    EpisodeVerdict,
    PrivateOracle,
    PublicCase,
    RunManifest,
    Verdict,
)
from rungbench.causal.bench.reference_agents import (
    EPISODE_SIGNATURES,
    SIGNATURES,
    CaseAgent,
    ReferenceAgent,
    reference_agent,
)
from rungbench.causal.bench.revision import pooled_revision_metrics
from rungbench.causal.bench.scorer import ScoredLine, score, score_lines
from rungbench.causal.bench.subcapabilities import asked_payloads
from rungbench.causal.bench.taxonomy import (
    PairMember,
    answered_point,
    carries,
    episode_failure_labels,
    failure_labels,
    twin_pattern_labels,
    with_fabrication,
    with_twin_label,
)
from rungbench.causal.bench.variants import ITEM
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
    bench_episodes,
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


AnyOracle = PrivateOracle | EpisodeOracle
"""An oracle record of either version."""


def _labels(o: AnyOracle, r: AgentResponse | None, v: Verdict | EpisodeVerdict) -> list[str]:
    if isinstance(o, EpisodeOracle):
        ev = v if isinstance(v, EpisodeVerdict) else EpisodeVerdict.model_validate(v.model_dump())
        return episode_failure_labels(o, r, ev)
    assert isinstance(v, Verdict)
    return failure_labels(o, r, v)


def grade_any(o: AnyOracle, r: AgentResponse) -> Verdict | EpisodeVerdict:
    """Score ``r`` with the scorer of its oracle record's version."""
    return score_episode_case(o, r) if isinstance(o, EpisodeOracle) else score(o, r)


def verdict_row(s: ScoredLine, o: AnyOracle) -> dict[str, Any]:
    """One private verdict row: the verdict, its failure labels and the case's keys."""
    row = {
        "line": s.line,
        "missing": False,
        "verdict": s.verdict.model_dump(mode="json"),
        "labels": _labels(o, s.response, s.verdict),
        **case_keys(o),
        "confidence": s.response.confidence if s.response else None,
    }
    if isinstance(o, EpisodeOracle):
        r = s.response
        row["named"] = r.label if r is not None and r.status == "answer" else None
    return row


def missing_row(o: AnyOracle) -> dict[str, Any]:
    """The private row of a bench case no response line names (not right; no outcome cell)."""
    kind = EpisodeVerdict if isinstance(o, EpisodeOracle) else Verdict
    verdict = kind(case_id=o.case_id, outcome="invalid", error="no response")
    row = {"line": None, "missing": True, "verdict": verdict.model_dump(mode="json"),
           "labels": [], **case_keys(o), "confidence": None}
    if isinstance(o, EpisodeOracle):
        row["named"] = None
    return row


def case_keys(o: AnyOracle) -> dict[str, Any]:
    """The report keys of a case: world (cluster), family, rung, item type, truth, skin, and
    the payloads it asks for (``subcapabilities.asked_payloads``: which metric it feeds).

    A records/2 case adds its version, episode, stage and identified set (revision metrics);
    a mutated case its mutation kind and a diagnostic twin its twin kind (the transfer table,
    ``report.transfer_table``, reads them; a case with neither has neither key).
    """
    keys: dict[str, Any] = {
        "world_id": o.world_id, "family": o.family, "rung": o.rung, "item_type": o.item_type,
        "identifiable": o.identifiable, "skin": o.skin, "asks": asked_payloads(o)}
    if isinstance(o, PrivateOracle) and o.mutation is not None:
        keys["mutation"] = o.mutation.kind
    if isinstance(o, PrivateOracle) and o.variant is not None and o.variant.kind != ITEM:
        keys["twin"] = o.variant.kind
    if isinstance(o, EpisodeOracle):
        keys.update({"version": o.version, "episode_id": o.episode_id, "stage": o.stage,
                     "identified_set": o.identified_set})
    return keys


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
    lines: list[str], oracles: Mapping[str, AnyOracle], path: str
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
    any_episode = any(isinstance(o, EpisodeOracle) for o in oracles.values())
    scored = score_lines(lines, oracles, path, grade_any if any_episode else None)
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
    add_twin_labels(rows, oracles, first)
    return CaseScoring(
        rows=rows,
        invalid_lines=[{"line": s.line, "case_id": s.verdict.case_id, "error": s.verdict.error}
                       for s in invalid],
        lines=len(scored), named=named, foreign=list(foreign), foreign_lines=foreign_lines,
    )


def add_twin_labels(rows: list[dict[str, Any]], oracles: Mapping[str, AnyOracle],
                    first: Mapping[str, ScoredLine]) -> None:
    """Give each failed row of a diagnostic pair the twin label its pair's verdicts show.

    Pairs are grouped by the parent case their private variant records name; the rules
    are :func:`taxonomy.twin_pattern_labels`, the label replaces ``unexplained`` and the
    mechanical label it refines (:func:`taxonomy.with_twin_label`).
    """
    pairs: dict[str, list[PairMember]] = {}
    for cid, o in oracles.items():
        if not isinstance(o, PrivateOracle) or o.variant is None:
            continue
        s = first.get(cid)
        r = s.response if s is not None else None
        point = answered_point(r) if r is not None and r.status == "answer" else None
        outcome = s.verdict.outcome if s is not None else "missing"
        pairs.setdefault(o.variant.parent, []).append(
            PairMember(cid, o.variant, outcome, point, o.tol))
    shown: dict[str, str] = {}
    for members in pairs.values():
        shown.update(twin_pattern_labels(members))
    for row in rows:
        label = shown.get(row["verdict"]["case_id"])
        if label is not None:
            row["labels"] = with_twin_label(row["labels"], label)


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
    response line names, ``missing`` the rest. A failure hits a reference agent's signature
    when it carries the signature or a twin label refining it (``taxonomy.carries``: the
    rung-1 agent's answer on a fork pair is correlation-as-causation).
    """
    given = [r for r in rows if not r.get("missing")]
    outcomes = Counter(r["verdict"]["outcome"] for r in given)
    failed = [r for r in given if r["labels"]]
    labels = Counter(label for r in failed for label in r["labels"])
    episode_rows = [r for r in rows if r.get("version") is not None]
    out: dict[str, Any] = {
        "agent": agent,
        "n": len(rows),
        "outcomes": {k: outcomes.get(k, 0)
                     for k in (EPISODE_OUTCOMES if episode_rows else OUTCOMES)},
        "missing": len(rows) - len(given),
        "failed": len(failed),
        "labels": dict(sorted(labels.items())),
    }
    if episode_rows:
        out["next_stage"] = episode_summary(episode_rows)
    name = agent.partition(":")[2]
    signatures = {**SIGNATURES, **EPISODE_SIGNATURES} if episode_rows else SIGNATURES
    if name in signatures:
        sig = signatures[name]
        hits = sum(1 for r in failed if carries(r["labels"], sig))
        out["signature"] = {
            "label": sig,
            "hits": hits,
            "failed": len(failed),
            "rate": hits / len(failed) if failed else None,
        }
    return out


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def episode_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Aggregates of the records/2 rows: outcomes, mean regrets and revision rates per family.

    Regrets are means over the cases whose response named an action or experiment
    (seed 003: information and decision value are separate endpoints); the revision
    rates pool every sequential-revision episode (``revision.pooled_revision_metrics``).
    """
    fams: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        fams.setdefault(str(r["family"]), []).append(r)
    out: dict[str, Any] = {"families": {}}
    for fam, rs in sorted(fams.items()):
        given = [r for r in rs if not r.get("missing")]
        oc = Counter(r["verdict"]["outcome"] for r in given)
        block: dict[str, Any] = {"n": len(rs), "missing": len(rs) - len(given),
                                 "outcomes": {k: oc[k] for k in EPISODE_OUTCOMES if oc[k]}}
        for metric in ("decision_regret", "info_regret", "experiment_regret"):
            xs = [float(r["verdict"][metric]) for r in given
                  if r["verdict"].get(metric) is not None]
            if xs:
                block[f"mean_{metric}"] = _mean(xs)
                block[f"n_{metric}"] = len(xs)
        out["families"][fam] = block
    episodes: dict[str, list[dict[str, Any]]] = {}
    for r in fams.get("sequential_revision", []):
        episodes.setdefault(str(r["episode_id"]), []).append(r)
    if episodes:
        out["revision"] = pooled_revision_metrics([
            [(r["identified_set"] or [], r.get("named")) for r in sorted(ep, key=_stage)]
            for _, ep in sorted(episodes.items())])
    return out


def _stage(row: Mapping[str, Any]) -> int:
    return int(row["stage"])


def _module_digest(module: ModuleType) -> str:
    return bytes_digest(inspect.getsource(module).encode())


SCORED = "scored"
"""Folder :func:`score_run` publishes a scored run into, inside a run made by ``rungbench run``."""


def publish_scored(
    bench: SealedDir,
    oracles: Mapping[str, AnyOracle],
    data: bytes,
    target: pathlib.Path,
    agent_name: str,
    *,
    source: pathlib.Path | None = None,
    force: bool = False,
    fabricated: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """Score response bytes ``data`` against a verified bench; publish the sealed run ``target``.

    ``fabricated``: case ids whose episode trace shows a fabricated link
    (``episode_runs``); their rows carry ``mechanism_fabrication`` beside the verdict's labels.

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
    for row in scoring.rows:
        if row["verdict"]["case_id"] in fabricated and row["verdict"]["outcome"] != "invalid":
            row["labels"] = with_fabrication(row["labels"])
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
            "labels", "signature", "next_stage")
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
    return publish_scored(verified, all_oracles(verified), data, target, agent_name,
                          source=source or run / RESPONSES, force=force)


def score_responses(
    bench: pathlib.Path, responses: pathlib.Path, run: pathlib.Path, arm: str | None = None,
    *, force: bool = False,
) -> dict[str, Any]:
    """Score an external agent's response JSONL into the sealed run directory ``run``.

    The run is named after ``arm``, else after the ``arm`` every line carries (the agent's
    label, as ``rungbench run`` writes it), else ``external``.
    """
    ensure_absent(run, force=force, what="causal run")
    verified = open_bench(bench)
    data = _read_input(responses)
    name = arm if arm is not None else arm_of(data) or EXTERNAL
    return publish_scored(verified, all_oracles(verified), data, run, name, source=responses,
                          force=force)


EXTERNAL = "external"
"""The name of an agent whose responses name none."""


def arm_of(data: bytes) -> str | None:
    """The one ``arm`` every response line names (None when lines disagree or name none)."""
    arms = set()
    for line in data.splitlines():
        try:
            record = json.loads(line)
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(record, dict) and isinstance(record.get("arm"), str):
            arms.add(record["arm"])
    return arms.pop() if len(arms) == 1 else None


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
    episode_cases, episode_oracles = bench_episodes(verified)
    agent = reference_agent(agent_spec, oracles, episode_oracles)
    lines = respond_all(agent, bench_cases(verified), progress)
    lines += respond_episodes(agent, episode_cases)
    data = "".join(line + "\n" for line in lines).encode()
    merged: dict[str, AnyOracle] = {**oracles, **episode_oracles}
    return publish_scored(verified, merged, data, run, agent_spec, force=force)


def respond_episodes(agent: ReferenceAgent, cases: list[EpisodeCase]) -> list[str]:
    """Ask ``agent`` every records/2 case in order; return the response JSONL lines."""
    return [canonical_bytes(agent.answer_episode(c).model_dump(mode="json")).decode()
            for c in cases]


def all_oracles(bench: SealedDir) -> dict[str, AnyOracle]:
    """Every oracle record of a verified bench: records/1, then records/2 (checked)."""
    merged: dict[str, AnyOracle] = dict(bench_oracles(bench))
    merged.update(bench_episodes(bench)[1])
    return merged
