"""The leakage gate: every refusal has its own reason code and comes before any engine starts."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import chess.engine
import pytest

import chess
from rungbench.chess import engine as engine_module
from rungbench.chess.engine import EngineConfig
from rungbench.chess.labels.cohort import freeze_cohort, load_cohort
from rungbench.chess.labels.config import LabelConfig
from rungbench.chess.labels.idle import IdleGate
from rungbench.chess.labels.label import exclusive, run_label_stage
from rungbench.chess.labels.pool import PoolConfig, PoolSource, freeze_pool, load_pool
from rungbench.chess.labels.qualify import preflight, qualify
from rungbench.chess.workspace import Workspace
from rungbench.errors import Refusal
from rungbench.evidence.paths import resolve_portable


@pytest.fixture
def engine_starts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record (and block) every attempt to construct an engine process."""
    starts: list[str] = []

    def popen_uci(*args: Any, **kwargs: Any) -> None:
        starts.append(f"uci {args}")
        raise AssertionError("an engine process was constructed")

    def run(*args: Any, **kwargs: Any) -> None:
        starts.append(f"subprocess {args}")
        raise AssertionError("a subprocess was started")

    monkeypatch.setattr(chess.engine.SimpleEngine, "popen_uci", popen_uci)
    monkeypatch.setattr(engine_module.subprocess, "run", run)
    return starts


def refreeze(ws: Workspace, name: str, paths: list[Path], *, terminal: bool) -> None:
    """Freeze cohort ``name`` anew; a terminal cohort is never replaced, so it is removed
    first (the test plays a user who deleted it)."""
    ws.cohort(name).unlink(missing_ok=True)
    freeze_cohort(ws, name, paths, terminal=terminal)


def stockfish_children() -> list[int]:
    """Return pids of running engine processes (a ``stockfish`` executable, or ``node``
    running a ``stockfish-*.js`` build) whose parent is this test process; other children
    (a Ray cluster another test started in this worker) are not engines and do not count."""
    mine = str(os.getpid())
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text().split()
                argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            names = [os.path.basename(a.decode(errors="replace")) for a in argv[:2]]
            if stat[3] == mine and any("stockfish" in name for name in names):
                found.append(int(entry))
    return found


def refused(ws: Workspace, starts: list[str]) -> set[str]:
    """Run preflight and the label run; both must refuse with the same codes, no engine."""
    with pytest.raises(Refusal) as pre:
        preflight(ws)
    config = LabelConfig(engine=EngineConfig(nodes=1000))
    with pytest.raises(Refusal) as run:
        run_label_stage(ws, config, IdleGate(max_load=1e9))
    assert starts == [] and stockfish_children() == []
    assert pre.value.codes == run.value.codes
    assert not ws.stage.exists()
    return set(pre.value.codes)


def test_qualified_workspace_passes_without_engine(
        tmp_path: Path, make_workspace: Callable[..., Workspace], engine_starts: list[str]) -> None:
    """A cleared qualification of a terminal pair passes preflight and opens no engine."""
    ws = make_workspace(tmp_path)
    summary = preflight(ws)
    assert summary["cleared"] is True and summary["engine_opened"] is False
    assert engine_starts == []


def test_missing_cohort(tmp_path: Path, make_workspace: Callable[..., Workspace],
                        engine_starts: list[str]) -> None:
    """An absent replication cohort refuses with cohort_absent."""
    ws = make_workspace(tmp_path)
    ws.cohort("replication").unlink()
    assert "cohort_absent" in refused(ws, engine_starts)


def test_cohort_not_terminal(tmp_path: Path, make_workspace: Callable[..., Workspace],
                             label_data: Any, engine_starts: list[str]) -> None:
    """A live (non-terminal) cohort refuses with cohort_not_terminal, also at qualify."""
    ws = make_workspace(tmp_path, qualified=False)
    refreeze(ws, "replication", label_data.replication, terminal=False)
    with pytest.raises(Refusal) as caught:
        qualify(ws)
    assert caught.value.codes == ("cohort_not_terminal",)
    assert "cohort_not_terminal" in refused(ws, engine_starts)


