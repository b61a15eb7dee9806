"""Freeze and check: rebuild byte for byte; refuse absent, stale or different, naming the input."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from rungbench.errors import InputError, Reason, Refusal
from rungbench.evidence.canonical import bytes_digest, canonical_bytes
from rungbench.evidence.freeze import (
    INVENTORY,
    Builder,
    check,
    check_reasons,
    current_from_files,
    freeze,
    freeze_files,
    frozen_json_schema,
    json_builder,
    load_record,
    resolve_builder,
)
from rungbench.evidence.gate import Gate
from rungbench.evidence.store import ObjectStore


def _qualify(values: Mapping[str, Any]) -> dict[str, Any]:
    """Toy leakage qualification: pool positions that occur in neither terminal cohort."""
    for cohort in ("cohort_a", "cohort_b"):
        if not values[cohort]["terminal"]:
            raise Refusal([Reason("incomplete", f"{cohort} is not terminal", cohort)])
    seen = set(values["cohort_a"]["positions"]) | set(values["cohort_b"]["positions"])
    pool = values["pool"]["positions"]
    return {"eligible": [p for p in pool if p not in seen], "overlap": sorted(seen & set(pool))}


QUALIFICATION = json_builder("test.qualification", 1, ("pool", "cohort_a", "cohort_b"), _qualify)


def _write(path: Path, value: Any) -> Path:
    path.write_bytes(canonical_bytes(value))
    return path


@pytest.fixture
def sources(tmp_path: Path) -> dict[str, Path]:
    """Three JSON source files: an engine-blind pool and two terminal cohorts."""
    return {
        "pool": _write(tmp_path / "pool.json", {"positions": ["p1", "p2", "p3", "p4"]}),
        "cohort_a": _write(tmp_path / "a.json", {"terminal": True, "positions": ["p2"]}),
        "cohort_b": _write(tmp_path / "b.json", {"terminal": True, "positions": ["p9", "p4"]}),
    }


def _codes(reasons: tuple[Reason, ...]) -> list[tuple[str, str | None]]:
    return [(r.code, r.subject) for r in reasons]


def test_freeze_binds_inputs_and_output(tmp_path: Path, sources: dict[str, Path]) -> None:
    """The frozen record names each input's digest and the digest of the built output."""
    store = ObjectStore(tmp_path / "store")
    frozen = freeze_files(store, "qualification", QUALIFICATION, sources)
    record = frozen.record
    assert record.builder == "test.qualification/1"
    assert record.inputs == {k: bytes_digest(p.read_bytes()) for k, p in sources.items()}
    assert store.get_json(record.output) == {"eligible": ["p1", "p3"], "overlap": ["p2", "p4"]}
    assert load_record(store, frozen.digest) == record
    assert store.get_json(frozen.digest)["schema"] == "rungbench.frozen/1"


def test_freeze_is_deterministic(tmp_path: Path, sources: dict[str, Path]) -> None:
    """Freezing the same inputs twice gives the same record digest."""
    store = ObjectStore(tmp_path / "store")
    first = freeze_files(store, "q", QUALIFICATION, sources)
    again = freeze_files(ObjectStore(tmp_path / "other"), "q", QUALIFICATION, sources)
    assert first.digest == again.digest


def test_check_passes_on_untouched_inputs(tmp_path: Path, sources: dict[str, Path]) -> None:
    """An untouched freeze rebuilds byte for byte and check returns its record."""
    store = ObjectStore(tmp_path / "store")
    frozen = freeze_files(store, "q", QUALIFICATION, sources)
    current = current_from_files(sources)
    assert check(store, frozen.digest, builder=QUALIFICATION, current=current) == frozen.record
    assert check_reasons(store, frozen.digest, builder=QUALIFICATION, current=current) == ()


def test_absent_input_object_refused(tmp_path: Path, sources: dict[str, Path]) -> None:
    """Deleting an input object from the store refuses with absent, naming that input."""
    store = ObjectStore(tmp_path / "store")
    frozen = freeze_files(store, "q", QUALIFICATION, sources)
    store.path_for(frozen.record.inputs["cohort_b"]).unlink()
    with pytest.raises(Refusal) as info:
        check(store, frozen.digest, builder=QUALIFICATION)
    assert _codes(info.value.reasons) == [("absent", "cohort_b")]


