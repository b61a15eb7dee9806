"""`rungbench evidence ...`: exit codes, one-line errors naming the path or field, no overwrites."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from rungbench.cli import app
from rungbench.evidence import (
    INVENTORY,
    Ledger,
    ObjectStore,
    RunManifest,
    bytes_digest,
    freeze_files,
    verify_chain,
    write_manifest,
)

RUNGBENCH = Path(sys.executable).parent / "rungbench"


def _cli(*args: str | Path) -> Result:
    return CliRunner().invoke(app, ["evidence", *map(str, args)])


def _doc(result: Result) -> Any:
    return json.loads(result.stdout)


def _flat(text: str) -> str:
    """Join Rich's wrapped lines back into the single line it printed."""
    return " ".join(text.split())


@pytest.fixture
def store_with(tmp_path: Path) -> tuple[Path, str]:
    """A store holding one small object, and that object's digest."""
    source = tmp_path / "input.txt"
    source.write_bytes(b"hello evidence\n")
    result = _cli("put", source, "--store", tmp_path / "study", "--json")
    assert result.exit_code == 0, result.output
    return tmp_path / "study", _doc(result)["digest"]


def test_put_prints_digest(tmp_path: Path) -> None:
    """put prints exactly the sha256 digest of the file's bytes."""
    source = tmp_path / "f.bin"
    source.write_bytes(b"\x00\x01abc")
    result = _cli("put", source, "--store", tmp_path / "s")
    assert result.exit_code == 0
    assert result.stdout.strip() == bytes_digest(b"\x00\x01abc")


def test_put_missing_file_exit_1(tmp_path: Path) -> None:
    """put of a missing file exits 1 naming the path and creates no object."""
    result = _cli("put", tmp_path / "gone.txt", "--store", tmp_path / "s")
    assert result.exit_code == 1
    assert "gone.txt" in _flat(result.stderr)
    assert list(ObjectStore(tmp_path / "s").iter_digests()) == []


def test_get_to_stdout_and_json(store_with: tuple[Path, str]) -> None:
    """get prints the stored bytes, or under --json one document with the text."""
    store, found = store_with
    assert _cli("get", found, "--store", store).stdout == "hello evidence\n"
    doc = _doc(_cli("get", found, "--store", store, "--json"))
    assert doc == {"ok": True, "digest": found, "bytes": 15, "text": "hello evidence\n"}


def test_get_out_never_overwrites_without_force(
    store_with: tuple[Path, str], tmp_path: Path
) -> None:
    """get --out onto an existing file exits 1 and leaves it; --force replaces it atomically."""
    store, found = store_with
    out = tmp_path / "out.txt"
    out.write_text("precious")
    result = _cli("get", found, "--store", store, "--out", out)
    assert result.exit_code == 1
    assert "out.txt" in _flat(result.stderr) and "--force" in _flat(result.stderr)
    assert out.read_text() == "precious"
    assert _cli("get", found, "--store", store, "--out", out, "--force").exit_code == 0
    assert out.read_text() == "hello evidence\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["input.txt", "out.txt", "study"]


def test_get_truncated_object_exit_1_writes_nothing(
    store_with: tuple[Path, str], tmp_path: Path
) -> None:
    """A truncated object exits 1 naming its path; --out is not created."""
    store, found = store_with
    path = ObjectStore(store).path_for(found)
    path.chmod(0o644)
    path.write_bytes(b"hello")
    out = tmp_path / "out.txt"
    result = _cli("get", found, "--store", store, "--out", out, "--json")
    assert result.exit_code == 1
    doc = _doc(result)
    assert doc["error"] == "integrity_error" and str(path) in doc["message"]
    assert not out.exists()


@pytest.mark.parametrize(
    "bad", ["sha256:123", "SHA256:" + "a" * 64, "a" * 64, "sha256:" + "g" * 64]
)
def test_get_malformed_digest_exit_1(store_with: tuple[Path, str], bad: str) -> None:
    """A digest in the wrong form exits 1 with one message naming the DIGEST field."""
    store, _ = store_with
    result = _cli("get", bad, "--store", store)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "malformed digest" in _flat(result.stderr) and "'DIGEST'" in _flat(result.stderr)


def test_get_absent_object_exit_1(store_with: tuple[Path, str]) -> None:
    """An object the store lacks exits 1 naming the object path."""
    store, _ = store_with
    result = _cli("get", "sha256:" + "0" * 64, "--store", store, "--json")
    assert result.exit_code == 1
    assert "not in the store" in _doc(result)["message"]


