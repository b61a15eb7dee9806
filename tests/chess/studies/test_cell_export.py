"""`cell_export`: a published study analysis's cell table as CSV, Parquet and JSON Lines,
reread with the csv module and pyarrow against ``cells.jsonl`` (the planted ladder study,
``tests/chess/studies/planted_study.py``)."""

from __future__ import annotations

import csv
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest
from tests.chess.studies import planted_study as ps

from rungbench.chess.studies import cell_export as ce
from rungbench.chess.studies.cells import CellRow
from rungbench.chess.studies.study import ANALYSIS_KIND
from rungbench.errors import ExtraMissing, InputError, IntegrityError, Refusal
from rungbench.evidence.canonical import canonical_bytes
from rungbench.evidence.sealed import write_seal

# one process builds the shared planted study (runs + evaluations) once
pytestmark = pytest.mark.xdist_group("planted_study")

STRATA = ("phase", "tacticality", "side_to_move", "legal_moves", "value_gap", "shown_spread",
          "latency_s", "tokens_in", "tokens_out", "cost_usd")
"""The strata and cost columns of docs/CONTRACTS.md §19."""
DEFAULTS = {f.alias or n: f.default for n, f in CellRow.model_fields.items()}
"""What a key a cells.jsonl row leaves out means (``schema``: the row schema; else null)."""


@pytest.fixture(scope="module")
def ladder() -> dict[str, Any]:
    """The planted E020/E021 analysis document (its ``out`` is the published directory)."""
    return ps.analysis("ladder")


def published(doc: dict[str, Any]) -> Path:
    """The published analysis directory of ``doc``."""
    return Path(doc["out"])


