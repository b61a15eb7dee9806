"""Cache records: revalidation of key, legality and payload digest; corrupt ones quarantined."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import chess
from rungbench.chess.labels.cache import CacheKey, SearchCache, make_record, record_problems
from rungbench.chess.workspace import Workspace, write_canonical
from rungbench.errors import IntegrityError
from rungbench.evidence.canonical import digest

START = chess.STARTING_FEN
KEY = CacheKey("sha256:" + "1" * 64, {"nodes": 10}, START, "A")


def lines(fen: str = START) -> list[dict[str, Any]]:
    """Ten hand-built lines: legal root moves with a legal two-ply PV each."""
    board = chess.Board(fen)
    out = []
    for rank, move in enumerate(sorted(board.legal_moves, key=lambda m: m.uci())[:10], start=1):
        after = board.copy()
        after.push(move)
        reply = sorted(after.legal_moves, key=lambda m: m.uci())[0]
        out.append({"rank": rank, "uci": move.uci(), "san": board.san(move),
                    "score": {"cp": 10 - rank}, "wdl": [50, 940, 10], "forcing": False,
                    "search": {"depth": 5, "seldepth": 7, "nodes": 10},
                    "pv": [move.uci(), reply.uci()]})
    return out


def test_valid_record_is_reused(tmp_path: Path) -> None:
    """A stored record revalidates and comes back byte-identical."""
    cache = SearchCache(Workspace(tmp_path))
    record = make_record(KEY, lines())
    stored = cache.put(KEY, record)
    found = cache.lookup(KEY)
    assert found.record == record and found.record_digest == stored and found.rejected == []


def test_record_for_another_pass_or_fen_is_rejected() -> None:
    """Key parts are compared one by one: pass and FEN mismatches are named."""
    record = make_record(KEY, lines())
    other = CacheKey(KEY.engine, KEY.contract, KEY.fen, "B")
    assert record_problems(record, other) == ["key.pass"]
    moved = CacheKey(KEY.engine, KEY.contract, START.replace(" 1", " 9"), "A")
    assert record_problems(record, moved) == ["key.fen"]


def test_illegal_pv_move_is_rejected_even_with_a_matching_digest() -> None:
    """A PV whose second move is illegal fails although the payload digest is consistent."""
    bad = lines()
    bad[3]["pv"] = [bad[3]["uci"], "e2e4"]
    problems = record_problems(make_record(KEY, bad), KEY)
    assert problems == ["rank 4: PV move 2 'e2e4' is illegal"]


def test_payload_digest_mismatch_is_rejected() -> None:
    """Editing the payload without recomputing its digest is detected."""
    record = make_record(KEY, lines())
    record["payload"]["lines"][0]["wdl"] = [60, 930, 10]
    assert record_problems(record, KEY) == ["payload_digest"]
    record["payload_digest"] = digest(record["payload"])
    assert record_problems(record, KEY) == []


def test_flipped_byte_is_detected_quarantined_and_never_reused(tmp_path: Path) -> None:
    """A flipped byte in the stored record fails the store hash; the record is moved away."""
    ws = Workspace(tmp_path)
    cache = SearchCache(ws)
    stored = cache.put(KEY, make_record(KEY, lines()))
    path = ws.store.path_for(stored)
    os.chmod(path, 0o644)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    found = cache.lookup(KEY)
    assert found.record is None and found.rejected[0].startswith("unreadable")
    assert not path.exists() and not cache.index_path(KEY).exists()
    assert (ws.quarantine_dir / f"object-{stored[7:]}").read_bytes() == bytes(data)
    assert cache.lookup(KEY).rejected == []  # absent now, not silently valid
    assert cache.lookup(KEY).record is None
    again = cache.put(KEY, make_record(KEY, lines()))
    assert again == stored and cache.lookup(KEY).record is not None


def test_corrupt_object_under_the_same_name_is_replaced(tmp_path: Path) -> None:
    """Re-putting a record whose object file is corrupt rewrites good bytes."""
    ws = Workspace(tmp_path)
    cache = SearchCache(ws)
    stored = cache.put(KEY, make_record(KEY, lines()))
    path = ws.store.path_for(stored)
    os.chmod(path, 0o644)
    path.write_bytes(b"{}")
    cache.put(KEY, make_record(KEY, lines()))
    assert ws.store.get_json(stored) == make_record(KEY, lines())


def _edit(record: dict[str, Any], where: str) -> None:
    """Apply one named corruption to a record and re-seal its payload digest."""
    lines_ = record["payload"]["lines"]
    if where == "schema":
        record["schema"] = "rungbench.chess.search/0"
    elif where.startswith("key."):
        record["key"][where[4:]] = {"engine": "sha256:" + "2" * 64, "contract": {"nodes": 11},
                                    "role": "evaluate"}[where[4:]]
    elif where == "illegal_root":
        lines_[2]["uci"] = lines_[2]["pv"][0] = "e2e5"
    elif where == "rank_order":
        lines_[0]["rank"], lines_[1]["rank"] = 2, 1
    elif where == "pv_head":
        lines_[4]["pv"][0] = lines_[5]["uci"]
    record["payload_digest"] = digest(record["payload"])


@pytest.mark.parametrize(("where", "expected"), [
    ("schema", ["schema"]),
    ("key.engine", ["key.engine"]),
    ("key.contract", ["key.contract"]),
    ("key.role", ["key.role"]),
    ("illegal_root", ["rank 3: candidate 'e2e5' not legal at rank"]),
    ("rank_order", ["rank 1: candidate 'a2a3' not legal at rank",
                    "rank 2: candidate 'a2a4' not legal at rank"]),
    ("pv_head", ["rank 5: candidate 'b2b3' not legal at rank"]),
])
def test_each_revalidation_check_rejects(where: str, expected: list[str]) -> None:
    """Schema, engine identity, contract, role, candidate legality, rank order and PV head
    are each checked, even when the payload digest was re-sealed to match."""
    record = make_record(KEY, lines())
    assert record_problems(record, KEY) == []
    _edit(record, where)
    assert record_problems(record, KEY) == expected


def test_valid_record_with_wrong_index_key_is_quarantined(tmp_path: Path) -> None:
    """An index entry naming another key's digest is unreadable and is moved out of reach."""
    ws = Workspace(tmp_path)
    cache = SearchCache(ws)
    cache.put(KEY, make_record(KEY, lines()))
    other = CacheKey(KEY.engine, KEY.contract, KEY.fen, "B")
    os.replace(cache.index_path(KEY), cache.index_path(other))
    found = cache.lookup(other)
    assert found.record is None and found.rejected[0].startswith("unreadable")
    assert not cache.index_path(other).exists()


