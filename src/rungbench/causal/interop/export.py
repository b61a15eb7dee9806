"""Result tables as CSV, Parquet or JSON with a documented schema (docs/CONTRACTS.md §15).

A table is a list of flat records plus a :class:`TableSchema` naming every column with
its type (``str``, ``int``, ``float``, ``bool`` or ``json``) and a one-line meaning.
Every value is checked against its column type before anything is written (fail
closed: an InputError names the row and column); ``None`` is allowed everywhere.

Encodings (schema ``rungbench.table/1``):

- JSON: ``{"schema": "rungbench.table/1", "table": NAME, "columns": [...], "rows": [...]}``.
- CSV: RFC 4180, header = column names; null = empty field (so an empty string reads
  back as null); bool = ``true``/``false``;
  float = Python ``repr`` (round-trips exactly); ``json`` columns hold canonical JSON text.
- Parquet (pyarrow, optional extra ``rungbench[parquet]``): one column per schema column
  (string, int64, float64, bool; ``json`` columns as canonical JSON strings); the schema
  document is stored under the file metadata key ``rungbench.table``.

:func:`read_table` reads any of the three back into the same records (``json`` columns
decoded), so a round trip is checkable.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rungbench.errors import InputError
from rungbench.evidence.canonical import canonical_bytes

TABLE_SCHEMA = "rungbench.table/1"
"""Schema tag of every exported table."""

FORMATS: tuple[str, ...] = ("csv", "parquet", "json")
"""Output formats."""

ColumnType = Literal["str", "int", "float", "bool", "json"]
"""Type of one column."""

_TYPES: tuple[str, ...] = ("str", "int", "float", "bool", "json")
_META_KEY = b"rungbench.table"


@dataclass(frozen=True)
class Column:
    """One column of a table."""

    name: str
    """Column name (the record key)."""
    type: ColumnType
    """Value type; ``json`` holds any JSON value (lists, objects)."""
    doc: str
    """What the column means."""


@dataclass(frozen=True)
class TableSchema:
    """A table's name and columns."""

    name: str
    """Table name, e.g. ``causal-verdicts``."""
    columns: tuple[Column, ...]
    """Columns in output order."""
    doc: str = ""
    """What one row is."""

    def to_json(self) -> dict[str, Any]:
        """The schema document stored beside the data."""
        return {"schema": TABLE_SCHEMA, "table": self.name, "doc": self.doc,
                "columns": [{"name": c.name, "type": c.type, "doc": c.doc}
                            for c in self.columns]}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> TableSchema:
        """Parse a schema document; InputError names the bad field."""
        if doc.get("schema") != TABLE_SCHEMA:
            raise InputError(f"schema must be {TABLE_SCHEMA!r}", field="schema")
        cols = []
        for i, c in enumerate(doc.get("columns", [])):
            if c.get("type") not in _TYPES or not isinstance(c.get("name"), str):
                raise InputError(f"bad column {c!r}", field=f"columns[{i}]")
            cols.append(Column(c["name"], c["type"], str(c.get("doc", ""))))
        return cls(str(doc.get("table", "")), tuple(cols), str(doc.get("doc", "")))


def _check(value: Any, col: Column, row: int) -> None:
    if value is None:
        return
    ok = {
        "str": isinstance(value, str),
        "int": isinstance(value, int) and not isinstance(value, bool),
        "float": (isinstance(value, int | float) and not isinstance(value, bool)
                  and math.isfinite(float(value))),
        "bool": isinstance(value, bool),
        "json": True,
    }[col.type]
    if not ok:
        raise InputError(f"row {row}: {value!r} is not a {col.type}", field=col.name)
    if col.type == "json":
        canonical_bytes(value)  # raises on NaN, non-string keys, unsupported types


def validate(records: Sequence[Mapping[str, Any]], schema: TableSchema) -> list[dict[str, Any]]:
    """Records restricted to the schema's columns, every value type-checked."""
    names = {c.name for c in schema.columns}
    out = []
    for i, rec in enumerate(records):
        extra = sorted(set(rec) - names)
        if extra:
            raise InputError(f"row {i}: columns {extra!r} are not in the {schema.name} schema",
                             field=extra[0])
        row = {}
        for col in schema.columns:
            value = rec.get(col.name)
            _check(value, col, i)
            row[col.name] = float(value) if col.type == "float" and value is not None else value
        out.append(row)
    return out


