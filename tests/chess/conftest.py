"""Fixtures for the seed 002 label-stage tests: a small real workspace from the bundled data."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from rungbench.chess.labels.cohort import freeze_cohort
from rungbench.chess.labels.pool import PoolConfig, PoolSource, bundled_data_dir, freeze_pool
from rungbench.chess.labels.qualify import qualify
from rungbench.chess.workspace import Workspace


@dataclass(frozen=True)
class LabelData:
    """Bundled inputs of the label stage."""

    puzzles: Path
    """Lichess puzzle CSV."""
    games: Path
    """Kaggle JSON Lines of PGN games."""
    pilot: list[Path]
    """Per-game JSON records of one llm_chess run (cohort 'pilot')."""
    replication: list[Path]
    """Console transcript of another llm_chess run (cohort 'replication')."""
    nodes: int = 3_000
    """Reduced node budget for tests (the registered budget is 50,000)."""

    def sources(self, puzzles: int = 2, games: int = 2) -> list[PoolSource]:
        """Return pool sources limited to the first rows of the bundled data."""
        return [PoolSource("lichess_puzzles", self.puzzles, puzzles),
                PoolSource("pgn_jsonl", self.games, games)]


@pytest.fixture(scope="session")
def label_data() -> LabelData:
    """The bundled data used by every label-stage test."""
    data = bundled_data_dir()
    llm = data / "llm_chess"
    return LabelData(
        puzzles=data / "lichess_puzzles" / "puzzles.csv",
        games=data / "kaggle_chess_positions" / "filtered_chess_positions.jsonl",
        pilot=sorted((llm / "gpt-oss-20b-low_2025-08-12-15-06-46").glob("2025*.json")),
        replication=[llm / "gpt-35-turbo-0301_2025-01-22" / "output.txt"],
    )


MakeWorkspace = Callable[..., Workspace]


@pytest.fixture
def make_workspace(label_data: LabelData) -> MakeWorkspace:
    """Return a builder: small pool + both terminal cohorts (+ qualification) in a directory."""

    def build(root: Path, *, puzzles: int = 2, games: int = 2,
              qualified: bool = True) -> Workspace:
        ws = Workspace(root)
        freeze_pool(ws, label_data.sources(puzzles, games), PoolConfig(reserve=0))
        freeze_cohort(ws, "pilot", label_data.pilot, terminal=True)
        freeze_cohort(ws, "replication", label_data.replication, terminal=True)
        if qualified:
            qualify(ws)
        return ws

    return build
