"""Content-addressed object store: ``objects/sha256/ab/<62 hex>``.

``put`` is idempotent and atomic (temp file, fsync, rename); ``get`` verifies the
digest on every read; ``verify`` walks the store and reports every bad object.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rungbench.errors import InputError, IntegrityError
from rungbench.evidence.canonical import (
    DIGEST_PREFIX,
    bytes_digest,
    canonical_bytes,
    loads_canonical,
    parse_digest,
)


@dataclass(frozen=True)
class BadObject:
    """One object that failed verification."""

    path: str
    """File path inside the store."""
    expected: str
    """Digest the path names."""
    actual: str | None
    """Digest of the bytes found, or None when the name itself is malformed."""


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
        """Store ``data`` and return its digest; storing the same bytes twice is a no-op."""
        digest = bytes_digest(data)
        target = self.path_for(digest)
        if target.exists():
            return digest
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o444)
            os.replace(tmp, target)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        _fsync_dir(target.parent)
        return digest

    def put_json(self, value: Any) -> str:
        """Store the canonical JSON of ``value`` and return its digest."""
        return self.put_bytes(canonical_bytes(value))

    def has(self, digest: str) -> bool:
        """Return whether an object with this digest is present (not verified)."""
        return self.path_for(digest).exists()

    def get_bytes(self, digest: str) -> bytes:
        """Return the bytes of ``digest``, verifying them; raise on absence or mismatch."""
        target = self.path_for(digest)
        try:
            data = target.read_bytes()
        except FileNotFoundError as exc:
            raise InputError(f"object {digest} is not in the store", path=str(target)) from exc
        actual = bytes_digest(data)
        if actual != digest:
            raise IntegrityError(f"object {target} holds {actual}, not {digest}")
        return data

    def get_json(self, digest: str) -> Any:
        """Return the parsed JSON value of ``digest``, verified."""
        return loads_canonical(self.get_bytes(digest), path=str(self.path_for(digest)))

    def iter_digests(self) -> Iterator[str]:
        """Yield the digest named by every object file, in sorted order."""
        if not self.objects.exists():
            return
        for sub in sorted(self.objects.iterdir()):
            if not sub.is_dir():
                continue
            for obj in sorted(sub.iterdir()):
                if not obj.name.startswith(".tmp-"):
                    yield DIGEST_PREFIX + sub.name + obj.name

    def verify(self) -> list[BadObject]:
        """Re-hash every object and return those whose bytes do not match their name."""
        bad: list[BadObject] = []
        for digest in self.iter_digests():
            path = self.objects / digest[7:9] / digest[9:]
            try:
                parse_digest(digest)
            except InputError:
                bad.append(BadObject(str(path), digest, None))
                continue
            actual = bytes_digest(path.read_bytes())
            if actual != digest:
                bad.append(BadObject(str(path), digest, actual))
        return bad


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
