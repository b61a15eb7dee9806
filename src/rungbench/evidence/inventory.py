"""Store inventory: every object something in the study points to must be in the store.

:meth:`ObjectStore.verify` re-hashes the objects that are there; it cannot see one
that was deleted. :func:`verify_inventory` adds what is known to be needed:

- every ref in ``<study>/refs`` names an object;
- every frozen record (``rungbench.frozen/1``) stored in the store names its inputs
  and its output;
- every run manifest (``rungbench.run-manifest/1``) stored in the store names its
  inputs.

A needed object that is absent is a :class:`MissingObject`, naming the digest and
everyone who needs it. An object nothing names can still vanish unseen: only a
record of it elsewhere (a ledger event, a manifest) can reveal that.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from rungbench.errors import RungbenchError
from rungbench.evidence.canonical import is_digest, loads_canonical
from rungbench.evidence.refs import Refs
from rungbench.evidence.store import BadObject, ObjectStore, Progress

RECORD_LIMIT = 1 << 20
"""Objects larger than this (bytes) are not parsed for references: records are small."""

_SCHEMA_KEYS: dict[str, tuple[str, ...]] = {
    "rungbench.frozen/1": ("inputs", "output"),
    "rungbench.run-manifest/1": ("inputs",),
}
"""Record schema → the fields whose digests must be in the store."""


@dataclass(frozen=True)
class MissingObject:
    """An object that something in the study needs but the store does not hold."""

    digest: str
    """The absent digest."""
    path: str
    """Where the store would hold it."""
    referenced_by: tuple[str, ...]
    """Who needs it, e.g. ``ref cohorts/a`` or ``frozen record sha256:… (input 'pool')``."""

    def to_json(self) -> dict[str, Any]:
        """Return the finding as a JSON-ready mapping."""
        return {"digest": self.digest, "path": self.path,
                "referenced_by": list(self.referenced_by)}


@dataclass(frozen=True)
class InventoryReport:
    """What walking the store and its references found."""

    objects: int
    """Well-formed object files present."""
    bad: tuple[BadObject, ...]
    """Objects whose bytes do not match their name (or malformed entries)."""
    missing: tuple[MissingObject, ...]
    """Needed objects that are absent."""

    @property
    def ok(self) -> bool:
        """Whether every object verified and none that is needed is missing."""
        return not self.bad and not self.missing

    def to_json(self) -> dict[str, Any]:
        """Return the report as a JSON-ready mapping."""
        return {"ok": self.ok, "objects": self.objects, "bad": [b.to_json() for b in self.bad],
                "missing": [m.to_json() for m in self.missing]}


def verify_inventory(store: ObjectStore, *, progress: Progress | None = None) -> InventoryReport:
    """Re-hash every object and report every needed object that is absent."""
    bad = store.verify(progress=progress)
    damaged = {b.expected for b in bad}
    present = set(store.iter_digests())
    needed: dict[str, list[str]] = {}
    for digest, who in _references(store, present - damaged):
        needed.setdefault(digest, []).append(who)
    missing = tuple(
        MissingObject(digest, str(store.path_for(digest)), tuple(who))
        for digest, who in sorted(needed.items()) if digest not in present
    )
    return InventoryReport(len(present), tuple(bad), missing)


def _references(store: ObjectStore, intact: set[str]) -> Iterator[tuple[str, str]]:
    """Yield (digest, who needs it) from refs and from the records stored in the store."""
    refs = Refs(store.root)
    for name in refs.names():
        found = refs.get(name)
        if found is not None:
            yield found, f"ref {name} ({refs.path_for(name)})"
    for digest in sorted(intact):
        yield from _record_references(store, digest)


def _record_references(store: ObjectStore, digest: str) -> Iterator[tuple[str, str]]:
    path = store.path_for(digest)
    if path.stat().st_size > RECORD_LIMIT:
        return
    try:
        value = loads_canonical(store.get_bytes(digest))
    except RungbenchError:
        return
    if not isinstance(value, dict):
        return
    fields = _SCHEMA_KEYS.get(str(value.get("schema")), ())
    kind = str(value.get("schema")).removeprefix("rungbench.").split("/")[0]
    for field in fields:
        yield from _field_digests(value.get(field), f"{kind} {digest} ({field}")


def _field_digests(value: Any, who: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str) and is_digest(value):
        yield value, who + ")"
    elif isinstance(value, dict):
        for key in sorted(value):
            item = value[key]
            if isinstance(item, str) and is_digest(item):
                yield item, f"{who} {key!r})"
