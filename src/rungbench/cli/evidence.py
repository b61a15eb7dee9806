"""`rungbench evidence ...`: the object store, freeze/check, the ledger and run manifests.

Each command parses, calls the library and prints a Rich line or table, or one
JSON document under ``--json``. Errors give one line and exit 1; refusals exit
3 with their reason codes; nothing is overwritten by a failing command.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from rungbench.cli._common import (
    EXIT_ERROR,
    command_group,
    console,
    emit_json,
    err_console,
    progress_bar,
    run,
)
from rungbench.evidence import (
    ChainReport,
    ObjectStore,
    freeze_files,
    manifest_json_schema,
    read_manifest,
    resolve_builder,
)
from rungbench.evidence.database import redact
from rungbench.evidence.inventory import InventoryReport, verify_inventory
from rungbench.evidence.operations import (
    append_event,
    check_named,
    content_json,
    existing_store,
    get_object,
    named_files,
    ref_action,
    verify_ledger,
)

app = command_group(
    "Content-addressed store, freeze/check, hash-chained ledger, run manifests.")

StoreOpt = Annotated[Path, typer.Option("--store", help="Study directory holding objects/sha256/.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document instead of tables.")]


@app.command("put")
def put(
    file: Annotated[Path, typer.Argument(help="File whose bytes to store.")],
    store: StoreOpt,
    as_json: JsonOpt = False,
) -> None:
    """Store FILE's bytes and print their digest."""
    found = run(lambda: ObjectStore(store).put_file(file), as_json=as_json)
    if as_json:
        emit_json({"ok": True, "digest": found, "path": str(file)})
    else:
        console.print(found, highlight=False, soft_wrap=True)


