"""Resumability: SIGKILL the CLI at random points, resume, and get the uninterrupted manifest,
on each registered engine build (Stockfish 18 as WebAssembly under node, Debian's 15.1) at a
reduced 3,000 nodes on a 16 MB hash (registered: 50,000 nodes, 256 MB)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from rungbench.chess.engine import EngineConfig
from rungbench.chess.engine_builds import BUILD_KEYS
from rungbench.chess.labels.config import LabelConfig
from rungbench.chess.labels.idle import IdleGate
from rungbench.chess.labels.label import run_label_stage
from rungbench.chess.workspace import Workspace

NODES = 3_000
HASH_MB = 16
"""A small hash keeps the many cleared-hash searches quick; it is part of every cache key."""
KILLS = 5
CLI = [sys.executable, "-c", "from rungbench.cli import main; main()"]


def label_cmd(ws: Workspace, build: str) -> list[str]:
    """The `rungbench chess label run` command line for ``ws`` on ``build``."""
    return [*CLI, "chess", "label", "run", "--work", str(ws.root), "--nodes", str(NODES),
            "--hash-mb", str(HASH_MB), "--engine-build", build,
            "--max-load", "1000000", "--json"]


def cached(ws: Workspace) -> int:
    """Number of cache index entries written so far."""
    return len(list(ws.index_dir.glob("*.json"))) if ws.index_dir.exists() else 0


def kill_at(ws: Workspace, build: str, target: int, timeout: float = 60.0) -> int:
    """Start the CLI, SIGKILL it once ``target`` records exist; return the count at the kill."""
    proc = subprocess.Popen(label_cmd(ws, build), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout
    while cached(ws) < target and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    alive = proc.poll() is None
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert alive, f"the run ended before reaching {target} records"
    return cached(ws)


@pytest.mark.parametrize("build", BUILD_KEYS)
def test_sigkill_at_random_points_then_resume(
        tmp_path: Path, make_workspace: Callable[..., Workspace], build: str) -> None:
    """Five SIGKILLs at seeded random progress points, then a resume: same manifest digest."""
    reference = make_workspace(tmp_path / "reference", puzzles=2, games=3)
    contract = LabelConfig(engine=EngineConfig(build=build, nodes=NODES, hash_mb=HASH_MB))
    expected = run_label_stage(reference, contract, IdleGate(max_load=1e9))
    total = expected["run"]["searches"]
    ws = make_workspace(tmp_path / "killed", puzzles=2, games=3)
    # The bench signature is a property of the binary; reuse it rather than re-bench 6 times
    # (the WebAssembly build has none).
    if (reference.root / "cache" / "bench").is_dir():
        shutil.copytree(reference.root / "cache" / "bench", ws.root / "cache" / "bench")
    rng = np.random.default_rng(20260101)
    targets = sorted(int(t) for t in rng.choice(np.arange(1, total - 1), KILLS, replace=False))
    counts = [kill_at(ws, build, target) for target in targets]
    assert not ws.stage.exists()
    assert counts == sorted(counts) and counts[-1] < total
    done = subprocess.run(label_cmd(ws, build), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["manifest"] == expected["manifest"]
    assert result["run"]["cache_hits"] >= counts[-1] - 1
    assert (ws.stage / "manifest.json").read_bytes() == (
        reference.stage / "manifest.json").read_bytes()
    assert result["flow_report"]["engine"]["build"] == build
