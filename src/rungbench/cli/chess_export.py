"""`rungbench chess study export`: a published analysis's verified cell table as CSV, Parquet
or JSON Lines (:func:`rungbench.chess.studies.cell_export.export_analysis`)."""

from __future__ import annotations

from pathlib import Path

import typer

from rungbench.cli._common import JSON_OPTION, choice, console, emit_json, run

EXPORT_FORMATS = ("csv", "parquet", "jsonl")
"""``export --format`` values (``cell_export.FORMATS``; kept here so that the CLI loads no
study code before a command runs)."""
STUDY_OPTION = typer.Option(..., "--study", help="Study directory.")
OUT_OPTION = typer.Option(..., "--out", help="Output file.")


def export_cmd(study: Path = STUDY_OPTION,
               analysis: str = typer.Option(..., "--analysis", help="Analysis id under "
                                            "<study>/analyses (or its prefix, or the binding "
                                            "digest), or an analysis directory."),
               fmt: str = typer.Option(..., "--format", callback=choice(EXPORT_FORMATS),
                                       help="csv, parquet or jsonl."),
               out: Path = OUT_OPTION,
               force: bool = typer.Option(False, "--force", help="Replace an existing file."),
               as_json: bool = JSON_OPTION) -> None:
    """Export a published analysis's verified cell table as CSV, Parquet or JSON Lines."""
    from rungbench.chess.studies.cell_export import export_analysis

    summary = run(lambda: export_analysis(study, analysis, out, fmt, force=force),
                  as_json=as_json)
    if as_json:
        emit_json(summary)
        return
    console.print(f"{summary['rows']} rows × {summary['columns']} columns of the "
                  f"{summary['design_id']} cell table {summary['table']} → {out} ({fmt})",
                  highlight=False, markup=False, soft_wrap=True)