def test_cohort_changed_after_qualification(
        tmp_path: Path, make_workspace: Callable[..., Workspace],
        label_data: Any, engine_starts: list[str]) -> None:
    """Re-freezing a cohort with more games after qualifying refuses with cohort_changed."""
    ws = make_workspace(tmp_path)
    refreeze(ws, "replication", [*label_data.replication, label_data.pilot[1]], terminal=True)
    codes = refused(ws, engine_starts)
    assert "cohort_changed" in codes and "pool_changed" not in codes


def test_cohort_source_grew(tmp_path: Path, make_workspace: Callable[..., Workspace],
                            label_data: Any, engine_starts: list[str]) -> None:
    """A cohort whose source transcript changed since freezing refuses with cohort_stale."""
    copy = tmp_path / "output.txt"
    shutil.copy(label_data.replication[0], copy)
    ws = make_workspace(tmp_path / "ws", qualified=False)
    refreeze(ws, "replication", [copy], terminal=True)
    qualify(ws)
    with copy.open("a") as fh:
        fh.write("make_move e2e4\n")
    assert "cohort_stale" in refused(ws, engine_starts)


def test_pool_changed(tmp_path: Path, make_workspace: Callable[..., Workspace],
                      label_data: Any, engine_starts: list[str]) -> None:
    """Re-freezing the pool after qualification refuses with pool_changed."""
    ws = make_workspace(tmp_path)
    freeze_pool(ws, label_data.sources(3, 2), PoolConfig(reserve=0), force=True)
    codes = refused(ws, engine_starts)
    assert "pool_changed" in codes and "cohort_changed" not in codes


def _cohort_with_position(tmp_path: Path, ws: Workspace, board: chess.Board) -> None:
    """Freeze 'replication' as the transcript plus a PGN reaching ``board``."""
    pgn = tmp_path / "leak.pgn"
    pgn.write_text(f'[FEN "{board.fen()}"]\n[SetUp "1"]\n[Result "*"]\n\n*\n')
    transcript = Path(load_cohort_sources(ws)[0])
    refreeze(ws, "replication", [transcript, pgn], terminal=True)


def load_cohort_sources(ws: Workspace) -> list[str]:
    """Return the source paths of the frozen replication cohort."""
    return [str(resolve_portable(s["path"]))
            for s in load_cohort(ws.cohort("replication"))[1]["sources"]]


def test_pool_position_in_cohort_exact(tmp_path: Path, make_workspace: Callable[..., Workspace],
                                       engine_starts: list[str]) -> None:
    """A pool position reached in a cohort game refuses with pool_position_in_cohort."""
    ws = make_workspace(tmp_path / "ws", qualified=False)
    target = load_pool(ws.pool).positions[0]
    _cohort_with_position(tmp_path, ws, chess.Board(target.fen))
    with pytest.raises(Refusal) as caught:
        qualify(ws)
    assert caught.value.codes == ("pool_position_in_cohort",)
    assert caught.value.reasons[0].subject == target.key
    assert ws.qualification.is_file()
    assert refused(ws, engine_starts) == {"pool_position_in_cohort"}


def test_pool_position_in_cohort_mirrored(tmp_path: Path, make_workspace: Callable[..., Workspace],
                                          engine_starts: list[str]) -> None:
    """A cohort reaching only the colour mirror of a pool position refuses as a family hit."""
    ws = make_workspace(tmp_path / "ws", qualified=False)
    target = load_pool(ws.pool).positions[1]
    _cohort_with_position(tmp_path, ws, chess.Board(target.fen).mirror())
    with pytest.raises(Refusal):
        qualify(ws)
    assert refused(ws, engine_starts) == {"pool_family_in_cohort"}