def jsonl_rows(directory: Path) -> list[dict[str, Any]]:
    """The row lines of ``cells.jsonl`` as written (header line dropped)."""
    lines = (directory / "cells.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines[1:]]


def by_cell(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Rows keyed by cell id (every column, a key the row lacks as the field's default)."""
    return {r["cell"]: {c.name: r.get(c.name, DEFAULTS[c.name]) for c in ce.COLUMNS}
            for r in rows}


def export(doc: dict[str, Any], out: Path, fmt: str, **options: Any) -> dict[str, Any]:
    """Export ``doc``'s table to ``out`` by its analysis id."""
    directory = published(doc)
    return ce.export_analysis(directory.parent.parent, directory.name, out, fmt, **options)


def copy_of(doc: dict[str, Any], tmp_path: Path) -> Path:
    """A private copy of the published analysis (the shared one is never changed)."""
    return Path(shutil.copytree(published(doc), tmp_path / "analysis"))


def parse_csv(text: str, column: ce.Column) -> Any:
    """A CSV field back to its value, by the encoding of ``cell_export``'s docstring."""
    if text == "":
        return None
    if column.type == "bool":
        assert text in ("true", "false")
        return text == "true"
    return {"int": int, "float": float, "str": str}[column.type](text)


def test_columns_are_the_cell_row_fields_in_declared_order() -> None:
    """One column per CellRow field, declared order, named by alias, typed and nullable."""
    assert [c.name for c in ce.COLUMNS] == [f.alias or n for n, f in CellRow.model_fields.items()]
    kinds = {c.name: (c.type, c.nullable) for c in ce.COLUMNS}
    assert kinds["schema"] == ("str", False) and kinds["cell"] == ("str", False)
    assert kinds["board"] == ("int", True) and kinds["regret"] == ("float", True)
    assert kinds["evaluator_proxy"] == ("bool", False) and kinds["chose_best"] == ("bool", True)
    assert kinds["evaluation_digest"] == ("str", True)
    assert [kinds[s] for s in STRATA] == [("str", True), ("str", True), ("str", True),
                                          ("int", True), ("float", True), ("float", True),
                                          ("float", True), ("int", True), ("int", True),
                                          ("float", True)]


def test_a_field_type_without_a_column_type_is_refused() -> None:
    """A field annotation that is not a scalar, Literal or optional scalar raises TypeError."""
    with pytest.raises(TypeError, match="no export column type"):
        ce.column_type(list[str])
    with pytest.raises(TypeError, match="no export column type"):
        ce.column_type(int | str | None)


def test_csv_rereads_as_the_cells_jsonl_rows(ladder: dict[str, Any], tmp_path: Path) -> None:
    """The CSV reread with the csv module equals cells.jsonl field by field: header in column
    order, nulls empty, booleans true/false, floats repr-exact, strata included."""
    out = tmp_path / "cells.csv"
    summary = export(ladder, out, "csv")
    expected = by_cell(jsonl_rows(published(ladder)))
    with out.open(newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        header = next(reader)
        texts = [dict(zip(header, row, strict=True)) for row in reader]
    assert header == [c.name for c in ce.COLUMNS]
    assert summary["rows"] == len(texts) == len(expected) == ladder["cells"]
    for text in texts:
        want = expected[text["cell"]]
        assert {c.name: parse_csv(text[c.name], c) for c in ce.COLUMNS} == want
        for c in ce.COLUMNS:
            if c.type == "float" and want[c.name] is not None:
                assert text[c.name] == repr(float(want[c.name]))
    filled = {s for s in STRATA if any(t[s] != "" for t in texts)}
    assert {"phase", "tacticality", "side_to_move", "legal_moves"} <= filled
    assert any(t["regret"] == "" for t in texts)  # the probe rows carry no regret


def test_parquet_rereads_as_the_cells_jsonl_rows(ladder: dict[str, Any],
                                                 tmp_path: Path) -> None:
    """The Parquet reread with pyarrow has typed columns (string, int64, float64, bool;
    nullable as the field is) and equals cells.jsonl row by row, nulls included."""
    out = tmp_path / "cells.parquet"
    export(ladder, out, "parquet")
    table = pq.read_table(out)
    arrow = {"str": pa.string(), "int": pa.int64(), "float": pa.float64(), "bool": pa.bool_()}
    assert table.schema.names == [c.name for c in ce.COLUMNS]
    for c in ce.COLUMNS:
        field = table.schema.field(c.name)
        assert (field.type, field.nullable) == (arrow[c.type], c.nullable)
    rows = table.to_pylist()
    assert by_cell(rows) == by_cell(jsonl_rows(published(ladder)))
    assert len(rows) == ladder["cells"]
    assert table.column("regret").null_count > 0
    assert table.column("legal_moves").null_count < len(rows)


def test_parquet_metadata_carries_the_provenance(ladder: dict[str, Any], tmp_path: Path) -> None:
    """The Parquet key-value metadata names the design, table, study and evaluation digests
    that analysis.json records."""
    out = tmp_path / "cells.parquet"
    summary = export(ladder, out, "parquet")
    meta = {k.decode(): v.decode() for k, v in pq.read_schema(out).metadata.items()}
    assert meta["rungbench.design_id"] == ladder["design"] == "E020_E021"
    assert meta["rungbench.table_digest"] == ladder["table"] == summary["table"]
    assert meta["rungbench.study_digest"] == ladder["study"]
    assert meta["rungbench.evaluation_digest"] == ladder["evaluation"]
    assert meta["rungbench.design_digest"] == ladder["design_digest"]
    assert meta["rungbench.schema"] == "rungbench.chess.cell/1"


def test_jsonl_rows_equal_the_cells_jsonl_rows(ladder: dict[str, Any], tmp_path: Path) -> None:
    """JSON Lines: one canonical object per row, every column, equal to cells.jsonl's rows."""
    out = tmp_path / "cells.jsonl"
    summary = export(ladder, out, "jsonl")
    lines = out.read_bytes().splitlines()
    rows = [json.loads(line) for line in lines]
    assert all(canonical_bytes(r) == line for r, line in zip(rows, lines, strict=True))
    assert all(list(r) == sorted(c.name for c in ce.COLUMNS) for r in rows)
    assert by_cell(rows) == by_cell(jsonl_rows(published(ladder)))
    assert summary == {"rows": len(rows), "columns": len(ce.COLUMNS), "format": "jsonl",
                       "out": str(out), "table": ladder["table"],
                       "analysis": ladder["out"], "design_id": "E020_E021", "anomalies": 0}


def test_tampered_cells_jsonl_is_refused_before_writing(ladder: dict[str, Any],
                                                        tmp_path: Path) -> None:
    """A cells.jsonl changed after sealing raises IntegrityError naming it; no output file
    (nor a temporary one) is written."""
    copy = copy_of(ladder, tmp_path)
    cells = copy / "cells.jsonl"
    cells.write_bytes(cells.read_bytes().replace(b'"outcome":"legal"', b'"outcome":"illegal"',
                                                 1))
    out = tmp_path / "out" / "cells.csv"
    with pytest.raises(IntegrityError, match=r"cells\.jsonl: changed since it was sealed"):
        ce.export_analysis(tmp_path, str(copy), out, "csv")
    assert not (tmp_path / "out").exists()


def test_missing_cells_jsonl_is_refused(ladder: dict[str, Any], tmp_path: Path) -> None:
    """An analysis whose cells.jsonl is gone is refused naming the file."""
    copy = copy_of(ladder, tmp_path)
    (copy / "cells.jsonl").unlink()
    with pytest.raises(IntegrityError, match=r"cells\.jsonl: listed in SEAL\.json but missing"):
        ce.export_analysis(tmp_path, str(copy), tmp_path / "cells.csv", "csv")
    write_seal(copy, kind=ANALYSIS_KIND)  # resealed without it: incomplete
    with pytest.raises(IntegrityError, match=r"cells\.jsonl: not in SEAL\.json"):
        ce.export_analysis(tmp_path, str(copy), tmp_path / "cells.csv", "csv")
    assert not (tmp_path / "cells.csv").exists()


def test_resealed_table_that_is_not_the_recorded_one_is_refused(ladder: dict[str, Any],
                                                                tmp_path: Path) -> None:
    """A changed row under a fresh seal still fails: the table digest is not the one
    analysis.json records."""
    copy = copy_of(ladder, tmp_path)
    cells = copy / "cells.jsonl"
    lines = cells.read_bytes().splitlines()
    row = json.loads(lines[1])
    row["phase"] = "tampered"
    cells.write_bytes(b"\n".join([lines[0], canonical_bytes(row), *lines[2:]]) + b"\n")
    write_seal(copy, kind=ANALYSIS_KIND)
    with pytest.raises(IntegrityError, match=r"cells\.jsonl: is not the cell table analysis"):
        ce.export_analysis(tmp_path, str(copy), tmp_path / "cells.csv", "csv")
    assert not (tmp_path / "cells.csv").exists()


def test_existing_output_is_refused_without_force(ladder: dict[str, Any],
                                                  tmp_path: Path) -> None:
    """An existing --out is refused (``exists``) and kept; with force it is replaced."""
    out = tmp_path / "cells.csv"
    out.write_text("keep\n")
    with pytest.raises(Refusal) as refused:
        export(ladder, out, "csv")
    assert refused.value.codes == ("exists",) and out.read_text() == "keep\n"
    export(ladder, out, "csv", force=True)
    assert out.read_text().startswith("schema,cell,")


def test_output_inside_the_sealed_analysis_is_refused(ladder: dict[str, Any],
                                                      tmp_path: Path) -> None:
    """--out inside the analysis directory is refused, even with force (it would break the
    seal)."""
    copy = copy_of(ladder, tmp_path)
    with pytest.raises(InputError, match="inside the sealed analysis"):
        ce.export_analysis(tmp_path, str(copy), copy / "cells.jsonl", "jsonl", force=True)
    assert ce.read_published(copy).table.digest == ladder["table"]


def test_analysis_is_named_by_id_prefix_binding_or_path(ladder: dict[str, Any]) -> None:
    """An analysis is found by its id, an id prefix, the binding digest or its directory; an
    id that matches none is an input error naming the field."""
    directory = published(ladder)
    study = directory.parent.parent
    binding = ladder["inputs"]["binding"]
    for name in (directory.name, directory.name[:6], binding, binding.removeprefix("sha256:"),
                 str(directory)):
        assert ce.analysis_path(study, name) == directory
    with pytest.raises(InputError) as missing:
        ce.analysis_path(study, "not-an-analysis")
    assert missing.value.field == "analysis"


def test_unknown_format_and_missing_pyarrow_are_input_errors(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An unknown format, and Parquet without pyarrow (naming rungbench[parquet]), are input
    errors on field ``format`` raised before anything is read or written."""
    with pytest.raises(InputError) as unknown:
        ce.export_analysis(tmp_path, "nothing", tmp_path / "x.tsv", "tsv")
    assert unknown.value.field == "format"
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # find_spec then reports it absent
    with pytest.raises(ExtraMissing, match=r"rungbench\[parquet\]"):
        ce.export_analysis(tmp_path, "nothing", tmp_path / "x.parquet", "parquet")
    assert list(tmp_path.iterdir()) == []
