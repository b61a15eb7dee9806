"""`rungbench evidence ...`: the object store, freeze/check, the ledger and run manifests.

Each command parses, calls the library and prints a Rich line or table, or one
JSON document under ``--json``. Errors give one line and exit 1; refusals exit
3 with their reason codes; nothing is overwritten by a failing command.
"""

from __future__ import annotations

import base64
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from rungbench.cli._common import (
    EXIT_ERROR,
    console,
    emit_json,
    err_console,
    progress_bar,
    run,
)
from rungbench.errors import InputError, IntegrityError, Reason, Refusal
from rungbench.evidence import (
    INVENTORY,
    ChainReport,
    Exclusion,
    Ledger,
    ObjectStore,
    Refs,
    build_manifest,
    check,
    current_from_files,
    digest,
    freeze_files,
    loads_canonical,
    manifest_json_schema,
    parse_digest,
    read_manifest,
    recorded_digests,
    resolve_builder,
    shared_data_dir,
    verify_chain,
    write_atomic,
    write_manifest,
)
from rungbench.evidence.store import BadObject

app = typer.Typer(
    help="Content-addressed store, freeze/check, hash-chained ledger, run manifests.",
    no_args_is_help=True,
)

StoreOpt = Annotated[Path, typer.Option("--store", help="Study directory holding objects/sha256/.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document instead of tables.")]


def _existing_store(root: Path) -> ObjectStore:
    if not root.is_dir():
        raise InputError("no store directory here", path=str(root))
    return ObjectStore(root)


def _named_files(pairs: list[str] | None) -> dict[str, Path]:
    files: dict[str, Path] = {}
    for pair in pairs or []:
        name, sep, path = pair.partition("=")
        if not sep or not name or not path:
            raise InputError(f"expected NAME=FILE, got {pair!r}", field="--input")
        if name in files:
            raise InputError(f"input {name!r} given twice", field="--input")
        files[name] = Path(path)
    return files


def _naming_files(refusal: Refusal, files: dict[str, Path]) -> Refusal:
    """The same refusal with the file behind each named input added to its detail."""
    reasons = [
        Reason(r.code, f"{r.detail} ({files[r.subject]})", r.subject, r.data)
        if r.subject in files else r
        for r in refusal.reasons
    ]
    return Refusal(reasons, gate=refusal.gate)


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


def _get(store: Path, wanted: str, out: Path | None, force: bool) -> bytes:
    parse_digest(wanted, field="DIGEST")
    if out is not None and out.exists() and not force:
        raise InputError("refusing to overwrite an existing file (use --force)", path=str(out))
    data = _existing_store(store).get_bytes(wanted)
    if out is not None:
        write_atomic(out, data, overwrite=force)
    return data


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
    data = run(lambda: _get(store, wanted, out, force), as_json=as_json)
    if as_json:
        doc: dict[str, Any] = {"ok": True, "digest": wanted, "bytes": len(data)}
        if out is not None:
            doc["out"] = str(out)
        else:
            doc.update(_content(data))
        emit_json(doc)
    elif out is not None:
        console.print(f"{wanted} → {out} ({len(data)} bytes)", highlight=False, soft_wrap=True)
    else:
        typer.echo(data, nl=False)


