"""Sealed directories: published all or nothing, verified on every read, never overwritten.

A producer that writes a directory of files (a causal bench, a run, a published stage)
builds it under a hidden temporary sibling, writes a seal listing every file with its
sha256 and size, fsyncs, and renames the whole directory into place in one step
(:func:`publish_dir`). A reader calls :func:`verify_sealed` before it uses anything in
the directory: a missing seal (an unfinished or foreign directory), a missing, changed
or unlisted file each raise :class:`~rungbench.errors.IntegrityError` naming the file.

Nothing is replaced silently: :func:`ensure_absent` refuses (code ``exists``, exit 3)
when the target already exists, unless the caller passes ``force``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rungbench.errors import InputError, IntegrityError, Reason, Refusal
from rungbench.evidence.canonical import bytes_digest, canonical_bytes, loads_canonical
from rungbench.evidence.store import fsync_dir, write_atomic

SEAL_NAME = "SEAL.json"
"""File name of the seal inside a sealed directory."""
SEAL_SCHEMA = "rungbench.evidence.seal/1"
"""Schema name and version of a seal."""


@dataclass(frozen=True)
class SealedFile:
    """One file listed in a seal."""

    path: str
    """POSIX path relative to the sealed directory."""
    digest: str
    """``sha256:<hex>`` of the file's bytes."""
    size: int
    """Size in bytes."""

    def to_json(self) -> dict[str, Any]:
        """Return the entry as a JSON-ready mapping."""
        return {"path": self.path, "digest": self.digest, "size": self.size}


def ensure_absent(target: Path, *, force: bool, what: str) -> None:
    """Refuse (``exists``) when ``target`` exists and ``force`` is not given.

    ``target`` naming a file where a directory is expected is an input error either way.
    """
    if target.exists() and not target.is_dir():
        raise InputError(f"{what} must be a directory, but a file is there", path=str(target))
    if target.exists() and not force:
        raise Refusal([Reason("exists", f"{target} already holds a {what}; pass --force to "
                              "replace it", subject=str(target))], gate=f"{what} output")


def _files(root: Path) -> Iterator[Path]:
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.relative_to(root).as_posix() != SEAL_NAME:
            yield path


def seal_entries(root: Path) -> list[SealedFile]:
    """List every file under ``root`` (the seal excluded) with its digest and size."""
    entries = []
    for path in _files(root):
        data = path.read_bytes()
        entries.append(SealedFile(path.relative_to(root).as_posix(), bytes_digest(data),
                                  len(data)))
    return entries


def write_seal(root: Path, *, kind: str) -> str:
    """Seal ``root`` as it is now; return the seal's digest."""
    document = {"schema": SEAL_SCHEMA, "kind": kind,
                "files": [e.to_json() for e in seal_entries(root)]}
    data = canonical_bytes(document)
    write_atomic(root / SEAL_NAME, data, overwrite=True)
    return bytes_digest(data)


def read_seal(root: Path, *, kind: str | None = None) -> dict[str, Any]:
    """Read and check the seal document of ``root`` (not the files it lists)."""
    seal = root / SEAL_NAME
    if not root.is_dir():
        raise InputError("not a directory", path=str(root))
    if not seal.is_file():
        raise IntegrityError(f"{seal}: missing: {root} is unfinished or was not written by "
                             "rungbench")
    document = loads_canonical(seal.read_bytes(), path=str(seal))
    if not isinstance(document, dict) or document.get("schema") != SEAL_SCHEMA:
        raise IntegrityError(f"{seal}: not a {SEAL_SCHEMA} document")
    if kind is not None and document.get("kind") != kind:
        raise IntegrityError(f"{seal}: seals a {document.get('kind')!r}, expected {kind!r}")
    files = document.get("files")
    if not isinstance(files, list):
        raise IntegrityError(f"{seal}: 'files' is not a list")
    return document


