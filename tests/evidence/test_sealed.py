"""rungbench.evidence.sealed: sealed directories published all or nothing and verified on read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rungbench.errors import IntegrityError, Refusal
from rungbench.evidence.sealed import (
    SEAL_NAME,
    clear_dead_temps,
    ensure_absent,
    publish_dir,
    verify_sealed,
)


def _publish(target: Path, files: dict[str, bytes], *, force: bool = False) -> None:
    with publish_dir(target, kind="demo", force=force) as temp:
        for name, data in files.items():
            (temp / name).parent.mkdir(parents=True, exist_ok=True)
            (temp / name).write_bytes(data)


def test_published_directory_verifies_and_lists_every_file(tmp_path: Path) -> None:
    """A published directory carries a seal listing each file; verification passes."""
    _publish(tmp_path / "d", {"a.txt": b"a", "sub/b.txt": b"bb"})
    seal = verify_sealed(tmp_path / "d", kind="demo")
    assert [f["path"] for f in seal["files"]] == ["a.txt", "sub/b.txt"]


@pytest.mark.parametrize("damage", ["flip", "delete", "add", "seal"])
def test_any_change_after_sealing_is_named(tmp_path: Path, damage: str) -> None:
    """A changed, deleted or added file, or a missing seal, is an IntegrityError naming it."""
    root = tmp_path / "d"
    _publish(root, {"a.txt": b"abc"})
    if damage == "flip":
        (root / "a.txt").write_bytes(b"abd")
    elif damage == "delete":
        (root / "a.txt").unlink()
    elif damage == "add":
        (root / "extra.txt").write_bytes(b"x")
    else:
        (root / SEAL_NAME).unlink()
    with pytest.raises(IntegrityError) as caught:
        verify_sealed(root)
    named = "extra.txt" if damage == "add" else SEAL_NAME if damage == "seal" else "a.txt"
    assert named in str(caught.value)


@pytest.mark.parametrize("entry", [{"path": "../escape", "digest": "x", "size": 1}, "nonsense",
                                   {"path": "/etc/passwd", "digest": "x", "size": 1}])
def test_malformed_or_escaping_seal_entries_are_refused(tmp_path: Path, entry: object) -> None:
    """A seal entry that is not a record, or names a path outside the folder, is refused."""
    root = tmp_path / "d"
    _publish(root, {"a.txt": b"abc"})
    seal = json.loads((root / SEAL_NAME).read_text())
    seal["files"].append(entry)
    (root / SEAL_NAME).write_text(json.dumps(seal, sort_keys=True, separators=(",", ":")))
    with pytest.raises(IntegrityError, match="entry 1"):
        verify_sealed(root)


def test_failure_inside_leaves_nothing_visible(tmp_path: Path) -> None:
    """An exception while filling the directory leaves neither target nor temporary folder."""
    with pytest.raises(RuntimeError), publish_dir(tmp_path / "d", kind="demo") as temp:
        (temp / "a.txt").write_bytes(b"a")
        raise RuntimeError("midway")
    assert list(tmp_path.iterdir()) == []


def test_existing_target_is_refused_without_force(tmp_path: Path) -> None:
    """Publishing over an existing directory refuses 'exists'; --force replaces it whole."""
    _publish(tmp_path / "d", {"a.txt": b"old"})
    with pytest.raises(Refusal) as caught:
        _publish(tmp_path / "d", {"a.txt": b"new"})
    assert caught.value.codes == ("exists",)
    _publish(tmp_path / "d", {"b.txt": b"new"}, force=True)
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == [SEAL_NAME, "b.txt"]


def test_a_file_where_the_directory_belongs_is_an_input_error(tmp_path: Path) -> None:
    """ensure_absent on a file is an input error naming it, with or without force."""
    (tmp_path / "f").write_text("x")
    with pytest.raises(ValueError, match="must be a directory"):
        ensure_absent(tmp_path / "f", force=True, what="bench")


def test_temporaries_of_dead_processes_are_cleared_and_live_ones_kept(tmp_path: Path) -> None:
    """A killed publisher's temp folder is removed; a live process's temp folder is kept."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead = tmp_path / f".d.tmp-{int(done.stdout)}"
    live = tmp_path / f".d.tmp-{os.getpid()}"
    dead.mkdir()
    live.mkdir()
    assert clear_dead_temps(tmp_path, "d") == [dead]
    assert live.exists() and not dead.exists()