def test_tampered_qualification(tmp_path: Path, make_workspace: Callable[..., Workspace],
                                engine_starts: list[str]) -> None:
    """A persisted qualification that is not the fresh rebuild byte for byte refuses."""
    ws = make_workspace(tmp_path)
    ws.qualification.write_bytes(ws.qualification.read_bytes().replace(b'"cleared":true',
                                                                       b'"cleared": true'))
    assert refused(ws, engine_starts) == {"qualification_mismatch"}


def test_missing_qualification_and_pool(tmp_path: Path, engine_starts: list[str]) -> None:
    """An empty workspace refuses with pool_absent, cohort_absent and qualification_absent."""
    codes = refused(Workspace(tmp_path), engine_starts)
    assert codes == {"pool_absent", "cohort_absent", "qualification_absent"}


def test_busy_host_refuses_before_engine_start(
        tmp_path: Path, make_workspace: Callable[..., Workspace], engine_starts: list[str]) -> None:
    """With a qualified workspace but a busy host, the run refuses host_busy, no engine."""
    ws = make_workspace(tmp_path)
    gate = IdleGate(max_load=1.0, read_load=lambda: 5.0)
    with pytest.raises(Refusal) as caught:
        run_label_stage(ws, LabelConfig(engine=EngineConfig(nodes=1000)), gate)
    assert caught.value.codes == ("host_busy",)
    assert caught.value.reasons[0].subject == "before engine start"
    assert engine_starts == [] and stockfish_children() == []



def test_second_concurrent_run_is_refused(
        tmp_path: Path, make_workspace: Callable[..., Workspace], engine_starts: list[str]) -> None:
    """While one run holds the workspace lock, another refuses workspace_busy, no engine."""
    ws = make_workspace(tmp_path)
    with exclusive(ws), pytest.raises(Refusal) as caught:
        run_label_stage(ws, LabelConfig(engine=EngineConfig(nodes=1000)), IdleGate(max_load=1e9))
    assert caught.value.codes == ("workspace_busy",)
    assert engine_starts == []


def test_pool_source_changed_after_freeze(tmp_path: Path, label_data: Any,
                                          engine_starts: list[str]) -> None:
    """Editing a pool source file after the freeze refuses with pool_source_stale, no engine."""
    src = tmp_path / "puzzles.csv"
    shutil.copy(label_data.puzzles, src)
    ws = Workspace(tmp_path / "ws")
    freeze_pool(ws, [PoolSource("lichess_puzzles", src, 3)], PoolConfig(reserve=0))
    freeze_cohort(ws, "pilot", label_data.pilot, terminal=True)
    freeze_cohort(ws, "replication", label_data.replication, terminal=True)
    qualify(ws)
    preflight(ws)
    src.write_bytes(src.read_bytes() + b"\n")
    assert refused(ws, engine_starts) == {"pool_source_stale"}


def test_cohort_set_different_from_the_qualified_one(
        tmp_path: Path, make_workspace: Callable[..., Workspace], engine_starts: list[str]) -> None:
    """A qualification built for (pilot, replication) does not clear a run naming only pilot."""
    ws = make_workspace(tmp_path)
    with pytest.raises(Refusal) as caught:
        preflight(ws, ("pilot",))
    assert "cohort_set_different" in caught.value.codes
    assert engine_starts == []


def test_mirrored_overlap_alone_is_not_cleared(tmp_path: Path,
                                               make_workspace: Callable[..., Workspace]) -> None:
    """A qualification with only a colour-mirror hit records cleared false, one mirrored hit."""
    ws = make_workspace(tmp_path / "ws", qualified=False)
    target = load_pool(ws.pool).positions[1]
    _cohort_with_position(tmp_path, ws, chess.Board(target.fen).mirror())
    with pytest.raises(Refusal):
        qualify(ws)
    document = json.loads(ws.qualification.read_bytes())
    assert document["overlap"]["exact"] == [] and len(document["overlap"]["mirrored"]) == 1
    assert document["cleared"] is False
