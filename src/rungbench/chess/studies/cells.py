"""The per-cell table the chess analysis reads: one evaluated cell per row, versioned.

A cell table is a JSON Lines file: line 1 is a :class:`CellTableHeader` (schema
``rungbench.chess.cell-table/1``), every further line a :class:`CellRow` (schema
``rungbench.chess.cell/1``). Both are pydantic models with a JSON Schema
(:func:`json_schemas`). The header freezes which cells exist (``schedule`` and its
digest), which study, design preset and evaluation they belong to, and who evaluated
(evaluator family, labeller family, whether the evaluator is the internal proxy). A row
names its cell, the study/design digests again, the model snapshot, split, condition
(A105: board B and legal list L in {0, 1} with a panel order; E020_E021 and E023: the
arm; the E020/E021 coverage probe ``self_shortlist`` carries no regret), position key,
source game, provider route, outcome class, WDL regret (``null`` for reliability
outcomes), the evaluator family and the digest of its evaluation record.

Bad input is never dropped (:func:`read_cell_table`):

* a row naming a cell outside the schedule → anomaly ``unknown_cell``, kept verbatim;
* a second row for a cell → anomaly ``duplicate_cell``, kept verbatim (the first wins);
* a scheduled cell without a row → refusal ``cells_missing``;
* a legal move without regret or without evaluation digest → refusal ``evaluation_missing``;
* a row whose study, design or evaluator disagrees with the header, or a schedule that
  does not hash to its digest → refusal ``manifest_mismatch``.

Anomalies travel into the analysis, which counts them and blocks every headline.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from rungbench.design.preset_models import E023_ARM_NAMES
from rungbench.errors import InputError, Reason, Refusal
from rungbench.evidence.canonical import Digest, canonical_bytes, digest
from rungbench.evidence.store import write_atomic

CELL_SCHEMA: Literal["rungbench.chess.cell/1"] = "rungbench.chess.cell/1"
"""Schema name and version of one row."""
TABLE_SCHEMA: Literal["rungbench.chess.cell-table/1"] = "rungbench.chess.cell-table/1"
"""Schema name and version of the header line."""
GATE = "chess analysis input"
"""Gate name of input refusals."""

DesignId = Literal["A105", "E020_E021", "E022", "E023"]
"""Designs a cell table may carry."""
Split = Literal["training", "development", "held_out"]
"""The analysed splits. A105 and E023 bind development and held-out only; E020/E021 binds
its whole registered 600-position sample, so its training rows are reported beside the
others (primary claims rest on held-out positions only)."""
CellOutcome = Literal["legal", "illegal", "malformed", "refusal", "missing", "provider_error",
                      "network_error", "timeout", "interrupted", "not_sent"]
"""The evaluated class of one cell (``rungbench.chess.studies.regret.CellClass``)."""
MODEL_FAILURES: tuple[str, ...] = ("illegal", "malformed", "refusal", "missing")
"""Model outcomes that receive maximal regret 1.0 (seed 000)."""
RELIABILITY: tuple[str, ...] = ("provider_error", "network_error", "timeout", "interrupted",
                                "not_sent")
"""Reliability outcomes: missing observations, no regret (seed 000)."""
A105_CONDITIONS: dict[str, tuple[int, int]] = {
    "no_information": (0, 0), "board_only": (1, 0), "legal_list_only": (0, 1),
    "board_plus_legal_list": (1, 1)}
"""A105 condition → (B, L), as registered in ``designs/a105.toml``."""
PANEL_ORDERS: tuple[str, ...] = ("board_first", "legal_list_first")
"""A105's universal panel orders."""
E020_ARMS: tuple[str, ...] = ("unaided", "self_shortlist", "self_shortlist_choice",
                              "oracle_top2", "oracle_top5", "oracle_top10", "best_omitted")
