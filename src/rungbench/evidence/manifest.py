"""Run manifests (``rungbench.run-manifest/1``): what a run executed, on what, when.

A manifest records the run id, the package version, the git commit when the
code runs from a checkout, the digest of the design executed, the digest of
every input, the registered exclusions, timezone-aware start and end times, and
optionally the ledger head at the end of the run (an anchor for
:func:`rungbench.evidence.ledger.verify_chain`).

The file is the manifest's canonical JSON with one more key, ``manifest_digest``:
the digest of the manifest without that key (:attr:`RunManifest.digest`).
:func:`read_manifest` recomputes it, so a flipped byte, a truncation or an edit
of any field is an :class:`~rungbench.errors.IntegrityError` naming the file. Like
the ledger's chain this is keyless: it catches damage and careless edits, not a
forger who recomputes the digest; the defence against that is the digest kept
elsewhere (the ledger, a report that cites it).
"""

from __future__ import annotations

import re
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError, model_validator

from rungbench import __version__
from rungbench.errors import InputError, IntegrityError
from rungbench.evidence.canonical import (
    DIGEST_SCHEME,
    Digest,
    canonical_bytes,
    digest,
    loads_canonical,
)
from rungbench.evidence.store import write_atomic

MANIFEST_SCHEMA: Final = "rungbench.run-manifest/1"
"""Version tag of the manifest record."""

CHECKSUM_KEY: Final = "manifest_digest"
"""Key of the file's self-check: the digest of the manifest without this key."""

RUN_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
_COMMIT_RE = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


class Exclusion(BaseModel):
    """One unit a run left out, and the registered rule that left it out."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    subject: str = Field(min_length=1)
    """What was excluded (a position id, a case id, a file)."""
    reason: str = Field(min_length=1)
    """Registered reason code, e.g. ``unstable_top_move``."""
    detail: str = ""
    """Human-readable explanation with the offending value."""


class RunManifest(BaseModel):
    """The record of one run."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    schema_: Literal["rungbench.run-manifest/1"] = Field(default=MANIFEST_SCHEMA, alias="schema")
    """Record version."""
    run_id: str = Field(pattern=RUN_ID_PATTERN)
    """Identifier of the run; also its directory name under ``runs/``."""
    package_version: str = Field(min_length=1)
    """Version of rungbench that ran."""
    git_commit: str | None = Field(default=None, pattern=r"^[0-9a-f]{40}([0-9a-f]{24})?$")
    """``git rev-parse HEAD`` of the source checkout, None when not run from one."""
    design_digest: Digest
    """Digest of the design the run executed."""
    inputs: dict[str, Digest]
    """Input name → digest of its bytes."""
    exclusions: list[Exclusion] = Field(default_factory=list)
    """Units left out, each with its reason."""
    started_at: AwareDatetime
    """When the run started (timezone-aware)."""
    ended_at: AwareDatetime
    """When the run ended (timezone-aware, not before ``started_at``)."""
    ledger_head: Digest | None = None
    """Hash of the last ledger event when the run ended, if the run kept a ledger."""
    digest_scheme: str = DIGEST_SCHEME
    """Canonicalization scheme of every digest in this manifest."""

    @model_validator(mode="after")
    def _ends_after_start(self) -> RunManifest:
        if self.ended_at < self.started_at:
            raise ValueError(f"ended_at {self.ended_at} is before started_at {self.started_at}")
        return self

    def to_json(self) -> dict[str, Any]:
        """Return the manifest as JSON-ready data (the form that is written and digested)."""
        return self.model_dump(by_alias=True, mode="json")

    @property
    def digest(self) -> str:
        """Digest of the manifest's canonical JSON."""
        return digest(self.to_json())


def git_commit(cwd: str | Path | None = None) -> str | None:
    """Return ``git rev-parse HEAD`` run in ``cwd`` (default: this package), or None.

    None when git is not installed, the directory is not in a work tree, or the
    output is not a commit hash.
    """
    where = Path(cwd) if cwd is not None else Path(__file__).resolve().parent
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=where,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and _COMMIT_RE.match(commit) else None


