"""`rungbench causal import|query|regrade|export-table|export-inspect`: interoperability.

Thin: parse, call one ``rungbench.causal.interop`` function, print (Rich or one JSON
document). CLadder and BIF imports print the CPT encoding and which quantities its
unspecified cross-row coupling leaves unchanged; coupling-dependent rung-3 queries are
refused (exit 3, ``coupling_dependent``) unless ``--coupling`` names one.
"""

from __future__ import annotations

import json
import pathlib
from typing import Annotated, Any

import typer
from rich.table import Table

from rungbench.cli._common import choice, command_group, console, emit_json, run
from rungbench.errors import InputError

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document instead of tables.")]
ForceOpt = Annotated[bool, typer.Option("--force", help="Replace an existing output.")]
COUPLINGS = ("comonotone", "independent")
FORMATS = ("csv", "parquet", "json")
CouplingOpt = Annotated[str | None, typer.Option(
    "--coupling", help="Cross-row coupling of the CPTs: comonotone or independent "
    "(default: unspecified; coupling-dependent queries are refused).")]

import_app = command_group(
    "Import external causal benchmarks, networks and inspect logs.")


def _coupling(value: str | None) -> str | None:
    if value is not None and value not in COUPLINGS:
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(COUPLINGS)}")
    return value


def _print_note(doc: dict[str, Any]) -> None:
    console.print(f"encoding: {doc['encoding']}", highlight=False)
    console.print(f"coupling: {doc['coupling'] or 'unspecified'}", highlight=False)
    console.print(f"note: {doc['coupling_note']}", highlight=False, markup=False)


