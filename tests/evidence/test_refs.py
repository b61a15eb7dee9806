"""Refs: named pointers to digests, moves logged in the ledger, compare-and-swap, staleness."""

from __future__ import annotations

from pathlib import Path

import pytest

from rungbench.errors import InputError, Refusal
from rungbench.evidence.freeze import INVENTORY, check_reasons, freeze
from rungbench.evidence.ledger import Ledger
from rungbench.evidence.refs import UNSET, Refs
from rungbench.evidence.store import ObjectStore

A = "sha256:" + "a" * 64
B = "sha256:" + "b" * 64


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
