"""The on-disk layout of a label workspace and its canonical JSON files.

::

    <root>/pool.json                 frozen engine-blind pool (canonical JSON)
    <root>/cohorts/<name>.json       frozen cohorts (canonical JSON)
    <root>/qualification.json        persisted leakage qualification (canonical JSON)
    <root>/objects/sha256/..         evidence store: cache records, candidate lists
    <root>/cache/index/<hex>.json    cache key digest -> record digest (one file per key)
    <root>/cache/quarantine/         records that failed revalidation (never reused)
    <root>/label-stage/              the published stage (appears only by atomic rename)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rungbench.errors import InputError
from rungbench.evidence.canonical import bytes_digest, canonical_bytes, loads_canonical
from rungbench.evidence.store import ObjectStore, write_atomic

STAGE_DIRNAME = "label-stage"
"""Name of the published stage directory inside a workspace."""


@dataclass(frozen=True)
class Workspace:
    """Paths of one label workspace."""

    root: Path
    """Workspace directory."""

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


def read_document(path: Path, schema: str) -> tuple[str, dict[str, Any]]:
    """Return ``(digest of its bytes, document)`` of a frozen file whose schema is ``schema``."""
    data = path.read_bytes()
    document = loads_canonical(data, path=str(path))
    if not isinstance(document, dict) or document.get("schema") != schema:
        raise InputError(f"not a {schema} document", path=str(path), field="schema")
    return bytes_digest(data), document
