"""Preregistration: pilot → commit margins → validate once per candidate, every look counted.

Seed 003, "Acceptance, regression and contamination". A preregistration directory holds::

    ledger.jsonl      hash-chained, crash-safe ledger (pilot, commit, look, retire, final)
    pilot/            the pilot's arm runs and pilot.json (per-endpoint variance, discordance)
    margins.json      the committed margins (mode 0444; its digest is in the commit record)
    looks/<n>/        each validation look's runs and its aggregate result.json
    private/hits.jsonl  contamination hits (harness only; mode 0600)

Rules, each a :class:`~rungbench.errors.Refusal` with a reason code:

* ``not_committed`` — validation before margins are committed; ``no_pilot`` — commit
  before a pilot; ``already_committed`` — a second commit;
* ``margins_changed`` — margins.json no longer hashes to the committed digest, or the
  analysis code changed since the commit (its digest is part of the margins);
* ``already_seen`` — a second look at the same cohort for the same candidate (arm digest),
  or a second final test for the same release;
* ``cohort_retired`` — the cohort had 20 candidate evaluations, is a month past its first
  look, or a contamination scan hit after one of its looks;
* ``not_held_out`` — a final test on a bench that is not a ``test`` split, or on one
  already evaluated (a final test needs freshly generated worlds).

A look is written to the ledger *before* its runs start, so a crash still counts it.
"""

from __future__ import annotations

import datetime as dt
import inspect
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rungbench.agents.protocol import Agent
from rungbench.causal.ablations import analysis, cells, contamination, labels
from rungbench.causal.ablations.arms import Matrix, ValidityFloor
from rungbench.causal.ablations.runs import ArmRun, run_arms
from rungbench.causal.bench.verified import CASES, PUBLIC_MANIFEST, open_bench
from rungbench.errors import InputError, IntegrityError, Reason, Refusal
from rungbench.evidence.canonical import bytes_digest, canonical_bytes
from rungbench.evidence.store import write_atomic
from rungbench.execute.events import EventLog
from rungbench.stats.power import mcnemar_sample_size

LEDGER = "ledger.jsonl"
MARGINS = "margins.json"
PILOT = "pilot.json"
MARGINS_SCHEMA = "rungbench.causal.margins/1"
PILOT_ARMS = ("A0", "A2", "A9")
"""Seed 003 pilot arms."""
MAX_LOOKS = 20
"""Candidate evaluations after which a cohort retires."""
MAX_AGE_DAYS = 30
"""Days after its first look after which a cohort retires ("one month")."""

STARTING_MARGINS: dict[str, dict[str, Any]] = {
    "reasoning_aid": {
        "primary": "accuracy_exact_nonid", "useful_effect": 0.08,
        "guardrails": {"false_non_id": {"max_increase": 0.03},
                       "tokens": {"max_ratio": 1.30}},
    },
    "graph_routing": {
        "primary": "accuracy", "useful_effect": 0.05,
        "guardrails": {"accuracy_exact_nonid": {"max_decrease": 0.02},
                       "tokens": {"max_ratio": 1.30}},
    },
}
"""Seed 003 "Starting margins" for the candidate types this bench measures (points as
fractions). Query/scorer repair is judged by the instrument's control matrix and debugging
policies by repair loss; neither endpoint is produced by an ablation run."""

Now = Callable[[], dt.datetime]


def _refuse(code: str, detail: str, subject: str | None = None,
            **data: Any) -> Refusal:
    return Refusal([Reason(code, detail, subject=subject, data=data)], gate="prereg")


def analysis_digest() -> str:
    """Digest of the analysis code (analysis, cells, labels, contamination and this module's
    sources) a margins file pins."""
    modules = (analysis, cells, labels, contamination, sys.modules[__name__])
    text = "".join(inspect.getsource(m) for m in modules)
    return bytes_digest(text.encode("utf-8"))


def _ledger(root: Path) -> EventLog:
    root.mkdir(parents=True, exist_ok=True)
    return EventLog(root / LEDGER)


def _utc(now: Now | None) -> dt.datetime:
    return (now or (lambda: dt.datetime.now(dt.UTC)))()


def _write_json(path: Path, doc: Mapping[str, Any], mode: int = 0o444) -> str:
    data = canonical_bytes(dict(doc)) + b"\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data)
    os.chmod(path, mode)
    return bytes_digest(data)


