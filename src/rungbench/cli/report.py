"""``rungbench report DIR [--stage STAGE] [--out OUT]``: the static HTML report of a study.

``DIR`` is a demo folder (``rungbench demo --out DIR``) or a study directory
(``rungbench chess study …``). Every input is verified first (:mod:`rungbench.report`);
anything that does not verify refuses and no page is written. Prints the page's path
(or, with ``--json``, one document with the path, its digest and each section's state).
"""

from __future__ import annotations

from pathlib import Path

import typer

from rungbench.cli._common import JSON_OPTION, console, emit_json, run

DIR_ARGUMENT = typer.Argument(..., metavar="DIR", help="A demo folder or a study directory.")
STAGE_OPTION = typer.Option(None, "--stage", help="The study's published label stage (for the "
                            "label-flow section).")
OUT_OPTION = typer.Option(None, "--out", help="Folder for index.html (default: DIR/report; "
                          "DIR.report beside a sealed DIR).")


def report(
    directory: Path = DIR_ARGUMENT,
    stage: Path | None = STAGE_OPTION,
    out: Path | None = OUT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Verify a study's outputs and write its static HTML report (no network, one file)."""
    from rungbench.report import render_report

    summary = run(lambda: render_report(directory, out=out, stage=stage), as_json=as_json)
    if as_json:
        emit_json({"ok": True, **summary})
        return
    absent = [k for k, v in summary["sections"].items() if v == "absent"]
    console.print(f"{summary['inputs']} inputs verified; sections without input: "
                  f"{', '.join(absent) or 'none'}", highlight=False)
    console.print(f"report: {summary['report']}", highlight=False, soft_wrap=True)
