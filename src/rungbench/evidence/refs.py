"""Refs: human names for digests (``study/refs/<name>``), each move logged in the ledger.

A ref is the live pointer a stage follows ("the DeepSeek cohort as of now");
a frozen record pins the digest it had. :meth:`Refs.current` turns refs into
the ``current`` mapping of :func:`rungbench.evidence.freeze.check`, which is how
a cohort that grew after a freeze is seen as ``stale``. A move can name the
digest it expects to replace, so two writers cannot silently overwrite each
other.

A ref lives beside the object store it points into (``<study>/refs`` and
``<study>/objects``). A move refuses (``absent``) a digest the store does not hold,
and, when it logs to a ledger, refuses before moving anything if the ledger's chain
is broken. :meth:`Refs.resolve` reads a ref and raises when its object has gone.
"""

from __future__ import annotations

import fcntl
import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from rungbench.errors import InputError, IntegrityError, Reason, Refusal
from rungbench.evidence.canonical import is_digest, parse_digest
from rungbench.evidence.ledger import Ledger
from rungbench.evidence.store import ObjectStore, write_atomic

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)*$")
_LOCK = ".lock"

UNSET = "unset"
"""Pass as ``expected`` to :meth:`Refs.move` to require that the ref does not exist yet."""


@dataclass(frozen=True)
class RefMove:
    """One change of a ref."""

    name: str
    """The ref that moved."""
    old: str | None
    """Digest before the move, None when the ref was new."""
    new: str
    """Digest after the move."""


class Refs:
    """The ``refs/`` directory of a study."""

    def __init__(self, root: str | os.PathLike[str], *, ledger: Ledger | None = None) -> None:
        self.root = Path(root)
        self.dir = self.root / "refs"
        self._ledger = ledger

    def path_for(self, name: str) -> Path:
        """Return the file that holds ref ``name``; raise :class:`InputError` on a bad name."""
        if not _NAME_RE.match(name) or ".." in name.split("/"):
            raise InputError(f"bad ref name {name!r}: letters, digits, . _ - and /", field="ref")
        return self.dir / name

    def get(self, name: str) -> str | None:
        """Return the digest ``name`` points to, or None when it does not exist."""
        path = self.path_for(name)
        try:
            text = path.read_text(encoding="ascii").strip()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise InputError(f"unreadable ref: {(exc.strerror or str(exc)).lower()}",
                             path=str(path)) from exc
        except UnicodeDecodeError as exc:
            raise InputError(f"ref is not ASCII text: {exc.reason}", path=str(path)) from exc
        if not is_digest(text):
            raise InputError(f"ref holds {text[:80]!r}, not a digest", path=str(path))
        return text

    def resolve(self, name: str) -> str:
        """Return the digest ``name`` points to, present in the store.

        Raises :class:`InputError` naming the ref file when there is no such ref, and
        :class:`IntegrityError` naming the ref file and digest when its object is gone.
        """
        found = self.get(name)
        path = self.path_for(name)
        if found is None:
            raise InputError(f"no ref {name!r}", path=str(path))
        if not ObjectStore(self.root).has(found):
            raise IntegrityError(f"{path}: ref {name!r} points to {found}, which is not in "
                                 f"the store at {self.root}")
        return found

    def move(self, name: str, digest: str, *, expected: str | None = None) -> RefMove:
        """Point ``name`` at ``digest``; log the move; refuse if ``expected`` no longer holds.

        ``expected`` is the digest the caller believes the ref has now (or
        :data:`UNSET` for a new ref); None skips the comparison. A digest the store
        does not hold is refused (``absent``); a broken ledger chain raises
        :class:`IntegrityError` before the ref is touched.
        """
        parse_digest(digest, field="digest")
        path = self.path_for(name)
        self._require_stored(digest)
        if self._ledger is not None:
            self._ledger.require_intact()
        with self._locked():
            old = self.get(name)
            if expected is not None and (old or UNSET) != expected:
                detail = f"ref {name!r} is {old or UNSET}, the move expected {expected}"
                raise Refusal([Reason("stale", detail, name)], gate="ref-move")
            if old != digest:
                path.parent.mkdir(parents=True, exist_ok=True)
                write_atomic(path, (digest + "\n").encode("ascii"), overwrite=True)
                if self._ledger is not None:
                    self._ledger.append("ref.move", {"name": name, "old": old, "new": digest})
        return RefMove(name, old, digest)

    def _require_stored(self, digest: str) -> None:
        if not ObjectStore(self.root).has(digest):
            detail = f"{digest} is not in the store at {self.root}; put the object first"
            raise Refusal([Reason("absent", detail, "digest", {"digest": digest})],
                          gate="ref-move")

    def names(self) -> list[str]:
        """Return every ref name, sorted."""
        if not self.dir.exists():
            return []
        found = (p.relative_to(self.dir).as_posix() for p in self.dir.rglob("*") if p.is_file())
        return sorted(n for n in found if not n.startswith(".") and "/." not in n)

    def current(self, bindings: Mapping[str, str]) -> dict[str, str | None]:
        """Map input name → ref name to input name → digest now (None when the ref is absent).

        The result is the ``current`` argument of a freeze check.
        """
        return {key: self.get(ref) for key, ref in bindings.items()}

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.dir.mkdir(parents=True, exist_ok=True)
        with open(self.dir / _LOCK, "a+b") as fh:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