def pilot_stats(by_arm: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    """Per-arm, per-endpoint mean and variance; per arm pair, discordance on accuracy."""
    arms = {}
    for name, rows in by_arm.items():
        per: dict[str, Any] = {}
        for endpoint, unit in analysis.ENDPOINTS.items():
            values = [v for v in (unit(r) for r in rows) if v is not None]
            per[endpoint] = {"n": len(values),
                             "mean": float(np.mean(values)) if values else None,
                             "variance": float(np.var(values, ddof=1)) if len(values) > 1
                             else None}
        arms[name] = per
    pairs = {}
    names = list(by_arm)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            for endpoint in ("accuracy", "accuracy_exact_nonid"):
                d = analysis.paired_delta(by_arm[a], by_arm[b], endpoint, margin=None)
                pairs[f"{a}-{b}:{endpoint}"] = {k: d.get(k) for k in (
                    "n", "n_worlds", "mean", "ci95", "discordance")}
    return {"arms": arms, "pairs": pairs}


def pilot(root: Path, matrix: Matrix, dev_bench: Path, agent: Agent, *,
          arms: Sequence[str] = PILOT_ARMS, samples: int = 2, per_world: int | None = None,
          concurrency: int = 1, now: Now | None = None) -> dict[str, Any]:
    """Run the pilot arms on the dev bench; write pilot.json (refused if one exists)."""
    path = root / "pilot" / PILOT
    if path.exists():
        raise _refuse("exists", f"{path} exists: the pilot runs once per preregistration",
                      subject=str(path))
    split = _split(dev_bench)
    if split != "dev":
        raise _refuse("bad_request", f"the pilot runs on a dev split, not {split!r}",
                      subject=str(dev_bench))
    runs = run_arms(matrix, arms, dev_bench, root / "pilot", agent, samples=samples,
                    per_world=per_world, concurrency=concurrency)
    by_arm = {r.arm: r.rows for r in runs}
    doc = {"schema": "rungbench.causal.pilot/1", "matrix_digest": matrix.digest,
           "bench_cases": open_bench(dev_bench).digests[CASES], "samples": samples,
           "cells": sum(len(r.rows) for r in runs),
           "runs": {r.arm: r.run_dir.name for r in runs}, **pilot_stats(by_arm)}
    digest = _write_json(path, doc)
    _ledger(root).append({"kind": "pilot", "digest": digest, "at": _utc(now).isoformat()})
    return {**doc, "digest": digest}


def _split(bench: Path) -> str:
    manifest = json.loads((bench / PUBLIC_MANIFEST).read_text("utf-8"))
    return str(manifest.get("split"))


def default_margins(pilot_doc: Mapping[str, Any], matrix: Matrix,
                    equivalence_margin: float | None = None) -> dict[str, Any]:
    """The seed's starting margins plus the sample size the pilot's discordance implies.

    ``equivalence_margin`` is the committed margin inside which a difference is called
    equivalent; None commits none (every interval near 0 stays inconclusive). The seed
    states no equivalence margin, so none is assumed.
    """
    candidates = {}
    for kind, spec in STARTING_MARGINS.items():
        pair: Mapping[str, Any] = pilot_doc["pairs"].get(f"A2-A9:{spec['primary']}") or next(
            iter(pilot_doc["pairs"].values()), {})
        psi = pair.get("discordance")
        effect = float(spec["useful_effect"])
        n = None
        if psi is not None and psi > effect:
            n = mcnemar_sample_size(effect, float(psi)).n
        candidates[kind] = {**spec, "pilot_discordance": psi, "sample_size_pairs": n}
    return {"schema": MARGINS_SCHEMA, "matrix_digest": matrix.digest,
            "analysis_digest": analysis_digest(), "candidates": candidates,
            "equivalence_margin": equivalence_margin,
            "cohort": {"max_looks": MAX_LOOKS, "max_age_days": MAX_AGE_DAYS}}


def commit(root: Path, matrix: Matrix, *, equivalence_margin: float | None = None,
           now: Now | None = None) -> dict[str, Any]:
    """Freeze margins.json from the pilot (the seed's starting margins, and the equivalence
    margin given here or none)."""
    if equivalence_margin is not None and not 0.0 < equivalence_margin < 1.0:
        raise InputError(f"equivalence margin {equivalence_margin!r} is not in (0, 1)",
                         field="equivalence_margin")
    records = _ledger(root).read()
    pilots = [r for r in records if r["kind"] == "pilot"]
    if not pilots:
        raise _refuse("no_pilot", "run `prereg pilot` before committing margins",
                      subject=str(root))
    if any(r["kind"] == "commit" for r in records):
        raise _refuse("already_committed", "margins are committed once, before any "
                      "candidate is compared", subject=str(root / MARGINS))
    pilot_path = root / "pilot" / PILOT
    data = pilot_path.read_bytes()
    if bytes_digest(data) != pilots[-1]["digest"]:
        raise IntegrityError(f"{pilot_path}: changed since the pilot wrote it")
    doc = {**default_margins(json.loads(data), matrix, equivalence_margin),
           "pilot": pilots[-1]["digest"]}
    digest = _write_json(root / MARGINS, doc)
    _ledger(root).append({"kind": "commit", "digest": digest, "at": _utc(now).isoformat()})
    return {**doc, "digest": digest}


def committed_margins(root: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The verified committed margins and the ledger; refuse when missing or changed."""
    records = _ledger(root).read()
    commits = [r for r in records if r["kind"] == "commit"]
    if not commits:
        raise _refuse("not_committed", "no margins committed; run `prereg commit` first",
                      subject=str(root / MARGINS))
    path = root / MARGINS
    if not path.is_file() or bytes_digest(path.read_bytes()) != commits[0]["digest"]:
        raise _refuse("margins_changed", f"{path} differs from the committed margins "
                      f"({commits[0]['digest']})", subject=str(path),
                      committed=commits[0]["digest"])
    margins: dict[str, Any] = json.loads(path.read_bytes())
    if margins.get("analysis_digest") != analysis_digest():
        raise _refuse("margins_changed", "the analysis code changed after the margins were "
                      "committed", subject="analysis", committed=margins.get("analysis_digest"),
                      now=analysis_digest())
    return margins, records


def committed_equivalence(margins: Mapping[str, Any]) -> float | None:
    """The equivalence margin a committed margins document holds (None: none committed)."""
    value = margins.get("equivalence_margin")
    return None if value is None else float(value)


def cohort_state(records: Sequence[Mapping[str, Any]], cohort: str, now: dt.datetime,
                 max_looks: int = MAX_LOOKS, max_age_days: int = MAX_AGE_DAYS
                 ) -> tuple[list[Mapping[str, Any]], str | None]:
    """The cohort's looks and why it is retired (None when it is open)."""
    looks = [r for r in records if r["kind"] == "look" and r["cohort"] == cohort]
    retired = [r for r in records if r["kind"] == "retire" and r["cohort"] == cohort]
    if retired:
        return looks, str(retired[0]["reason"])
    if len(looks) >= max_looks:
        return looks, f"{len(looks)} candidate evaluations (limit {max_looks})"
    if looks:
        first = dt.datetime.fromisoformat(str(looks[0]["at"]))
        if now - first > dt.timedelta(days=max_age_days):
            return looks, f"first look {first.date()} is more than {max_age_days} days ago"
    return looks, None


def validate(root: Path, matrix: Matrix, candidate: str, bench: Path, agent: Agent, *,
             comparator: str = "A2", kind: str = "reasoning_aid", dev_bench: Path | None = None,
             memory: Path | None = None, final_release: str | None = None,
             concurrency: int = 1, now: Now | None = None) -> dict[str, Any]:
    """One look: run the candidate and its comparator once on the cohort; judge; scan.

    Returns aggregates only (the agent side's view); per-case rows stay in the run
    directories and contamination hits in ``private/hits.jsonl``.
    """
    margins, records = committed_margins(root)
    spec = margins["candidates"].get(kind)
    if spec is None:
        raise _refuse("bad_request", f"no committed margins for candidate type {kind!r}",
                      subject="kind", known=sorted(margins["candidates"]))
    arm = matrix.arm(candidate)
    matrix.arm(comparator)
    opened = open_bench(bench)
    cohort = opened.digests[CASES]
    at = _utc(now)
    if final_release is not None:
        if _split(bench) != "test":
            raise _refuse("not_held_out", "the final test runs on a fresh test split "
                          "(held-out structures)", subject=str(bench))
        if any(r["kind"] == "final" and r["release"] == final_release for r in records):
            raise _refuse("already_seen", f"release {final_release!r} already had its final "
                          "test", subject=final_release)
        if any(r["kind"] in ("look", "final") and r["cohort"] == cohort for r in records):
            raise _refuse("not_held_out", "the final test needs freshly generated worlds; "
                          "this bench was already evaluated", subject=str(bench))
        look: dict[str, Any] = {"kind": "final", "release": final_release, "cohort": cohort,
                "candidate": candidate, "arm_digest": arm.digest(), "at": at.isoformat()}
    else:
        looks, retired = cohort_state(records, cohort, at, int(margins["cohort"]["max_looks"]),
                                      int(margins["cohort"]["max_age_days"]))
        if retired is not None:
            if not any(r["kind"] == "retire" and r["cohort"] == cohort for r in records):
                _ledger(root).append({"kind": "retire", "cohort": cohort, "reason": retired,
                                      "at": at.isoformat()})
            raise _refuse("cohort_retired", f"cohort {cohort[:19]}… is retired: {retired}",
                          subject=cohort, looks=len(looks))
        if any(r["arm_digest"] == arm.digest() for r in looks):
            raise _refuse("already_seen", f"candidate {candidate} ({arm.digest()[:19]}…) was "
                          "already evaluated on this cohort", subject=candidate, cohort=cohort)
        look = {"kind": "look", "cohort": cohort, "candidate": candidate,
                "arm_digest": arm.digest(), "look": len(looks) + 1, "at": at.isoformat()}
    _ledger(root).append(look)
    number = sum(1 for r in _ledger(root).read() if r["kind"] in ("look", "final"))
    folder = root / "looks" / f"{number:03d}-{candidate}"
    runs = run_arms(matrix, [candidate, comparator], bench, folder, agent, samples=1,
                    concurrency=concurrency)
    result = judge(runs, spec, committed_equivalence(margins), matrix.floor)
    hits = contamination.scan([r.run_dir for r in runs],
                              memory if memory is not None else
                              (Path(arm.memory) if arm.memory else None),
                              contamination.needles(bench, dev_bench))
    if hits:
        _write_hits(root, hits, folder.name)
        if final_release is None:
            _ledger(root).append({"kind": "retire", "cohort": cohort, "reason":
                                  f"contamination: {len(hits)} hits after look "
                                  f"{look.get('look')}", "at": at.isoformat()})
    out = {"candidate": candidate, "comparator": comparator, "type": kind,
           "cohort": cohort, "look": look.get("look"), "final_release": final_release,
           **result, "contamination": contamination.summary(hits),
           "cohort_retired": bool(hits) and final_release is None}
    _write_json(folder / "result.json", out)
    return out


def _write_hits(root: Path, hits: Sequence[contamination.Hit], look: str) -> None:
    private = root / "private"
    private.mkdir(mode=0o700, exist_ok=True)
    path = private / "hits.jsonl"
    with open(path, "ab") as fh:
        for h in hits:
            fh.write(canonical_bytes({**h.to_json(), "look": look}) + b"\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.chmod(path, 0o600)


def judge(runs: Sequence[ArmRun], spec: Mapping[str, Any], margin: float | None,
          floor: ValidityFloor) -> dict[str, Any]:
    """Primary endpoint against the useful effect; guardrails as noninferiority margins.

    An arm below the validity floor decides nothing: ``insufficient_valid_answers`` with the
    counts of both arms.
    """
    cand, comp = runs[0].rows, runs[1].rows
    by_arm = {"candidate": cand, "comparator": comp}
    primary = analysis.compared_delta(by_arm, "candidate", "comparator", str(spec["primary"]),
                                      floor, margin=margin)
    if primary["verdict"] == analysis.INSUFFICIENT:
        return {"decision": analysis.INSUFFICIENT, "primary": primary,
                "useful_effect": float(spec["useful_effect"]), "guardrails": {}}
    guards = {}
    ok = True
    for endpoint, rule in spec["guardrails"].items():
        if "max_ratio" in rule:
            a = analysis.arm_endpoints(cand)[endpoint]["mean"] or 0.0
            b = analysis.arm_endpoints(comp)[endpoint]["mean"] or 0.0
            ratio = a / b if b else (1.0 if a == 0 else float("inf"))
            passed = ratio <= float(rule["max_ratio"])
            guards[endpoint] = {"ratio": ratio, "max_ratio": rule["max_ratio"], "pass": passed}
        else:
            d = analysis.paired_delta(cand, comp, endpoint, margin=None)
            ci = d["ci95"]
            if "max_increase" in rule:
                passed = ci is not None and ci[1] <= float(rule["max_increase"])
            else:
                passed = ci is not None and ci[0] >= -float(rule["max_decrease"])
            guards[endpoint] = {"mean": d["mean"], "ci95": ci, **rule, "pass": passed}
        ok = ok and passed
    effect = float(spec["useful_effect"])
    ci = primary["ci95"]
    if ci is not None and ok and ci[0] > 0 and primary["mean"] >= effect:
        decision = "accept"
    elif ci is not None and (ci[1] < effect or not ok):
        decision = "reject"
    else:
        decision = "inconclusive"
    return {"decision": decision, "primary": primary, "useful_effect": effect,
            "guardrails": guards}