def test_verify_lists_every_bad_object(store_with: tuple[Path, str], tmp_path: Path) -> None:
    """verify exits 0 on a clean store and 1 listing every damaged object."""
    store, found = store_with
    assert _cli("verify", "--store", store).exit_code == 0
    other = ObjectStore(store).put_bytes(b"second object")
    for digest in (found, other):
        path = ObjectStore(store).path_for(digest)
        path.chmod(0o644)
        path.write_bytes(path.read_bytes()[:-1])
    result = _cli("verify", "--store", store, "--json")
    assert result.exit_code == 1
    doc = _doc(result)
    assert doc["ok"] is False and doc["objects"] == 2
    assert sorted(b["expected"] for b in doc["bad"]) == sorted([found, other])
    text = _flat(_cli("verify", "--store", store).stderr)
    assert "2 bad objects" in text and found in text and other in text


def test_verify_missing_store_exit_1(tmp_path: Path) -> None:
    """verify of a directory that does not exist exits 1 naming it."""
    result = _cli("verify", "--store", tmp_path / "nostore")
    assert result.exit_code == 1 and "nostore" in _flat(result.stderr)


def _tampered_ledger(tmp_path: Path) -> Path:
    path = tmp_path / "ledger.sqlite"
    with Ledger(path) as ledger:
        for i in range(4):
            ledger.append("e", {"i": i})
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("DROP TRIGGER ledger_events_no_update")
    db.execute("""UPDATE ledger_events SET payload = '{"i":7}' WHERE seq = 3""")
    db.close()
    return path


def test_ledger_verify_ok_and_tampered(tmp_path: Path) -> None:
    """ledger-verify exits 0 on a good chain and 1 naming the first bad row."""
    good = tmp_path / "good.sqlite"
    assert _cli("ledger-append", good, "--kind", "k", "--payload", '{"a":1}').exit_code == 0
    doc = _doc(_cli("ledger-verify", good, "--json"))
    assert doc["ok"] is True and doc["count"] == 1
    bad = _tampered_ledger(tmp_path)
    result = _cli("ledger-verify", bad, "--json")
    assert result.exit_code == 1
    assert _doc(result)["first_bad"]["seq"] == 3
    assert "row seq 3 is bad" in _flat(_cli("ledger-verify", bad).stderr)


def test_ledger_append_rejects_bad_payload(tmp_path: Path) -> None:
    """A payload that is not JSON exits 1 naming --payload and writes no event."""
    path = tmp_path / "l.sqlite"
    result = _cli("ledger-append", path, "--kind", "k", "--payload", "{oops")
    assert result.exit_code == 1 and "--payload" in _flat(result.stderr)
    assert not path.exists() or verify_chain(path).count == 0


def test_ledger_verify_missing_and_bad_anchor(tmp_path: Path) -> None:
    """A missing ledger file or a malformed --anchor exits 1 naming it."""
    result = _cli("ledger-verify", tmp_path / "none.sqlite")
    assert result.exit_code == 1 and "none.sqlite" in _flat(result.stderr)
    good = tmp_path / "g.sqlite"
    Ledger(good).close()
    result = _cli("ledger-verify", good, "--anchor", "nope")
    assert result.exit_code == 1 and "--anchor" in _flat(result.stderr)


def _freeze(tmp_path: Path) -> tuple[Path, Path, str]:
    source = tmp_path / "cohort.json"
    source.write_text('{"games":[1,2]}')
    store = tmp_path / "study"
    result = _cli("freeze", "cohort", "--store", store, "--input", f"cohort={source}", "--json")
    assert result.exit_code == 0, result.output
    return store, source, _doc(result)["frozen"]


def test_freeze_then_check_passes(tmp_path: Path) -> None:
    """check of an untouched freeze exits 0 and reports the record."""
    store, source, frozen = _freeze(tmp_path)
    result = _cli("check", frozen, "--store", store, "--input", f"cohort={source}", "--json")
    assert result.exit_code == 0
    assert _doc(result)["record"]["inputs"]["cohort"] == bytes_digest(source.read_bytes())


def test_check_stale_input_exit_3(tmp_path: Path) -> None:
    """A changed source makes check exit 3 with reason stale naming the input."""
    store, source, frozen = _freeze(tmp_path)
    source.write_text('{"games":[1,2,3]}')
    result = _cli("check", frozen, "--store", store, "--input", f"cohort={source}", "--json")
    assert result.exit_code == 3
    doc = _doc(result)
    assert [(r["code"], r["subject"]) for r in doc["reasons"]] == [("stale", "cohort")]


