"""`rungbench chess analyze CELLS.jsonl [--json]`: estimands, gates and the claim wording.

Reads a cell table (:mod:`rungbench.chess.studies.cells`), refuses a labeller-family
evaluation unless ``--proxy stockfish`` is given by name, and prints the Markdown section
(or, with ``--json``, the one analysis document). Exit 3 on a refusal, 1 on bad input.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rungbench.cli._common import JSON_OPTION, SEED_MAX, choice, console, emit_json, run

OUT_OPTION = typer.Option(None, "--out", help="Also publish analysis.json and analysis.md "
                          "as one sealed directory here.")


def register(app: typer.Typer) -> None:
    """Add ``analyze`` to the ``rungbench chess`` app."""
    app.command("analyze")(analyze_cmd)


def analyze_cmd(
    cells: Annotated[Path, typer.Argument(metavar="CELLS.jsonl", help="Cell table: header "
                                          "line, then one evaluated cell per line.")],
    proxy: str | None = typer.Option(None, "--proxy", callback=lambda v: v and choice(
        ("stockfish",))(v), help="stockfish: analyse a labeller-family (internal proxy) "
        "evaluation; every output is labelled so."),
    n_boot: int = typer.Option(2000, "--n-boot", min=100, max=100_000,
                               help="Cluster-bootstrap resamples."),
    seed: int = typer.Option(0, min=0, max=SEED_MAX, help="Bootstrap seed."),
    out: Path | None = OUT_OPTION,
    force: bool = typer.Option(False, "--force", help="Replace an existing --out."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Analyse a cell table: estimands, sensitivities, attrition, the seven gates, wording."""

    def action() -> None:
        from rungbench.chess.studies.analysis import Settings
        from rungbench.chess.studies.analysis_report import (
            analyze_table,
            markdown,
            publish_analysis,
        )
        from rungbench.chess.studies.cells import read_cell_table

        doc = analyze_table(read_cell_table(cells), Settings(n_boot=n_boot, seed=seed),
                            proxy=proxy)
        if out is not None:
            publish_analysis(doc, out, force=force)
        if as_json:
            emit_json({"ok": True, **doc})
        else:
            console.print(markdown(doc), markup=False, highlight=False, soft_wrap=True)

    run(action, as_json=as_json)
