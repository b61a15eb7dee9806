"""The engine contract against the real Debian Stockfish (the ``stockfish-15-debian`` build):
identity, options, repeatability. tests/chess/test_engine_builds.py holds Stockfish 18's."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import chess.engine
import pytest

import chess
from rungbench.chess import engine as engine_module
from rungbench.chess.engine import (
    DEFAULT_ENGINE,
    EngineConfig,
    EngineError,
    bench_signature,
    identify,
    line_json,
    lines_json,
    search,
    start_uci,
)
from rungbench.chess.workspace import Workspace, read_json

ITALIAN = "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4"
DEBIAN = "stockfish-15-debian"
CONFIG = EngineConfig(build=DEBIAN, nodes=3_000)


@pytest.fixture(scope="module")
def engine() -> Iterator[chess.engine.SimpleEngine]:
    """One started Stockfish with the registered options."""
    started = start_uci(CONFIG)
    yield started
    started.quit()


def test_identity_records_binary_name_bench_and_options(
        engine: chess.engine.SimpleEngine, tmp_path: Path) -> None:
    """Stockfish 15.1's identity: sha256 of the file, its id name, bench 3467381, options."""
    ident = identify(engine, CONFIG, Workspace(tmp_path))
    assert ident.sha256 == "sha256:" + hashlib.sha256(DEFAULT_ENGINE.read_bytes()).hexdigest()
    assert ident.name == "Stockfish 15.1"
    assert ident.bench_nodes == 3_467_381
    assert ident.build["key"] == DEBIAN and ident.build["package"] == "debian:stockfish"
    assert ident.build["files"] == {"stockfish": ident.sha256}
    assert ident.build["network"] == ["nn-ad9b42354671.nnue"]
    opts = ident.options
    assert (opts["Threads"]["value"], opts["Hash"]["value"]) == (1, 256)
    assert opts["UCI_ShowWDL"]["value"] is True and opts["MultiPV"]["value"] == 10
    assert opts["Clear Hash"] == {"type": "button", "default": None}
    assert ident.digest.startswith("sha256:")


def test_identity_options_are_the_values_actually_sent(
        engine: chess.engine.SimpleEngine, tmp_path: Path) -> None:
    """After a search, every option python-chess has sent holds the value the identity records
    (python-chess switches UCI_AnalyseMode and Ponder itself; the identity must agree)."""
    board = chess.Board(ITALIAN)
    search(engine, board, CONFIG)
    ident = identify(engine, CONFIG, Workspace(tmp_path))
    sent = {name: value for name, value in engine.protocol.config.items()
            if ident.options[name]["type"] != "button"}
    assert {"Threads", "Hash", "UCI_ShowWDL", "UCI_AnalyseMode", "MultiPV", "Ponder"} <= set(sent)
    assert {name: ident.options[name]["value"] for name in sent} == sent


def test_cleared_hash_search_repeats_bit_for_bit(engine: chess.engine.SimpleEngine) -> None:
    """Two node-limited searches of one FEN, each after Clear Hash, give identical lines."""
    board = chess.Board(ITALIAN)
    first = lines_json(board, search(engine, board, CONFIG))
    second = lines_json(board, search(engine, board, CONFIG))
    assert first == second
    assert len(first) == 10 and len({line["uci"] for line in first}) == 10
    assert all(sum(line["wdl"]) == 1000 for line in first)
    assert all(line["pv"][0] == line["uci"] for line in first)


def test_line_without_wdl_is_refused() -> None:
    """A line lacking the engine's WDL report is an error; it is never derived from cp."""
    board = chess.Board()
    info: chess.engine.InfoDict = {"pv": [chess.Move.from_uci("e2e4")],
                                   "score": chess.engine.PovScore(chess.engine.Cp(30),
                                                                  chess.WHITE)}
    with pytest.raises(EngineError, match="wdl"):
        line_json(board, info, 1)


def test_missing_binary_is_an_engine_error(tmp_path: Path) -> None:
    """Starting a binary that does not exist raises EngineError naming it."""
    with pytest.raises(EngineError, match="cannot start"):
        start_uci(EngineConfig(build=DEBIAN, path=tmp_path / "nope"))


def test_wdl_is_the_engines_report_from_the_root_players_view() -> None:
    """Black to move: the recorded WDL is the engine's own triple turned to Black's view,
    even when the centipawn score points the other way (WDL is never derived from cp)."""
    board = chess.Board("rnbqkbnr/pppp1ppp/8/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2")
    info: chess.engine.InfoDict = {
        "pv": [chess.Move.from_uci("b8c6"), chess.Move.from_uci("f1b5")],
        "score": chess.engine.PovScore(chess.engine.Cp(900), chess.WHITE),
        "wdl": chess.engine.PovWdl(chess.engine.Wdl(100, 200, 700), chess.WHITE),
        "depth": 9, "seldepth": 12, "nodes": 3000}
    line = line_json(board, info, 1)
    assert line["wdl"] == [700, 200, 100]
    assert line["score"] == {"cp": -900}
    assert (line["san"], line["forcing"], line["pv"]) == ("Nc6", False, ["b8c6", "f1b5"])
    assert line["search"] == {"depth": 9, "seldepth": 12, "nodes": 3000}