def test_invalid_record_is_never_written(tmp_path: Path) -> None:
    """put refuses a record that revalidation would reject; no index entry, no object."""
    ws = Workspace(tmp_path)
    cache = SearchCache(ws)
    bad = lines()
    bad[0]["pv"] = [bad[0]["uci"], "e7e4"]
    with pytest.raises(IntegrityError, match="PV move 2 'e7e4' is illegal"):
        cache.put(KEY, make_record(KEY, bad))
    assert not cache.index_path(KEY).exists() and list(ws.store.iter_digests()) == []


def test_remembered_record_is_rechecked_against_the_index(tmp_path: Path) -> None:
    """A key whose index entry was repointed after the write goes through full revalidation."""
    ws = Workspace(tmp_path)
    cache = SearchCache(ws)
    cache.put(KEY, make_record(KEY, lines()))
    other = make_record(KEY, lines()[:9])
    other_digest = ws.store.put_json(other)
    cache.index_path(KEY).write_text(
        '{"key":"' + KEY.digest + '","record":"' + other_digest + '"}')
    found = cache.lookup(KEY)
    assert found.record == other and found.record_digest == other_digest


def test_index_entry_pointing_at_another_keys_record_is_quarantined(tmp_path: Path) -> None:
    """A readable record that fails revalidation (pass A under a pass B key) is moved away."""
    ws = Workspace(tmp_path)
    cache = SearchCache(ws)
    stored = cache.put(KEY, make_record(KEY, lines()))
    other = CacheKey(KEY.engine, KEY.contract, KEY.fen, "B")
    write_canonical(cache.index_path(other), {"key": other.digest, "record": stored})
    found = SearchCache(ws).lookup(other)
    assert found.record is None and found.rejected == ["key.pass"]
    assert not cache.index_path(other).exists()
    assert (ws.quarantine_dir / f"object-{stored[7:]}").is_file()
