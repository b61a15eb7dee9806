"""The two-pass label run against the real Stockfish at a reduced node budget (3,000 nodes;
registered: 50,000), on the default build: Stockfish 18 (WebAssembly) where installed,
else Debian's 15.1."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from chess.engine import SimpleEngine, UciProtocol

import chess
from rungbench.chess.engine import EngineConfig
from rungbench.chess.engine_builds import default_build
from rungbench.chess.labels import label as label_module
from rungbench.chess.labels import publish as publish_module
from rungbench.chess.labels.cache import CacheKey, SearchCache, make_record
from rungbench.chess.labels.cohort import freeze_cohort
from rungbench.chess.labels.config import LabelConfig
from rungbench.chess.labels.idle import IdleGate
from rungbench.chess.labels.label import judge, run_label_stage
from rungbench.chess.labels.pool import PoolConfig, freeze_pool, load_pool
from rungbench.chess.labels.publish import verify_stage
from rungbench.chess.labels.qualify import qualify
from rungbench.chess.labels.stage_records import json_schemas, read_stage
from rungbench.chess.position import Lineage, Position, describe
from rungbench.chess.workspace import Workspace
from rungbench.errors import Refusal
from rungbench.evidence.canonical import bytes_digest, digest, loads_canonical

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
        assert doc["engine"] == record["key"]["engine"] and doc["contract"]["nodes"] == NODES
        for item, line in zip(doc["candidates"], record["payload"]["lines"], strict=False):
            move = chess.Move.from_uci(item["uci"])
            assert item["san"] == board.san(move)
            assert (item["score"], item["wdl"], item["search"]) == (
                line["score"], line["wdl"], line["search"])
            assert set(item["search"]) == {"depth", "seldepth", "nodes"}
            assert len(item["score"]) == 1 and set(item["score"]) <= {"cp", "mate"}
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
    fake: Callable[[EngineConfig], str] = lambda engine: "sha256:" + "f" * 64  # noqa: E731
    monkeypatch.setattr(publish_module, "engine_sha256", fake)
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
    with pytest.raises(Refusal) as caught:
        read_stage(ws.stage)
    assert "stage_file_changed" in caught.value.codes


def test_gate_clear_and_search_order(two_runs: dict[str, Any], tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """On the wire: idle gate before engine start, before each uncached search (then Clear
    Hash, then ``go``) and before publication; cached passes get no clear and no search."""
    ws = _copy(two_runs["ws1"], tmp_path / "ws")
    for entry in sorted(ws.index_dir.iterdir())[:3]:
        entry.unlink()
    events: list[str] = []
    check, send_line = IdleGate.check, UciProtocol.send_line
    start = label_module.start_uci

    def spy_check(self: IdleGate, moment: str, *, own: int = 0) -> float:
        events.append(f"gate {moment}")
        return check(self, moment, own=own)

    def spy_send(self: UciProtocol, line: str) -> None:
        if line == "setoption name Clear Hash" or line.startswith(("go ", "ucinewgame")):
            events.append(line.split()[0] if line != "setoption name Clear Hash" else "clear")
        send_line(self, line)

    def spy_start(engine_config: EngineConfig) -> SimpleEngine:
        events.append("start")
        return start(engine_config)

    monkeypatch.setattr(IdleGate, "check", spy_check)
    monkeypatch.setattr(UciProtocol, "send_line", spy_send)
    monkeypatch.setattr(label_module, "start_uci", spy_start)
    result = run_label_stage(ws, config(), OPEN_GATE)
    assert result["run"]["searches"] == 3 and result["manifest"] == two_runs["run1"]["manifest"]
    assert events == ["gate before engine start", "start",
                      "gate before an uncached search", "clear", "ucinewgame", "go",
                      *["gate before an uncached search", "clear", "go"] * 2,
                      "gate before publication"]


def test_busy_host_at_publication_publishes_nothing(two_runs: dict[str, Any],
                                                    tmp_path: Path) -> None:
    """Load rising after the last pass refuses host_busy before publication; no stage appears."""
    ws = _copy(two_runs["ws1"], tmp_path / "ws")
    readings = iter([0.0, 99.0])
    with pytest.raises(Refusal) as caught:
        run_label_stage(ws, config(), IdleGate(max_load=1.0, read_load=lambda: next(readings)))
    assert caught.value.codes == ("host_busy",)
    assert caught.value.reasons[0].subject == "before publication"
    assert not ws.stage.exists() and not list(ws.root.glob(".stage-*"))


def _reseal(record: dict[str, Any]) -> dict[str, Any]:
    record["payload_digest"] = digest(record["payload"])
    return record


def test_disagreeing_pass_b_is_an_exclusion_without_more_search(
        two_runs: dict[str, Any], tmp_path: Path) -> None:
    """A valid pass B whose top two moves are swapped excludes the position with its reasons:
    no third search, no bigger budget, and pass B's list is never published."""
    ws = _copy(two_runs["ws1"], tmp_path / "ws")
    labels = loads_canonical((two_runs["ws1"].stage / "labels.json").read_bytes())
    victim = next(row for row in labels if not row["excluded"])
    record = ws.store.get_json(victim["records"]["B"])
    lines = record["payload"]["lines"]
    lines[0], lines[1] = lines[1], lines[0]
    lines[0]["rank"], lines[1]["rank"] = 1, 2
    key = CacheKey(record["key"]["engine"], record["key"]["contract"], record["key"]["fen"], "B")
    SearchCache(ws).put(key, _reseal(record))
    result = run_label_stage(ws, config(), OPEN_GATE)
    assert result["run"]["searches"] == 0 and result["run"]["cache_hits"] == 2 * len(labels)
    rows = {row["key"]: row for row in loads_canonical((ws.stage / "labels.json").read_bytes())}
    row = rows[victim["key"]]
    assert row["excluded"] and row["label"] is None and row["candidates"] is None
    assert row["reasons"][:2] == ["top_move_changed", "ranks_1_6_changed"]
    assert result["exclusions"]["top_move_changed"] == 1 + two_runs["run1"]["exclusions"][
        "top_move_changed"]
    entries = loads_canonical((ws.stage / "manifest.json").read_bytes())["entries"]
    assert victim["key"] not in [k for k, _ in entries]
    stage = loads_canonical((ws.stage / "stage.json").read_bytes())
    assert stage["contract"]["nodes"] == NODES


