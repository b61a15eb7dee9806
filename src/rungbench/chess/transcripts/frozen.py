"""A frozen multi-run LLM Chess corpus: one manifest naming every run folder and file digest.

``corpus_manifest.json`` in a folder of run folders lists each run and, for every
file of it, the byte size and sha256; the manifest carries a digest of its own
canonical content (``manifest_digest``). Reading a frozen corpus checks the
manifest's own digest, then every listed file, then that no run holds a file the
manifest does not list, before any game is replayed: one changed byte anywhere
refuses the whole corpus (the corpus-level integrity that game-level eligibility
never overrides).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rungbench.errors import InputError, Reason, Refusal
from rungbench.evidence.canonical import bytes_digest, canonical_bytes, digest, loads_canonical
from rungbench.evidence.store import write_atomic

FROZEN_SCHEMA = "rungbench.chess.llmchess-corpus/1"
MANIFEST_NAME = "corpus_manifest.json"
_GATE = "llm chess corpus freeze"


def is_frozen_corpus(folder: Path) -> bool:
    """Return whether ``folder`` holds a frozen multi-run manifest."""
    return (folder / MANIFEST_NAME).is_file()


def run_folders(folder: Path) -> list[Path]:
    """Sub-folders of ``folder`` holding an ``output.txt``, sorted by name."""
    return sorted(p for p in folder.iterdir() if p.is_dir() and (p / "output.txt").is_file())


def manifest_for(folder: Path, *, description: str) -> dict[str, Any]:
    """The manifest freezing every run folder under ``folder`` as it is now."""
    runs = []
    for run in run_folders(folder):
        files = [{"path": p.name, "bytes": p.stat().st_size, "sha256": bytes_digest(p.read_bytes())}
                 for p in sorted(run.iterdir()) if p.is_file()]
        runs.append({"folder": run.name, "files": files})
    if not runs:
        raise InputError("no run folder (with an output.txt) to freeze", path=str(folder))
    body: dict[str, Any] = {"schema": FROZEN_SCHEMA, "description": description, "runs": runs}
    return {**body, "manifest_digest": digest(body)}


def freeze(folder: Path, *, description: str, force: bool = False) -> dict[str, Any]:
    """Write ``corpus_manifest.json`` for ``folder``; refuse to replace one without ``force``."""
    path = folder / MANIFEST_NAME
    if path.exists() and not force:
        raise InputError("already frozen (corpus_manifest.json); pass --force to replace it",
                         path=str(path))
    manifest = manifest_for(folder, description=description)
    write_atomic(path, canonical_bytes(manifest) + b"\n", overwrite=True)
    return manifest


def verify_frozen(folder: Path) -> list[Path]:
    """Check a frozen corpus byte for byte; return its run folders in manifest order.

    Raises :class:`Refusal` (gate ``llm chess corpus freeze``) listing every defect,
    each naming the file: a manifest whose own digest fails, a missing, changed or
    resized file, a run folder or file the manifest does not list.
    """
    return [run for run, _ in read_frozen(folder)]


def read_frozen(folder: Path) -> list[tuple[Path, dict[str, bytes]]]:
    """:func:`verify_frozen`, returning with each run folder the bytes of its files (by
    name, manifest order) as they were checked, so a replay reads exactly the verified
    bytes and reads no file twice."""
    path = folder / MANIFEST_NAME
    manifest = loads_canonical(path.read_bytes(), path=str(path))
    if not isinstance(manifest, dict) or manifest.get("schema") != FROZEN_SCHEMA:
        raise InputError(f"not a {FROZEN_SCHEMA} manifest", path=str(path), field="schema")
    body = {k: v for k, v in manifest.items() if k != "manifest_digest"}
    if manifest.get("manifest_digest") != digest(body):
        raise Refusal([Reason("digest_mismatch", f"{path}: the manifest's content does not "
                              f"match its manifest_digest {manifest.get('manifest_digest')!r}",
                              subject=str(path), data={"path": str(path)})], gate=_GATE)
    runs = _runs(manifest, str(path))
    reasons: list[Reason] = []
    listed_runs = {str(r["folder"]) for r in runs}
    for present in run_folders(folder):
        if present.name not in listed_runs:
            reasons.append(_reason("unlisted", present, "run folder not listed in the manifest"))
    out = []
    for run in runs:
        run_dir = folder / str(run["folder"])
        files: dict[str, bytes] = {}
        out.append((run_dir, files))
        listed = {str(f["path"]) for f in run["files"]}
        if run_dir.is_dir():
            reasons += [_reason("unlisted", p, "file not listed in the manifest")
                        for p in sorted(run_dir.iterdir()) if p.name not in listed and p.is_file()]
        for entry in run["files"]:
            found, data = _check(run_dir / str(entry["path"]), entry)
            reasons += found
            if data is not None:
                files[str(entry["path"])] = data
    if reasons:
        raise Refusal(reasons, gate=_GATE)
    return out


def _runs(manifest: dict[str, Any], path: str) -> list[dict[str, Any]]:
    runs = manifest.get("runs")
    if not isinstance(runs, list) or not runs:
        raise InputError("manifest has no list of runs", path=path, field="runs")
    for i, run in enumerate(runs):
        if not isinstance(run, dict) or not isinstance(run.get("folder"), str) or not isinstance(
                run.get("files"), list):
            raise InputError(f"run entry {i} lacks a folder or a list of files", path=path,
                             field=f"runs[{i}]")
        for j, entry in enumerate(run["files"]):
            if not (isinstance(entry, dict) and isinstance(entry.get("path"), str)
                    and isinstance(entry.get("bytes"), int)
                    and isinstance(entry.get("sha256"), str)):
                raise InputError(f"file entry {j} of run {run['folder']!r} lacks path, bytes "
                                 "or sha256", path=path, field=f"runs[{i}].files[{j}]")
    return runs


def _check(path: Path, entry: dict[str, Any]) -> tuple[list[Reason], bytes | None]:
    """The defects of one listed file, and its bytes when it has none."""
    if not path.is_file():
        return [_reason("absent", path, "listed in the manifest but missing")], None
    data = path.read_bytes()
    if len(data) != entry["bytes"]:
        return [_reason("truncated" if len(data) < entry["bytes"] else "digest_mismatch", path,
                        f"{len(data)} bytes, manifest says {entry['bytes']}")], None
    if bytes_digest(data) != entry["sha256"]:
        return [_reason("digest_mismatch", path, f"sha256 {bytes_digest(data)} differs from "
                        f"manifest {entry['sha256']}")], None
    return [], data


def _reason(code: str, path: Path, detail: str) -> Reason:
    return Reason(code, f"{path}: {detail}", subject=str(path), data={"path": str(path)})
