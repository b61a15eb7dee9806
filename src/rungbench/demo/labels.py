"""Demo stage: freeze a small pool, show the leakage gate refuse then qualify, label, publish."""

from __future__ import annotations

import shutil
from pathlib import Path

from rungbench.chess.engine import EngineConfig
from rungbench.chess.labels.cohort import freeze_cohort
from rungbench.chess.labels.config import LabelConfig
from rungbench.chess.labels.idle import IdleGate, default_max_load
from rungbench.chess.labels.label import run_label_stage
from rungbench.chess.labels.pool import PoolConfig, PoolSource, bundled_data_dir, freeze_pool
from rungbench.chess.labels.qualify import DEFAULT_COHORTS, preflight, qualify
from rungbench.chess.workspace import Workspace
from rungbench.demo import StageResult
from rungbench.errors import IntegrityError, Refusal


def run(workdir: Path) -> StageResult:
    """12 bundled positions through pool, cohorts, gate, two passes at 5,000 nodes, publish."""
    data = bundled_data_dir()
    ws = Workspace(workdir / "chess-label")
    shutil.rmtree(ws.root, ignore_errors=True)
    pool = freeze_pool(ws, [
        PoolSource("lichess_puzzles", data / "lichess_puzzles" / "puzzles.csv", 6),
        PoolSource("pgn_jsonl", data / "kaggle_chess_positions" / "filtered_chess_positions.jsonl",
                   6),
    ], PoolConfig(splits=(("dev", 1), ("test", 1)), reserve=0))
    llm = data / "llm_chess"
    freeze_cohort(ws, "pilot", sorted((llm / "gpt-oss-20b-low_2025-08-12-15-06-46")
                                      .glob("2025*.json")), terminal=True)
    try:
        preflight(ws, DEFAULT_COHORTS)
        raise IntegrityError("preflight passed without the replication cohort")
    except Refusal as refusal:
        refused = list(refusal.codes)
    freeze_cohort(ws, "replication", [llm / "gpt-35-turbo-0301_2025-01-22" / "output.txt"],
                  terminal=True)
    qualification = qualify(ws, DEFAULT_COHORTS)
    cleared = preflight(ws, DEFAULT_COHORTS)
    config = LabelConfig(engine=EngineConfig(nodes=5_000), workers=1)
    # The demo shares its host with other work; the threshold is relaxed and recorded.
    gate = IdleGate(max_load=max(default_max_load(), 64.0))
    result = run_label_stage(ws, config, gate)
    return StageResult({
        "pool_positions": pool["positions"], "pool": pool["digest"],
        "refused_without_cohort": refused, "qualification": qualification["qualification"],
        "preflight_cleared": cleared["cleared"], "nodes": config.engine.nodes,
        "idle_max_load": gate.max_load,
        "manifest": result["manifest"], "labelled": result["labelled"],
        "excluded": result["excluded"], "labels": result["labels"],
        "exclusions": {k: v for k, v in result["exclusions"].items() if v},
        "stage": result["stage"],
        "cells": {cell: {k: v for k, v in counts.items() if v}
                  for cell, counts in result["flow_report"]["cells"].items()},
    })
