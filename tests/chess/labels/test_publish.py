"""Manifest and flow report from constructed outcomes (no engine)."""

from __future__ import annotations

from pathlib import Path

import pytest

import chess
from rungbench.chess.engine import EngineIdentity
from rungbench.chess.labels import publish as publish_module
from rungbench.chess.labels.publish import Outcome, flow_report, manifest_document
from rungbench.chess.position import Lineage, describe
from rungbench.chess.workspace import Workspace
from rungbench.evidence.canonical import digest

LINEAGE = Lineage("t", "sha256:" + "0" * 64, "row 1", "game:1", "puzzle")
BOARDS = [chess.Board(), chess.Board("8/5k2/8/3r4/8/4P3/3R4/4K3 w - - 0 50"),
          chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 30")]


def outcome(i: int, label: str | None, reasons: tuple[str, ...] = ()) -> Outcome:
    """A constructed outcome for board ``i``."""
    pos = describe(BOARDS[i], LINEAGE, split="test")
    cands = None if reasons else {"key": pos.key, "n": i}
    return Outcome(pos, label, reasons, ("quiet", "quiet"), ("a", "b"), cands)  # type: ignore[arg-type]


def test_manifest_lists_only_stable_positions_in_order() -> None:
    """An excluded position has no manifest entry; the others keep pool order."""
    outs = [outcome(0, "quiet"), outcome(1, None, ("class_changed",)), outcome(2, "tactical")]
    entries = manifest_document(outs)["entries"]
    assert entries == [[outs[0].position.key, digest({"key": outs[0].position.key, "n": 0})],
                       [outs[2].position.key, digest({"key": outs[2].position.key, "n": 2})]]


def identity(build: str, name: str) -> EngineIdentity:
    """A constructed engine identity of ``build``."""
    return EngineIdentity("sha256:" + "1" * 64, name, None, {},
                          {"key": build, "package": "npm:stockfish", "version": "18.0.8",
                           "files": {}, "network": ["nn-c288c895ea92.nnue"], "sent": {}})


def test_flow_report_names_the_engine_and_whether_it_is_registered() -> None:
    """The flow report names the engine's build; only stockfish-18-wasm is registered."""
    outs = [outcome(0, "quiet")]
    registered = flow_report(outs, identity("stockfish-18-wasm", "Stockfish 18 WASM"))
    assert registered["engine"]["is_registered"] is True
    assert registered["engine"]["network"] == ["nn-c288c895ea92.nnue"]
    other = flow_report(outs, identity("stockfish-15-debian", "Stockfish 15.1"))
    assert other["engine"]["is_registered"] is False
    assert (other["engine"]["name"], other["engine"]["registered_build"]) == (
        "Stockfish 15.1", "stockfish-18-wasm")


def test_flow_report_counts_primary_and_all_reasons_and_cells() -> None:
    """Exclusions count by first reason; every reason is also tallied; cells add up."""
    outs = [outcome(0, "quiet"), outcome(1, None, ("top_move_changed", "ranks_1_6_changed")),
            outcome(2, "tactical")]
    report = flow_report(outs, identity("stockfish-18-wasm", "Stockfish 18 WASM"))
    assert report["labels"] == {"tactical": 1, "ambiguous": 0, "quiet": 1, "unclassified": 0}
    assert report["exclusions"]["top_move_changed"] == 1
    assert report["exclusions"]["ranks_1_6_changed"] == 0
    assert report["exclusion_reasons_all"]["ranks_1_6_changed"] == 1
    assert report["cells"]["test/endgame/white"] == {
        "planned": 1, "excluded": 1, "tactical": 0, "ambiguous": 0, "quiet": 0,
        "unclassified": 0}
    assert (report["labelled"], report["excluded"], report["planned_passes"]) == (2, 1, 6)


def test_crash_while_writing_leaves_no_stage(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure after some stage files are written leaves no stage and no temp directory."""
    ws = Workspace(tmp_path)
    ws.root.mkdir(exist_ok=True)
    files = {"candidates/ab.json": b"1", "manifest.json": b"2", "stage.json": b"3"}
    written: list[str] = []
    real = publish_module.write_atomic

    def failing(path: Path, data: bytes, *, overwrite: bool = False) -> None:
        if len(written) == 2:
            raise OSError("disk full")
        written.append(str(path))
        real(path, data, overwrite=overwrite)

    monkeypatch.setattr(publish_module, "write_atomic", failing)
    with pytest.raises(OSError):
        publish_module._write_stage(ws, files)
    assert len(written) == 2 and not ws.stage.exists()
    assert list(ws.root.iterdir()) == []


def test_leftover_temp_stage_from_a_killed_run_is_cleared(tmp_path: Path) -> None:
    """A temp stage directory left by a SIGKILLed publication is removed; the stage appears
    complete, with exactly the files given."""
    ws = Workspace(tmp_path)
    leftover = tmp_path / ".label-stage.tmp-99999"
    (leftover / "candidates").mkdir(parents=True)
    (leftover / "manifest.json").write_bytes(b"partial")
    files = {"candidates/ab.json": b"1", "manifest.json": b"2", "stage.json": b"3"}
    publish_module._write_stage(ws, files)
    assert not leftover.exists()
    assert sorted(p.relative_to(ws.stage).as_posix() for p in ws.stage.rglob("*.json")) == sorted(
        [*files, "SEAL.json"])
    assert (ws.stage / "manifest.json").read_bytes() == b"2"
