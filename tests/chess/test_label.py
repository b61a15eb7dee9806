"""The two-pass label run against the real Stockfish at a reduced node budget."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import chess
from rungbench.chess import publish as publish_module
from rungbench.chess.cohort import freeze_cohort
from rungbench.chess.engine import EngineConfig
from rungbench.chess.idle import IdleGate
from rungbench.chess.label import LabelConfig, run_label_stage
from rungbench.chess.pool import PoolConfig, freeze_pool, load_pool
from rungbench.chess.publish import verify_stage
from rungbench.chess.qualify import qualify
from rungbench.chess.stage_records import json_schemas, read_stage
from rungbench.chess.workspace import Workspace
from rungbench.errors import IntegrityError, Refusal
from rungbench.evidence.canonical import bytes_digest, loads_canonical

NODES = 3_000
OPEN_GATE = IdleGate(max_load=1e9)


def config(workers: int = 1) -> LabelConfig:
    """The test contract: real Stockfish, reduced budget."""
    return LabelConfig(engine=EngineConfig(nodes=NODES), workers=workers)


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory, label_data: Any) -> dict[str, Any]:
    """Label one pool twice from clean caches: once with 1 worker, once with 2."""
    out: dict[str, Any] = {}
    for workers in (1, 2):
        ws = Workspace(tmp_path_factory.mktemp(f"w{workers}"))
        freeze_pool(ws, label_data.sources(2, 2), PoolConfig(reserve=0))
        freeze_cohort(ws, "pilot", label_data.pilot, terminal=True)
        freeze_cohort(ws, "replication", label_data.replication, terminal=True)
        qualify(ws)
        out[f"ws{workers}"] = ws
        out[f"run{workers}"] = run_label_stage(ws, config(workers), OPEN_GATE)
    return out


def test_clean_runs_give_byte_identical_manifests(two_runs: dict[str, Any]) -> None:
    """Two clean-cache runs (1 and 2 workers) publish byte-identical manifests and reports."""
    a, b = two_runs["ws1"].stage, two_runs["ws2"].stage
    for name in ("manifest.json", "flow_report.json", "labels.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes()
    assert two_runs["run1"]["manifest"] == bytes_digest((a / "manifest.json").read_bytes())
    assert two_runs["run1"]["run"]["searches"] == 2 * len(load_pool(two_runs["ws1"].pool).positions)


def test_every_position_is_a_label_or_an_exclusion(two_runs: dict[str, Any]) -> None:
    """The flow report accounts for every planned pass; manifest lists the stable ones in order."""
    ws: Workspace = two_runs["ws1"]
    pool = load_pool(ws.pool)
    report = loads_canonical((ws.stage / "flow_report.json").read_bytes())
    assert report["planned_positions"] == len(pool.positions)
    assert report["labelled"] + report["excluded"] == len(pool.positions)
    assert sum(report["labels"].values()) == report["labelled"]
    assert sum(c["planned"] for c in report["cells"].values()) == len(pool.positions)
    manifest = loads_canonical((ws.stage / "manifest.json").read_bytes())
    keys = [k for k, _ in manifest["entries"]]
    labels = loads_canonical((ws.stage / "labels.json").read_bytes())
    stable = {row["key"] for row in labels if not row["excluded"]}
    assert keys == [p.key for p in pool.positions if p.key in stable]
    assert len(keys) == report["labelled"]
    verify_stage(ws)


def test_candidate_list_is_pass_a_ranks_1_to_10(two_runs: dict[str, Any]) -> None:
    """Each candidate list holds pass A's ten lines with legal full PVs and its own digest."""
    ws: Workspace = two_runs["ws1"]
    manifest = loads_canonical((ws.stage / "manifest.json").read_bytes())
    for key, cand_digest in manifest["entries"]:
        data = (ws.stage / "candidates" / f"{cand_digest[7:]}.json").read_bytes()
        assert bytes_digest(data) == cand_digest
        doc = loads_canonical(data)
        assert doc["key"] == key and doc["pass"] == "A"
        record = ws.store.get_json(doc["record"])
        assert record["key"]["pass"] == "A"
        assert [c["uci"] for c in doc["candidates"]] == [
            line["uci"] for line in record["payload"]["lines"][:10]]
        board = chess.Board(doc["fen"])
        for item in doc["candidates"]:
            replay = board.copy()
            for uci in item["pv"]:
                move = chess.Move.from_uci(uci)
                assert move in replay.legal_moves
                replay.push(move)
            assert item["expectation"] == (2 * item["wdl"][0] + item["wdl"][1]) / 2000