def _line(board: chess.Board, move: chess.Move, rank: int, wdl: list[int]) -> dict[str, Any]:
    return {"rank": rank, "uci": move.uci(), "san": board.san(move), "score": {"cp": 50 - rank},
            "wdl": wdl, "forcing": False, "search": {"depth": 9, "seldepth": 12, "nodes": 99},
            "pv": [move.uci()]}


def _records(order_b: list[int]) -> tuple[Position, tuple[dict[str, Any], str],
                                          tuple[dict[str, Any], str]]:
    board = chess.Board()
    moves = sorted(board.legal_moves, key=lambda m: m.uci())[:10]
    wdls = [[100 - 5 * i, 900 + 5 * i, 0] for i in range(10)]
    pos = describe(board, Lineage("t", "sha256:" + "0" * 64, "row 1", "g", "puzzle"), split="s")
    out = []
    for pass_, order in (("A", list(range(10))), ("B", order_b)):
        key = CacheKey("sha256:" + "1" * 64, {"nodes": NODES}, pos.fen, pass_)  # type: ignore[arg-type]
        lines = [_line(board, moves[i], rank, wdls[i]) for rank, i in enumerate(order, start=1)]
        out.append((make_record(key, lines), f"sha256:{pass_ * 64}".lower()))
    return pos, out[0], out[1]


def test_stable_position_presents_pass_a_not_pass_b() -> None:
    """Pass B with ranks 7-10 reordered is stable, and the list is pass A's order, not B's."""
    pos, rec_a, rec_b = _records([0, 1, 2, 3, 4, 5, 9, 8, 7, 6])
    outcome = judge(pos, rec_a, rec_b)
    assert outcome.reasons == () and outcome.label == "ambiguous"
    assert outcome.candidates is not None
    assert [c["uci"] for c in outcome.candidates["candidates"]] == [
        line["uci"] for line in rec_a[0]["payload"]["lines"]]
    assert outcome.candidates["record"] == rec_a[1] and outcome.candidates["pass"] == "A"
    assert outcome.records == (rec_a[1], rec_b[1])


def test_unstable_position_has_no_candidate_list() -> None:
    """Pass B with rank 6 and 7 swapped is excluded as ranks_1_6_changed; nothing presented."""
    pos, rec_a, rec_b = _records([0, 1, 2, 3, 4, 6, 5, 7, 8, 9])
    outcome = judge(pos, rec_a, rec_b)
    assert outcome.reasons == ("ranks_1_6_changed",)
    assert outcome.label is None and outcome.candidates is None


ENGINE_NAMES = {"stockfish-18-wasm": ("Stockfish 18 WASM", None),
                "stockfish-15-debian": ("Stockfish 15.1", 3_467_381)}
"""Each build's ``id name`` and bench signature (the WebAssembly build has no ``bench``)."""


def test_stage_record_names_engine_contract_and_gate(two_runs: dict[str, Any]) -> None:
    """stage.json records the build, Stockfish's name and bench signature, the node budget,
    the gate; the flow report names the engine."""
    stage = loads_canonical((two_runs["ws1"].stage / "stage.json").read_bytes())
    build = default_build()
    assert (stage["engine"]["name"], stage["engine"]["bench_nodes"]) == ENGINE_NAMES[build]
    assert stage["engine"]["build"]["key"] == build
    assert stage["contract"] == {"build": build, "path": str(EngineConfig().file),
                                 "nodes": NODES, "threads": 1, "hash_mb": 256, "multipv": 10}
    flow = loads_canonical((two_runs["ws1"].stage / "flow_report.json").read_bytes())
    assert flow["engine"]["build"] == build
    assert flow["engine"]["is_registered"] is (build == "stockfish-18-wasm")
    assert stage["idle_gate"] == {"metric": "loadavg_1m", "max_load": 1e9,
                                  "own_engines_discounted": True}
    assert stage["passes"] == ["A", "B"] and stage["role"] == "label"