"""The E020/E021 arms and probe, as registered in ``designs/e020_e021.toml``."""
E022_ARMS: tuple[str, ...] = ("oracle_top5", "successor_top5", "reply_top5")
"""The E022 falsifier arms and their fixed-width control, as in ``designs/e022.toml``."""
PROBES: tuple[str, ...] = ("self_shortlist",)
"""Coverage probes: answered through ``submit_shortlist``, never scored for regret."""
E023_ARMS: tuple[str, ...] = E023_ARM_NAMES
"""The E023 arms, as registered in ``designs/e023.toml``."""
PRESENTATIONS: tuple[str, ...] = ("A", "B")
"""E023's two counterbalanced presentations."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PromptAudit(_Frozen):
    """The rendered-prompt byte audit a study carries for gate 4 (A105 panels audit)."""

    digest: Digest
    """Digest of the audit report the figures come from."""
    blocks: int = Field(ge=0)
    """Position-presentation blocks audited."""
    stray_offsets: int = Field(ge=0)
    """Bytes that differ outside the registered content offsets (0 to pass)."""
    length_mismatches: int = Field(ge=0)
    """Byte-length mismatches within matched blocks (0 to pass)."""
    masked_token_leaks: int = Field(ge=0)
    """Masked chess tokens that leaked (0 to pass)."""


class CellTableHeader(_Frozen):
    """Line 1 of a cell table: what the rows belong to and which cells exist."""

    schema_: Literal["rungbench.chess.cell-table/1"] = Field(TABLE_SCHEMA, alias="schema")
    """Schema name and version."""
    study_digest: Digest
    """Digest of the bound study (its binding, docs/CONTRACTS.md §20)."""
    design_id: DesignId
    """Registry ID of the design."""
    design_digest: Digest
    """Digest of the parsed registered preset."""
    evaluation_digest: Digest
    """Digest of the evaluation stage record (``evaluation.json``)."""
    evaluator_family: str
    """Engine family of the evaluator (``ethereal``, ``fruit``, ``stockfish``)."""
    labeller_family: str
    """Engine family of the labeller."""
    evaluator_proxy: bool
    """Whether the evaluation was run as the labelled internal proxy."""
    schedule: tuple[str, ...]
    """Every frozen cell identifier, in schedule order."""
    schedule_digest: Digest
    """``digest(list(schedule))``."""
    prompt_audit: PromptAudit | None = None
    """Rendered-prompt byte audit (required for A105 claims; gate 4)."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class CellRow(_Frozen):
    """One evaluated cell."""

    schema_: Literal["rungbench.chess.cell/1"] = Field(CELL_SCHEMA, alias="schema")
    """Schema name and version."""
    cell: str = Field(min_length=1)
    """Frozen cell identifier."""
    study_digest: Digest
    """Digest of the bound study (must equal the header's)."""
    design_digest: Digest
    """Digest of the design preset (must equal the header's)."""
    design_id: DesignId
    """Registry ID of the design (must equal the header's)."""
    model: str = Field(min_length=1)
    """Model snapshot the cell was run against."""
    split: Split
    """``training``, ``development`` or ``held_out``."""
    condition: str = Field(min_length=1)
    """A105 condition name, or the E020/E021/E023 arm."""
    board: Literal[0, 1] | None = None
    """A105: correct board content revealed (1) or masked (0)."""
    legal_list: Literal[0, 1] | None = None
    """A105: correct legal-list content revealed (1) or masked (0)."""
    panel_order: str | None = None
    """A105: ``board_first`` or ``legal_list_first``."""
    presentation: str | None = None
    """E023: presentation ``A`` or ``B`` (B rotates A by one slot)."""
    position: str = Field(min_length=1)
    """Normalized position key (the pairing unit)."""
    source_game: str = Field(min_length=1)
    """Source game of the position (the inference cluster)."""
    route: str = Field(min_length=1)
    """Provider route the request went through."""
    outcome: CellOutcome
    """Evaluated outcome class."""
    regret: float | None = Field(default=None, ge=0.0, le=1.0)
    """WDL regret; 1.0 for model failures; null for reliability outcomes."""
    evaluator_family: str
    """Engine family of the evaluator that scored the cell."""
    evaluator_proxy: bool
    """Whether that evaluator is the labeller-family internal proxy."""
    evaluation_digest: Digest | None = None
    """Digest of the cell's evaluation record (null only for reliability outcomes)."""
    tool_schema_digest: Digest
    """Digest of the tool schema the request offered (gate 5)."""
    action_universe_digest: Digest
    """Digest of the legal-action universe of the request (gate 5)."""
    best_in_candidates: bool | None = None
    """E020/E021: whether a best move was in the probe's shortlist or in the shown list."""
    chose_best: bool | None = None
    """E020/E021/E023: whether the chosen move is in the evaluator's best set."""
    selected_rank: int | None = Field(default=None, ge=1)
    """E023: proposer rank of the chosen candidate (null when none was chosen)."""
    selected_move: str | None = None
    """E023: the chosen move (order-disagreement secondary)."""
    phase: str | None = None
    """The label stage's game phase of the position (``chess/studies/strata.py``)."""
    tacticality: str | None = None
    """The label stage's class of the position (tactical, ambiguous, quiet)."""
    side_to_move: Literal["white", "black"] | None = None
    """Side to move in the position."""
    legal_moves: int | None = Field(default=None, ge=0)
    """Legal moves in the position."""
    value_gap: float | None = None
    """Pass A's WDL expectation of rank 1 minus rank 2."""
    shown_spread: float | None = None
    """Largest minus smallest pass A expectation among the moves the list showed."""
    latency_s: float | None = Field(default=None, ge=0.0)
    """Latency of the deciding attempt, seconds."""
    tokens_in: int | None = Field(default=None, ge=0)
    """Prompt tokens of the deciding attempt."""
    tokens_out: int | None = Field(default=None, ge=0)
    """Completion tokens of the deciding attempt."""
    cost_usd: float | None = Field(default=None, ge=0.0)
    """Cost of the deciding attempt, US dollars."""

    @model_validator(mode="after")
    def _consistent(self) -> CellRow:
        if self.outcome in RELIABILITY and self.regret is not None:
            raise ValueError(f"reliability outcome {self.outcome} carries regret {self.regret}")
        if self.condition in PROBES:
            if self.regret is not None:
                raise ValueError(f"probe {self.condition} is never scored for regret")
            return self
        if self.outcome in MODEL_FAILURES and self.regret != 1.0:
            raise ValueError(f"model failure {self.outcome} needs maximal regret 1.0, "
                             f"got {self.regret}")
        if self.design_id == "A105":
            self._check_a105()
        elif self.design_id == "E023":
            if self.condition not in E023_ARMS or self.presentation not in PRESENTATIONS:
                raise ValueError(f"E023 cell needs an arm of {E023_ARMS} and a presentation "
                                 f"of {PRESENTATIONS}")
        elif self.condition not in (arms := E022_ARMS if self.design_id == "E022"
                                    else E020_ARMS):
            raise ValueError(f"{self.design_id} arm {self.condition!r} is not one of {arms}")
        return self

    def _check_a105(self) -> None:
        expected = A105_CONDITIONS.get(self.condition)
        if expected is None:
            raise ValueError(f"A105 condition {self.condition!r} is not registered")
        if (self.board, self.legal_list) != expected:
            raise ValueError(f"condition {self.condition} is (B, L) = {expected}, the row says "
                             f"({self.board}, {self.legal_list})")
        if self.panel_order not in PANEL_ORDERS:
            raise ValueError(f"A105 panel_order must be one of {PANEL_ORDERS}")

    @property
    def is_reliability(self) -> bool:
        """Whether the cell is a reliability outcome (a missing observation)."""
        return self.outcome in RELIABILITY

    def to_json(self) -> dict[str, Any]:
        """Return the row as written."""
        return self.model_dump(mode="json", by_alias=True)

    @cached_property
    def digest(self) -> str:
        """Digest of the row's canonical JSON."""
        return digest(self.to_json())