def infer_schema(name: str, records: Sequence[Mapping[str, Any]], doc: str = "") -> TableSchema:
    """A schema covering every key of ``records`` (first-seen order); types from the values.

    A key whose values mix int and float is ``float``; any other mix, or a list/object,
    is ``json``. Used for record files no typed schema is registered for.
    """
    seen: dict[str, set[str]] = {}
    for rec in records:
        for key, value in rec.items():
            kinds = seen.setdefault(key, set())
            if value is None:
                continue
            if isinstance(value, bool):
                kinds.add("bool")
            elif isinstance(value, int):
                kinds.add("int")
            elif isinstance(value, float):
                kinds.add("float")
            elif isinstance(value, str):
                kinds.add("str")
            else:
                kinds.add("json")
    cols = []
    for key, kinds in seen.items():
        kind: ColumnType
        if len(kinds) == 1:
            only = next(iter(kinds))
            kind = "json" if only not in _TYPES else only  # type: ignore[assignment]
        elif kinds == {"int", "float"}:
            kind = "float"
        elif not kinds:
            kind = "str"
        else:
            kind = "json"
        cols.append(Column(key, kind, "inferred from the records"))
    return TableSchema(name, tuple(cols), doc)


def _csv_cell(value: Any, col: Column) -> str:
    if value is None:
        return ""
    if col.type == "bool":
        return "true" if value else "false"
    if col.type == "float":
        return repr(float(value))
    if col.type == "json":
        return canonical_bytes(value).decode()
    return str(value)


def _from_csv(text: str, col: Column, row: int) -> Any:
    if text == "":
        return None
    try:
        if col.type == "int":
            return int(text)
        if col.type == "float":
            return float(text)
        if col.type == "bool":
            if text not in ("true", "false"):
                raise ValueError(text)
            return text == "true"
        if col.type == "json":
            return json.loads(text)
    except ValueError:
        raise InputError(f"row {row}: {text!r} is not a {col.type}", field=col.name) from None
    return text


