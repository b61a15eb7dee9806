"""Typed, schema-checked views of the published label stage (what downstream designs read).

The label stage hands two records across the stage boundary: the **manifest** (ordered
position key → candidate-list digest) and each **candidate list** (pass A's ranks 1–10).
Both are pydantic models with a JSON Schema (:func:`json_schemas`) and a versioned
``schema`` field; :func:`read_stage` verifies every digest before returning them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rungbench.errors import InputError, IntegrityError
from rungbench.evidence.canonical import bytes_digest, loads_canonical


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SearchStats(_Frozen):
    """Deterministic search statistics of one MultiPV line."""

    depth: int
    """Iteration depth of the line's last report."""
    seldepth: int
    """Selective depth."""
    nodes: int
    """Nodes searched when the line was last reported."""


class Candidate(_Frozen):
    """One presented candidate move (pass A, one rank)."""

    rank: int = Field(ge=1, le=10)
    """Engine rank in pass A (1 = best)."""
    uci: str
    """The move in UCI."""
    san: str
    """The move in SAN at the root."""
    score: dict[Literal["cp", "mate"], int]
    """Root-perspective score: ``{"cp": n}`` or ``{"mate": n}``."""
    wdl: tuple[int, int, int]
    """The engine's own per-mille win/draw/loss report, root perspective."""
    expectation: float = Field(ge=0.0, le=1.0)
    """WDL expectation ``(W + D/2) / 1000``."""
    search: SearchStats
    """Search statistics."""
    pv: list[str] = Field(min_length=1)
    """Full legal principal variation (UCI), starting with ``uci``."""


class CandidateList(_Frozen):
    """Pass A's ranks 1–10 of one stable position."""

    schema_: Literal["rungbench.chess.candidates/1"] = Field(alias="schema")
    """Schema name and version."""
    key: str
    """Normalized position identity."""
    fen: str
    """FEN given to the engine (with move counters)."""
    engine: str
    """Digest of the engine identity."""
    contract: dict[str, int]
    """Search contract (nodes, threads, hash_mb, multipv)."""
    pass_: Literal["A"] = Field(alias="pass")
    """Always pass A: pass B only audits."""
    record: str
    """Digest of the pass A cache record the list was cut from."""
    candidates: list[Candidate] = Field(min_length=10, max_length=10)
    """Ranks 1–10 in order."""


class Manifest(_Frozen):
    """The final manifest: stable positions in pool order → candidate-list digest."""

    schema_: Literal["rungbench.chess.label-manifest/1"] = Field(alias="schema")
    """Schema name and version."""
    entries: list[tuple[str, str]]
    """Ordered (position key, candidate-list digest) pairs."""


def json_schemas() -> dict[str, dict[str, Any]]:
    """Return the JSON Schema of every record the stage publishes."""
    return {"candidates": CandidateList.model_json_schema(by_alias=True),
            "manifest": Manifest.model_json_schema(by_alias=True)}


def _parse(model: type[_Frozen], data: bytes, path: Path) -> Any:
    try:
        return model.model_validate(loads_canonical(data, path=str(path)))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InputError(f"{model.__name__}: {first['msg']}", path=str(path), field=where) from exc


def read_stage(stage: Path) -> tuple[Manifest, dict[str, CandidateList]]:
    """Return the manifest and candidate lists of a published stage, digests verified."""
    manifest_path = stage / "manifest.json"
    if not manifest_path.is_file():
        raise InputError("no published manifest", path=str(manifest_path))
    manifest: Manifest = _parse(Manifest, manifest_path.read_bytes(), manifest_path)
    lists: dict[str, CandidateList] = {}
    for key, cand_digest in manifest.entries:
        path = stage / "candidates" / f"{cand_digest[7:]}.json"
        data = path.read_bytes()
        if bytes_digest(data) != cand_digest:
            raise IntegrityError(f"{path} holds {bytes_digest(data)}, not {cand_digest}")
        lists[key] = _parse(CandidateList, data, path)
        if lists[key].key != key:
            raise IntegrityError(f"{path} is the list of {lists[key].key!r}, not {key!r}")
    return manifest, lists
