"""Demo stage: the engine-blind pool, the leakage gate and the two-pass Stockfish labels that
the demo study's manifest is frozen from (seed 002).

Everything is frozen once in ``<workdir>/chess-study/labels`` and verified and reused on a
later run: the pool and both terminal cohorts are read back through their self digests, the
qualification is rebuilt from them and must equal the persisted one (the preflight), and the
label stage re-derives every file from its verified cache and refuses unless the published
stage holds exactly those bytes. The gate is shown refusing first: a preflight that asks for
a cohort nobody froze stops before any engine starts (``cohort_absent``).

Reduced for the demo, and stated in the summary: 80 puzzles plus plies of 30 games, two
passes at 2,000 nodes (the registered budget is 50,000) on a 16 MB hash. The engine is the
default build (:func:`rungbench.chess.engine_builds.default_build`): seed 002's Stockfish 18
(WebAssembly under node) where ``make setup`` installed it, else Debian's Stockfish 15.1;
the summary names it and whether it is the registered one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rungbench.chess.engine import EngineConfig
from rungbench.chess.labels.cohort import freeze_cohort, load_cohort
from rungbench.chess.labels.config import LabelConfig
from rungbench.chess.labels.idle import IdleGate, default_max_load
from rungbench.chess.labels.label import run_label_stage
from rungbench.chess.labels.pool import (
    PlySampling,
    PoolConfig,
    PoolSource,
    bundled_data_dir,
    freeze_pool,
    load_pool,
)
from rungbench.chess.labels.qualify import DEFAULT_COHORTS, preflight, qualify
from rungbench.chess.workspace import Workspace
from rungbench.demo import StageResult
from rungbench.errors import IntegrityError, Refusal
from rungbench.evidence.canonical import bytes_digest

NODES = 2_000
"""Node budget of both passes in the demo (registered: 50,000)."""
PUZZLES = 80
"""Bundled Lichess puzzles in the demo pool."""
GAMES = 30
"""Bundled Kaggle games whose plies (move 8 on, every third ply) join the pool."""
PILOT = "gpt-oss-20b-low_2025-08-12-15-06-46"
"""The bundled LLM Chess run frozen as the terminal pilot cohort."""
REPLICATION = "gpt-35-turbo-0301_2025-01-22"
"""The bundled LLM Chess run frozen as the terminal replication cohort."""


def workspace(workdir: Path) -> Workspace:
    """The demo's label workspace (its ``stage`` is what the study reads)."""
    return Workspace(workdir / "chess-study" / "labels")


def _pool(ws: Workspace) -> tuple[dict[str, Any], bool]:
    if ws.pool.is_file():
        pool = load_pool(ws.pool)  # verified: schema, self digest, every derived identity
        return {"digest": bytes_digest(ws.pool.read_bytes()),
                "positions": len(pool.positions)}, True
    data = bundled_data_dir()
    games = data / "kaggle_chess_positions" / "filtered_chess_positions.jsonl"
    sources = [PoolSource("lichess_puzzles", data / "lichess_puzzles" / "puzzles.csv", PUZZLES),
               PoolSource("pgn_plies", games, GAMES, sampling=PlySampling(from_move=8, stride=3))]
    frozen = freeze_pool(ws, sources, PoolConfig(reserve=0))
    return {"digest": frozen["digest"], "positions": frozen["positions"]}, False


def _cohort(ws: Workspace, name: str, paths: list[Path]) -> tuple[str, bool]:
    path = ws.cohort(name)
    if path.exists():
        return load_cohort(path)[0], True
    return str(freeze_cohort(ws, name, paths, terminal=True)["digest"]), False


def _refusal(ws: Workspace) -> list[str]:
    try:
        preflight(ws, (DEFAULT_COHORTS[0], "deepseek_terminal"))
    except Refusal as refusal:
        return list(refusal.codes)
    raise IntegrityError("the leakage preflight passed without a frozen cohort")


def run(workdir: Path) -> StageResult:
    """Freeze (or verify and reuse) pool and cohorts, gate, label and publish the stage."""
    ws = workspace(workdir)
    pool, pool_reused = _pool(ws)
    llm = bundled_data_dir() / "llm_chess"
    pilot, pilot_reused = _cohort(ws, "pilot", sorted((llm / PILOT).glob("2025*.json")))
    refused = _refusal(ws)
    replication, rep_reused = _cohort(ws, "replication", [llm / REPLICATION / "output.txt"])
    qualification = qualify(ws, DEFAULT_COHORTS)
    cleared = preflight(ws, DEFAULT_COHORTS)
    config = LabelConfig(engine=EngineConfig(nodes=NODES, hash_mb=16), workers=2)
    stage_existed = ws.stage.exists()
    # The demo shares its host with other work; the idle threshold is relaxed and recorded.
    gate = IdleGate(max_load=max(default_max_load(), 64.0))
    result = run_label_stage(ws, config, gate)
    summary = {
        "pool": pool["digest"], "pool_positions": pool["positions"],
        "cohorts": {"pilot": pilot, "replication": replication},
        "refused_without_cohort": refused, "qualification": qualification["qualification"],
        "preflight_cleared": cleared["cleared"], "nodes": NODES,
        "registered_nodes": 50_000, "idle_max_load": gate.max_load,
        "engine": {k: result["flow_report"]["engine"][k]
                   for k in ("name", "build", "version", "is_registered")},
        "manifest": result["manifest"], "stage_record": result["stage_record"],
        "labelled": result["labelled"], "excluded": result["excluded"],
        "labels": result["labels"],
        "exclusions": {k: v for k, v in result["exclusions"].items() if v},
        "searches_this_run": result["run"]["searches"], "stage": result["stage"],
        "reused": {"pool": pool_reused, "pilot": pilot_reused, "replication": rep_reused,
                   "stage": stage_existed},
        "cells": {cell: {k: v for k, v in counts.items() if v}
                  for cell, counts in result["flow_report"]["cells"].items()},
    }
    return StageResult(summary, result["flow_report"])