def to_csv(rows: Sequence[Mapping[str, Any]], schema: TableSchema) -> bytes:
    """CSV bytes of validated rows (header = column names)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([c.name for c in schema.columns])
    for row in rows:
        writer.writerow([_csv_cell(row.get(c.name), c) for c in schema.columns])
    return buf.getvalue().encode()


def _arrow_table(rows: Sequence[Mapping[str, Any]], schema: TableSchema) -> Any:
    import pyarrow as pa  # type: ignore[import-untyped]

    kinds = {"str": pa.string(), "int": pa.int64(), "float": pa.float64(), "bool": pa.bool_(),
             "json": pa.string()}
    arrays = []
    for col in schema.columns:
        values = [row.get(col.name) for row in rows]
        if col.type == "json":
            values = [None if v is None else canonical_bytes(v).decode() for v in values]
        arrays.append(pa.array(values, type=kinds[col.type]))
    meta = {_META_KEY: canonical_bytes(schema.to_json())}
    fields = [pa.field(c.name, kinds[c.type], metadata={b"doc": c.doc.encode(),
                                                        b"rungbench.type": c.type.encode()})
              for c in schema.columns]
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=meta))


def write_table(records: Sequence[Mapping[str, Any]], schema: TableSchema, path: Path,
                fmt: str) -> int:
    """Validate and write ``records`` as ``fmt``; return the number of rows written."""
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r}; choose one of {list(FORMATS)}", field="format")
    rows = validate(records, schema)
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "csv":
        path.write_bytes(to_csv(rows, schema))
    elif fmt == "json":
        doc = {**schema.to_json(), "rows": rows}
        path.write_bytes(canonical_bytes(doc) + b"\n")
    else:
        try:
            import pyarrow.parquet as pq  # type: ignore[import-untyped]
        except ImportError:
            raise InputError("Parquet needs pyarrow: pip install 'rungbench[parquet]'",
                             field="format") from None
        pq.write_table(_arrow_table(rows, schema), str(path))
    return len(rows)


def read_table(path: Path, fmt: str, schema: TableSchema | None = None
               ) -> tuple[TableSchema, list[dict[str, Any]]]:
    """Read a table written by :func:`write_table` back into records.

    JSON and Parquet carry their schema; CSV needs ``schema`` (or reads all as strings).
    """
    if fmt == "json":
        doc = json.loads(path.read_bytes())
        found = TableSchema.from_json(doc)
        return found, validate(doc.get("rows", []), found)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(str(path))
        meta = table.schema.metadata or {}
        if _META_KEY not in meta:
            raise InputError("Parquet file carries no rungbench.table schema", path=str(path))
        found = TableSchema.from_json(json.loads(meta[_META_KEY]))
        rows = table.to_pylist()
        for row in rows:
            for col in found.columns:
                if col.type == "json" and row.get(col.name) is not None:
                    row[col.name] = json.loads(row[col.name])
        return found, rows
    if fmt != "csv":
        raise InputError(f"unknown format {fmt!r}", field="format")
    reader = csv.reader(io.StringIO(path.read_text(encoding="utf-8")))
    header = next(reader, None)
    if header is None:
        raise InputError("empty CSV file", path=str(path))
    used = schema or TableSchema(path.stem, tuple(Column(h, "str", "") for h in header))
    if header != [c.name for c in used.columns]:
        raise InputError(f"CSV header {header!r} does not match the schema", path=str(path))
    out = []
    for i, cells in enumerate(reader, start=1):
        out.append({c.name: _from_csv(cell, c, i) for c, cell in zip(used.columns, cells,
                                                                         strict=True)})
    return used, out


def _c(name: str, kind: ColumnType, doc: str) -> Column:
    return Column(name, kind, doc)


VERDICTS = TableSchema("causal-verdicts", (
    _c("case_id", "str", "bench case"),
    _c("outcome", "str", "verdict outcome (CONTRACTS §3: correct, wrong, false_non_id, ...)"),
    _c("abs_error", "float", "|value - reference| on identifiable numeric items"),
    _c("brier", "float", "(confidence - 1[correct])^2 when a confidence was given"),
    _c("decision_regret", "float", "E[L(a)] - min E[L] on decision items"),
    _c("info_regret", "float", "max EIG - EIG(x) on experiment items"),
    _c("structure", "json", "precision/recall/f1/reversed/same_mec on discovery items"),
    _c("error", "str", "why a line was invalid"),
    _c("line", "int", "response line that answered the case (null: missing)"),
    _c("missing", "bool", "no response line named the case"),
    _c("labels", "json", "failure-taxonomy labels of the case"),
    _c("world_id", "str", "world (bootstrap cluster)"),
    _c("family", "str", "task family"),
    _c("rung", "int", "ladder rung"),
    _c("item_type", "str", "item type"),
    _c("identifiable", "bool", "False: the reference answer is not_identifiable"),
    _c("skin", "str", "domain skin"),
    _c("confidence", "float", "the response's stated confidence"),
    _c("asks", "json", "payloads the case asks for (edges, action, experiment, bounds, label, "
       "value): the sub-capability metric it feeds"),
    _c("mutation", "str", "paraphrase, skin_swap or renaming: the transfer variant the case is "
       "(null: an original)"),
    _c("twin", "str", "the matched diagnostic variant the case is (null: not a twin)"),
    _c("version", "str", "records version of an episode-family case (null: records/1)"),
    _c("episode_id", "str", "episode of an episode-family case"),
    _c("stage", "int", "stage of the episode"),
    _c("identified_set", "json", "causes the delivered evidence leaves live (episode cases)"),
    _c("named", "str", "the cause the response named (episode cases)"),
    _c("experiment_regret", "float", "cost regret of the experiment run (episode cases)"),
), "one row per bench case of a scored causal run (RUN/private/verdicts.jsonl, flattened)")
"""Schema of the per-case causal verdict table (``--table causal-verdicts``)."""

CLADDER_QUESTIONS = TableSchema("cladder-questions", (
    _c("key", "str", "<file stem>:<question_id>"),
    _c("model_id", "int", "CLadder model"),
    _c("family", "str", "CLadder graph family (graph_id)"),
    _c("query_type", "str", "CLadder query type"),
    _c("rung", "int", "CLadder rung"),
    _c("cladder_label", "str", "CLadder's stored yes/no answer"),
    _c("exact_label", "str", "label CLadder's rule gives on the exact value (null: undecided)"),
    _c("cladder_value", "float", "CLadder's stored number (numeric types)"),
    _c("exact_value", "float", "exact number"),
    _c("value_agrees", "bool", "|cladder - exact| <= 1e-9 (true when there is no number)"),
    _c("label_flips", "bool", "exact label differs from CLadder's"),
    _c("note", "str", "why a structural label differs or is undecided, or why CLadder's "
       "implemented nde/nie differs from its formal_form"),
    _c("engine_value", "float", "nde/nie: exact value of CLadder's implemented estimand "
       "(mediator drawn as an independent coin)"),
    _c("engine_label", "str", "label CLadder's rule gives on engine_value"),
    _c("engine_label_flips", "bool", "engine_label differs from CLadder's (loopy-BP error only)"),
), "one row per CLadder question re-graded exactly")
"""Schema of the CLadder question re-grade table."""

CLADDER_QUANTITIES = TableSchema("cladder-quantities", (
    _c("model_id", "int", "CLadder model"),
    _c("family", "str", "CLadder graph family"),
    _c("quantity", "str", "CLadder's quantity name, e.g. NDE(Y | X)"),
    _c("cladder_value", "float", "CLadder's stored value"),
    _c("exact_value", "float", "exact value"),
    _c("abs_diff", "float", "|cladder - exact|"),
    _c("agrees", "bool", "abs_diff <= 1e-9"),
), "one row per stored CLadder model quantity")
"""Schema of the CLadder stored-quantity table."""

CLADDER_SUMMARY = TableSchema("cladder-summary", (
    _c("family", "str", "CLadder graph family"),
    _c("quantity", "str", "quantity kind (ATE, ETT, NDE, NIE, P(Y|X), P(Y=1), ...)"),
    _c("stored", "int", "stored values"),
    _c("wrong", "int", "stored values off by more than 1e-9"),
    _c("max_abs_diff", "float", "largest |cladder - exact|"),
), "per family x quantity kind")
"""Schema of the CLadder summary table."""

CENSUS_TRANSITIONS = TableSchema("census-transitions", (
    _c("prior", "str", "class of the prior response"),
    _c("transitions", "int", "same-position transitions after that class"),
    _c("accepted", "int", "transitions whose next response holds an accepted legal command"),
    _c("rate", "float", "accepted / transitions"),
    _c("ci", "json", "[lo, hi] interval of the rate"),
), "one row per prior-response class (``transition_table`` of ``chess census --json``)")
"""Schema of the A104 census transition table (read from the census JSON, no chess import)."""

SCHEMAS: Mapping[str, TableSchema] = {s.name: s for s in (
    VERDICTS, CLADDER_QUESTIONS, CLADDER_QUANTITIES, CLADDER_SUMMARY, CENSUS_TRANSITIONS)}
"""Every typed table; any other JSONL record file is exported as ``records`` (inferred)."""


def verdict_records(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Flatten ``private/verdicts.jsonl`` rows (verdict nested) into :data:`VERDICTS` records."""
    out = []
    for i, row in enumerate(rows):
        verdict = row.get("verdict")
        if not isinstance(verdict, Mapping):
            raise InputError(f"row {i} has no verdict object", field="verdict")
        flat = {k: v for k, v in row.items() if k != "verdict"}
        out.append({**dict(verdict), **flat})
    return out


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"malformed JSON: {exc.msg}", path=str(path), line=n) from None
        if not isinstance(rec, dict):
            raise InputError("a record line must be a JSON object", path=str(path), line=n)
        out.append(rec)
    return out