def json_schemas() -> dict[str, dict[str, Any]]:
    """JSON Schemas of the header line and a row."""
    return {"header": CellTableHeader.model_json_schema(by_alias=True),
            "row": CellRow.model_json_schema(by_alias=True)}


def schedule_digest(cells: Sequence[str]) -> str:
    """The digest a header's ``schedule`` must hash to."""
    return digest(list(cells))


@dataclass(frozen=True)
class CellTable:
    """A verified cell table: one row per scheduled cell, plus the anomalies."""

    header: CellTableHeader
    """The header line."""
    rows: tuple[CellRow, ...]
    """One row per scheduled cell, schedule order (first row of a cell wins)."""
    anomalies: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    """Unknown-cell and duplicate rows, verbatim, each with ``anomaly`` and ``line``."""
    source: str = "<memory>"
    """Where the table was read from."""

    @cached_property
    def digest(self) -> str:
        """Digest of the header and every row digest (names the whole table)."""
        return digest({"header": self.header.model_dump(mode="json", by_alias=True),
                       "rows": [r.digest for r in self.rows],
                       "anomalies": list(self.anomalies)})

    def anomaly_counts(self) -> dict[str, int]:
        """Counts of ``unknown_cell`` and ``duplicate_cell``."""
        return {code: sum(1 for a in self.anomalies if a["anomaly"] == code)
                for code in ("unknown_cell", "duplicate_cell")}


def subset_digest(rows: Iterable[CellRow]) -> str:
    """Digest naming the exact rows an estimate came from (sorted row digests)."""
    return digest(sorted(r.digest for r in rows))