def test_check_missing_input_exit_3(tmp_path: Path) -> None:
    """A missing source file and a missing stored input both refuse with absent (exit 3)."""
    store, source, frozen = _freeze(tmp_path)
    source.unlink()
    result = _cli("check", frozen, "--store", store, "--input", f"cohort={source}", "--json")
    assert result.exit_code == 3
    assert [r["code"] for r in _doc(result)["reasons"]] == ["absent"]
    record = ObjectStore(store).get_json(frozen)
    ObjectStore(store).path_for(record["inputs"]["cohort"]).unlink()
    result = _cli("check", frozen, "--store", store)
    assert result.exit_code == 3
    assert "absent" in _flat(result.stderr) and "cohort" in _flat(result.stderr)


def test_freeze_bad_input_spec_exit_1(tmp_path: Path) -> None:
    """An --input without NAME=FILE exits 1 naming the option."""
    result = _cli("freeze", "x", "--store", tmp_path / "s", "--input", "justafile")
    assert result.exit_code == 1 and "--input" in _flat(result.stderr)


def _manifest_values() -> dict[str, Any]:
    return {
        "schema": "rungbench.run-manifest/1",
        "run_id": "r1",
        "package_version": "0.1.0",
        "design_digest": "sha256:" + "a" * 64,
        "inputs": {},
        "started_at": "2026-01-01T00:00:00Z",
        "ended_at": "2026-01-01T00:01:00Z",
    }


def test_manifest_not_json_exit_1(tmp_path: Path) -> None:
    """A manifest that is not JSON exits 1 with one message naming the file."""
    path = tmp_path / "manifest.json"
    path.write_text("not json at all")
    result = _cli("manifest", path)
    assert result.exit_code == 1
    assert _flat(result.stderr).startswith(f"error {path}: not valid JSON")


def test_manifest_missing_field_exit_1(tmp_path: Path) -> None:
    """A manifest missing a field exits 1 naming that field."""
    values = _manifest_values()
    del values["ended_at"]
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(values))
    result = _cli("manifest", path, "--json")
    assert result.exit_code == 1
    assert "(field 'ended_at')" in _doc(result)["message"]


def test_manifest_valid_and_schema(tmp_path: Path) -> None:
    """A valid manifest prints its digest; manifest-schema prints a JSON Schema."""
    path = tmp_path / "manifest.json"
    write_manifest(path, RunManifest.model_validate(_manifest_values()))
    doc = _doc(_cli("manifest", path, "--json"))
    assert doc["ok"] is True and doc["manifest"]["run_id"] == "r1"
    schema = _doc(_cli("manifest-schema", "--json"))
    assert "design_digest" in schema["required"]


