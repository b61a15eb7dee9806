"""The evidence operations behind ``rungbench evidence …``, as library functions.

Each takes plain paths and strings, verifies what it reads, and raises a
:class:`~rungbench.errors.RungbenchError` naming the file or field; the CLI only parses
and prints.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from rungbench.errors import InputError, Reason, Refusal
from rungbench.evidence.canonical import loads_canonical, parse_digest
from rungbench.evidence.freeze import check, current_from_files
from rungbench.evidence.ledger import ChainReport, Ledger, verify_chain
from rungbench.evidence.manifest import read_manifest
from rungbench.evidence.refs import Refs
from rungbench.evidence.store import ObjectStore, write_atomic


def existing_store(root: Path) -> ObjectStore:
    """The store at ``root``; :class:`InputError` naming it when it is not a directory."""
    if root.exists() and not root.is_dir():
        raise InputError("the store must be a directory, but a file is here", path=str(root),
                         field="store")
    if not root.is_dir():
        raise InputError("no store directory here", path=str(root))
    objects = ObjectStore(root).objects
    for folder in (objects.parent, objects):
        if folder.exists() and not folder.is_dir():
            raise InputError("a file is where the store's folder should be", path=str(folder))
    return ObjectStore(root)


def named_files(pairs: list[str] | None) -> dict[str, Path]:
    files: dict[str, Path] = {}
    for pair in pairs or []:
        name, sep, path = pair.partition("=")
        if not sep or not name or not path:
            raise InputError(f"expected NAME=FILE, got {pair!r}", field="input")
        if name in files:
            raise InputError(f"input {name!r} given twice", field="input")
        files[name] = Path(path)
    return files


def naming_files(refusal: Refusal, files: dict[str, Path]) -> Refusal:
    """The same refusal with the file behind each named input added to its detail."""
    reasons = [
        Reason(r.code, f"{r.detail} ({files[r.subject]})", r.subject, r.data)
        if r.subject in files else r
        for r in refusal.reasons
    ]
    return Refusal(reasons, gate=refusal.gate)


def get_object(store: Path, wanted: str, out: Path | None, force: bool) -> bytes:
    parse_digest(wanted, field="DIGEST")
    if out is not None and out.is_dir():
        raise InputError("the output is a directory; give a file path", path=str(out),
                         field="out")
    if out is not None and out.exists() and not force:
        raise InputError("refusing to overwrite an existing file (use --force)", path=str(out))
    data = existing_store(store).get_bytes(wanted)
    if out is not None:
        write_atomic(out, data, overwrite=force)
    return data


def content_json(data: bytes) -> dict[str, str]:
    try:
        return {"text": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


def verify_ledger(db: str | Path, anchor: str | None, manifest: Path | None = None
                  ) -> ChainReport:
    """Verify the ledger at ``db`` against ``anchor`` or the ``ledger_head`` of ``manifest``."""
    if anchor is not None and manifest is not None:
        raise InputError("give an anchor or an anchor manifest, not both", field="anchor")
    if anchor is not None:
        parse_digest(anchor, field="anchor")
    if manifest is not None:
        anchor = read_manifest(manifest).ledger_head
        if anchor is None:
            raise InputError("the manifest records no ledger_head", path=str(manifest),
                             field="anchor_manifest")
    return verify_chain(db, anchor=anchor)


def append_event(db: str | Path, kind: str, payload: str, anchor: str | None = None
                 ) -> dict[str, Any]:
    """Append one event; with ``anchor``, first require the chain to still contain it (so a
    truncated, replaced or deleted ledger is refused rather than extended or re-created)."""
    try:
        body = loads_canonical(payload.encode("utf-8"))
    except InputError as exc:
        raise InputError(f"bad payload: {exc}", field="payload") from None
    if anchor is not None:
        verify_ledger(db, anchor).require_ok(str(db))
    with Ledger(db) as ledger:
        return ledger.append(kind, body).to_json()


def ref_action(
    store: Path, name: str, target: str | None, ledger: str | Path | None, expect: str | None
) -> dict[str, Any]:
    if target is None:
        return {"name": name, "digest": Refs(existing_store(store).root).resolve(name)}
    parse_digest(target, field="DIGEST")
    existing_store(store)
    if ledger is None:
        move = Refs(store).move(name, target, expected=expect)
    else:
        with Ledger(ledger) as book:
            move = Refs(store, ledger=book).move(name, target, expected=expect)
    return {"name": name, "digest": move.new, "old": move.old}


def check_named(store: Path, frozen: str, files: dict[str, Path]) -> dict[str, Any]:
    """Rebuild frozen record ``frozen`` in ``store`` against the current ``files``; a refusal
    names the file behind each named input."""
    parse_digest(frozen, field="FROZEN")
    try:
        record = check(existing_store(store), frozen, current=current_from_files(files))
    except Refusal as exc:
        raise naming_files(exc, files) from None
    return record.to_json()
