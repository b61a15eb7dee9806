"""`rungbench design ...`: registered design presets and their outcome-blind audits.

``design list`` prints every preset with its digest; ``design audit a105|e023|e020|e022``
prints the audit's figures beside the seed's and its checks (exact balance; for the
E020/E021 ladder and E022 falsifiers the rendered candidate lists), exiting 1 when a
check fails. Under ``--json`` each prints exactly one JSON document.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from rungbench.cli._common import JSON_OPTION, command_group, console, emit_json, run
from rungbench.design.audit import AuditReport
from rungbench.design.registry import load_design, registered_names

app = command_group("Registered designs: digests and outcome-blind audits.")

FILE_OPTION = typer.Option(
    None, "--file", help="Audit this TOML preset instead of the registered one.")


@app.command("list")
def list_designs(as_json: bool = JSON_OPTION) -> None:
    """List the registered design presets and their digests."""
    designs = run(lambda: [load_design(n) for n in registered_names()], as_json=as_json)
    if as_json:
        emit_json({"designs": [{"name": d.name, "id": d.section("design").get("id"),
                                "digest": d.digest} for d in designs]})
        return
    table = Table(title="registered designs")
    for column in ("name", "id", "digest"):
        table.add_column(column)
    for d in designs:
        table.add_row(d.name, str(d.section("design").get("id", "")), d.digest)
    console.print(table)


@app.command("audit")
def audit(
    name: str = typer.Argument(..., help="Design to audit: a105, e023, e020 (= e021) or e022."),
    file: Path | None = FILE_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Audit a registered design; exit 1 when an exact-balance property fails."""
    from rungbench.chess.studies.audits import audit_design  # renders chess prompts

    def action() -> AuditReport:
        if as_json:
            return audit_design(name, file)
        with console.status(f"auditing {name}…"):
            return audit_design(name, file)

    report = run(action, as_json=as_json)
    if as_json:
        emit_json(report.to_json())
    else:
        print_report(report)
    if not report.ok:
        raise typer.Exit(1)


def print_report(report: AuditReport) -> None:
    """Print an audit's figures (ours beside the seed's) and its checks."""
    table = Table(title=f"{report.design} design audit ({report.digest[:19]}…)")
    for column in ("quantity", "seed", "ours", ""):
        table.add_column(column, justify="left" if column == "quantity" else "right")
    for f in report.figures:
        mark = "" if not f.must_equal else ("[green]✓[/]" if f.ok else "[bold red]✗[/]")
        table.add_row(f.quantity, "—" if f.seed is None else f"{f.seed:g}", _fmt(f.ours), mark)
    console.print(table)
    checks = Table(title="checks")
    checks.add_column("property")
    checks.add_column("holds", justify="right")
    for key, ok in report.checks.items():
        checks.add_row(key, "[green]yes[/]" if ok else "[bold red]NO[/]")
    console.print(checks)


def _fmt(value: float) -> str:
    value = float(value) + 0.0  # prints a rounded −0.0 as 0
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.4g}"


NEW_OUT = typer.Option(..., "--out", help="Where the copy is written (a .toml file).")
NEW_MODELS = typer.Option(None, "--model", help="A model label the copy registers instead of "
                          "the preset's (repeatable); the counts that follow from the number "
                          "of models are rescaled.")


@app.command("new")
def new(
    name: str = typer.Argument(..., help="Bundled preset to copy (rungbench design list)."),
    out: Path = NEW_OUT,
    model: list[str] | None = NEW_MODELS,
    force: bool = typer.Option(False, "--force", help="Replace a file already there."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Write a copy of a bundled preset to edit, optionally for your models' labels. Bind it
    with `rungbench chess study bind FILE --models MODELS`; it is checked like a bundled one."""
    from rungbench.chess.studies.preset_copy import for_models
    from rungbench.design.registry import bundled_text, load_design_file
    from rungbench.errors import InputError
    from rungbench.evidence.store import write_atomic

    def action() -> dict[str, Any]:
        if out.suffix != ".toml":
            raise InputError("a preset file ends in .toml", path=str(out))
        text = bundled_text(name)
        if model:
            text = for_models(text, model, source=name)
        write_atomic(out, text.encode("utf-8"), overwrite=force)
        reg = load_design_file(out)
        return {"preset": name, "file": str(out), "digest": reg.digest,
                "models": reg.document.get("schedule", {}).get("models")}

    doc = run(action, as_json=as_json)
    if as_json:
        emit_json(doc)
    else:
        console.print(f"{doc['file']}: a copy of {doc['preset']} ({doc['digest']})",
                      markup=False, highlight=False)