def select_records(doc: Any, select: str, where: str) -> list[dict[str, Any]]:
    """The list at dotted key path ``select`` of a JSON document, as flat records.

    A list of objects is taken as is; a list of lists becomes columns ``col0``, ``col1``...
    (e.g. a label manifest's ordered [position key, digest] pairs).
    """
    node = doc
    for part in filter(None, select.split(".")):
        if not isinstance(node, Mapping) or part not in node:
            raise InputError(f"no key {part!r} on the path {select!r}", path=where,
                             field="select")
        node = node[part]
    if not isinstance(node, list):
        raise InputError(f"{select or 'the document'} is not a list of records", path=where,
                         field="select")
    out = []
    for i, item in enumerate(node):
        if isinstance(item, Mapping):
            out.append(dict(item))
        elif isinstance(item, list):
            out.append({f"col{j}": v for j, v in enumerate(item)})
        else:
            raise InputError(f"item {i} is neither an object nor a list", path=where,
                             field="select")
    return out


def load_records(source: Path, select: str | None) -> list[dict[str, Any]]:
    """Records of a JSONL file, or of the list at ``select`` in a JSON document."""
    if select is None and source.suffix == ".jsonl":
        return _read_jsonl(source)
    try:
        doc = json.loads(source.read_bytes())
    except json.JSONDecodeError as exc:
        raise InputError(f"not JSON: {exc.msg}", path=str(source), line=exc.lineno) from None
    return select_records(doc, select or "", str(source))


def export_source(source: Path, out: Path, table: str, fmt: str, *,
                  force: bool = False, select: str | None = None) -> dict[str, Any]:
    """Export ``source`` to ``out``: a JSONL file, the list at ``select`` in a JSON document
    (e.g. ``transition_table`` of ``chess census --json``), or a scored causal run
    directory (``causal-verdicts``)."""
    from rungbench.errors import Reason, Refusal

    if table != "records" and table not in SCHEMAS:
        raise InputError(f"unknown table {table!r}; choose records or one of {sorted(SCHEMAS)}",
                         field="table")
    if out.exists() and not force:
        raise Refusal([Reason("exists", f"{out} exists; pass --force to replace it",
                              subject=str(out))], gate="export")
    if table == "causal-verdicts" and source.is_dir():
        from rungbench.causal.bench.verified import open_run, run_verdicts

        records = verdict_records(run_verdicts(open_run(source)))
    else:
        records = load_records(source, select)
        if table == "causal-verdicts":
            records = verdict_records(records)
    if table == "records":
        schema = infer_schema(source.stem, records, f"records of {source.name}")
    else:
        schema = SCHEMAS[table]
    tmp = out.with_name(f".{out.name}.tmp")
    rows = write_table(records, schema, tmp, fmt)
    tmp.replace(out)
    return {"table": schema.name, "rows": rows, "format": fmt, "out": str(out),
            "schema": schema.to_json()}
