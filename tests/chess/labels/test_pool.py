"""The engine-blind pool: puzzle setup moves, lineage, width floor, isolation, reserve quotas."""

from __future__ import annotations

import shutil
from collections import defaultdict
from pathlib import Path

import pytest

import chess
from rungbench.chess.labels.pool import (
    PoolConfig,
    PoolSource,
    build_pool,
    bundled_data_dir,
    freeze_pool,
    load_pool,
    select_positions,
    split_of,
    stale_sources,
)
from rungbench.chess.position import COLOURS, PHASES, Lineage, describe
from rungbench.chess.workspace import Workspace
from rungbench.errors import Refusal

PUZZLES = bundled_data_dir() / "lichess_puzzles" / "puzzles.csv"
GAMES = bundled_data_dir() / "kaggle_chess_positions" / "filtered_chess_positions.jsonl"
SMALL = [PoolSource("lichess_puzzles", PUZZLES, 2), PoolSource("pgn_jsonl", GAMES, 2)]
LINEAGE = Lineage("t", "sha256:" + "0" * 64, "row 1", "game:1", "puzzle")
FIRST_FEN = "r5k1/pp3p1p/2b2qp1/3pr3/8/4P2P/R1PN1PP1/Q3K2R w K - 0 19"


def test_puzzle_setup_move_is_applied() -> None:
    """Row 1 (tewjc): the puzzle position is the CSV FEN after Moves[0] = a2a7; both are kept."""
    doc = build_pool([PoolSource("lichess_puzzles", PUZZLES, 1)], PoolConfig(reserve=0))
    after = chess.Board(FIRST_FEN)
    after.push_uci("a2a7")
    by_kind = {p["lineage"]["kind"]: p for p in doc["positions"]}
    assert by_kind["puzzle"]["fen"] == after.fen()
    assert by_kind["puzzle"]["colour"] == "black"
    assert by_kind["puzzle_pre_setup"]["fen"] == FIRST_FEN
    assert by_kind["puzzle"]["lineage"]["game"] == "lichess:SLbfzQtP"
    assert by_kind["puzzle"]["lineage"]["locator"] == "row 1 tewjc"


def test_full_bundled_pool_invariants() -> None:
    """Every position has ≥ 10 legal moves, no family repeats, no game spans two splits."""
    doc = build_pool([PoolSource("lichess_puzzles", PUZZLES), PoolSource("pgn_jsonl", GAMES)],
                     PoolConfig(reserve=0))
    positions = doc["positions"]
    assert all(p["width"] >= 10 for p in positions)
    assert len({p["family"] for p in positions}) == len(positions)
    splits: dict[str, set[str]] = defaultdict(set)
    per_game: dict[str, int] = defaultdict(int)
    for p in positions:
        splits[p["lineage"]["game"]].add(p["split"])
        per_game[p["lineage"]["game"]] += 1
    assert all(len(s) == 1 for s in splits.values())
    assert sum(1 for n in per_game.values() if n >= 2) > 100  # the invariant is exercised
    assert {s for (s,) in splits.values()} == {"dev", "test"}
    assert doc["candidates"] == 2 * 1000 + 176
    assert doc["candidates"] == len(positions) + sum(doc["dropped"].values())


def test_reserve_shortfall_stops_the_freeze(tmp_path: Path) -> None:
    """A quota no cell can meet refuses with one reserve_shortfall per cell and writes nothing."""
    ws = Workspace(tmp_path)
    with pytest.raises(Refusal) as caught:
        freeze_pool(ws, SMALL, PoolConfig(reserve=1000))
    assert set(caught.value.codes) == {"reserve_shortfall"}
    assert len(caught.value.codes) == 2 * 3 * 2
    assert not ws.pool.exists()


def test_per_cell_override_names_the_short_cell(tmp_path: Path) -> None:
    """An override on one cell refuses naming exactly that cell; nothing is borrowed."""
    config = PoolConfig(reserve=0, reserve_overrides={"dev/endgame/white": 999})
    with pytest.raises(Refusal) as caught:
        build_pool(SMALL, config)
    assert [r.subject for r in caught.value.reasons] == ["dev/endgame/white"]


