"""`rungbench chess study export` on the planted ladder study's published analysis
(``tests/chess/studies/planted_study.py``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import typer
from tests.chess.studies import planted_study as ps
from typer.testing import CliRunner

from rungbench.chess.studies.cell_export import COLUMNS, FORMATS
from rungbench.cli import chess_export, chess_study
from rungbench.cli._common import EXIT_ERROR, EXIT_REFUSAL, EXIT_USAGE

# one process builds the shared planted study (runs + evaluations) once
pytestmark = pytest.mark.xdist_group("planted_study")

APP = typer.Typer()
chess_study.register(APP)


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(APP, ["study", "export", *args])


@pytest.fixture(scope="module")
def ladder() -> dict[str, Any]:
    """The planted E020/E021 analysis document (its ``out`` is the published directory)."""
    return ps.analysis("ladder")


def _study_args(doc: dict[str, Any]) -> list[str]:
    directory = Path(doc["out"])
    return ["--study", str(directory.parent.parent), "--analysis", directory.name]


def test_cli_formats_are_the_library_formats() -> None:
    """--format offers exactly the formats the library writes."""
    assert chess_export.EXPORT_FORMATS == FORMATS


def test_json_summary_names_rows_columns_format_out_and_table(ladder: dict[str, Any],
                                                              tmp_path: Path) -> None:
    """--json prints one summary: rows, columns, format, out and the table digest."""
    out = tmp_path / "cells.csv"
    result = _invoke(*_study_args(ladder), "--format", "csv", "--out", str(out), "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert (summary["rows"], summary["columns"], summary["format"], summary["out"],
            summary["table"]) == (ladder["cells"], len(COLUMNS), "csv", str(out),
                                  ladder["table"])
    assert len(out.read_text().splitlines()) == ladder["cells"] + 1


def test_plain_output_is_one_line(ladder: dict[str, Any], tmp_path: Path) -> None:
    """Without --json one line names the rows, columns, table digest and output."""
    out = tmp_path / "cells.parquet"
    result = _invoke(*_study_args(ladder), "--format", "parquet", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"{ladder['cells']} rows × {len(COLUMNS)} columns")
    assert ladder["table"] in result.stdout and out.is_file()


def test_existing_out_needs_force(ladder: dict[str, Any], tmp_path: Path) -> None:
    """An existing --out is refused in one line (exit 3) and kept; --force replaces it."""
    out = tmp_path / "cells.jsonl"
    out.write_text("keep\n")
    args = [*_study_args(ladder), "--format", "jsonl", "--out", str(out)]
    refused = _invoke(*args)
    assert refused.exit_code == EXIT_REFUSAL
    assert "exists" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    assert out.read_text() == "keep\n"
    assert _invoke(*args, "--force").exit_code == 0
    assert len(out.read_text().splitlines()) == ladder["cells"]


def test_tampered_analysis_is_one_error_line_and_nothing_written(ladder: dict[str, Any],
                                                                 tmp_path: Path) -> None:
    """A tampered cells.jsonl: exit 1, one line naming the file, no output file."""
    copy = Path(shutil.copytree(ladder["out"], tmp_path / "analysis"))
    (copy / "cells.jsonl").write_bytes((copy / "cells.jsonl").read_bytes() + b"\n")
    out = tmp_path / "cells.csv"
    result = _invoke("--study", str(tmp_path), "--analysis", str(copy), "--format", "csv",
                     "--out", str(out))
    assert result.exit_code == EXIT_ERROR
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "cells.jsonl" in lines[0] and "changed since" in lines[0]
    assert not out.exists()


def test_unknown_format_is_a_usage_error(tmp_path: Path) -> None:
    """--format outside csv, parquet, jsonl exits 2 before anything is read."""
    result = _invoke("--study", str(tmp_path), "--analysis", "x", "--format", "xlsx", "--out",
                     str(tmp_path / "x"))
    assert result.exit_code == EXIT_USAGE
