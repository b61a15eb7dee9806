"""Corruption sweep: every artifact the evidence layer writes, flipped, truncated or deleted,
is detected by the next command that reads it, which names the file or digest."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rungbench.cli import app
from rungbench.errors import RungbenchError
from rungbench.evidence import (
    INVENTORY,
    Ledger,
    ObjectStore,
    Refs,
    build_manifest,
    digest,
    freeze_files,
    read_manifest,
    write_manifest,
)


@dataclass(frozen=True)
class Study:
    """A small study: a store with an input, a frozen record, a ref, a ledger, a manifest."""

    store: Path
    input: str
    frozen: str
    ref: Path
    ledger: Path
    head: str
    manifest: Path


@pytest.fixture
def study(tmp_path: Path) -> Study:
    """Every evidence artifact kind, written by the library as a run would."""
    source = tmp_path / "pool.jsonl"
    source.write_bytes(b'{"fen":"8/8/8/8/8/8/8/K6k w - - 0 1"}\n' * 3)
    store = ObjectStore(tmp_path / "study")
    frozen = freeze_files(store, "qualification", INVENTORY, {"pool": source})
    pool = frozen.record.inputs["pool"]
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        Refs(store.root, ledger=ledger).move("pools/a", pool)
        ledger.append("freeze", {"frozen": frozen.digest, "note": "qualification frozen"})
        head = ledger.head()
    assert head is not None
    start = datetime(2026, 3, 1, tzinfo=UTC)
    manifest = build_manifest(design_digest=digest({"d": 1}), inputs={"pool": pool},
                              started_at=start, ended_at=start + timedelta(minutes=1),
                              ledger_head=head, run_id="r1")
    write_manifest(tmp_path / "manifest.json", manifest)
    return Study(store.root, pool, frozen.digest, store.root / "refs" / "pools" / "a",
                 tmp_path / "ledger.sqlite", head, tmp_path / "manifest.json")


def _object(study: Study, wanted: str) -> Path:
    return ObjectStore(study.store).path_for(wanted)


def _writable(path: Path) -> None:
    os.chmod(path, 0o644)


def _flip(path: Path, offset: int) -> None:
    _writable(path)
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


def _truncate(path: Path) -> None:
    _writable(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _delete(path: Path) -> None:
    path.unlink()


DAMAGE: dict[str, Callable[[Path], None]] = {
    "flip": lambda p: _flip(p, len(p.read_bytes()) // 2),
    "truncate": _truncate,
    "delete": _delete,
}


def _cli(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["evidence", *map(str, args)])
    return result.exit_code, " ".join(result.output.split())


def _detected(args: list[str | Path], needle: str, codes: tuple[int, ...] = (1,)) -> None:
    code, output = _cli(*args)
    assert code in codes, output
    assert "internal error" not in output
    assert needle in output, output


@pytest.mark.parametrize("damage", DAMAGE)
def test_store_object_damage_is_detected_by_get_and_verify(study: Study, damage: str) -> None:
    """A flipped, truncated or deleted object: get and verify exit 1 naming its digest."""
    DAMAGE[damage](_object(study, study.input))
    hexpart = study.input.removeprefix("sha256:")
    _detected(["get", study.input, "--store", study.store], hexpart[2:])
    _detected(["verify", "--store", study.store], hexpart[2:])


@pytest.mark.parametrize("damage", DAMAGE)
def test_frozen_record_damage_is_detected_by_check(study: Study, damage: str) -> None:
    """A flipped, truncated or deleted frozen record: check refuses (exit 3) naming it."""
    DAMAGE[damage](_object(study, study.frozen))
    _detected(["check", study.frozen, "--store", study.store], study.frozen.removeprefix(
        "sha256:")[2:], codes=(3,))


@pytest.mark.parametrize("damage", DAMAGE)
def test_ref_damage_is_detected_by_ref(study: Study, damage: str) -> None:
    """A flipped, truncated or deleted ref file: `evidence ref NAME` exits 1 naming the file."""
    DAMAGE[damage](study.ref)
    _detected(["ref", "pools/a", "--store", study.store], str(study.ref))


@pytest.mark.parametrize("offset", range(len("sha256:") + 64))
def test_every_byte_of_a_ref_is_covered(study: Study, offset: int) -> None:
    """Whichever byte of a ref is flipped (hex into other hex too), resolving it raises."""
    _flip(study.ref, offset)
    with pytest.raises(RungbenchError, match=str(study.ref)):
        Refs(study.store).resolve("pools/a")


@pytest.mark.parametrize("damage", DAMAGE)
def test_ledger_damage_is_detected_by_ledger_verify(study: Study, damage: str) -> None:
    """A damaged or deleted ledger: ledger-verify against the kept head exits 1 naming it."""
    if damage == "flip":
        data = study.ledger.read_bytes()
        _flip(study.ledger, data.index(b"qualification frozen"))
    else:
        DAMAGE[damage](study.ledger)
    _detected(["ledger-verify", study.ledger, "--anchor", study.head], str(study.ledger))
    _detected(["ledger-append", study.ledger, "--kind", "k", "--anchor", study.head],
              str(study.ledger))


def test_every_byte_of_a_ledger_row_is_covered(study: Study) -> None:
    """Flipping any byte of a row's payload or hash is caught by the reader behind
    ``evidence ledger-verify`` (a refusal naming the ledger file, or the first bad row,
    which the command prints beside the file's name); the command itself exits 1 naming
    the file (checked on every 25th byte: each command run costs a CLI start)."""
    from rungbench.evidence.operations import verify_ledger

    data = study.ledger.read_bytes()
    with sqlite3.connect(study.ledger) as db:
        texts = [str(v) for row in db.execute("SELECT payload, hash FROM ledger_events")
                 for v in row]
    offsets = [data.index(t.encode()) + i for t in texts for i in range(len(t))]
    assert len(offsets) > 100
    for k, offset in enumerate(offsets):
        study.ledger.write_bytes(data)
        _flip(study.ledger, offset)
        if k % 25 == 0:
            code, output = _cli("ledger-verify", study.ledger, "--anchor", study.head)
            assert code == 1 and str(study.ledger) in output, (offset, output)
            continue
        try:  # the reader either refuses naming the file or reports the first bad row
            report = verify_ledger(study.ledger, study.head)
        except RungbenchError as exc:
            assert str(study.ledger) in str(exc), (offset, exc)
        else:
            assert not report.ok and report.first_bad is not None, offset


@pytest.mark.parametrize("damage", DAMAGE)
def test_manifest_damage_is_detected_by_manifest(study: Study, damage: str) -> None:
    """A flipped, truncated or deleted run manifest: `evidence manifest` exits 1 naming it."""
    DAMAGE[damage](study.manifest)
    _detected(["manifest", study.manifest], str(study.manifest))


def test_every_byte_of_a_manifest_is_covered(study: Study) -> None:
    """Flipping any one byte of a run manifest makes read_manifest raise naming the file."""
    data = study.manifest.read_bytes()
    for offset in range(len(data)):
        study.manifest.write_bytes(data)
        _flip(study.manifest, offset)
        with pytest.raises(RungbenchError, match=r"manifest\.json"):
            read_manifest(study.manifest)


def test_manifest_inputs_missing_from_the_store_are_reported(study: Study) -> None:
    """A run manifest stored in the store names its inputs: a deleted one is reported."""
    stored = ObjectStore(study.store).put_bytes(study.manifest.read_bytes())
    _delete(_object(study, study.input))
    code, output = _cli("verify", "--store", study.store, "--json")
    assert code == 1
    found = json.loads(CliRunner().invoke(
        app, ["evidence", "verify", "--store", str(study.store), "--json"]).stdout)
    (missing,) = found["missing"]
    assert any(stored in who for who in missing["referenced_by"]), output