def test_lines_extending_one_another_share_a_game(tmp_path: Path) -> None:
    """A line whose moves prefix another's is the same source game (same split)."""
    path = tmp_path / "games.jsonl"
    path.write_text('{"pgn": "1. e4 e5 2. Nf3 Nc6 *"}\n{"pgn": "1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 *"}\n'
                    '{"pgn": "1. d4 d5 2. c4 e6 *"}\n{"pgn": "1. e4 e5 2. Nf3 Nc6 3. Bc4 Bc5 *"}\n')
    doc = build_pool([PoolSource("pgn_jsonl", path)], PoolConfig(reserve=0))
    games = [p["lineage"]["game"] for p in doc["positions"]]
    assert len(games) == 4
    assert games[0] == games[1] == games[3] != games[2]


def test_split_hash_is_seeded_and_weighted() -> None:
    """Split assignment is a pure function of (seed, game) and respects the weights."""
    config = PoolConfig(splits=(("a", 1), ("b", 0)))
    assert {split_of(f"g{i}", config) for i in range(50)} == {"a"}
    mixed = PoolConfig(splits=(("a", 1), ("b", 1)), seed=7)
    assert [split_of(f"g{i}", mixed) for i in range(20)] == [
        split_of(f"g{i}", mixed) for i in range(20)]
    assert {split_of(f"g{i}", mixed) for i in range(50)} == {"a", "b"}


def test_freeze_roundtrip_and_stale_source(tmp_path: Path) -> None:
    """A frozen pool reloads with the same digest; editing its source is detected as stale."""
    src = tmp_path / "puzzles.csv"
    shutil.copy(PUZZLES, src)
    ws = Workspace(tmp_path / "ws")
    summary = freeze_pool(ws, [PoolSource("lichess_puzzles", src, 3)], PoolConfig(reserve=0))
    pool = load_pool(ws.pool)
    assert pool.digest == summary["digest"] and ws.store.has(pool.digest)
    assert stale_sources(pool.document) == []
    src.write_text(src.read_text() + "\n")
    assert [r.code for r in stale_sources(pool.document)] == ["pool_source_stale"]


def test_width_floor_keeps_ten_and_drops_nine() -> None:
    """Exactly 10 legal root moves is kept; 9 is dropped as fewer_than_min_width, not relaxed."""
    ten = describe(chess.Board("8/8/8/8/3K4/8/P7/k7 w - - 0 1"), LINEAGE)
    nine = describe(chess.Board("8/8/8/8/3K4/P7/8/k7 w - - 0 1"), LINEAGE)
    assert (ten.width, nine.width) == (10, 9)
    assert PoolConfig().min_width == 10
    kept, dropped = select_positions([nine, ten], PoolConfig(reserve=0))
    assert [p.key for p in kept] == [ten.key]
    assert dropped == {"fewer_than_min_width": 1}


def test_mirror_duplicate_from_another_game_is_dropped() -> None:
    """A colour mirror of a kept position from a different game is dropped, so no family
    (and no game) can straddle two splits."""
    board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    other = Lineage("t", LINEAGE.source_digest, "row 2", "game:2", "puzzle")
    kept, dropped = select_positions(
        [describe(board, LINEAGE), describe(board.mirror(), other)],
        PoolConfig(reserve=0, splits=(("a", 1), ("b", 1))))
    assert len(kept) == 1 and kept[0].lineage.game == "game:1"
    assert dropped == {"duplicate_family": 1}


def test_shortfall_in_one_split_is_not_covered_by_another() -> None:
    """Split 'b' gets no games: its cells refuse although split 'a' holds surplus positions."""
    config = PoolConfig(splits=(("a", 1), ("b", 0)), reserve=1,
                        reserve_overrides={f"a/{ph}/{c}": 0 for ph in PHASES for c in COLOURS})
    with pytest.raises(Refusal) as caught:
        build_pool(SMALL, config)
    assert {r.subject for r in caught.value.reasons} == {
        f"b/{ph}/{c}" for ph in PHASES for c in COLOURS}
    assert all(r.data == {"have": 0, "quota": 1} for r in caught.value.reasons)