def test_absent_source_and_absent_record_refused(tmp_path: Path, sources: dict[str, Path]) -> None:
    """A vanished live source, or a frozen record not in the store, refuses with absent."""
    store = ObjectStore(tmp_path / "store")
    frozen = freeze_files(store, "q", QUALIFICATION, sources)
    sources["cohort_a"].unlink()
    reasons = check_reasons(
        store, frozen.digest, builder=QUALIFICATION, current=current_from_files(sources)
    )
    assert _codes(reasons) == [("absent", "cohort_a")]
    missing = "sha256:" + "1" * 64
    assert _codes(check_reasons(store, missing)) == [("absent", "frozen")]


def test_stale_source_refused(tmp_path: Path, sources: dict[str, Path]) -> None:
    """A cohort that grew after the freeze refuses with stale, naming it and both digests."""
    store = ObjectStore(tmp_path / "store")
    frozen = freeze_files(store, "q", QUALIFICATION, sources)
    _write(sources["cohort_b"], {"terminal": True, "positions": ["p9", "p4", "p1"]})
    with pytest.raises(Refusal) as info:
        check(store, frozen.digest, builder=QUALIFICATION, current=current_from_files(sources))
    (reason,) = info.value.reasons
    assert (reason.code, reason.subject) == ("stale", "cohort_b")
    assert reason.data["frozen"] == frozen.record.inputs["cohort_b"]
    assert reason.data["current"] == bytes_digest(sources["cohort_b"].read_bytes())


def test_damaged_input_refused_as_different(tmp_path: Path, sources: dict[str, Path]) -> None:
    """An input object whose bytes changed in the store refuses with different, naming it."""
    store = ObjectStore(tmp_path / "store")
    frozen = freeze_files(store, "q", QUALIFICATION, sources)
    path = store.path_for(frozen.record.inputs["pool"])
    path.chmod(0o644)
    path.write_bytes(path.read_bytes().replace(b"p1", b"p7"))
    assert _codes(check_reasons(store, frozen.digest, builder=QUALIFICATION)) == [
        ("different", "pool")
    ]


def test_rebuild_that_differs_is_refused(tmp_path: Path, sources: dict[str, Path]) -> None:
    """A builder that now produces other bytes (same id) refuses with different on the output."""
    store = ObjectStore(tmp_path / "store")
    frozen = freeze_files(store, "qualification", QUALIFICATION, sources)
    drifted = json_builder(
        "test.qualification",
        1,
        ("pool", "cohort_a", "cohort_b"),
        lambda v: {**_qualify(v), "note": "silently changed"},
    )
    with pytest.raises(Refusal) as info:
        check(store, frozen.digest, builder=drifted)
    (reason,) = info.value.reasons
    assert (reason.code, reason.subject) == ("different", "qualification")
    assert reason.data["frozen"] == frozen.record.output


def test_absent_output_refused(tmp_path: Path, sources: dict[str, Path]) -> None:
    """A frozen output missing from the store refuses with absent, naming the output."""
    store = ObjectStore(tmp_path / "store")
    frozen = freeze_files(store, "qualification", QUALIFICATION, sources)
    store.path_for(frozen.record.output).unlink()
    assert _codes(check_reasons(store, frozen.digest, builder=QUALIFICATION)) == [
        ("absent", "qualification")
    ]


def test_builder_version_and_name_checked(tmp_path: Path, sources: dict[str, Path]) -> None:
    """A newer builder version makes the freeze stale; another builder name is different."""
    store = ObjectStore(tmp_path / "store")
    frozen = freeze_files(store, "q", QUALIFICATION, sources)
    newer = Builder("test.qualification", 2, QUALIFICATION.inputs, QUALIFICATION.build)
    other = Builder("test.other", 1, QUALIFICATION.inputs, QUALIFICATION.build)
    assert _codes(check_reasons(store, frozen.digest, builder=newer)) == [("stale", "builder")]
    assert _codes(check_reasons(store, frozen.digest, builder=other)) == [("different", "builder")]
    assert _codes(check_reasons(store, frozen.digest)) == [("absent", "builder")]


def test_all_reasons_reported_together(tmp_path: Path, sources: dict[str, Path]) -> None:
    """Several problems at once are all reported, in input order."""
    store = ObjectStore(tmp_path / "store")
    frozen = freeze_files(store, "q", QUALIFICATION, sources)
    store.path_for(frozen.record.inputs["cohort_a"]).unlink()
    _write(sources["pool"], {"positions": []})
    reasons = check_reasons(
        store, frozen.digest, builder=QUALIFICATION, current=current_from_files(sources)
    )
    assert _codes(reasons) == [("stale", "pool"), ("absent", "cohort_a")]


