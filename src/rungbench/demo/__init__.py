"""The main job: one study on the bundled data, as stages, ending in the static HTML report.

A :class:`Stage` is a function ``workdir -> StageResult`` that does real work and
returns a JSON-ready summary, plus the full result it computed (``detail``) for a
front end to show, plus the documents it contributes to the report (``report``). A stage
whose checks fail says so in ``failure``; one that cannot run raises a
:class:`~rungbench.errors.RungbenchError`. :func:`run_demo` runs them in order and never
stops at a failed stage; :func:`publish_report` stores the stages' report documents in
``<workdir>/objects`` (content-addressed), writes ``<workdir>/report-inputs.json`` and
renders ``<workdir>/report/index.html`` (:mod:`rungbench.report`).

The demo's folder is reused: a second run verifies every frozen object and reuses it
(same digests); nothing is written outside the folder. ``demo`` sits above every domain
and the report, and below ``cli``.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rungbench.errors import RungbenchError

__all__ = [
    "STAGES",
    "Stage",
    "StageOutcome",
    "StageResult",
    "demo_document",
    "publish_report",
    "run_demo",
]


@dataclass(frozen=True)
class StageResult:
    """What one stage produced."""

    summary: dict[str, Any]
    """JSON-ready figures of the stage (what ``rungbench demo --json`` prints)."""
    detail: Any = None
    """The full result behind the summary (a report, a table's rows), for display."""
    failure: str | None = None
    """Why the stage's own checks failed; None when they passed."""
    report: dict[str, Any] = field(default_factory=dict)
    """Documents for the HTML report, by input key (``census:<corpus>``, ``causal:<agent>``,
    ``instrument``, ``analysis:<preset>``)."""


@dataclass(frozen=True)
class Stage:
    """One registered stage of the demo."""

    key: str
    """Short stable name (``evidence``, ``labels``, …)."""
    title: str
    """Human title, naming the layer it exercises."""
    module: str
    """Module under :mod:`rungbench.demo` whose ``run(workdir)`` performs it (loaded lazily)."""

    def run(self, workdir: Path) -> StageResult:
        """Run the stage in ``workdir``."""
        function: Callable[[Path], StageResult] = importlib.import_module(
            f"rungbench.demo.{self.module}"
        ).run
        return function(workdir)


STAGES: tuple[Stage, ...] = (
    Stage("evidence", "evidence store, freeze/check, ledger (evidence)", "evidence"),
    Stage("stats", "seed figures (stats)", "stats"),
    Stage("causal_validation", "causal oracle validation (causal)", "causal_validation"),
    Stage("causal_bench", "causal benchmark build, eval, report (causal)", "causal_bench"),
    Stage("ablations", "causal ablation matrix A0-A11, planted agent on loopback (causal)",
          "ablations"),
    Stage("instrument", "causal instrument audit, C0-C5 control matrix (causal)", "instrument"),
    Stage("decisions", "question 3: P2 vs premature commitment episodes, repair loss and "
          "success per dollar (causal)", "decisions"),
    Stage("cladder", "CLadder import and exact re-grade (causal)", "cladder"),
    Stage("census", "LLM Chess replay and A104 census (chess)", "census"),
    Stage("designs", "A105 byte-matched panels and E023 counterbalanced orders (design)",
          "designs"),
    Stage("runner", "resumable runner through the real openai client on loopback (execute)",
          "runner"),
    Stage("labels", "engine-blind pool, leakage gate, two-pass Stockfish labels (chess)",
          "labels"),
    Stage("study", "chess study: manifest, A105 / E020-E021 / E023 bound, planted agents on "
          "loopback, Ethereal evaluation, claim gates (chess)", "study"),
)
"""The stages in the order they run."""


@dataclass(frozen=True)
class StageOutcome:
    """A stage's result as the demo records it."""

    stage: Stage
    """Which stage."""
    result: StageResult | None
    """What it produced; None when it raised."""
    error: str | None
    """The failure (its own checks) or the error it raised; None when it passed."""
    seconds: float
    """Wall time."""

    @property
    def ok(self) -> bool:
        """True when the stage ran and its checks passed."""
        return self.error is None

    def to_json(self) -> dict[str, Any]:
        """The stage's entry in the demo document."""
        if self.result is not None and self.error is None:
            return {"ok": True, "seconds": self.seconds, **self.result.summary}
        return {"ok": False, "error": self.error}


Hook = Callable[[Stage], None]
DoneHook = Callable[[StageOutcome], None]


def run_demo(
    workdir: Path, *, on_start: Hook | None = None, on_done: DoneHook | None = None,
    stages: tuple[Stage, ...] = STAGES,
) -> list[StageOutcome]:
    """Run every stage in ``workdir`` (created if missing); return their outcomes in order."""
    workdir.mkdir(parents=True, exist_ok=True)
    outcomes: list[StageOutcome] = []
    for stage in stages:
        if on_start is not None:
            on_start(stage)
        outcome = _run_one(stage, workdir)
        outcomes.append(outcome)
        if on_done is not None:
            on_done(outcome)
    return outcomes


def _run_one(stage: Stage, workdir: Path) -> StageOutcome:
    start = time.perf_counter()
    try:
        result = stage.run(workdir)
    except RungbenchError as exc:
        return StageOutcome(stage, None, str(exc), round(time.perf_counter() - start, 3))
    return StageOutcome(stage, result, result.failure, round(time.perf_counter() - start, 3))


STUDY = "chess-study/study"
"""The demo's chess study, relative to its folder."""
LABEL_STAGE = "chess-study/labels/label-stage"
"""The demo's published label stage, relative to its folder."""


def publish_report(workdir: Path, outcomes: list[StageOutcome]) -> dict[str, Any]:
    """Store every stage's report documents, write the index, render the report."""
    from rungbench.evidence.canonical import canonical_bytes
    from rungbench.evidence.store import ObjectStore, write_atomic
    from rungbench.report import render_report
    from rungbench.report.inputs import INDEX, INDEX_SCHEMA, OBJECTS

    store = ObjectStore(workdir / OBJECTS)
    objects = {key: store.put_json(doc) for o in outcomes if o.result is not None
               for key, doc in sorted(o.result.report.items())}
    index = {"schema": INDEX_SCHEMA, "objects": dict(sorted(objects.items())),
             "study": STUDY if (workdir / STUDY).exists() else None,
             "stage": LABEL_STAGE if (workdir / LABEL_STAGE).exists() else None}
    write_atomic(workdir / INDEX, canonical_bytes(index), overwrite=True)
    return render_report(workdir)


def demo_document(workdir: Path, outcomes: list[StageOutcome],
                  report: dict[str, Any] | None = None) -> dict[str, Any]:
    """The one JSON document of ``rungbench demo --json``."""
    return {
        "workdir": str(workdir),
        "stages": {o.stage.title: o.to_json() for o in outcomes},
        "report": report,
        "ok": all(o.ok for o in outcomes) and report is not None,
    }