def import_cladder_command(
    directory: Annotated[pathlib.Path, typer.Argument(help="CLadder data directory.")],
    out: Annotated[pathlib.Path, typer.Option("--out", help="Output directory (sealed).")],
    force: ForceOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Import CLadder's models as worlds and its questions as cases (CLadder label kept)."""
    from rungbench.causal.interop.cladder import import_cladder

    summary = run(lambda: import_cladder(directory, out, force=force), as_json=as_json)
    if as_json:
        emit_json(summary)
        return
    c = summary["counts"]
    console.print(f"{c['models']} models → worlds, {c['questions']} questions → cases in {out}")
    console.print(f"stored quantities: {c['quantities']}, wrong: {c['quantities_wrong']}; "
                  f"numeric labels flipped by the exact value: {c['numeric_labels_flipped']}")
    console.print(f"coupling-dependent questions: {summary['coupling_dependent_questions']}")
    _print_note(summary)


def import_bif_command(
    file: Annotated[pathlib.Path, typer.Argument(
        help="BIF network (2-64 named states per variable).")],
    out: Annotated[pathlib.Path, typer.Option("--out", help="Output directory (sealed).")],
    coupling: Annotated[str | None, typer.Option(
        "--coupling", callback=_coupling,
        help="Name a cross-row coupling (comonotone|independent); default unspecified.")] = None,
    force: ForceOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Import a BIF network (full double precision) as a world."""
    from rungbench.causal.interop.imports import import_bif

    summary = run(lambda: import_bif(file, out, coupling=coupling, force=force), as_json=as_json)
    if as_json:
        emit_json(summary)
        return
    console.print(f"{summary['world_id']}: {summary['n_variables']} variables, at most "
                  f"{summary['max_response_tables']} response tables per variable, CPT "
                  f"error {summary['max_cpt_error']:.1e} → {out}", highlight=False)
    _print_note(summary)


def import_inspect_command(
    log: Annotated[pathlib.Path, typer.Argument(help="inspect .eval or .json log.")],
    out: Annotated[pathlib.Path, typer.Option("--out", help="agent_response JSONL to write.")],
    bench: Annotated[pathlib.Path | None, typer.Option("--bench",
                                                       help="The bench the task ran.")] = None,
    cladder_import: Annotated[pathlib.Path | None, typer.Option(
        "--cladder", help="The CLadder import the task ran.")] = None,
    arm: Annotated[str, typer.Option("--arm", help="Arm name of the responses.")] = "inspect",
    force: ForceOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Turn an inspect log of an exported task into rungbench responses."""
    from rungbench.causal.interop.cladder_inspect import import_cladder_log
    from rungbench.causal.interop.inspect_bridge import import_log

    if (bench is None) == (cladder_import is None):
        run(lambda: (_ for _ in ()).throw(InputError(
            "give exactly one of --bench and --cladder", field="bench")), as_json=as_json)
    result = run(lambda: import_log(log, pathlib.Path(str(bench)), out, arm=arm, force=force)
                 if bench is not None else
                 import_cladder_log(log, pathlib.Path(str(cladder_import)), out, force=force),
                 as_json=as_json)
    if as_json:
        emit_json(result)
        return
    console.print(f"{result['samples']} responses → {out} (model {result['model']}); "
                  f"inspect's recorded scores agree on {result['inspect_scores_agree']}",
                  highlight=False)


def _parse_query(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"--query is not JSON: {exc.msg}", field="query") from None


def query_command(
    source: Annotated[pathlib.Path, typer.Argument(
        help="Import directory (causal import bif, or causal import cladder with --model).")],
    query: Annotated[str | None, typer.Option("--query", help="rungbench.query/1 JSON.")] = None,
    estimand: Annotated[str | None, typer.Option(
        "--estimand", callback=lambda v: v if v is None else choice(("ate", "ett", "nde",
                                                                     "nie"))(v),
        help="ate, ett, nde or nie (with --x and --y).")] = None,
    x: Annotated[str | None, typer.Option("--x", help="Treatment variable.")] = None,
    y: Annotated[str | None, typer.Option("--y", help="Outcome variable.")] = None,
    mediators: Annotated[str | None, typer.Option(
        "--mediators", help="Comma-separated mediator set (default: derived).")] = None,
    coupling: Annotated[str | None, typer.Option(
        "--coupling", callback=_coupling,
        help="Name a cross-row coupling for coupling-dependent queries.")] = None,
    model: Annotated[int | None, typer.Option(
        "--cladder-model", min=0, help="CLadder model_id (CLadder import directories).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Answer a query or named estimand exactly on an imported world."""
    from rungbench.causal.interop import imports

    if (query is None) == (estimand is None):
        raise typer.BadParameter("give exactly one of --query and --estimand",
                                 param_hint="--query")
    if estimand is not None and (x is None or y is None):
        raise typer.BadParameter("--estimand needs --x and --y", param_hint="--x")

    def act() -> dict[str, Any]:
        imported = imports.load_any(source, model)
        if query is not None:
            parsed = imports.parse_query(imported, _parse_query(query))
            return imports.answer(imported, parsed, coupling=coupling)
        ms = None if mediators is None else [m.strip() for m in mediators.split(",") if m]
        return imports.answer_estimand(imported, str(estimand), str(x), str(y),
                                       coupling=coupling, mediator_set=ms)

    result = run(act, as_json=as_json)
    if as_json:
        emit_json(result)
        return
    console.print(f"{result['value']!r} ({result['method']}; coupling "
                  f"{result['coupling'] or 'unspecified'}, "
                  f"{'invariant' if result['coupling_invariant'] else 'dependent'})",
                  highlight=False)


def regrade_command(
    directory: Annotated[pathlib.Path, typer.Argument(help="CLadder data directory.")],
    out: Annotated[pathlib.Path, typer.Option("--out", help="Output directory (sealed).")],
    fmt: Annotated[str, typer.Option("--format", callback=choice(FORMATS),
                                     help="csv, parquet or json.")] = "csv",
    force: ForceOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Re-grade CLadder exactly: disagreements, wrong stored quantities, summary."""
    from rungbench.causal.interop.cladder import write_regrade

    result = run(lambda: write_regrade(directory, out, fmt, force=force), as_json=as_json)
    if as_json:
        emit_json(result)
        return
    c = result["counts"]
    table = Table(title=f"CLadder stored quantities that are wrong ({c['quantities_wrong']} "
                        f"of {c['quantities']})")
    for col in ("family", "quantity", "wrong", "stored", "max |diff|"):
        table.add_column(col)
    for s in result["summary"]:
        table.add_row(s["family"], s["quantity"], str(s["wrong"]), str(s["stored"]),
                      f"{s['max_abs_diff']:.3f}")
    console.print(table)
    console.print(f"numeric labels flipped: {c['numeric_labels_flipped']} "
                  f"{c['numeric_labels_flipped_by_type']} (by CLadder's implemented NDE/NIE: "
                  f"{c['numeric_labels_flipped_engine_definition']}); structural labels differing: "
                  f"{c['structural_labels_differing']} (undecided {c['structural_undecided']})"
                  f" → {out}", highlight=False)


def export_table_command(
    source: Annotated[pathlib.Path, typer.Argument(
        help="Records: a JSONL file, or a scored causal run directory (its verdicts).")],
    out: Annotated[pathlib.Path, typer.Option("--out", help="Output file.")],
    table: Annotated[str, typer.Option(
        "--table", help="causal-verdicts, cladder-questions, cladder-quantities, "
        "cladder-summary, census-transitions, or records (schema inferred).")] = "records",
    select: Annotated[str | None, typer.Option(
        "--select", help="Dotted key of the list of records inside a JSON document.")] = None,
    fmt: Annotated[str, typer.Option("--format", callback=choice(FORMATS),
                                     help="csv, parquet or json.")] = "csv",
    force: ForceOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Export a per-cell result table as CSV, Parquet or JSON with its schema."""
    from rungbench.causal.interop import export

    result = run(lambda: export.export_source(source, out, table, fmt, force=force,
                                              select=select),
                 as_json=as_json)
    if as_json:
        emit_json(result)
        return
    console.print(f"{result['rows']} rows of {result['table']} → {out} ({fmt})", highlight=False)


def export_inspect_command(
    out: Annotated[pathlib.Path, typer.Option("--out", help="Task directory (sealed).")],
    bench: Annotated[pathlib.Path | None, typer.Option("--bench",
                                                       help="Built causal bench.")] = None,
    cladder_import: Annotated[pathlib.Path | None, typer.Option(
        "--cladder", help="Sealed CLadder import (targets: exact labels).")] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=1,
                                              help="Only the first N cases.")] = None,
    force: ForceOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Export a built bench or a CLadder import as an inspect_ai task (``inspect eval``)."""
    from rungbench.agents.inspect_logs import inspect_available
    from rungbench.causal.interop.cladder_inspect import export_cladder_task
    from rungbench.causal.interop.inspect_bridge import export_task

    why = inspect_available()
    if (bench is None) == (cladder_import is None):
        why = "give exactly one of --bench and --cladder"
    if why is not None:
        run(lambda: (_ for _ in ()).throw(InputError(why, field="inspect")), as_json=as_json)
    result = run(lambda: export_task(bench, out, limit=limit, force=force) if bench is not None
                 else export_cladder_task(pathlib.Path(str(cladder_import)), out, limit=limit,
                                          force=force), as_json=as_json)
    if as_json:
        emit_json(result)
        return
    console.print(f"{result['n_cases']} cases → {out / 'task.py'}; run: {result['run']}",
                  highlight=False)


def register(app: typer.Typer) -> None:
    """Add the interoperability commands to the ``rungbench causal`` app."""
    import_app.command("cladder")(import_cladder_command)
    import_app.command("bif")(import_bif_command)
    import_app.command("inspect")(import_inspect_command)
    app.add_typer(import_app, name="import")
    app.command("query")(query_command)
    app.command("regrade")(regrade_command)
    app.command("export-table")(export_table_command)
    app.command("export-inspect")(export_inspect_command)
