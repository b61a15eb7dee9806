"""A published study analysis's cell table as CSV, Parquet or JSON Lines, for one's own tools.

Input: a directory that ``rungbench chess study analyze`` published
(``<study>/analyses/<binding hex[:12]>/``, :func:`rungbench.chess.studies.study.analyze`).
Nothing is written until it verifies: its seal (kind ``rungbench.chess.study-analysis``,
:func:`rungbench.evidence.sealed.verify_sealed`) must list ``cells.jsonl`` and
``analysis.json`` and every listed file must hash to its entry; ``cells.jsonl`` must read
as a cell table (:func:`rungbench.chess.studies.cells.read_cell_table`) whose digest, with
the anomalies ``analysis.json`` reports, is the ``table`` digest ``analysis.json`` records.
A tampered or incomplete directory raises IntegrityError naming the file.

Output: the verified rows (one per scheduled cell, schedule order; unknown and duplicate
rows stay in ``cells.jsonl`` and ``analysis.json``), one column per
:class:`~rungbench.chess.studies.cells.CellRow` field in declared order, named as
``cells.jsonl`` names it (``schema``, ``cell``, ..., ``cost_usd``):

- CSV: RFC 4180 with a header row; null = empty field; bool = ``true``/``false``; float =
  Python ``repr`` (reads back exactly).
- Parquet (pyarrow, optional extra ``rungbench[parquet]``): string, int64, float64 and bool
  columns, nullable where the field is; the table's provenance as file key-value metadata
  (``rungbench.design_id``, ``rungbench.table_digest``, ``rungbench.study_digest``,
  ``rungbench.evaluation_digest``, ``rungbench.design_digest``, ``rungbench.schema``).
- JSON Lines: one canonical JSON row per line (every column, nulls included).

The write is atomic; an existing output is refused (``exists``) unless ``force``.
"""

from __future__ import annotations

import csv
import io
import types
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from rungbench.chess.studies.cells import CELL_SCHEMA, CellRow, CellTable, read_cell_table
from rungbench.chess.studies.study import ANALYSIS_KIND, analyses_dir
from rungbench.errors import InputError, IntegrityError, Reason, Refusal, require_extra
from rungbench.evidence.canonical import canonical_bytes, loads_canonical
from rungbench.evidence.sealed import SEAL_NAME, verify_sealed
from rungbench.evidence.store import write_atomic

FORMATS: tuple[str, ...] = ("csv", "parquet", "jsonl")
"""Output formats."""
CELLS = "cells.jsonl"
"""The cell table inside a published analysis."""
DOCUMENT = "analysis.json"
"""The analysis document inside a published analysis."""
META_PREFIX = "rungbench."
"""Prefix of every Parquet key-value metadata key."""
GATE = "chess cell export"
"""Gate name of refusals."""

ColumnType = Literal["str", "int", "float", "bool"]
"""Value type of one column."""

_SCALARS: tuple[tuple[type, ColumnType], ...] = (
    (bool, "bool"), (int, "int"), (float, "float"), (str, "str"))  # bool before int


@dataclass(frozen=True)
class Column:
    """One exported column: a :class:`CellRow` field."""

    name: str
    """Column name, the row key in ``cells.jsonl`` (the field's alias where it has one)."""
    type: ColumnType
    """Value type."""
    nullable: bool
    """Whether the field may be null."""


def _scalar(annotation: Any) -> ColumnType:
    """The column type of a non-null annotation (a scalar, a Literal or an Annotated one)."""
    if get_origin(annotation) is Annotated:
        return _scalar(get_args(annotation)[0])
    if get_origin(annotation) is Literal:
        kinds = {_scalar(type(v)) for v in get_args(annotation)}
        if len(kinds) == 1:
            return kinds.pop()
    for python, kind in _SCALARS:
        if isinstance(annotation, type) and issubclass(annotation, python):
            return kind
    raise TypeError(f"CellRow field type {annotation!r} has no export column type")


def column_type(annotation: Any) -> tuple[ColumnType, bool]:
    """The column type of a field annotation and whether it admits null."""
    if get_origin(annotation) in (Union, types.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        if len(members) != 1:
            raise TypeError(f"CellRow field type {annotation!r} has no export column type")
        return _scalar(members[0]), True
    return _scalar(annotation), False


def cell_columns() -> tuple[Column, ...]:
    """One column per :class:`CellRow` field, declared order."""
    return tuple(Column(f.alias or name, *column_type(f.annotation))
                 for name, f in CellRow.model_fields.items())


COLUMNS: tuple[Column, ...] = cell_columns()
"""The exported columns."""


@dataclass(frozen=True)
class PublishedTable:
    """The verified cell table of one published analysis."""

    directory: Path
    """The analysis directory."""
    table: CellTable
    """The table, with every anomaly the analysis counted (its digest is the recorded one)."""

    def rows(self) -> list[dict[str, Any]]:
        """The verified rows as written, one mapping per cell."""
        return [r.to_json() for r in self.table.rows]

    def provenance(self) -> dict[str, str]:
        """What the table is: its schema, design and the digests that name it."""
        h = self.table.header
        return {"schema": CELL_SCHEMA, "design_id": h.design_id, "design_digest": h.design_digest,
                "table_digest": self.table.digest, "study_digest": h.study_digest,
                "evaluation_digest": h.evaluation_digest}


def analysis_path(study: Path, analysis: str) -> Path:
    """The analysis directory ``analysis`` names: a directory path, or an id under
    ``<study>/analyses`` (the binding's first 12 hex digits, a prefix of them, or the
    binding digest)."""
    if Path(analysis).is_dir():
        return Path(analysis)
    root = analyses_dir(study)
    hexpart = analysis.removeprefix("sha256:")[:12]
    found = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")
                   and hexpart and p.name.startswith(hexpart)) if root.is_dir() else []
    if len(found) != 1:
        raise InputError(f"{'no' if not found else 'more than one'} analysis matches "
                         f"{analysis!r}", path=str(root), field="analysis")
    return found[0]


