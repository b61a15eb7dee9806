"""A small demo-layout folder for the report tests, built from real library outputs.

One A104 census of a bundled LLM Chess run, the causal benchmark reports of two reference
agents on a 4-world dev bench, the C0–C5 instrument audit, and A105 / E020-E021 / E023
analysis documents of planted cell tables (small, few bootstrap resamples). No study
directory and no label stage: their sections must say they are absent.
"""

from __future__ import annotations

import functools
import shutil
import tempfile
from pathlib import Path
from typing import Any

from rungbench.causal.bench.build import build_split
from rungbench.causal.bench.evaluate import evaluate
from rungbench.causal.bench.report import build_report
from rungbench.causal.instrument.report import audit
from rungbench.chess.studies.analysis import Settings
from rungbench.chess.studies.analysis_report import analyze_table
from rungbench.chess.studies.cells import PromptAudit, build_table
from rungbench.chess.studies.planted_tables import (
    PlantedA105,
    PlantedStages,
    a105_table,
    e020_table,
    e023_table,
)
from rungbench.chess.transcripts.census import census_path
from rungbench.design.presets import arms_design, factorial_design
from rungbench.design.registry import load_design
from rungbench.evidence.canonical import canonical_bytes, digest
from rungbench.evidence.paths import shared_data_dir
from rungbench.evidence.store import ObjectStore
from rungbench.report.inputs import INDEX, INDEX_SCHEMA, OBJECTS

HOSTILE = 'planted-<script>alert("x")</script>&'
"""A model label that would inject markup if the page did not escape it."""
SETTINGS = Settings(n_boot=200, seed=3)
"""Few resamples: the figures only need to exist."""


def _analyses() -> dict[str, dict[str, Any]]:
    audit_ok = PromptAudit(digest=digest({"audit": "clean"}), blocks=8, stray_offsets=0,
                           length_mismatches=0, masked_token_leaks=0)
    header, rows = a105_table({"luna": PlantedA105("board_limited"),
                               "deepseek-v4-flash": PlantedA105("null")}, positions=24,
                              games=12, seed=1, design_digest=factorial_design().digest,
                              prompt_audit=audit_ok)
    a105 = analyze_table(build_table(header, list(enumerate(rows, start=2))), SETTINGS)
    header, rows = e020_table({"ideas": PlantedStages(0.35, 0.90),
                               HOSTILE: PlantedStages(0.90, 0.35)}, positions=120, games=40,
                              seed=2, design_digest=load_design("e020_e021").digest)
    e020 = analyze_table(build_table(header, list(enumerate(rows, start=2))), SETTINGS)
    header, rows = e023_table({"diffuse": 1.0}, positions=30, seed=2,
                              design_digest=arms_design().digest)
    e023 = analyze_table(build_table(header, list(enumerate(rows, start=2))), SETTINGS)
    return {"analysis:a105": a105, "analysis:e020": e020, "analysis:e023": e023}


def _causal(work: Path) -> dict[str, dict[str, Any]]:
    bench = work / "bench"
    build_split("dev", 4, 7, bench)
    docs = {}
    for agent in ("reference:oracle", "reference:rung1"):
        run = work / agent.replace(":", "_")
        evaluate(bench, agent, run)
        docs[f"causal:{agent}"] = {**build_report(run), "run": agent}
    return docs


@functools.cache
def _documents() -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="rungbench-report-fixture-"))
    try:
        census = census_path(shared_data_dir() / "llm_chess" / "gpt-35-turbo-0301_2025-01-22")
        instrument = audit(["naive", "fixed"], ["lenient", "strict"], gated=False)
        return {"census:gpt-35": census, **_causal(work), "instrument": instrument,
                **_analyses()}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def small_demo_dir(root: Path) -> Path:
    """Write the small demo-layout folder into ``root`` and return it."""
    store = ObjectStore(root / OBJECTS)
    objects = {key: store.put_json(doc) for key, doc in _documents().items()}
    index = {"schema": INDEX_SCHEMA, "objects": objects, "study": None, "stage": None}
    (root / INDEX).write_bytes(canonical_bytes(index))
    return root
