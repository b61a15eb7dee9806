"""Helpers shared by the tests that edit a copy of a real run minimally."""

from __future__ import annotations

import shutil
from pathlib import Path

from rungbench.chess.transcripts.llmchess import RunReport


def copy_run(tmp_path: Path, run: Path) -> Path:
    """A scratch copy of a bundled run folder (the original is never touched)."""
    out = tmp_path / run.name
    shutil.copytree(run, out)
    return out


def edit(path: Path, old: bytes, new: bytes) -> None:
    """Replace the first occurrence of ``old`` (which must be there) by ``new``."""
    data = path.read_bytes()
    assert data.count(old) >= 1, old
    path.write_bytes(data.replace(old, new, 1))


def excluded_causes(report: RunReport) -> dict[str, str]:
    """Each excluded game's file-local name and its reason code."""
    return {game.game.rsplit("/", 1)[1]: cause.code for game, cause in report.excluded()}