def _run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "400"}
    return subprocess.run(
        [str(RUNGBENCH), "evidence", *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )


def test_real_subprocess_exit_codes(tmp_path: Path) -> None:
    """Through the installed console script: malformed digest 1, stale check 3, bad manifest 1."""
    source = tmp_path / "a.txt"
    source.write_text("alpha")
    store = tmp_path / "study"
    frozen = freeze_files(ObjectStore(store), "a", INVENTORY, {"a": source}).digest
    bad = _run("get", "sha256:zz", "--store", store)
    assert bad.returncode == 1
    assert bad.stderr.count("\n") == 1 and "'DIGEST'" in bad.stderr
    source.write_text("beta")
    check = _run("check", frozen, "--store", store, "--input", f"a={source}", "--json")
    assert check.returncode == 3
    assert json.loads(check.stdout)["reasons"][0]["code"] == "stale"
    truncated = tmp_path / "t.json"
    truncated.write_text('{"run_id": "r1", "inputs": {')
    manifest = _run("manifest", truncated)
    assert manifest.returncode == 1 and str(truncated) in manifest.stderr


def test_ref_move_get_and_expect(tmp_path: Path) -> None:
    """ref moves and reads a name; a failed --expect exits 3; an unknown ref exits 1."""
    store, book = tmp_path / "study", tmp_path / "ledger.sqlite"
    a, b = ObjectStore(store).put_bytes(b"a"), ObjectStore(store).put_bytes(b"b")
    moved = _cli("ref", "cohorts/x", a, "--store", store, "--ledger", book, "--json")
    assert moved.exit_code == 0 and _doc(moved)["old"] is None
    assert _cli("ref", "cohorts/x", "--store", store).stdout.strip() == a
    refused = _cli("ref", "cohorts/x", b, "--store", store, "--expect", "unset", "--json")
    assert refused.exit_code == 3 and _doc(refused)["reasons"][0]["code"] == "stale"
    assert _cli("ref", "cohorts/x", "--store", store).stdout.strip() == a
    missing = _cli("ref", "nothing", "--store", store)
    assert missing.exit_code == 1 and "no ref 'nothing'" in _flat(missing.stderr)
    assert verify_chain(book).count == 1


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_issue_bad_inputs_one_line_exit_code_and_nothing_written(tmp_path: Path) -> None:
    """Truncated object, manifest not JSON, missing input, malformed digest: through the
    console script each exits 1 (or 3 for the refusal) with a first line naming the path or
    field, one line only for errors, and no file in the folder changes or appears."""
    source = tmp_path / "a.txt"
    source.write_text("alpha")
    store = ObjectStore(tmp_path / "study")
    frozen = freeze_files(store, "a", INVENTORY, {"a": source}).digest
    damaged = store.put_bytes(b"0123456789")
    path = store.path_for(damaged)
    path.chmod(0o644)
    path.write_bytes(b"01234")
    (tmp_path / "bad.json").write_text("{not json")
    source.unlink()
    out = tmp_path / "out.txt"
    cases: list[tuple[list[str | Path], int, str]] = [
        (["get", damaged, "--store", store.root, "--out", out], 1, str(path)),
        (["manifest", tmp_path / "bad.json"], 1, str(tmp_path / "bad.json")),
        (["check", frozen, "--store", store.root, "--input", f"a={source}"], 3, str(source)),
        (["get", "sha256:zz", "--store", store.root, "--out", out], 1, "'DIGEST'"),
    ]
    for args, code, needle in cases:
        before = _tree(tmp_path)
        proc = _run(*args)
        assert proc.returncode == code, (args, proc.stderr)
        assert proc.stdout == ""
        lines = proc.stderr.strip().splitlines()
        assert needle in lines[0], (args, lines)
        if code == 1:
            assert len(lines) == 1, lines
        assert _tree(tmp_path) == before, args


def _break_row(book: Path, seq: int) -> None:
    with sqlite3.connect(book, isolation_level=None) as db:
        db.execute("DROP TRIGGER ledger_events_no_update")
        db.execute("UPDATE ledger_events SET kind = 'edited' WHERE seq = ?", (seq,))


def test_ledger_append_refuses_a_broken_chain(tmp_path: Path) -> None:
    """ledger-append to a ledger with an edited row exits 1 naming file and row; adds nothing."""
    book = tmp_path / "ledger.sqlite"
    for i in range(3):
        appended = _cli("ledger-append", book, "--kind", "k", "--payload", f'{{"i":{i}}}')
        assert appended.exit_code == 0
    _break_row(book, 2)
    result = _cli("ledger-append", book, "--kind", "k")
    assert result.exit_code == 1
    assert f"{book}: ledger row seq 2 is bad" in _flat(result.stderr)
    assert verify_chain(book).count == 1


def test_ref_with_ledger_refuses_a_broken_chain(store_with: tuple[Path, str],
                                                tmp_path: Path) -> None:
    """ref --ledger on a broken ledger exits 1 naming the row, and the ref does not move."""
    store, found = store_with
    book = tmp_path / "ledger.sqlite"
    assert _cli("ledger-append", book, "--kind", "k").exit_code == 0
    _break_row(book, 1)
    result = _cli("ref", "pool", found, "--store", store, "--ledger", book)
    assert result.exit_code == 1 and "seq 1 is bad" in _flat(result.stderr)
    assert not (store / "refs" / "pool").exists()


def test_ref_to_an_absent_digest_is_refused(store_with: tuple[Path, str]) -> None:
    """ref NAME DIGEST with DIGEST not in the store exits 3 (absent) naming it; no ref file."""
    store, _ = store_with
    gone = "sha256:" + "c" * 64
    result = _cli("ref", "pool", gone, "--store", store, "--json")
    assert result.exit_code == 3
    reason = _doc(result)["reasons"][0]
    assert reason["code"] == "absent" and gone in reason["detail"]
    assert not (store / "refs" / "pool").exists()


def test_verify_reports_objects_that_refs_and_records_need(tmp_path: Path) -> None:
    """verify names a deleted object, with the ref and frozen record that need it, exit 1."""
    source = tmp_path / "pool.txt"
    source.write_bytes(b"pool\n")
    store = tmp_path / "study"
    frozen = freeze_files(ObjectStore(store), "q", INVENTORY, {"pool": source})
    pool = frozen.record.inputs["pool"]
    assert _cli("ref", "pools/a", pool, "--store", store).exit_code == 0
    assert _cli("verify", "--store", store).exit_code == 0
    ObjectStore(store).path_for(pool).unlink()
    result = _cli("verify", "--store", store, "--json")
    assert result.exit_code == 1
    (missing,) = _doc(result)["missing"]
    assert missing["digest"] == pool
    assert any("ref pools/a" in who for who in missing["referenced_by"])
    assert any(frozen.digest in who and "'pool'" in who for who in missing["referenced_by"])
    text = _cli("verify", "--store", store)
    assert text.exit_code == 1 and pool in _flat(text.stderr)


def test_ledger_verify_anchor_from_a_manifest(tmp_path: Path) -> None:
    """ledger-verify --anchor-manifest uses the manifest's ledger_head: a truncated tail fails."""
    book = tmp_path / "ledger.sqlite"
    heads = [_doc(_cli("ledger-append", book, "--kind", "k", "--json"))["hash"] for _ in range(3)]
    manifest = tmp_path / "manifest.json"
    write_manifest(manifest, RunManifest.model_validate(
        {**_manifest_values(), "ledger_head": heads[-1]}))
    assert _cli("ledger-verify", book, "--anchor-manifest", manifest).exit_code == 0
    with sqlite3.connect(book, isolation_level=None) as db:
        db.execute("DROP TRIGGER ledger_events_no_delete")
        db.execute("DELETE FROM ledger_events WHERE seq = 3")
    assert _cli("ledger-verify", book).exit_code == 0
    result = _cli("ledger-verify", book, "--anchor-manifest", manifest)
    assert result.exit_code == 1 and "truncated" in _flat(result.stderr)


def _wrong_kinds(tmp_path: Path) -> list[list[str]]:
    file, folder = tmp_path / "file", tmp_path / "folder"
    file.write_bytes(b"x\n")
    folder.mkdir()
    some = "sha256:" + "a" * 64
    return [
        ["put", str(file), "--store", str(file)],
        ["put", str(folder), "--store", str(tmp_path / "s")],
        ["get", some, "--store", str(file)],
        ["get", some, "--store", str(folder), "--out", str(folder)],
        ["verify", "--store", str(file)],
        ["ledger-append", str(folder), "--kind", "k"],
        ["ledger-append", str(file), "--kind", "k"],
        ["ledger-append", str(file / "x"), "--kind", "k"],
        ["ledger-verify", str(folder)],
        ["ledger-verify", str(file), "--anchor-manifest", str(folder)],
        ["freeze", "q", "--store", str(file), "--input", f"a={file}"],
        ["freeze", "q", "--store", str(tmp_path / "s2"), "--input", f"a={folder}"],
        ["check", some, "--store", str(file)],
        ["ref", "x", "--store", str(file)],
        ["ref", "x", some, "--store", str(file)],
        ["ref", "x", some, "--store", str(folder), "--ledger", str(folder)],
        ["manifest", str(folder)],
        ["manifest", str(file)],
    ]


@pytest.mark.parametrize("index", range(18))
def test_wrong_path_kinds_fail_in_one_line(tmp_path: Path, index: int) -> None:
    """A file where a folder belongs (or the reverse): one line naming a given path, exit 1/3."""
    args = _wrong_kinds(tmp_path)[index]
    result = _cli(*args)
    assert result.exit_code in (1, 3), result.output
    assert "internal error" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 or result.exit_code == 3, result.output
    assert str(tmp_path) in _flat(result.output), result.output


@pytest.fixture(params=["sqlite", "postgresql"])
def ledger_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A ledger target for the CLI: an SQLite file path or a real PostgreSQL database URL."""
    from tests.conftest import backend_target

    return backend_target(request, tmp_path, "cli_ledger")


def test_ledger_commands_take_a_file_or_a_postgresql_url(ledger_db: str) -> None:
    """ledger-append/verify and ref --ledger accept either target unchanged (a URL is not
    collapsed into a path); a raw-SQL edit is named with exit 1 and no password is printed."""
    from urllib.parse import urlsplit

    from rungbench.evidence.database import connect

    for i in range(3):
        result = _cli("ledger-append", ledger_db, "--kind", "k", "--payload", f'{{"i":{i}}}',
                      "--json")
        assert result.exit_code == 0, result.output
    doc = _doc(_cli("ledger-verify", ledger_db, "--json"))
    assert doc["ok"] and doc["count"] == 3
    with connect(ledger_db) as db:
        on = " ON ledger_events" if db.dialect == "postgresql" else ""
        db.execute(f"DROP TRIGGER ledger_events_no_update{on}")
        db.execute("""UPDATE ledger_events SET payload = '{"i":7}' WHERE seq = 2""")
    result = _cli("ledger-verify", ledger_db)
    assert result.exit_code == 1 and "seq 2" in _flat(result.output)
    password = urlsplit(ledger_db).password
    assert password is None or password not in result.output
    assert _cli("ledger-append", ledger_db, "--kind", "k").exit_code != 0  # never extended