def test_builder_refusal_passes_through(tmp_path: Path, sources: dict[str, Path]) -> None:
    """A builder's own refusal (a cohort not terminal) stops the freeze with its code."""
    _write(sources["cohort_b"], {"terminal": False, "positions": []})
    with pytest.raises(Refusal) as info:
        freeze_files(ObjectStore(tmp_path / "s"), "q", QUALIFICATION, sources)
    assert info.value.codes == ("incomplete",)


def test_freeze_rejects_wrong_input_names(tmp_path: Path, sources: dict[str, Path]) -> None:
    """Inputs must be exactly the builder's named inputs; the error names the field."""
    del sources["cohort_b"]
    with pytest.raises(InputError, match=r"takes inputs.*\(field 'inputs'\)"):
        freeze_files(ObjectStore(tmp_path / "s"), "q", QUALIFICATION, sources)


def test_freeze_refuses_absent_store_input(tmp_path: Path) -> None:
    """Freezing over a digest the store does not hold refuses with absent."""
    store = ObjectStore(tmp_path)
    with pytest.raises(Refusal) as info:
        freeze(store, "x", INVENTORY, {"a": "sha256:" + "2" * 64})
    assert info.value.codes == ("absent",)


def test_inventory_builder_resolves_and_checks(tmp_path: Path) -> None:
    """The built-in inventory is found by its import path and lists digests, sizes and lines."""
    src = tmp_path / "x.txt"
    src.write_bytes(b"one\ntwo\n")
    store = ObjectStore(tmp_path / "store")
    frozen = freeze_files(store, "inv", INVENTORY, {"x": src})
    assert resolve_builder(frozen.record.builder_ref or "") is INVENTORY
    assert check(store, frozen.digest) == frozen.record
    items = store.get_json(frozen.record.output)["items"]
    assert items == {"x": {"digest": bytes_digest(b"one\ntwo\n"), "bytes": 8, "lines": 2}}


@pytest.mark.parametrize(
    "ref", ["nocolon", "rungbench.nope:X", "rungbench.evidence.freeze:nothing", "json:dumps"]
)
def test_resolve_builder_errors(ref: str) -> None:
    """A builder reference that is malformed, missing or not a Builder is an InputError."""
    with pytest.raises(InputError, match=r"\(field 'builder'\)"):
        resolve_builder(ref)


def test_record_of_wrong_shape_names_field(tmp_path: Path) -> None:
    """A stored object that is not a frozen record is an InputError naming the bad field."""
    store = ObjectStore(tmp_path)
    bogus = store.put_json({"schema": "rungbench.frozen/1", "name": "x"})
    with pytest.raises(InputError, match=r"\(field '(builder|inputs|output)'\)"):
        load_record(store, bogus)


def test_unknown_current_name_is_input_error(tmp_path: Path, sources: dict[str, Path]) -> None:
    """Naming a current source the record does not have is an InputError, not a pass."""
    store = ObjectStore(tmp_path / "store")
    frozen = freeze_files(store, "q", QUALIFICATION, sources)
    with pytest.raises(InputError, match="cohort_c"):
        check(store, frozen.digest, builder=QUALIFICATION, current={"cohort_c": None})


def test_check_as_blocking_gate_precondition(tmp_path: Path, sources: dict[str, Path]) -> None:
    """A freeze check inside a gate blocks later preconditions (no engine is started)."""
    from rungbench.evidence.freeze import check_precondition
    from rungbench.evidence.gate import Precondition

    store = ObjectStore(tmp_path / "store")
    frozen = freeze_files(store, "q", QUALIFICATION, sources)
    started: list[str] = []
    gate = Gate(
        "label-stage",
        (
            check_precondition(
                "terminal_qualification",
                store,
                frozen.digest,
                builder=QUALIFICATION,
                current=lambda: current_from_files(sources),
            ),
            Precondition("engine", lambda: started.append("engine") or ()),
        ),
    )
    assert gate.evaluate().passed and started == ["engine"]
    sources["cohort_b"].write_text(json.dumps({"terminal": True, "positions": []}))
    report = gate.preflight()
    assert _codes(report.reasons) == [("stale", "cohort_b")]
    assert report.skipped == ("engine",) and started == ["engine"]


def test_frozen_record_schema_is_versioned() -> None:
    """The frozen record's JSON Schema pins its version tag and requires inputs and output."""
    schema = frozen_json_schema()
    assert schema["properties"]["schema"]["const"] == "rungbench.frozen/1"
    assert {"name", "builder", "inputs", "output"} <= set(schema["required"])