def build_table(header: CellTableHeader, rows: Sequence[tuple[int, dict[str, Any]]],
                *, source: str = "<memory>") -> CellTable:
    """Validate ``(line, row mapping)`` pairs against ``header``; refuse or count bad input."""
    if schedule_digest(header.schedule) != header.schedule_digest:
        raise Refusal([Reason("manifest_mismatch", "the schedule does not hash to "
                              "schedule_digest", "schedule_digest",
                              {"recorded": header.schedule_digest,
                               "computed": schedule_digest(header.schedule)})], gate=GATE)
    if len(set(header.schedule)) != len(header.schedule):
        raise InputError("the schedule names a cell twice", path=source, line=1,
                         field="schedule")
    known = set(header.schedule)
    first: dict[str, CellRow] = {}
    anomalies: list[dict[str, Any]] = []
    mismatched: list[dict[str, Any]] = []
    for line, data in rows:
        row = _parse_row(data, source, line)
        if row.cell not in known:
            anomalies.append({"anomaly": "unknown_cell", "line": line, "row": row.to_json()})
        elif row.cell in first:
            anomalies.append({"anomaly": "duplicate_cell", "line": line, "row": row.to_json()})
        else:
            first[row.cell] = row
        for name in ("study_digest", "design_digest", "design_id", "evaluator_family",
                     "evaluator_proxy"):
            if getattr(row, name) != getattr(header, name):
                mismatched.append({"line": line, "cell": row.cell, "field": name})
    _refuse_input(header, first, mismatched)
    return CellTable(header, tuple(first[c] for c in header.schedule), tuple(anomalies), source)


def _refuse_input(header: CellTableHeader, first: dict[str, CellRow],
                  mismatched: list[dict[str, Any]]) -> None:
    reasons: list[Reason] = []
    if mismatched:
        reasons.append(Reason("manifest_mismatch", f"{len(mismatched)} row(s) disagree with "
                              f"the header (first: line {mismatched[0]['line']}, field "
                              f"{mismatched[0]['field']})", "rows",
                              {"count": len(mismatched), "first": mismatched[:5]}))
    missing = [c for c in header.schedule if c not in first]
    if missing:
        reasons.append(Reason("cells_missing", f"{len(missing)} scheduled cell(s) have no row "
                              f"(first: {missing[0]})", "rows",
                              {"count": len(missing), "first": missing[:5]}))
    unevaluated = [r.cell for r in first.values() if r.outcome == "legal"
                   and r.condition not in PROBES
                   and (r.regret is None or r.evaluation_digest is None)]
    unevaluated += [r.cell for r in first.values() if r.outcome in MODEL_FAILURES
                    and r.evaluation_digest is None]
    if unevaluated:
        reasons.append(Reason("evaluation_missing", f"{len(unevaluated)} cell(s) have no "
                              f"evaluation (first: {unevaluated[0]})", "rows",
                              {"count": len(unevaluated), "first": unevaluated[:5]}))
    if reasons:
        raise Refusal(reasons, gate=GATE)


def _parse_row(data: dict[str, Any], source: str, line: int) -> CellRow:
    try:
        return CellRow.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "row"
        raise InputError(err["msg"], path=source, line=line, field=where) from exc


def read_cell_table(path: Path) -> CellTable:
    """Read and verify a cell-table JSON Lines file (module docstring for the rules)."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError("not UTF-8", path=str(path)) from exc
    lines = [(i, raw) for i, raw in enumerate(text.splitlines(), start=1) if raw.strip()]
    if not lines:
        raise InputError("empty cell table: line 1 must be the header", path=str(path), line=1)
    parsed = [(i, _json_line(raw, str(path), i)) for i, raw in lines]
    try:
        header = CellTableHeader.model_validate(parsed[0][1])
    except ValidationError as exc:
        err = exc.errors()[0]
        raise InputError(err["msg"], path=str(path), line=parsed[0][0],
                         field=".".join(str(p) for p in err["loc"]) or "header") from exc
    return build_table(header, parsed[1:], source=str(path))


def _json_line(raw: str, path: str, line: int) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InputError(f"not JSON: {exc.msg}", path=path, line=line) from exc
    if not isinstance(value, dict):
        raise InputError("a line must be a JSON object", path=path, line=line)
    return value


def write_cell_table(path: Path, header: CellTableHeader, rows: Iterable[dict[str, Any]]) -> None:
    """Write a cell table (header line, then one canonical JSON row per line); never over
    an existing file."""
    lines = [canonical_bytes(header.model_dump(mode="json", by_alias=True))]
    lines += [canonical_bytes(r) for r in rows]
    write_atomic(path, b"\n".join(lines) + b"\n")