@app.command("get")
def get(
    wanted: Annotated[str, typer.Argument(metavar="DIGEST", help="sha256:<64 hex> of the object.")],
    store: StoreOpt,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write the bytes here (atomically).")
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite an existing --out file.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Read an object, verifying its digest; print it or write it to --out."""
    data = run(lambda: get_object(store, wanted, out, force), as_json=as_json)
    if as_json:
        doc: dict[str, Any] = {"ok": True, "digest": wanted, "bytes": len(data)}
        if out is not None:
            doc["out"] = str(out)
        else:
            doc.update(content_json(data))
        emit_json(doc)
    elif out is not None:
        console.print(f"{wanted} → {out} ({len(data)} bytes)", highlight=False, soft_wrap=True)
    else:
        typer.echo(data, nl=False)


@app.command("verify")
def verify(store: StoreOpt, as_json: JsonOpt = False) -> None:
    """Re-hash every object and look for every object a ref or stored record needs;
    exit 1 listing each bad or missing one."""
    with progress_bar("verifying objects", quiet=as_json) as progress:
        objects = run(lambda: existing_store(store), as_json=as_json)
        report = run(lambda: verify_inventory(objects, progress=progress), as_json=as_json)
    if as_json:
        emit_json(report.to_json())
    else:
        _print_report(report)
    if not report.ok:
        raise typer.Exit(EXIT_ERROR)


def _print_report(report: InventoryReport) -> None:
    if report.ok:
        console.print(f"[green]ok[/] {report.objects} objects verified, none missing",
                      soft_wrap=True)
        return
    err_console.print(f"[bold red]error[/] {len(report.bad)} bad objects, "
                      f"{len(report.missing)} missing", highlight=False, soft_wrap=True)
    for item in report.bad:
        found = item.actual or "malformed name"
        err_console.print(
            f"  {item.path}: holds {found}, named {item.expected}", highlight=False, soft_wrap=True
        )
    for gone in report.missing:
        err_console.print(f"  {gone.digest} missing, needed by {'; '.join(gone.referenced_by)}",
                          highlight=False, soft_wrap=True)


@app.command("ledger-verify")
def ledger_verify(
    db: Annotated[str, typer.Argument(help="Ledger: an SQLite file, or a postgresql:// URL.")],
    anchor: Annotated[
        str | None,
        typer.Option(
            "--anchor", help="A head hash recorded earlier; the chain must still contain it."
        ),
    ] = None,
    anchor_manifest: Annotated[
        Path | None,
        typer.Option("--anchor-manifest", help="Use the ledger_head of this run manifest as "
                     "the anchor."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Verify the hash chain; exit 1 naming the first bad row.

    A keyless chain cannot see a truncated or re-hashed tail on its own: pass the head
    printed earlier (--anchor) or a run manifest that recorded it (--anchor-manifest).
    """
    report: ChainReport = run(lambda: verify_ledger(db, anchor, anchor_manifest),
                              as_json=as_json)
    if as_json:
        emit_json(report.to_json())
    elif report.first_bad is None:
        console.print(
            f"[green]ok[/] {report.count} events, head {report.head}",
            highlight=False,
            soft_wrap=True,
        )
    else:
        bad = report.first_bad
        err_console.print(
            f"[bold red]error[/] {redact(db)}: row seq {bad.seq} is bad ({bad.problem}): "
            f"{bad.detail}",
            highlight=False,
            soft_wrap=True,
        )
    if not report.ok:
        raise typer.Exit(EXIT_ERROR)


@app.command("ledger-append")
def ledgerappend_event(
    db: Annotated[str, typer.Argument(help="Ledger: an SQLite file (created if missing), or a "
                                      "postgresql:// URL.")],
    kind: Annotated[str, typer.Option("--kind", help="Event type.")],
    payload: Annotated[str, typer.Option("--payload", help="Event body as JSON.")] = "{}",
    anchor: Annotated[
        str | None,
        typer.Option("--anchor", help="A head printed earlier; refuse unless the chain "
                     "still contains it."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Append one event to a ledger whose chain verifies; print its seq and hash (the new
    head, an anchor to keep elsewhere for ledger-verify --anchor)."""
    event = run(lambda: append_event(db, kind, payload, anchor), as_json=as_json)
    if as_json:
        emit_json({"ok": True, **event})
    else:
        console.print(f"seq {event['seq']} {event['hash']}", highlight=False, soft_wrap=True)


@app.command("freeze")
def freeze_command(
    name: Annotated[str, typer.Argument(help="Name of the frozen object, e.g. qualification.")],
    store: StoreOpt,
    inputs: Annotated[
        list[str] | None,
        typer.Option("--input", help="Named input NAME=FILE; repeat for each input."),
    ] = None,
    builder: Annotated[
        str, typer.Option("--builder", help="Builder as module:attribute.")
    ] = "rungbench.evidence.freeze:INVENTORY",
    as_json: JsonOpt = False,
) -> None:
    """Store the named inputs, build the output, and print the frozen record's digest."""
    frozen = run(
        lambda: freeze_files(
            ObjectStore(store), name, resolve_builder(builder), named_files(inputs)
        ),
        as_json=as_json,
    )
    if as_json:
        emit_json({"ok": True, "frozen": frozen.digest, "record": frozen.record.to_json()})
    else:
        console.print(frozen.digest, highlight=False, soft_wrap=True)


@app.command("check")
def check_command(
    frozen: Annotated[str, typer.Argument(metavar="FROZEN", help="Digest of the frozen record.")],
    store: StoreOpt,
    inputs: Annotated[
        list[str] | None,
        typer.Option("--input", help="Current source NAME=FILE of a frozen input (for staleness)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Rebuild a frozen object and compare byte for byte; exit 3 with reasons on refusal."""

    record = run(lambda: check_named(store, frozen, named_files(inputs)), as_json=as_json)
    if as_json:
        emit_json({"ok": True, "frozen": frozen, "record": record})
    else:
        console.print(
            f"[green]ok[/] {record['name']} rebuilds byte for byte from "
            f"{len(record['inputs'])} inputs",
            highlight=False,
            soft_wrap=True,
        )


@app.command("ref")
def ref_command(
    name: Annotated[str, typer.Argument(help="Ref name, e.g. cohorts/deepseek.")],
    store: StoreOpt,
    target: Annotated[
        str | None, typer.Argument(metavar="[DIGEST]", help="Move the ref here.")
    ] = None,
    ledger: Annotated[
        str | None, typer.Option("--ledger", help="Log the move in this ledger (an SQLite "
                                 "file or a postgresql:// URL).")
    ] = None,
    expect: Annotated[
        str | None,
        typer.Option("--expect", help="Digest the ref must have now ('unset' for a new ref)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Print the digest a ref points to, or move it to DIGEST (exit 3 if --expect fails)."""
    result = run(lambda: ref_action(store, name, target, ledger, expect), as_json=as_json)
    if as_json:
        emit_json({"ok": True, **result})
    else:
        console.print(result["digest"], highlight=False, soft_wrap=True)


@app.command("manifest")
def manifest_command(
    file: Annotated[Path, typer.Argument(help="Run manifest JSON file.")],
    as_json: JsonOpt = False,
) -> None:
    """Read and validate a run manifest; print its digest and fields."""
    manifest = run(lambda: read_manifest(file), as_json=as_json)
    if as_json:
        emit_json({"ok": True, "digest": manifest.digest, "manifest": manifest.to_json()})
        return
    table = Table(title=f"run {manifest.run_id}", show_header=False)
    for key, value in manifest.to_json().items():
        table.add_row(key, str(value))
    table.add_row("digest", manifest.digest)
    console.print(table)


@app.command("manifest-schema")
def manifest_schema(as_json: JsonOpt = False) -> None:
    """Print the JSON Schema of the run manifest."""
    schema = manifest_json_schema()
    if as_json:
        emit_json(schema)
    else:
        console.print_json(data=schema)
