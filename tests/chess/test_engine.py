"""The engine contract against the real Debian Stockfish: identity, options, repeatability."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import chess.engine
import pytest

import chess
from rungbench.chess.engine import (
    DEFAULT_ENGINE,
    EngineConfig,
    EngineError,
    identify,
    line_json,
    lines_json,
    search,
    start_uci,
)
from rungbench.chess.workspace import Workspace

ITALIAN = "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4"
CONFIG = EngineConfig(nodes=3_000)


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
    opts = ident.options
    assert (opts["Threads"]["value"], opts["Hash"]["value"]) == (1, 256)
    assert opts["UCI_ShowWDL"]["value"] is True and opts["MultiPV"]["value"] == 10
    assert opts["Clear Hash"] == {"type": "button", "default": None}
    assert ident.digest.startswith("sha256:")


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
        start_uci(EngineConfig(path=tmp_path / "nope"))
