"""The label stage's engine choice: Stockfish 18 (WebAssembly) publishes deterministically
with its identity in the stage and every cache key; one workspace never mixes engines
(``engine_mismatch``). Reduced budget: 2,000 nodes on a 16 MB hash (registered: 50,000 nodes,
256 MB)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tests.chess.conftest import LabelData, MakeWorkspace

from rungbench.chess.engine import EngineConfig
from rungbench.chess.engine_builds import FALLBACK_BUILD, REGISTERED_BUILD
from rungbench.chess.labels import label as label_module
from rungbench.chess.labels.cohort import freeze_cohort
from rungbench.chess.labels.config import LabelConfig
from rungbench.chess.labels.idle import IdleGate
from rungbench.chess.labels.label import run_label_stage
from rungbench.chess.labels.pool import PoolConfig, freeze_pool
from rungbench.chess.labels.qualify import qualify
from rungbench.chess.workspace import Workspace
from rungbench.errors import Refusal
from rungbench.evidence.canonical import loads_canonical

OPEN = IdleGate(max_load=1e9)


def contract(build: str, hash_mb: int = 16) -> LabelConfig:
    """The reduced contract on ``build``."""
    return LabelConfig(engine=EngineConfig(build=build, nodes=2_000, hash_mb=hash_mb))


def _stage_files(ws: Workspace) -> dict[str, bytes]:
    return {p.relative_to(ws.stage).as_posix(): p.read_bytes()
            for p in sorted(ws.stage.rglob("*")) if p.is_file() and p.name != "stage.json"}


def test_two_clean_runs_on_stockfish_18_publish_the_same_stage(
        tmp_path: Path, make_workspace: MakeWorkspace) -> None:
    """Two clean-cache runs on Stockfish 18 give the same manifest digest and byte-identical
    stage files; stage.json and the flow report name Stockfish 18, the registered build."""
    runs = []
    for name in ("first", "second"):
        ws = make_workspace(tmp_path / name, puzzles=2, games=2)
        runs.append((ws, run_label_stage(ws, contract(REGISTERED_BUILD), OPEN)))
    (ws_a, run_a), (ws_b, run_b) = runs
    assert run_a["manifest"] == run_b["manifest"] and run_a["run"]["searches"] > 0
    assert _stage_files(ws_a) == _stage_files(ws_b)
    stage = loads_canonical((ws_a.stage / "stage.json").read_bytes())
    assert stage["engine"]["name"] == "Stockfish 18 WASM"
    assert stage["engine"]["build"]["key"] == REGISTERED_BUILD
    assert stage["engine"]["build"]["version"] == "18.0.8"
    assert stage["engine_runtime"].startswith("node v")
    flow = run_a["flow_report"]
    assert flow["engine"]["is_registered"] is True
    assert flow["engine"]["network"] == ["nn-c288c895ea92.nnue", "nn-37f18f62d772.nnue"]


@pytest.fixture(scope="module")
def stockfish18_root(tmp_path_factory: pytest.TempPathFactory, label_data: LabelData) -> Path:
    """A workspace (2 puzzles, 1 game line) published by Stockfish 18."""
    ws = Workspace(tmp_path_factory.mktemp("sf18") / "ws")
    freeze_pool(ws, label_data.sources(2, 1), PoolConfig(reserve=0))
    freeze_cohort(ws, "pilot", label_data.pilot, terminal=True)
    freeze_cohort(ws, "replication", label_data.replication, terminal=True)
    qualify(ws)
    run_label_stage(ws, contract(REGISTERED_BUILD), OPEN)
    return ws.root


def _copy(root: Path, dest: Path) -> Workspace:
    shutil.copytree(root, dest)
    return Workspace(dest)


def _no_search(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    searched: list[str] = []
    start = label_module.start_search

    def spy(*args: object, **kwargs: object) -> object:
        searched.append("search")
        return start(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(label_module, "start_search", spy)
    return searched


def test_resume_with_another_engine_over_a_published_stage_is_refused(
        stockfish18_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A re-run with Debian's 15.1 over a stage Stockfish 18 published refuses
    engine_mismatch, naming both engines, before any search."""
    ws = _copy(stockfish18_root, tmp_path / "ws")
    searched = _no_search(monkeypatch)
    with pytest.raises(Refusal) as caught:
        run_label_stage(ws, contract(FALLBACK_BUILD), OPEN)
    assert caught.value.codes == ("engine_mismatch",)
    detail = caught.value.reasons[0].detail
    assert "Stockfish 18 WASM" in detail and "Stockfish 15.1" in detail
    assert caught.value.reasons[0].data["recorded"]["build"] == REGISTERED_BUILD
    assert searched == []


def test_resume_of_a_partial_cache_with_another_engine_is_refused(
        stockfish18_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a published stage, the cache's engine pin refuses another engine
    (engine_mismatch) before any search; the same engine resumes every record."""
    ws = _copy(stockfish18_root, tmp_path / "ws")
    shutil.rmtree(ws.stage)
    searched = _no_search(monkeypatch)
    with pytest.raises(Refusal) as caught:
        run_label_stage(ws, contract(FALLBACK_BUILD), OPEN)
    assert caught.value.codes == ("engine_mismatch",)
    assert searched == [] and not ws.stage.exists()
    resumed = run_label_stage(ws, contract(REGISTERED_BUILD), OPEN)
    assert resumed["run"]["searches"] == 0 and searched == []


def test_another_hash_size_is_the_same_engine(stockfish18_root: Path, tmp_path: Path) -> None:
    """A changed contract (Hash 32 MB) is not another engine: no engine_mismatch; its
    searches get cache keys of their own and publish."""
    ws = _copy(stockfish18_root, tmp_path / "ws")
    shutil.rmtree(ws.stage)
    result = run_label_stage(ws, contract(REGISTERED_BUILD, hash_mb=32), OPEN)
    assert result["run"]["cache_hits"] == 0 and result["run"]["searches"] > 0
