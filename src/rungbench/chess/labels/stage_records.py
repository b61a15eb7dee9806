"""Typed, schema-checked views of the published label stage (what downstream designs read).

The label stage hands two records across the stage boundary: the **manifest** (ordered
position key → candidate-list digest) and each **candidate list** (pass A's ranks 1–10).
Both are pydantic models with a JSON Schema (:func:`json_schemas`) and a versioned
``schema`` field; :func:`read_stage` verifies every digest before returning them.

:func:`verify_stage_dir` is the one verified reader of a published stage, used by every
command that reads one (the label run's re-run and publication, :func:`read_stage`). It
refuses (gate ``chess label stage``, exit 3) with one reason per defect, the subject
being the file relative to the stage: ``stage_file_changed`` (bytes differ from the
seal, or the seal itself is unreadable), ``stage_file_missing`` (sealed but gone),
``stage_file_unlisted`` (present but not sealed), ``stage_record_malformed``
(``stage.json`` is not a well-formed stage record, or names other digests than the
files it sits beside).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rungbench.errors import InputError, IntegrityError, Reason, Refusal
from rungbench.evidence.canonical import bytes_digest, loads_canonical
from rungbench.evidence.sealed import SEAL_NAME, read_seal, seal_entries

STAGE_KIND = "rungbench.chess.label-stage"
"""Kind named in the seal of a published stage."""
STAGE_GATE = "chess label stage"
"""Gate name of stage verification refusals."""


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


class StageRecord(_Frozen):
    """``stage.json``: what the stage was built from and the digests of its files."""

    schema_: Literal["rungbench.chess.label-stage/1"] = Field(alias="schema")
    """Schema name and version."""
    manifest: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    """Digest of ``manifest.json``."""
    flow_report: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    """Digest of ``flow_report.json``."""
    labels: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    """Digest of ``labels.json``."""
    pool: str
    """Digest of the frozen pool."""
    qualification: str
    """Digest of the qualification."""
    cohorts: dict[str, str]
    """Cohort name → digest."""
    engine: dict[str, Any]
    """Engine identity."""
    engine_digest: str
    """Digest of the engine identity."""
    engine_runtime: str | None = None
    """Interpreter the engine ran under (``node v20.…``); None for a native binary or a
    stage published before it was recorded."""
    contract: dict[str, Any]
    """The search contract."""
    idle_gate: dict[str, Any]
    """The idle gate's configuration."""
    role: Literal["label"]
    """What the searches were for."""
    passes: tuple[Literal["A"], Literal["B"]]
    """The passes run."""


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


def _seal_reasons(stage: Path) -> tuple[dict[str, str], list[Reason]]:
    """Return the sealed digests by file and the reasons the seal cannot be trusted."""
    try:
        files = read_seal(stage, kind=STAGE_KIND)["files"]
        sealed = {str(e["path"]): str(e["digest"]) for e in files}
        sizes = {str(e["path"]): e["size"] for e in files}
    except (InputError, IntegrityError, KeyError, TypeError, AttributeError) as exc:
        code = "stage_file_missing" if not (stage / SEAL_NAME).is_file() else \
            "stage_file_changed"
        return {}, [Reason(code, f"{stage / SEAL_NAME}: the stage's seal is unusable: {exc}",
                           subject=SEAL_NAME)]
    entries = seal_entries(stage)
    now = {e.path: e.digest for e in entries}
    wrong_size = [e.path for e in entries if e.path in sizes and sizes[e.path] != e.size
                  and sealed[e.path] == e.digest]
    if wrong_size:
        return sealed, [Reason("stage_file_changed", f"{stage / SEAL_NAME}: records sizes "
                               f"that differ from the files {wrong_size}", subject=SEAL_NAME)]
    reasons = [Reason("stage_file_missing", f"{stage / name}: sealed but missing",
                      subject=name) for name in sorted(set(sealed) - set(now))]
    reasons += [Reason("stage_file_changed", f"{stage / name}: changed since the stage was "
                       "published (digest differs from its seal)", subject=name)
                for name in sorted(set(sealed) & set(now)) if sealed[name] != now[name]]
    reasons += [Reason("stage_file_unlisted", f"{stage / name}: added after publication",
                       subject=name) for name in sorted(set(now) - set(sealed))]
    return sealed, reasons


def _record_reasons(stage: Path, sealed: dict[str, str]) -> tuple[StageRecord | None,
                                                                    list[Reason]]:
    path = stage / "stage.json"
    try:
        record = _parse(StageRecord, path.read_bytes(), path)
    except (InputError, OSError) as exc:
        return None, [Reason("stage_record_malformed", str(exc), subject="stage.json")]
    listed = {"manifest.json": record.manifest, "flow_report.json": record.flow_report,
              "labels.json": record.labels}
    return record, [Reason("stage_record_malformed", f"{path} names {name} as {want}, but "
                           f"the stage holds {sealed.get(name)}", subject="stage.json")
                    for name, want in listed.items() if sealed.get(name) != want]


def verify_stage_dir(stage: Path) -> StageRecord:
    """Verify a published stage (seal of every file, then its stage record); return the record.

    Refuses with every defect found (see the module docstring); a missing stage
    directory is an input error.
    """
    if not stage.is_dir():
        raise InputError("no published label stage", path=str(stage))
    sealed, reasons = _seal_reasons(stage)
    if reasons:
        raise Refusal(reasons, gate=STAGE_GATE)
    record, reasons = _record_reasons(stage, sealed)
    if reasons or record is None:
        raise Refusal(reasons, gate=STAGE_GATE)
    return record


def read_stage(stage: Path) -> tuple[Manifest, dict[str, CandidateList]]:
    """Return the manifest and candidate lists of a published stage, the stage verified."""
    verify_stage_dir(stage)
    manifest_path = stage / "manifest.json"
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