def test_default_contract_is_the_registered_one() -> None:
    """50,000 nodes, one thread, 256 MB hash, MultiPV 10 and WDL reporting by default;
    UCI_AnalyseMode is sent only to an engine declaring it (Stockfish 18 does not)."""
    config = EngineConfig()
    assert (config.nodes, config.threads, config.hash_mb, config.multipv) == (50_000, 1, 256, 10)
    assert config.uci_options() == {"Threads": 1, "Hash": 256, "UCI_ShowWDL": True,
                                    "UCI_AnalyseMode": True}
    assert config.to_json()["nodes"] == 50_000
    assert "UCI_AnalyseMode" not in config.uci_options({"Threads", "Hash", "UCI_ShowWDL"})


def test_bench_record_is_rechecked_not_trusted(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A bench record naming another binary or holding a malformed count is re-measured."""
    calls: list[Path] = []

    def fake_bench(path: Path) -> int:
        calls.append(path)
        return 3_467_381

    monkeypatch.setattr(engine_module, "run_bench", fake_bench)
    monkeypatch.setattr(engine_module, "_BENCH_MEMO", {})
    ws = Workspace(tmp_path)
    sha = "sha256:" + "a" * 64
    record = ws.root / "cache" / "bench" / f"{'a' * 64}.json"
    record.parent.mkdir(parents=True)
    record.write_text('{"bench_nodes":"many","sha256":"' + sha + '"}')
    assert bench_signature(DEFAULT_ENGINE, sha, ws) == 3_467_381 and len(calls) == 1
    assert read_json(record) == {"bench_nodes": 3_467_381, "sha256": sha}
    monkeypatch.setattr(engine_module, "_BENCH_MEMO", {})
    assert bench_signature(DEFAULT_ENGINE, sha, ws) == 3_467_381 and len(calls) == 1


SILENT_ENGINE = """#!{python}
import sys
for line in sys.stdin:
    cmd = line.strip()
    if cmd == "uci":
        print("id name Silent 1")
        for name in ("Threads", "Hash", "MultiPV"):
            print(f"option name {{name}} type spin default 1 min 1 max 512")
        for name in ("UCI_ShowWDL", "UCI_AnalyseMode"):
            print(f"option name {{name}} type check default false")
        print("option name Clear Hash type button")
        print("uciok")
    elif cmd == "isready":
        print("readyok")
    elif cmd == "quit":
        break
    sys.stdout.flush()
"""
"""A UCI engine that handshakes, then never answers ``go`` (a hung search)."""

HANG_SNIPPET = """
import sys
from pathlib import Path
import chess
from rungbench.chess import engine as m
m.SEARCH_TIMEOUT_S = 1.0
m.COMMAND_TIMEOUT_S = 2.0
config = m.EngineConfig(build="stockfish-15-debian", path=Path(sys.argv[1]), nodes=1000,
                        hash_mb=16)
engine = m.start_uci(config)
try:
    m.search(engine, chess.Board(), config)
except m.EngineError as exc:
    print("ENGINE_ERROR", exc)
finally:
    engine.close()
"""


def test_silent_engine_search_times_out_as_engine_error(tmp_path: Path) -> None:
    """A search the engine never finishes raises EngineError naming the engine within the
    registered timeout; it never hangs."""
    import subprocess
    import sys

    fake = tmp_path / "silent-engine"
    fake.write_text(SILENT_ENGINE.format(python=sys.executable))
    fake.chmod(0o755)
    done = subprocess.run([sys.executable, "-c", HANG_SNIPPET, str(fake)], capture_output=True,
                          text=True, timeout=30)
    assert "ENGINE_ERROR" in done.stdout, done.stderr
    assert str(fake) in done.stdout and "timed out" in done.stdout


def test_hash_above_the_engines_maximum_is_refused_before_configure(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Hash above the maximum the engine declares in its uci handshake is an EngineError
    naming --hash-mb; no option is sent and the engine process is stopped."""
    sent: list[object] = []
    monkeypatch.setattr(chess.engine.SimpleEngine, "configure",
                        lambda self, options: sent.append(options))
    with pytest.raises(EngineError, match="--hash-mb") as caught:
        start_uci(EngineConfig(build=DEBIAN, hash_mb=33_554_433))
    assert "33554432" in str(caught.value) and sent == []


def test_hash_above_physical_memory_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hash within the engine's range but above this host's memory is refused, naming
    --hash-mb, before the engine allocates it."""
    monkeypatch.setattr(engine_module, "physical_memory_mb", lambda: 1024)
    with pytest.raises(EngineError, match="--hash-mb"):
        start_uci(EngineConfig(build=DEBIAN, hash_mb=2048))