def _content(data: bytes) -> dict[str, str]:
    try:
        return {"text": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


@app.command("verify")
def verify(store: StoreOpt, as_json: JsonOpt = False) -> None:
    """Re-hash every object; exit 1 and list every bad one."""
    with progress_bar("verifying objects", quiet=as_json) as progress:
        objects = run(lambda: _existing_store(store), as_json=as_json)
        bad = run(lambda: objects.verify(progress=progress), as_json=as_json)
    count = sum(1 for _ in objects.iter_digests())
    if as_json:
        emit_json({"ok": not bad, "objects": count, "bad": [b.to_json() for b in bad]})
    else:
        _print_bad(bad, count)
    if bad:
        raise typer.Exit(EXIT_ERROR)


def _print_bad(bad: list[BadObject], count: int) -> None:
    if not bad:
        console.print(f"[green]ok[/] {count} objects verified", soft_wrap=True)
        return
    err_console.print(f"[bold red]error[/] {len(bad)} bad objects", highlight=False, soft_wrap=True)
    for item in bad:
        found = item.actual or "malformed name"
        err_console.print(
            f"  {item.path}: holds {found}, named {item.expected}", highlight=False, soft_wrap=True
        )


@app.command("ledger-verify")
def ledger_verify(
    db: Annotated[Path, typer.Argument(help="Ledger SQLite file.")],
    anchor: Annotated[
        str | None,
        typer.Option(
            "--anchor", help="A head hash recorded earlier; the chain must still contain it."
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Verify the hash chain; exit 1 naming the first bad row."""
    report: ChainReport = run(lambda: _verify_ledger(db, anchor), as_json=as_json)
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
            f"[bold red]error[/] {db}: row seq {bad.seq} is bad ({bad.problem}): {bad.detail}",
            highlight=False,
            soft_wrap=True,
        )
    if not report.ok:
        raise typer.Exit(EXIT_ERROR)


def _verify_ledger(db: Path, anchor: str | None) -> ChainReport:
    if anchor is not None:
        parse_digest(anchor, field="--anchor")
    return verify_chain(db, anchor=anchor)


@app.command("ledger-append")
def ledger_append(
    db: Annotated[Path, typer.Argument(help="Ledger SQLite file (created if missing).")],
    kind: Annotated[str, typer.Option("--kind", help="Event type.")],
    payload: Annotated[str, typer.Option("--payload", help="Event body as JSON.")] = "{}",
    as_json: JsonOpt = False,
) -> None:
    """Append one event to the ledger and print its seq and hash."""
    event = run(lambda: _append(db, kind, payload), as_json=as_json)
    if as_json:
        emit_json({"ok": True, **event})
    else:
        console.print(f"seq {event['seq']} {event['hash']}", highlight=False, soft_wrap=True)


def _append(db: Path, kind: str, payload: str) -> dict[str, Any]:
    body = loads_canonical(payload.encode("utf-8"), path="--payload")
    with Ledger(db) as ledger:
        return ledger.append(kind, body).to_json()


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
            ObjectStore(store), name, resolve_builder(builder), _named_files(inputs)
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

    def action() -> dict[str, Any]:
        parse_digest(frozen, field="FROZEN")
        files = _named_files(inputs)
        try:
            record = check(_existing_store(store), frozen, current=current_from_files(files))
        except Refusal as exc:
            raise _naming_files(exc, files) from None
        return record.to_json()

    record = run(action, as_json=as_json)
    if as_json:
        emit_json({"ok": True, "frozen": frozen, "record": record})
    else:
        console.print(
            f"[green]ok[/] {record['name']} rebuilds byte for byte from "
            f"{len(record['inputs'])} inputs",
            highlight=False,
            soft_wrap=True,
        )


def _ref(
    store: Path, name: str, target: str | None, ledger: Path | None, expect: str | None
) -> dict[str, Any]:
    if target is None:
        found = Refs(store).get(name)
        if found is None:
            raise InputError(f"no ref {name!r}", path=str(Refs(store).path_for(name)))
        return {"name": name, "digest": found}
    parse_digest(target, field="DIGEST")
    if ledger is None:
        move = Refs(store).move(name, target, expected=expect)
    else:
        with Ledger(ledger) as book:
            move = Refs(store, ledger=book).move(name, target, expected=expect)
    return {"name": name, "digest": move.new, "old": move.old}


@app.command("ref")
def ref_command(
    name: Annotated[str, typer.Argument(help="Ref name, e.g. cohorts/deepseek.")],
    store: StoreOpt,
    target: Annotated[
        str | None, typer.Argument(metavar="[DIGEST]", help="Move the ref here.")
    ] = None,
    ledger: Annotated[
        Path | None, typer.Option("--ledger", help="Log the move in this ledger.")
    ] = None,
    expect: Annotated[
        str | None,
        typer.Option("--expect", help="Digest the ref must have now ('unset' for a new ref)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Print the digest a ref points to, or move it to DIGEST (exit 3 if --expect fails)."""
    result = run(lambda: _ref(store, name, target, ledger, expect), as_json=as_json)
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


# ---------------------------------------------------------------- demo stage


def _demo_files(data: Path) -> dict[str, Path]:
    files: dict[str, Path] = {}
    for run_dir in sorted(p for p in (data / "llm_chess").iterdir() if p.is_dir()):
        picked = (
            sorted(run_dir.glob("_run.json"))
            + sorted(p for p in run_dir.glob("*.json") if p.name != "_run.json")[:2]
        )
        for path in picked:
            files[str(path.relative_to(data))] = path
    if not files:
        raise InputError("no llm_chess/*/*.json files to demonstrate on", path=str(data))
    return files


def _stale_refusal(store: ObjectStore, source: Path, scratch: Path) -> list[str]:
    """Freeze a copy of ``source``, then change the copy: the check must refuse ``stale``."""
    scratch.mkdir(parents=True, exist_ok=True)
    live = scratch / "live_cohort.json"
    if live.exists():
        live.chmod(0o644)
        live.unlink()
    shutil.copyfile(source, live)
    frozen = freeze_files(store, "stale-demo", INVENTORY, {"cohort": live})
    with live.open("ab") as fh:
        fh.write(b"\n")
    try:
        check(store, frozen.digest, current=current_from_files({"cohort": live}))
    except Refusal as refusal:
        return list(refusal.codes)
    raise InputError("a changed source passed its check", path=str(live))


def _match_recorded(digests: dict[str, str], recorded: dict[str, str], data: Path) -> int:
    """Return how many stored digests equal SOURCES.md's; raise on any disagreement."""
    for name, found in digests.items():
        if recorded.get(name) != found:
            raise IntegrityError(
                f"{data / name}: holds {found}, SOURCES.md records {recorded.get(name)}"
            )
    return len(digests)


def demo_stage(workdir: Path, as_json: bool) -> dict[str, Any]:
    """Store bundled files, freeze and check them, keep a ledger and write a run manifest."""
    started = datetime.now(UTC)
    base = workdir / "evidence"
    base.mkdir(parents=True, exist_ok=True)
    store = ObjectStore(base / "store")
    data = shared_data_dir()
    files = _demo_files(data)
    with Ledger(base / "ledger.sqlite") as ledger:
        digests = {name: store.put_file(path) for name, path in files.items()}
        matched = _match_recorded(digests, recorded_digests(data), data)
        for name, found in digests.items():
            ledger.append("object.put", {"name": name, "digest": found})
        frozen = freeze_files(store, "llm-chess-sample", INVENTORY, files)
        ledger.append("freeze", {"frozen": frozen.digest, "output": frozen.record.output})
        check(store, frozen.digest, current=current_from_files(files))
        ledger.append("check", {"frozen": frozen.digest, "passed": True})
        stale_codes = _stale_refusal(store, next(iter(files.values())), base / "scratch")
        ledger.append("check", {"name": "stale-demo", "passed": False, "codes": stale_codes})
        bad = store.verify()
        chain = ledger.verify()
        head = ledger.head()
    plan = {"stage": "evidence-demo", "builder": INVENTORY.id, "inputs": sorted(files)}
    manifest = build_manifest(
        design_digest=digest(plan),
        inputs=digests,
        started_at=started,
        ended_at=datetime.now(UTC),
        exclusions=[
            Exclusion(
                subject="stale-demo",
                reason=stale_codes[0],
                detail="deliberately changed source, refused by check",
            )
        ],
        ledger_head=head,
    )
    run_dir = base / "runs" / manifest.run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    manifest_digest = write_manifest(run_dir / "manifest.json", manifest, overwrite=True)
    reread = read_manifest(run_dir / "manifest.json")
    summary: dict[str, Any] = {
        "files": len(files),
        "digests_matching_sources_md": matched,
        "objects": sum(1 for _ in store.iter_digests()),
        "bad_objects": len(bad),
        "frozen": frozen.digest,
        "inventory": frozen.record.output,
        "stale_check_refused_with": stale_codes,
        "ledger_events": chain.count,
        "ledger_ok": chain.ok and verify_chain(base / "ledger.sqlite", anchor=head).ok,
        "ledger_head": head,
        "manifest": str(run_dir / "manifest.json"),
        "manifest_digest": manifest_digest,
        "manifest_reread_matches": reread.digest == manifest_digest,
        "git_commit": manifest.git_commit,
        "input_digests": digests,
    }
    if not as_json:
        _print_demo(summary)
    return summary


def _print_demo(summary: dict[str, Any]) -> None:
    table = Table(title="evidence", show_header=False)
    for key in (
        "files",
        "digests_matching_sources_md",
        "objects",
        "bad_objects",
        "frozen",
        "stale_check_refused_with",
        "ledger_events",
        "ledger_ok",
        "manifest",
        "manifest_reread_matches",
    ):
        table.add_row(key, str(summary[key]))
    console.print(table)
    if sys.stdout.isatty():
        for name, found in summary["input_digests"].items():
            console.print(f"  {found}  {name}", highlight=False, soft_wrap=True)
