"""Fixtures shared by the label-stage hardening tests: one published stage, copied per test."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from rungbench.chess.engine import EngineConfig
from rungbench.chess.labels.cohort import freeze_cohort
from rungbench.chess.labels.config import LabelConfig
from rungbench.chess.labels.idle import IdleGate
from rungbench.chess.labels.label import run_label_stage
from rungbench.chess.labels.pool import PoolConfig, freeze_pool
from rungbench.chess.labels.qualify import qualify
from rungbench.chess.workspace import Workspace

SMALL = LabelConfig(engine=EngineConfig(nodes=2_000, hash_mb=16))
"""A small contract: real Stockfish, tiny budget and hash."""
OPEN = IdleGate(max_load=1e9)
"""An idle gate that never refuses."""


@pytest.fixture(scope="session")
def published_root(tmp_path_factory: pytest.TempPathFactory, label_data: Any) -> Path:
    """A qualified workspace (2 puzzles, 1 game line) with a published label stage."""
    ws = Workspace(tmp_path_factory.mktemp("published") / "ws")
    freeze_pool(ws, label_data.sources(2, 1), PoolConfig(reserve=0))
    freeze_cohort(ws, "pilot", label_data.pilot, terminal=True)
    freeze_cohort(ws, "replication", label_data.replication, terminal=True)
    qualify(ws)
    run_label_stage(ws, SMALL, OPEN)
    return ws.root


@pytest.fixture
def published(published_root: Path, tmp_path: Path) -> Workspace:
    """A private copy of the published workspace."""
    dest = tmp_path / "ws"
    shutil.copytree(published_root, dest, symlinks=True)
    return Workspace(dest)
