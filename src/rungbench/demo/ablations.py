"""Demo stage: the whole registered ablation matrix (A0 … A11−k) on the demo's causal worlds.

Every arm of ``designs/causal_arms.toml`` runs on the causal_bench stage's dev worlds (built
here when that stage has not run) with one planted agent, ``planted:counterfactual``
(:mod:`rungbench.causal.ablations.planted`), served on loopback and reached through the real
``openai`` client. That agent answers structure questions from the causal facts it obtains
and consults the counterfactual module on point-valued rung-3 items, so two effects are
planted with a known sign: facts help (A9 − A3 > 0) and the counterfactual module helps
(A2 − A4 > 0). The stage's checks: every row of seed 003's "What each comparison isolates"
table is in the report, and the planted A2 − A4 delta is above 0.

The report (``causal/ablations/report.json`` and ``report.md``) is kept with the runs and goes
to the HTML report's ablations section; a later demo verifies every run and reuses it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from rungbench.agents.providers import serve_on_loopback
from rungbench.causal.ablations.analysis import ablation_report, to_markdown
from rungbench.causal.ablations.arms import Matrix, load_matrix
from rungbench.causal.ablations.planted import planted_agent
from rungbench.causal.ablations.runs import run_arms
from rungbench.causal.bench.build import build_split
from rungbench.demo import StageResult
from rungbench.demo.causal_bench import SEED, WORLDS
from rungbench.errors import InputError
from rungbench.evidence.canonical import canonical_bytes, loads_canonical
from rungbench.evidence.store import write_atomic
from rungbench.execute.runner import verify_run

AGENT = "planted:counterfactual"
"""The one agent every arm uses."""
REPORT = "report.json"
"""The ablation report, beside the runs."""
SAMPLES = 1
"""Samples per case (the planted agent is deterministic)."""
CONCURRENCY = 4
"""Cells in flight."""
SEED_ROWS = (("A1", "A0"), ("A2", "A1"), ("A2", "A3"), ("A10", "A9"), ("A9", "A3"),
             ("A10", "A5"), ("A5", "A2"), ("A6", "A5"), ("A7", "A2"))
"""Seed 003 "What each comparison isolates", rows other than A11 − A11−k."""
PLANTED = ("A2", "A4")
"""The comparison whose effect the agent plants (the counterfactual module)."""


def run(workdir: Path) -> StageResult:
    """Run (or verify and reuse) every registered arm on the demo's causal worlds; runs are
    kept relative to ``causal/ablations`` so a moved demo folder still verifies."""
    start = time.perf_counter()
    root = workdir / "causal" / "ablations"
    matrix = load_matrix()
    if (root / REPORT).is_file():
        report = _reuse(root)
        reused = True
    else:
        report = _first_run(workdir, root, matrix)
        reused = False
    summary = summarize(report, matrix)
    summary.update(reused=reused, seconds=round(time.perf_counter() - start, 2))
    return StageResult(summary, report, failure=check(report, matrix),
                       report={"ablations": report})


def _bench(workdir: Path) -> Path:
    bench = workdir / "causal" / "bench"
    if not bench.exists():
        build_split("dev", WORLDS, SEED, bench)
    return bench


def _first_run(workdir: Path, root: Path, matrix: Matrix) -> dict[str, Any]:
    bench = _bench(workdir)
    with serve_on_loopback(planted_agent(AGENT)) as provider:
        runs = run_arms(matrix, list(matrix.arms), bench, root / "runs", provider,
                        samples=SAMPLES, concurrency=CONCURRENCY)
    report = ablation_report(matrix, {r.arm: r.rows for r in runs})
    report["agent"] = AGENT
    report["runs"] = {r.arm: r.run_dir.relative_to(root).as_posix() for r in runs}
    write_atomic(root / REPORT, canonical_bytes(report), overwrite=True)
    write_atomic(root / "report.md", to_markdown(report).encode("utf-8"), overwrite=True)
    return report


def _reuse(root: Path) -> dict[str, Any]:
    report: dict[str, Any] = loads_canonical((root / REPORT).read_bytes(),
                                             path=str(root / REPORT))
    for arm, name in report["runs"].items():
        verdict = verify_run(root / name)
        if not verdict.ok:
            raise InputError(f"the demo's {arm} run does not verify: "
                             f"{'; '.join(verdict.problems)}", path=str(root / name))
    return report


def summarize(report: dict[str, Any], matrix: Matrix) -> dict[str, Any]:
    """Figures of the stage: arms, cells, every isolation row and the three answers."""
    return {
        "agent": report.get("agent"), "arms": len(report["arms"]),
        "cells": sum(a["cells"] for a in report["arms"].values()),
        "worlds": max(a["n_worlds"] for a in report["arms"].values()),
        "isolation": [{k: row.get(k) for k in ("a", "b", "mean", "ci95", "verdict")}
                      for row in report["isolation"]],
        "questions": {q["id"]: q["answer"] for q in report["questions"]},
        "matrix_digest": matrix.digest,
    }


def check(report: dict[str, Any], matrix: Matrix) -> str | None:
    """Why the stage's checks fail (a seed row missing, the planted effect not above 0), or
    None."""
    pairs = {(r["a"], r["b"]): r for r in report["isolation"]}
    wanted = [*SEED_ROWS, *((c.a, c.b) for c in matrix.comparisons if c.a == "A11")]
    missing = [f"{a} − {b}" for a, b in wanted if (a, b) not in pairs]
    if missing:
        return "isolation rows missing: " + ", ".join(missing)
    planted = pairs.get(PLANTED)
    if planted is None or planted["mean"] is None or planted["mean"] <= 0:
        return f"the planted counterfactual-module effect (A2 − A4) was not recovered: {planted}"
    return None
