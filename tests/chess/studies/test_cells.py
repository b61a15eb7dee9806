"""Tests of the per-cell table: schema, digests and bad input that is refused or counted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest

from rungbench.chess.studies.cells import (
    CellTableHeader,
    build_table,
    json_schemas,
    read_cell_table,
    write_cell_table,
)
from rungbench.chess.studies.planted_tables import PlantedA105, a105_table
from rungbench.design.presets import factorial_design
from rungbench.errors import InputError, Refusal


def _planted() -> tuple[CellTableHeader, list[dict[str, Any]]]:
    return a105_table({"luna": PlantedA105("board_limited")}, positions=8, games=4, seed=3,
                      design_digest=factorial_design().digest)


def _lines(rows: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    return list(enumerate(rows, start=2))


def test_rows_validate_against_the_published_json_schema() -> None:
    """Every planted row and the header satisfy the JSON Schemas the models publish."""
    header, rows = _planted()
    schemas = json_schemas()
    jsonschema.validate(header.model_dump(mode="json", by_alias=True), schemas["header"])
    for row in rows[:20]:
        jsonschema.validate({k: v for k, v in row.items() if v is not None}, schemas["row"])
    assert schemas["row"]["properties"]["schema"]["const"] == "rungbench.chess.cell/1"


def test_round_trip_through_a_file_keeps_the_table_digest(tmp_path: Path) -> None:
    """Writing then reading a table gives the same rows and the same table digest."""
    header, rows = _planted()
    path = tmp_path / "cells.jsonl"
    write_cell_table(path, header, rows)
    table = read_cell_table(path)
    assert len(table.rows) == len(rows)
    assert table.digest == build_table(header, _lines(rows)).digest
    with pytest.raises(InputError, match="overwrite"):
        write_cell_table(path, header, rows)


def test_unknown_and_duplicate_cells_are_counted_and_kept_verbatim() -> None:
    """A row for an unknown cell and a second row for a cell are anomalies, never dropped."""
    header, rows = _planted()
    unknown = {**rows[0], "cell": "luna|nowhere|board_only|board_first"}
    table = build_table(header, _lines([*rows, unknown, dict(rows[1])]))
    assert table.anomaly_counts() == {"unknown_cell": 1, "duplicate_cell": 1}
    assert {a["line"] for a in table.anomalies} == {len(rows) + 2, len(rows) + 3}
    assert table.anomalies[0]["row"]["cell"] == unknown["cell"]
    assert len(table.rows) == len(rows)


def test_missing_evaluation_is_refused_with_its_count() -> None:
    """A legal move without regret is refused as evaluation_missing, naming how many."""
    header, rows = _planted()
    legal = [i for i, r in enumerate(rows) if r["outcome"] == "legal"][:3]
    for i in legal:
        rows[i] = {**rows[i], "regret": None, "evaluation_digest": None}
    with pytest.raises(Refusal) as info:
        build_table(header, _lines(rows))
    assert info.value.codes == ("evaluation_missing",)
    assert info.value.reasons[0].data["count"] == 3


def test_mismatched_manifest_digest_is_refused() -> None:
    """A row naming another study, or a schedule that does not hash, is manifest_mismatch."""
    header, rows = _planted()
    rows[5] = {**rows[5], "study_digest": "sha256:" + "0" * 64}
    with pytest.raises(Refusal) as info:
        build_table(header, _lines(rows))
    assert info.value.codes == ("manifest_mismatch",)
    bad = header.model_copy(update={"schedule_digest": "sha256:" + "1" * 64})
    with pytest.raises(Refusal, match="manifest_mismatch"):
        build_table(bad, _lines(rows))


def test_a_scheduled_cell_without_a_row_is_refused() -> None:
    """Dropping a row is refused as cells_missing rather than analysed around."""
    header, rows = _planted()
    with pytest.raises(Refusal) as info:
        build_table(header, _lines(rows[:-2]))
    assert info.value.codes == ("cells_missing",)


def test_inconsistent_rows_are_input_errors_naming_the_line(tmp_path: Path) -> None:
    """Regret on a network error, or B/L disagreeing with the condition, names file:line."""
    header, rows = _planted()
    rows[0] = {**rows[0], "outcome": "network_error"}
    path = tmp_path / "bad.jsonl"
    write_cell_table(path, header, rows)
    with pytest.raises(InputError, match=r"bad.jsonl:2"):
        read_cell_table(path)
    rows[0] = {**rows[0], "outcome": "legal", "board": 1 - rows[0]["board"]}
    with pytest.raises(InputError, match="condition"):
        build_table(header, _lines(rows))


def test_header_must_be_json_on_line_one(tmp_path: Path) -> None:
    """A table whose first line is not a header is an input error at line 1."""
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps({"cell": "a"}) + "\n")
    with pytest.raises(InputError, match=":1"):
        read_cell_table(path)