def read_published(directory: Path) -> PublishedTable:
    """Verify a published study analysis and read its cell table (module docstring)."""
    seal = verify_sealed(directory, kind=ANALYSIS_KIND)
    listed = {entry["path"] for entry in seal["files"]}
    for name in (CELLS, DOCUMENT):
        if name not in listed:
            raise IntegrityError(f"{directory / name}: not in {SEAL_NAME}; the analysis is "
                                 "incomplete")
    document = loads_canonical((directory / DOCUMENT).read_bytes(), path=str(directory / DOCUMENT))
    table = read_cell_table(directory / CELLS)
    return PublishedTable(directory, _as_recorded(table, document, directory / CELLS))


def _as_recorded(table: CellTable, document: Any, path: Path) -> CellTable:
    """``table`` with the anomalies the analysis counted (the reader finds only those in the
    file; the study adds its evaluations'), refused unless it is the table recorded."""
    recorded = document.get("table") if isinstance(document, dict) else None
    bad = document.get("bad_input") if isinstance(document, dict) else None
    counted = bad.get("rows") if isinstance(bad, dict) else None
    own = list(table.anomalies)
    if isinstance(counted, list) and counted[:len(own)] == own:
        full = replace(table, anomalies=tuple(counted))
        if full.digest == recorded:
            return full
    raise IntegrityError(f"{path}: is not the cell table {DOCUMENT} records (table "
                         f"{recorded!r})")


def _csv_cell(value: Any, column: Column) -> str:
    if value is None:
        return ""
    if column.type == "bool":
        return "true" if value else "false"
    if column.type == "float":
        return repr(float(value))
    return str(value)


def to_csv(rows: list[dict[str, Any]]) -> bytes:
    """CSV bytes of ``rows`` (header = column names; module docstring for the encoding)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([c.name for c in COLUMNS])
    for row in rows:
        writer.writerow([_csv_cell(row.get(c.name), c) for c in COLUMNS])
    return buf.getvalue().encode("utf-8")


def to_jsonl(rows: list[dict[str, Any]]) -> bytes:
    """JSON Lines bytes of ``rows``: one canonical JSON object per line, every column."""
    return b"".join(canonical_bytes({c.name: row.get(c.name) for c in COLUMNS}) + b"\n"
                    for row in rows)


def to_parquet(published: PublishedTable) -> bytes:
    """Parquet bytes of the table: typed columns, provenance as key-value metadata."""
    require_extra("pyarrow", "parquet", field="format")
    import pyarrow as pa  # type: ignore[import-untyped]
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    kinds = {"str": pa.string(), "int": pa.int64(), "float": pa.float64(), "bool": pa.bool_()}
    rows = published.rows()
    fields = [pa.field(c.name, kinds[c.type], nullable=c.nullable) for c in COLUMNS]
    meta = {f"{META_PREFIX}{k}": v for k, v in published.provenance().items()}
    arrays = [pa.array([_arrow_value(row.get(c.name), c) for row in rows], type=kinds[c.type])
              for c in COLUMNS]
    table = pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=meta))
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return bytes(sink.getvalue().to_pybytes())


def _arrow_value(value: Any, column: Column) -> Any:
    return float(value) if column.type == "float" and value is not None else value


def encode(published: PublishedTable, fmt: str) -> bytes:
    """The table's bytes in format ``fmt`` (one of :data:`FORMATS`)."""
    if fmt == "csv":
        return to_csv(published.rows())
    if fmt == "jsonl":
        return to_jsonl(published.rows())
    if fmt == "parquet":
        return to_parquet(published)
    raise InputError(f"unknown format {fmt!r}; choose one of {list(FORMATS)}", field="format")


def _refuse_existing(out: Path, *, force: bool) -> None:
    if out.exists() and not force:
        raise Refusal([Reason("exists", f"{out} exists; pass --force to replace it",
                              subject=str(out))], gate=GATE)


def _refuse_inside(out: Path, directory: Path) -> None:
    """Writing into the sealed analysis would break its seal."""
    if out.resolve().is_relative_to(directory.resolve()):
        raise InputError(f"{out} is inside the sealed analysis {directory}; write elsewhere",
                         field="out")


def export_analysis(study: Path, analysis: str, out: Path, fmt: str, *,
                    force: bool = False) -> dict[str, Any]:
    """Verify the published analysis ``analysis`` of ``study`` and write its cell table to
    ``out`` as ``fmt``; return a summary (rows, columns, format, out, table digest)."""
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r}; choose one of {list(FORMATS)}",
                         field="format")
    if fmt == "parquet":
        require_extra("pyarrow", "parquet", field="format")
    _refuse_existing(out, force=force)
    directory = analysis_path(study, analysis)
    _refuse_inside(out, directory)
    published = read_published(directory)
    data = encode(published, fmt)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, data, overwrite=force)
    return {"rows": len(published.table.rows), "columns": len(COLUMNS), "format": fmt,
            "out": str(out), "table": published.table.digest, "analysis": str(directory),
            "design_id": published.table.header.design_id,
            "anomalies": len(published.table.anomalies)}
