"""The label stage on a local Ray cluster: the same published bytes as the local executor,
engines verified per worker, and a SIGKILLed Ray driver resumed to the same digest."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rungbench.chess.engine import EngineConfig, EngineIdentity
from rungbench.chess.labels.cache import CacheKey
from rungbench.chess.labels.cohort import freeze_cohort
from rungbench.chess.labels.config import LabelConfig
from rungbench.chess.labels.label import SearchJob, Task, run_label_stage, search_in_worker
from rungbench.chess.labels.pool import PoolConfig, freeze_pool, load_pool
from rungbench.chess.labels.qualify import qualify
from rungbench.chess.workspace import Workspace
from rungbench.errors import Refusal
from rungbench.execute.executors import RayExecutor

from .conftest import OPEN, SMALL

pytestmark = pytest.mark.xdist_group("ray")

CLI = [sys.executable, "-c", "from rungbench.cli import main; main()"]


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (the seal included) by relative path."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def copy_bench(source: Path, dest: Path) -> None:
    """Reuse the bench signature of a native build (a property of the binary) rather than
    re-bench; the WebAssembly build has none."""
    if (source / "cache" / "bench").is_dir():
        shutil.copytree(source / "cache" / "bench", dest / "cache" / "bench")


def published_like(root: Path, label_data: Any, bench_from: Path) -> Workspace:
    """A workspace with the same inputs as the ``published_root`` fixture, nothing searched."""
    ws = Workspace(root)
    freeze_pool(ws, label_data.sources(2, 1), PoolConfig(reserve=0))
    freeze_cohort(ws, "pilot", label_data.pilot, terminal=True)
    freeze_cohort(ws, "replication", label_data.replication, terminal=True)
    qualify(ws)
    copy_bench(bench_from, ws.root)
    return ws


def test_ray_publishes_the_local_stage_byte_for_byte(
        ray_cluster: Any, published_root: Path, label_data: Any, tmp_path: Path) -> None:
    """Two Ray workers from an empty cache publish exactly the local run's files, seal included."""
    ws = published_like(tmp_path / "ws", label_data, published_root)
    result = run_label_stage(ws, dataclasses.replace(SMALL, workers=2), OPEN,
                             executor=RayExecutor())
    assert result["run"]["searches"] > 0 and result["run"]["cache_hits"] == 0
    assert tree(ws.stage) == tree(Workspace(published_root).stage)


def _identity(published_root: Path) -> EngineIdentity:
    stage = json.loads((Workspace(published_root).stage / "stage.json").read_text())
    return EngineIdentity(**stage["engine"])


def test_a_worker_refuses_an_engine_that_is_not_the_drivers(
        ray_cluster: Any, published_root: Path) -> None:
    """A worker whose engine answers with another name or options, or whose binary hashes
    otherwise, refuses engine_changed before it searches; the driver gets the Refusal."""
    identity = _identity(published_root)
    position = load_pool(Workspace(published_root).pool).positions[0]
    contract = SMALL.engine.to_json()
    for part in ("path", "build"):
        contract.pop(part)
    task = Task(position, "A", CacheKey(identity.digest, contract, position.fen, "A"))
    pool = RayExecutor()
    record = pool.submit(search_in_worker, SearchJob(SMALL.engine, identity), task).result(60)
    assert record["key"] == task.key.to_json() and len(record["payload"]["lines"]) == 10
    for wrong in (dataclasses.replace(identity, name="Stockfish 0"),
                  dataclasses.replace(identity, options={**identity.options, "Hash": {}}),
                  dataclasses.replace(identity, sha256="sha256:" + "0" * 64)):
        with pytest.raises(Refusal) as caught:
            pool.submit(search_in_worker, SearchJob(SMALL.engine, wrong), task).result(60)
        assert caught.value.codes == ("engine_changed",)
        assert caught.value.reasons[0].subject == "worker"


NODES, HASH_MB = 3_000, 16


def test_sigkill_of_a_ray_driver_then_resume_gives_the_same_digest(
        ray_cluster: Any, tmp_path: Path, make_workspace: Callable[..., Workspace],
        published_root: Path) -> None:
    """The CLI drives Ray workers (joining the cluster), is SIGKILLed at a seeded record count;
    a resume on Ray publishes the uninterrupted local run's files exactly."""
    contract = LabelConfig(engine=EngineConfig(nodes=NODES, hash_mb=HASH_MB), workers=2)
    reference = make_workspace(tmp_path / "reference", puzzles=2, games=3)
    copy_bench(published_root, reference.root)
    expected = run_label_stage(reference, contract, OPEN)
    total = expected["run"]["searches"]
    ws = make_workspace(tmp_path / "killed", puzzles=2, games=3)
    copy_bench(reference.root, ws.root)
    target = int(np.random.default_rng(21).integers(2, total - 2))
    command = [*CLI, "chess", "label", "run", "--work", str(ws.root), "--nodes", str(NODES),
               "--hash-mb", str(HASH_MB), "--workers", "2", "--max-load", "1000000",
               "--executor", "ray", "--ray-address", ray_cluster.address, "--json"]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while _records(ws) < target and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    alive = proc.poll() is None
    os.kill(proc.pid, signal.SIGKILL)
    _, stderr = proc.communicate()
    assert alive, f"the Ray run ended before {target} records: {stderr.decode()[-400:]}"
    killed_at = _records(ws)
    assert target <= killed_at < total and not ws.stage.exists()
    resumed = run_label_stage(ws, contract, OPEN, executor=RayExecutor())
    assert resumed["manifest"] == expected["manifest"]
    assert resumed["run"]["cache_hits"] >= killed_at - 1
    assert tree(ws.stage) == tree(reference.stage)


def _records(ws: Workspace) -> int:
    return len(list(ws.index_dir.glob("*.json"))) if ws.index_dir.exists() else 0