def test_rerun_reuses_every_record(two_runs: dict[str, Any]) -> None:
    """A second run over a complete cache runs no search and reproduces the manifest."""
    again = run_label_stage(two_runs["ws1"], config(), OPEN_GATE)
    assert again["run"]["searches"] == 0 and again["manifest"] == two_runs["run1"]["manifest"]


def _copy(ws: Workspace, dest: Path) -> Workspace:
    shutil.copytree(ws.root, dest)
    shutil.rmtree(dest / "label-stage")
    return Workspace(dest)


def test_flipped_byte_record_is_recomputed_not_reused(two_runs: dict[str, Any],
                                                      tmp_path: Path) -> None:
    """A flipped byte in one cache record is rejected and recomputed; the manifest is unchanged."""
    ws = _copy(two_runs["ws1"], tmp_path / "ws")
    record_digest = loads_canonical(
        (ws.stage.parent / "cache" / "index").iterdir().__next__().read_bytes())["record"]
    path = ws.store.path_for(record_digest)
    os.chmod(path, 0o644)
    data = bytearray(path.read_bytes())
    data[10] ^= 0x20
    path.write_bytes(bytes(data))
    result = run_label_stage(ws, config(), OPEN_GATE)
    assert result["run"]["searches"] == 1 and sum(result["run"]["rejected"].values()) == 1
    assert (ws.quarantine_dir / f"object-{record_digest[7:]}").read_bytes() == bytes(data)
    assert result["manifest"] == two_runs["run1"]["manifest"]


def test_busy_host_mid_run_refuses_and_publishes_nothing(two_runs: dict[str, Any],
                                                         tmp_path: Path) -> None:
    """The idle gate runs before every uncached search: load rising mid-run stops the stage."""
    ws = _copy(two_runs["ws1"], tmp_path / "ws")
    shutil.rmtree(ws.root / "cache" / "index")
    readings = iter([0.0, 0.0, 0.0] + [99.0] * 1000)
    gate = IdleGate(max_load=1.0, read_load=lambda: next(readings))
    with pytest.raises(Refusal) as caught:
        run_label_stage(ws, config(), gate)
    assert caught.value.codes[0] == "host_busy"
    assert caught.value.reasons[0].subject == "before an uncached search"
    assert not ws.stage.exists()
    resumed = run_label_stage(ws, config(), OPEN_GATE)
    assert resumed["run"]["cache_hits"] == 2 and resumed["manifest"] == two_runs["run1"]["manifest"]


def test_changed_engine_binary_blocks_publication(two_runs: dict[str, Any], tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """If the binary no longer hashes as identified, the stage directory never appears."""
    ws = _copy(two_runs["ws1"], tmp_path / "ws")
    fake: Callable[[Path], str] = lambda path: "sha256:" + "f" * 64  # noqa: E731
    monkeypatch.setattr(publish_module, "binary_digest", fake)
    with pytest.raises(Refusal) as caught:
        run_label_stage(ws, config(), OPEN_GATE)
    assert caught.value.codes == ("engine_binary_changed",)
    assert not ws.stage.exists()


def test_stage_reads_back_typed_and_verified(two_runs: dict[str, Any]) -> None:
    """read_stage returns schema-valid lists in manifest order, ten candidates each."""
    manifest, lists = read_stage(two_runs["ws1"].stage)
    assert list(lists) == [key for key, _ in manifest.entries]
    assert all(len(c.candidates) == 10 and c.pass_ == "A" for c in lists.values())
    assert set(json_schemas()) == {"candidates", "manifest"}


def test_tampered_stage_files_are_detected(two_runs: dict[str, Any], tmp_path: Path) -> None:
    """Editing labels.json or a candidate list after publication is detected."""
    dest = tmp_path / "copy"
    shutil.copytree(two_runs["ws1"].root, dest)
    ws = Workspace(dest)
    labels = ws.stage / "labels.json"
    labels.write_bytes(labels.read_bytes().replace(b'"excluded":false', b'"excluded":true', 1))
    with pytest.raises(Refusal) as caught:
        verify_stage(ws)
    assert caught.value.codes == ("stage_file_changed",)
    victim = next((ws.stage / "candidates").iterdir())
    victim.write_bytes(victim.read_bytes().replace(b'"pass":"A"', b'"pass":"B"'))
    with pytest.raises(IntegrityError):
        read_stage(ws.stage)
