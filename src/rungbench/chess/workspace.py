"""The on-disk layout of a label workspace and its canonical JSON files.

::

    <root>/pool.json                 frozen engine-blind pool (canonical JSON)
    <root>/cohorts/<name>.json       frozen cohorts (canonical JSON)
    <root>/qualification.json        persisted leakage qualification (canonical JSON)
    <root>/objects/sha256/..         evidence store: cache records, candidate lists
    <root>/cache/index/<hex>.json    cache key digest -> record digest (one file per key)
    <root>/cache/quarantine/         records that failed revalidation (never reused)
    <root>/label-stage/              the published stage (appears only by atomic rename)

Every frozen document (pool, cohort, qualification) carries ``self_digest``: the digest
of the document without that field. :func:`read_document` recomputes it, so a changed
byte is an :class:`~rungbench.errors.IntegrityError` naming the file, whichever command
reads it next. A workspace root that is a file (or lies under one) is an input error.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rungbench.errors import InputError, IntegrityError, Reason, Refusal
from rungbench.evidence.canonical import bytes_digest, canonical_bytes, digest, loads_canonical
from rungbench.evidence.store import ObjectStore, write_atomic

STAGE_DIRNAME = "label-stage"
"""Name of the published stage directory inside a workspace."""

SELF_DIGEST = "self_digest"
"""Field of a frozen document holding the digest of the document without it."""


def _file_on_the_way(root: Path) -> Path | None:
    """The first existing path from ``root`` upwards that is not a directory, if any."""
    for path in (root, *root.parents):
        if path.exists():
            return None if path.is_dir() else path
    return None


@dataclass(frozen=True)
class Workspace:
    """Paths of one label workspace."""

    root: Path
    """Workspace directory."""

    def __post_init__(self) -> None:
        blocker = _file_on_the_way(Path(self.root))
        if blocker is not None:
            raise InputError(f"workspace {self.root} must be a directory, but {blocker} is a "
                             "file", path=str(blocker))

    @property
    def pool(self) -> Path:
        """The frozen pool file."""
        return self.root / "pool.json"

    def cohort(self, name: str) -> Path:
        """The frozen cohort file called ``name``."""
        return self.root / "cohorts" / f"{name}.json"

    @property
    def qualification(self) -> Path:
        """The persisted qualification file."""
        return self.root / "qualification.json"

    @property
    def store(self) -> ObjectStore:
        """The evidence store holding cache records and candidate lists."""
        return ObjectStore(self.root)

    @property
    def index_dir(self) -> Path:
        """Directory of cache index entries."""
        return self.root / "cache" / "index"

    @property
    def quarantine_dir(self) -> Path:
        """Directory where records that failed revalidation are moved."""
        return self.root / "cache" / "quarantine"

    @property
    def stage(self) -> Path:
        """The published stage directory."""
        return self.root / STAGE_DIRNAME


def write_canonical(path: Path, value: Any) -> bytes:
    """Write the canonical JSON of ``value`` atomically and return the bytes written."""
    data = canonical_bytes(value)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data, overwrite=True)
    return data


def read_json(path: Path) -> Any:
    """Parse a JSON file, naming the path on failure."""
    return loads_canonical(path.read_bytes(), path=str(path))


def sealed(document: dict[str, Any]) -> dict[str, Any]:
    """Return ``document`` with its ``self_digest`` (the digest of the rest) added."""
    body = {k: v for k, v in document.items() if k != SELF_DIGEST}
    return {**body, SELF_DIGEST: digest(body)}


def write_document(path: Path, document: dict[str, Any]) -> bytes:
    """Write a frozen document with its self digest; return the bytes written."""
    return write_canonical(path, sealed(document))


def read_document(path: Path, schema: str) -> tuple[str, dict[str, Any]]:
    """Return ``(digest of its bytes, document)`` of a frozen file whose schema is ``schema``.

    The document's ``self_digest`` must match the rest of it: any changed byte is an
    IntegrityError naming the file. The returned document keeps the field.
    """
    if not path.is_file():
        raise InputError(f"no {schema} document", path=str(path))
    data = path.read_bytes()
    document = loads_canonical(data, path=str(path))
    if not isinstance(document, dict) or document.get("schema") != schema:
        raise InputError(f"not a {schema} document", path=str(path), field="schema")
    if sealed(document) != document:
        raise IntegrityError(f"{path}: changed since it was written (its self_digest does "
                             "not match its content)")
    return bytes_digest(data), document


def refuse_existing(path: Path, *, what: str, detail: str) -> None:
    """Refuse (``exists``, exit 3) when ``path`` exists; ``detail`` says what to do instead."""
    if path.exists() or path.is_symlink():
        raise Refusal([Reason("exists", f"{path} already holds a {what}; {detail}",
                              subject=str(path))], gate=f"{what} output")