def make_run_id(started_at: datetime, design_digest: str, inputs: dict[str, str]) -> str:
    """Return ``<UTC start>-<12 hex>``, the hex part a digest of design and inputs."""
    if started_at.tzinfo is None:
        raise InputError(f"naive datetime {started_at!r}; give a timezone", field="started_at")
    stamp = started_at.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    tail = digest({"design": design_digest, "inputs": inputs})[7:19]
    return f"{stamp}-{tail}"


def build_manifest(
    *,
    design_digest: str,
    inputs: dict[str, str],
    started_at: datetime,
    ended_at: datetime,
    exclusions: list[Exclusion] | None = None,
    ledger_head: str | None = None,
    run_id: str | None = None,
    repo: str | Path | None = None,
) -> RunManifest:
    """Return a validated manifest, filling the package version and git commit."""
    values: dict[str, Any] = {
        "run_id": run_id or make_run_id(started_at, design_digest, inputs),
        "package_version": __version__,
        "git_commit": git_commit(repo),
        "design_digest": design_digest,
        "inputs": inputs,
        "exclusions": [e.model_dump() for e in exclusions or []],
        "started_at": started_at,
        "ended_at": ended_at,
        "ledger_head": ledger_head,
    }
    return _validate(values, path=None)


def manifest_json_schema() -> dict[str, Any]:
    """Return the JSON Schema of a manifest file: :class:`RunManifest` (by alias) plus
    the required ``manifest_digest`` self-check."""
    schema = RunManifest.model_json_schema(by_alias=True)
    schema["properties"][CHECKSUM_KEY] = {
        "type": "string", "pattern": r"^sha256:[0-9a-f]{64}$",
        "description": "Digest of the canonical JSON of this object without this key.",
    }
    schema["required"] = [*schema.get("required", []), CHECKSUM_KEY]
    return schema


def manifest_file_bytes(manifest: RunManifest) -> bytes:
    """The bytes of a manifest file: canonical JSON with the ``manifest_digest`` self-check."""
    return canonical_bytes({**manifest.to_json(), CHECKSUM_KEY: manifest.digest})


def write_manifest(path: str | Path, manifest: RunManifest, *, overwrite: bool = False) -> str:
    """Write the manifest file atomically; return the manifest's digest.

    Raises :class:`InputError` naming ``path`` when it exists and ``overwrite`` is false.
    """
    write_atomic(path, manifest_file_bytes(manifest), overwrite=overwrite)
    return manifest.digest


def read_manifest(path: str | Path) -> RunManifest:
    """Read, validate and self-check a manifest file.

    :class:`InputError` names the path and bad field; :class:`IntegrityError` names the
    path when the content no longer hashes to its recorded ``manifest_digest``.
    """
    target = Path(path)
    try:
        data = target.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read manifest: {exc.strerror}", path=str(target)) from exc
    value = loads_canonical(data, path=str(target))
    recorded = value.pop(CHECKSUM_KEY, None) if isinstance(value, dict) else None
    manifest = _validate(value, path=str(target))
    _check_recorded(manifest, recorded, data, path=str(target))
    return manifest


def _check_recorded(manifest: RunManifest, recorded: Any, data: bytes, *, path: str) -> None:
    if recorded is None:
        raise IntegrityError(f"{path}: no {CHECKSUM_KEY}: not written by rungbench, or edited")
    if recorded != manifest.digest:
        raise IntegrityError(f"{path}: manifest hashes to {manifest.digest} but records "
                             f"{CHECKSUM_KEY} {recorded!r} (edited or damaged)")
    if data != manifest_file_bytes(manifest):
        raise IntegrityError(f"{path}: not the canonical bytes of the manifest it holds "
                             "(edited or damaged)")


def _validate(value: Any, *, path: str | None) -> RunManifest:
    if not isinstance(value, dict):
        raise InputError(f"a manifest is a JSON object, not {type(value).__name__}", path=path)
    try:
        return RunManifest.model_validate(value)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "manifest"
        shown = repr(err["input"])
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        bad = f" (got {shown})" if err["type"] != "missing" and err["loc"] else ""
        raise InputError(f"{err['msg']}{bad}", path=path, field=where) from exc
