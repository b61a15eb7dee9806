"""Refs: named pointers to digests, moves logged in the ledger, compare-and-swap, staleness."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from rungbench.errors import InputError, IntegrityError, Refusal
from rungbench.evidence.canonical import bytes_digest
from rungbench.evidence.freeze import INVENTORY, check_reasons, freeze
from rungbench.evidence.ledger import Ledger
from rungbench.evidence.refs import UNSET, Refs
from rungbench.evidence.store import ObjectStore

A = bytes_digest(b"a")
B = bytes_digest(b"b")


@pytest.fixture(autouse=True)
def _stored(tmp_path: Path) -> None:
    """Objects A and B are in the store at tmp_path (a ref may only point at a stored object)."""
    store = ObjectStore(tmp_path)
    store.put_bytes(b"a")
    store.put_bytes(b"b")


def test_get_move_and_names(tmp_path: Path) -> None:
    """A new ref reads None; after a move it reads the digest; names lists it."""
    refs = Refs(tmp_path)
    assert refs.get("cohorts/luna") is None
    move = refs.move("cohorts/luna", A)
    assert (move.old, move.new) == (None, A)
    assert refs.get("cohorts/luna") == A
    assert refs.names() == ["cohorts/luna"]
    assert (tmp_path / "refs" / "cohorts" / "luna").read_text() == A + "\n"


def test_moves_are_logged_in_the_ledger(tmp_path: Path) -> None:
    """Each real move appends a ref.move event; re-pointing to the same digest logs nothing."""
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        refs = Refs(tmp_path, ledger=ledger)
        refs.move("pool", A)
        refs.move("pool", B)
        refs.move("pool", B)
        payloads = [e.payload for e in ledger.events()]
    assert payloads == [
        {"name": "pool", "old": None, "new": A},
        {"name": "pool", "old": A, "new": B},
    ]


def test_compare_and_swap(tmp_path: Path) -> None:
    """A move that expects an outdated digest is refused as stale and changes nothing."""
    refs = Refs(tmp_path)
    refs.move("cohort", A, expected=UNSET)
    with pytest.raises(Refusal) as info:
        refs.move("cohort", B, expected=UNSET)
    assert info.value.codes == ("stale",)
    assert refs.get("cohort") == A
    refs.move("cohort", B, expected=A)
    assert refs.get("cohort") == B


@pytest.mark.parametrize("name", ["", "../escape", "a/../b", "/abs", "sp ace", ".hidden"])
def test_bad_names_rejected(tmp_path: Path, name: str) -> None:
    """Ref names cannot escape refs/ or hide; the error names the field."""
    with pytest.raises(InputError, match=r"\(field 'ref'\)"):
        Refs(tmp_path).move(name, A)


def test_corrupt_ref_file_named(tmp_path: Path) -> None:
    """A ref file that does not hold a digest is an InputError naming its path."""
    (tmp_path / "refs").mkdir()
    (tmp_path / "refs" / "pool").write_text("garbage")
    with pytest.raises(InputError, match="refs/pool"):
        Refs(tmp_path).get("pool")


def test_moved_ref_makes_freeze_stale(tmp_path: Path) -> None:
    """A cohort ref that moves after a freeze makes the freeze check refuse stale."""
    store = ObjectStore(tmp_path)
    refs = Refs(tmp_path)
    first = store.put_bytes(b'{"games":1}')
    refs.move("cohorts/deepseek", first)
    frozen = freeze(store, "q", INVENTORY, {"cohort_b": first})
    bindings = {"cohort_b": "cohorts/deepseek"}
    assert check_reasons(store, frozen.digest, current=refs.current(bindings)) == ()
    refs.move("cohorts/deepseek", store.put_bytes(b'{"games":2}'))
    reasons = check_reasons(store, frozen.digest, current=refs.current(bindings))
    assert [(r.code, r.subject) for r in reasons] == [("stale", "cohort_b")]
    reasons = check_reasons(store, frozen.digest, current=refs.current({"cohort_b": "gone"}))
    assert [(r.code, r.subject) for r in reasons] == [("absent", "cohort_b")]


def test_move_to_a_digest_absent_from_the_store_is_refused(tmp_path: Path) -> None:
    """A move to a digest the store does not hold refuses absent, naming it; nothing moves."""
    gone = "sha256:" + "c" * 64
    with pytest.raises(Refusal) as info:
        Refs(tmp_path).move("pool", gone)
    assert info.value.codes == ("absent",) and gone in str(info.value)
    assert Refs(tmp_path).get("pool") is None


def test_move_with_a_broken_ledger_changes_nothing(tmp_path: Path) -> None:
    """A move logged to a ledger whose chain is broken raises naming the row; the ref stays."""
    path = tmp_path / "ledger.sqlite"
    with Ledger(path) as ledger:
        Refs(tmp_path, ledger=ledger).move("pool", A)
    with sqlite3.connect(path, isolation_level=None) as db:
        db.execute("DROP TRIGGER ledger_events_no_update")
        db.execute("UPDATE ledger_events SET kind = 'edited' WHERE seq = 1")
    with Ledger(path) as ledger:
        with pytest.raises(IntegrityError, match=r"ledger\.sqlite: ledger row seq 1 is bad"):
            Refs(tmp_path, ledger=ledger).move("pool", B)
        assert ledger.count() == 1
    assert Refs(tmp_path).get("pool") == A


def test_resolve_names_a_dangling_ref(tmp_path: Path) -> None:
    """resolve of a ref whose object was deleted raises naming the ref file and digest."""
    Refs(tmp_path).move("pool", A)
    ObjectStore(tmp_path).path_for(A).unlink()
    with pytest.raises(IntegrityError, match=rf"refs/pool: .*{A}"):
        Refs(tmp_path).resolve("pool")