def verify_sealed(root: Path, *, kind: str | None = None,
                  ignore: Iterable[str] = ()) -> dict[str, Any]:
    """Verify every file of sealed directory ``root``; return the seal document.

    Raises IntegrityError naming the first missing, changed or unlisted file. Paths in
    ``ignore`` (relative, POSIX; a trailing ``/`` names a folder) may be added after
    sealing (e.g. a run's own later outputs) and are not checked.
    """
    document = read_seal(root, kind=kind)
    skipped = tuple(ignore)
    listed: set[str] = set()
    for number, entry in enumerate(document["files"]):
        name = _entry_path(entry, root / SEAL_NAME, number)
        listed.add(name)
        path = root / name
        if not path.is_file():
            raise IntegrityError(f"{path}: listed in {SEAL_NAME} but missing")
        if bytes_digest(path.read_bytes()) != entry.get("digest"):
            raise IntegrityError(f"{path}: changed since it was sealed (digest differs)")
    for path in _files(root):
        name = path.relative_to(root).as_posix()
        if name not in listed and not _ignored(name, skipped):
            raise IntegrityError(f"{path}: not listed in {SEAL_NAME} (added after sealing)")
    return document


def _entry_path(entry: Any, seal: Path, number: int) -> str:
    """The relative path of seal entry ``number``, refusing a malformed or escaping one."""
    if not (isinstance(entry, dict) and isinstance(entry.get("path"), str)
            and isinstance(entry.get("digest"), str) and type(entry.get("size")) is int):
        raise IntegrityError(f"{seal}: entry {number} is not a {{path, digest, size}} record")
    name: str = entry["path"]
    parts = Path(name).parts
    if not parts or Path(name).is_absolute() or ".." in parts or name == SEAL_NAME:
        raise IntegrityError(f"{seal}: entry {number} names {name!r}, outside the directory")
    return name


def _ignored(name: str, ignore: tuple[str, ...]) -> bool:
    return any(name == i or (i.endswith("/") and name.startswith(i)) for i in ignore)


@contextmanager
def publish_dir(target: Path, *, kind: str, force: bool = False) -> Iterator[Path]:
    """Yield a temporary directory to fill; on success seal it and rename it to ``target``.

    On any exception the temporary directory is removed and ``target`` is untouched.
    An existing ``target`` is refused unless ``force`` (then it is replaced only after
    the new directory is complete and sealed).
    """
    ensure_absent(target, force=force, what=kind)
    target.parent.mkdir(parents=True, exist_ok=True)
    clear_dead_temps(target.parent, target.name)
    temp = target.parent / f".{target.name}.tmp-{os.getpid()}"
    shutil.rmtree(temp, ignore_errors=True)
    temp.mkdir()
    try:
        yield temp
        write_seal(temp, kind=kind)
        verify_sealed(temp, kind=kind)
        for path in temp.rglob("*"):
            if path.is_dir():
                fsync_dir(path)
        fsync_dir(temp)
        if target.exists():
            old = target.parent / f".{target.name}.old-{os.getpid()}"
            target.rename(old)
            temp.rename(target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            temp.rename(target)
        fsync_dir(target.parent)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise


def leftover_temps(parent: Path, name: str) -> list[Path]:
    """Temporary siblings a killed :func:`publish_dir` of ``parent/name`` left behind."""
    return sorted(p for p in parent.glob(f".{name}.tmp-*") if p.is_dir())


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (one we may not signal counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clear_dead_temps(parent: Path, name: str) -> list[Path]:
    """Remove temporary siblings of ``parent/name`` left by a killed :func:`publish_dir`.

    A temporary folder is removed only when the process named in it is gone, so a second
    process that is still publishing is never disturbed. Returns what was removed.
    """
    removed = []
    for temp in leftover_temps(parent, name):
        pid = temp.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not process_alive(int(pid)):
            shutil.rmtree(temp, ignore_errors=True)
            removed.append(temp)
    return removed
