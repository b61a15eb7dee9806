"""Object store: idempotent atomic put, verified get, verify reports every bad object."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rungbench.errors import InputError, IntegrityError
from rungbench.evidence.store import ObjectStore, write_atomic


def _damage(path: Path, index: int, new: int) -> None:
    data = bytearray(path.read_bytes())
    data[index] = new
    path.chmod(0o644)
    path.write_bytes(bytes(data))


def test_layout_and_put_returns_sha256(tmp_path: Path) -> None:
    """An object lives at objects/sha256/<2 hex>/<62 hex>, named by sha256 of its bytes."""
    store = ObjectStore(tmp_path)
    found = store.put_bytes(b"abc")
    hexpart = hashlib.sha256(b"abc").hexdigest()
    assert found == "sha256:" + hexpart
    assert (tmp_path / "objects" / "sha256" / hexpart[:2] / hexpart[2:]).read_bytes() == b"abc"


def test_put_is_idempotent(tmp_path: Path) -> None:
    """Putting the same bytes twice returns the same digest and leaves one unchanged file."""
    store = ObjectStore(tmp_path)
    first = store.put_bytes(b"same")
    stat = store.path_for(first).stat()
    assert store.put_bytes(b"same") == first
    assert store.path_for(first).stat().st_mtime_ns == stat.st_mtime_ns
    assert list(store.iter_digests()) == [first]


def test_put_leaves_no_temp_files_and_readonly_objects(tmp_path: Path) -> None:
    """After many puts no temp file remains and every object is read-only."""
    store = ObjectStore(tmp_path)
    digests = [store.put_bytes(str(i).encode()) for i in range(30)]
    assert store.temp_files() == []
    assert not [p for p in tmp_path.rglob("*") if p.name.startswith(".tmp-")]
    for found in digests:
        assert store.path_for(found).stat().st_mode & 0o777 == 0o444


def test_failed_write_removes_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A crash between write and rename leaves neither the object nor a temp file."""
    store = ObjectStore(tmp_path)

    def boom(src: str, dst: str) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk gone"):
        store.put_bytes(b"never")
    assert store.temp_files() == []
    assert list(store.iter_digests()) == []


def test_get_round_trips_json(tmp_path: Path) -> None:
    """put_json then get_json gives back the value; get_bytes gives canonical bytes."""
    store = ObjectStore(tmp_path)
    found = store.put_json({"b": 1, "a": [True, None]})
    assert store.get_json(found) == {"a": [True, None], "b": 1}
    assert store.get_bytes(found) == b'{"a":[true,null],"b":1}'


def test_get_absent_names_path(tmp_path: Path) -> None:
    """Reading a missing object raises InputError naming the object path."""
    store = ObjectStore(tmp_path)
    missing = "sha256:" + "0" * 64
    with pytest.raises(InputError, match=r"objects/sha256/00/0{62}.*not in the store"):
        store.get_bytes(missing)


def test_truncated_object_raises_integrity_error(tmp_path: Path) -> None:
    """A truncated object fails on read with IntegrityError and is listed by verify."""
    store = ObjectStore(tmp_path)
    found = store.put_bytes(b"0123456789")
    path = store.path_for(found)
    path.chmod(0o644)
    path.write_bytes(b"01234")
    with pytest.raises(IntegrityError, match=found):
        store.get_bytes(found)
    assert [b.expected for b in store.verify()] == [found]


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=st.binary(min_size=1, max_size=200),
    position=st.floats(min_value=0, max_value=1, exclude_max=True),
    delta=st.integers(min_value=1, max_value=255),
)
def test_any_single_byte_change_is_detected(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, position: float, delta: int
) -> None:
    """Changing any one byte of a stored object is caught by get and by verify."""
    store = ObjectStore(tmp_path_factory.mktemp("store"))
    other = store.put_bytes(b"untouched")
    found = store.put_bytes(data)
    index = int(position * len(data))
    _damage(store.path_for(found), index, (data[index] + delta) % 256)
    with pytest.raises(IntegrityError):
        store.get_bytes(found)
    bad = store.verify()
    assert [b.expected for b in bad] == [found]
    assert bad[0].actual is not None and bad[0].actual != found
    assert store.get_bytes(other) == b"untouched"


def test_verify_reports_every_bad_object_and_malformed_names(tmp_path: Path) -> None:
    """verify lists each damaged object and each file whose name is not a digest."""
    store = ObjectStore(tmp_path)
    good = store.put_bytes(b"good")
    bad1 = store.put_bytes(b"bad one")
    bad2 = store.put_bytes(b"bad two")
    _damage(store.path_for(bad1), 0, ord("X"))
    _damage(store.path_for(bad2), 3, ord("X"))
    stray = store.objects / "zz" / "not-a-digest"
    stray.parent.mkdir()
    stray.write_bytes(b"?")
    report = store.verify()
    assert sorted(b.expected for b in report if b.actual) == sorted([bad1, bad2])
    assert [b.path for b in report if b.actual is None] == [str(stray)]
    assert good not in {b.expected for b in report}


def test_put_repairs_damaged_object(tmp_path: Path) -> None:
    """Putting the true bytes over a damaged object restores it."""
    store = ObjectStore(tmp_path)
    found = store.put_bytes(b"payload")
    _damage(store.path_for(found), 0, ord("Q"))
    assert store.put_bytes(b"payload") == found
    assert store.get_bytes(found) == b"payload"
    assert store.verify() == []


def test_put_file_missing_names_path(tmp_path: Path) -> None:
    """put_file on a missing file raises InputError naming that path."""
    with pytest.raises(InputError, match=r"nope\.bin"):
        ObjectStore(tmp_path).put_file(tmp_path / "nope.bin")


def test_write_atomic_never_overwrites_without_permission(tmp_path: Path) -> None:
    """write_atomic refuses an existing target unless overwrite is set, then replaces it."""
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    with pytest.raises(InputError, match="refusing to overwrite"):
        write_atomic(target, b"new")
    assert target.read_bytes() == b"old"
    write_atomic(target, b"new", overwrite=True)
    assert target.read_bytes() == b"new"
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]


def test_concurrent_puts_agree(tmp_path: Path) -> None:
    """Many threads putting overlapping objects leave each object once, verified, no temp files."""
    from concurrent.futures import ThreadPoolExecutor

    store = ObjectStore(tmp_path)
    blobs = [str(i % 7).encode() * 100 for i in range(64)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        digests = list(pool.map(store.put_bytes, blobs))
    assert len(set(digests)) == 7
    assert sorted(store.iter_digests()) == sorted(set(digests))
    assert store.verify() == [] and store.temp_files() == []
