"""Content-addressed object store: ``objects/sha256/ab/<62 hex>``.

``put`` is idempotent and atomic (temp file, fsync, rename); ``get`` verifies the
digest on every read; ``verify`` walks the store and reports every bad object.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rungbench.errors import InputError, IntegrityError
from rungbench.evidence.canonical import (
    DIGEST_PREFIX,
    bytes_digest,
    canonical_bytes,
    file_digest,
    is_digest,
    loads_canonical,
    parse_digest,
)

Progress = Callable[[int, int], None]
"""Callback ``(done, total)`` for long walks."""

TEMP_PREFIX = ".tmp-"
"""Name prefix of in-flight temp files; never an object, never listed."""


@dataclass(frozen=True)
class BadObject:
    """One object that failed verification."""

    path: str
    """File path inside the store."""
    expected: str
    """Digest the path names."""
    actual: str | None
    """Digest of the bytes found, or None when the name itself is malformed."""

    def to_json(self) -> dict[str, Any]:
        """Return the finding as a JSON-ready mapping."""
        return {"path": self.path, "expected": self.expected, "actual": self.actual}


class ObjectStore:
    """A directory of immutable objects named by the sha256 of their bytes."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.objects = self.root / "objects" / "sha256"

    def path_for(self, digest: str) -> Path:
        """Return the file path that holds ``digest``."""
        hexpart = parse_digest(digest)
        return self.objects / hexpart[:2] / hexpart[2:]

    def put_bytes(self, data: bytes) -> str:
        """Store ``data`` and return its digest; storing the same bytes twice is a no-op.

        A present object whose bytes no longer match its name is replaced, so a
        ``put`` of the true bytes repairs a damaged store.
        """
        digest = bytes_digest(data)
        target = self.path_for(digest)
        self._require_dirs(target.parent)
        if target.is_file() and file_digest(str(target)) == digest:
            return digest
        if target.exists() and not target.is_file():
            raise InputError(f"store {self.root}: a directory is where object {digest} should be",
                             path=str(target))
        target.parent.mkdir(parents=True, exist_ok=True)
        _write_atomic(target, data, mode=0o444)
        return digest

    def _require_dirs(self, folder: Path) -> None:
        """Raise :class:`InputError` naming the first path from the root to ``folder`` that
        exists but is not a directory (a file where the store expects a folder)."""
        for path in (folder, *folder.parents):
            if path.exists() and not path.is_dir():
                raise InputError("a file is where a store directory should be",
                                 path=str(path))
            if path == self.root:
                return

    def put_json(self, value: Any) -> str:
        """Store the canonical JSON of ``value`` and return its digest."""
        return self.put_bytes(canonical_bytes(value))

    def put_file(self, path: str | os.PathLike[str]) -> str:
        """Store the bytes of the file at ``path``; raise :class:`InputError` if unreadable."""
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read input file: {exc.strerror}", path=str(path)) from exc
        return self.put_bytes(data)

    def has(self, digest: str) -> bool:
        """Return whether an object with this digest is present (not verified)."""
        return self.path_for(digest).is_file()

    def get_bytes(self, digest: str) -> bytes:
        """Return the bytes of ``digest``, verifying them; raise on absence or mismatch."""
        target = self.path_for(digest)
        try:
            data = target.read_bytes()
        except (FileNotFoundError, IsADirectoryError) as exc:
            raise InputError(f"object {digest} is not in the store", path=str(target)) from exc
        actual = bytes_digest(data)
        if actual != digest:
            raise IntegrityError(f"{target}: object holds {actual}, not {digest}")
        return data

    def get_json(self, digest: str) -> Any:
        """Return the parsed JSON value of ``digest``, verified."""
        return loads_canonical(self.get_bytes(digest), path=str(self.path_for(digest)))

    def iter_digests(self) -> Iterator[str]:
        """Yield the digest named by every well-formed object file, in sorted order."""
        for _, name in self._walk():
            if is_digest(name):
                yield name

    def verify(self, *, progress: Progress | None = None) -> list[BadObject]:
        """Re-hash every object and return those whose bytes do not match their name.

        A file whose name is not a digest, or a directory where an object should
        be, is reported too, with ``actual`` None. ``progress(done, total)`` is
        called as each entry is checked.
        """
        bad: list[BadObject] = []
        entries = list(self._walk())
        for done, (path, name) in enumerate(entries, start=1):
            if progress is not None:
                progress(done, len(entries))
            if not is_digest(name) or not path.is_file():
                bad.append(BadObject(str(path), name, None))
                continue
            actual = file_digest(str(path))
            if actual != name:
                bad.append(BadObject(str(path), name, actual))
        return bad

    def temp_files(self) -> list[Path]:
        """Return leftover temp files (a crash mid-``put``); a clean store has none."""
        if not self.objects.exists():
            return []
        return sorted(p for p in self.objects.rglob(TEMP_PREFIX + "*"))

    def _walk(self) -> Iterator[tuple[Path, str]]:
        if not self.objects.exists():
            return
        for sub in sorted(self.objects.iterdir()):
            if not sub.is_dir():
                yield sub, DIGEST_PREFIX + sub.name
                continue
            for obj in sorted(sub.iterdir()):
                if not obj.name.startswith(TEMP_PREFIX):
                    yield obj, DIGEST_PREFIX + sub.name + obj.name


def write_atomic(target: str | os.PathLike[str], data: bytes, *, overwrite: bool = False) -> None:
    """Write ``data`` to ``target`` through a temp file, fsync and rename.

    Raises :class:`InputError` naming ``target`` when it exists and ``overwrite``
    is false; readers never see a partly written file.
    """
    path = Path(target)
    if path.is_dir():
        raise InputError("a directory is where the file should be written", path=str(path))
    if path.exists() and not overwrite:
        raise InputError("refusing to overwrite an existing file (use --force)", path=str(path))
    if not path.parent.is_dir():
        raise InputError("directory does not exist", path=str(path.parent))
    _write_atomic(path, data, mode=0o644)


def _write_atomic(target: Path, data: bytes, *, mode: int) -> None:
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=TEMP_PREFIX)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    fsync_dir(target.parent)


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """Flush a directory's entries to disk, so a rename or new file in it survives a crash."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
