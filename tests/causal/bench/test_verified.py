"""Tests for causal.bench.verified's records/2 readers: digest, completeness, schema refusals."""

from __future__ import annotations

import json
import pathlib
import shutil
from collections.abc import Callable

import pytest

from rungbench.causal.bench.build import build_split
from rungbench.causal.bench.records import Mutation, PrivateOracle
from rungbench.causal.bench.verified import (
    BENCH_KIND,
    bench_episodes,
    bench_oracles,
    check_mutations,
    check_variants,
    has_episodes,
    open_bench,
)
from rungbench.errors import InputError, IntegrityError
from rungbench.evidence.canonical import file_digest
from rungbench.evidence.sealed import write_seal


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """A two-world dev bench with every episode family."""
    out = tmp_path_factory.mktemp("vb") / "bench"
    build_split("dev", 2, 4, out, families="incident,active,revision,provenance,negative")
    return out


def _copy(src: pathlib.Path, dst: pathlib.Path) -> pathlib.Path:
    shutil.copytree(src, dst)
    return dst


def _reseal(root: pathlib.Path) -> None:
    """Recompute every manifest digest and the seal, as a careful forger would."""
    for side in ("public", "private"):
        path = root / side / "manifest.json"
        doc = json.loads(path.read_text())
        doc["files"] = {n: file_digest(str(root / side / n)) for n in doc["files"]}
        if side == "public":
            doc["digest"] = doc["files"]["cases.jsonl"]
            doc["records_v2"]["digest"] = doc["files"]["cases.v2.jsonl"]
        else:
            pub = json.loads((root / "public" / "manifest.json").read_text())
            doc["public_digest"] = pub["digest"]
            doc["public_digest_v2"] = pub["records_v2"]["digest"]
        path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    write_seal(root, kind=BENCH_KIND)


def _edit(path: pathlib.Path, edit: Callable[[list[str]], list[str]]) -> None:
    path.write_text("".join(t + "\n" for t in edit(path.read_text().splitlines())))


def test_reads_cases_and_oracles_one_to_one(bench: pathlib.Path) -> None:
    """bench_episodes returns every records/2 case with its oracle record, in case order."""
    verified = open_bench(bench)
    cases, oracles = bench_episodes(verified)
    assert has_episodes(verified) and len(cases) == len(oracles) > 20
    assert [c.case_id for c in cases] == list(oracles)
    assert {o.version for o in oracles.values()} == {"rungbench.records/2"}


def test_plain_bench_has_no_v2(tmp_path: pathlib.Path) -> None:
    """A bench built without --families reads as holding no records/2 cases."""
    build_split("dev", 1, 4, tmp_path / "p")
    assert bench_episodes(open_bench(tmp_path / "p")) == ([], {})


@pytest.mark.parametrize("name", ["public/cases.v2.jsonl", "private/oracle.v2.jsonl",
                                  "public/schemas/private_oracle.v2.schema.json"])
def test_edited_v2_file_fails_the_seal(bench: pathlib.Path, tmp_path: pathlib.Path,
                                       name: str) -> None:
    """One changed byte in a v2 file is an IntegrityError naming the file."""
    b = _copy(bench, tmp_path / "b")
    path = b / name
    data = bytearray(path.read_bytes())
    data[10] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(IntegrityError, match=str(path)):
        open_bench(b)


def test_deleted_v2_oracle_is_refused(bench: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """A missing oracle.v2.jsonl is refused even after resealing (records_v2 declares it)."""
    b = _copy(bench, tmp_path / "b")
    (b / "private" / "oracle.v2.jsonl").unlink()
    man = b / "private" / "manifest.json"
    doc = json.loads(man.read_text())
    del doc["files"]["oracle.v2.jsonl"]
    man.write_text(json.dumps(doc))
    _reseal(b)
    with pytest.raises(IntegrityError, match="declared by records_v2 but missing"):
        open_bench(b)


def test_dropped_oracle_record_fails_completeness(bench: pathlib.Path,
                                                  tmp_path: pathlib.Path) -> None:
    """A resealed bench missing one oracle record is refused: cases and oracles not 1:1."""
    b = _copy(bench, tmp_path / "b")
    _edit(b / "private" / "oracle.v2.jsonl", lambda lines: lines[1:])
    _reseal(b)
    with pytest.raises(IntegrityError, match="one to one"):
        bench_episodes(open_bench(b))


def test_dropped_case_fails_the_declared_count(bench: pathlib.Path,
                                               tmp_path: pathlib.Path) -> None:
    """Dropping a case and its oracle record, resealed, disagrees with records_v2.n_cases."""
    b = _copy(bench, tmp_path / "b")
    _edit(b / "public" / "cases.v2.jsonl", lambda lines: lines[1:])
    _edit(b / "private" / "oracle.v2.jsonl", lambda lines: lines[1:])
    _reseal(b)
    with pytest.raises(IntegrityError, match="do not match records_v2"):
        bench_episodes(open_bench(b))


def test_records_1_version_in_v2_file_is_refused(bench: pathlib.Path,
                                                 tmp_path: pathlib.Path) -> None:
    """An oracle.v2 line claiming records/1 is an InputError naming file, line and field."""
    b = _copy(bench, tmp_path / "b")

    def relabel(lines: list[str]) -> list[str]:
        doc = json.loads(lines[2])
        doc["version"] = "rungbench.records/1"
        return [*lines[:2], json.dumps(doc), *lines[3:]]

    _edit(b / "private" / "oracle.v2.jsonl", relabel)
    _reseal(b)
    with pytest.raises(InputError) as exc:
        bench_episodes(open_bench(b))
    assert "oracle.v2.jsonl:3" in str(exc.value) and "version" in str(exc.value)


def test_unknown_field_in_v2_case_is_refused(bench: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """A case line with a field records/2 does not define fails schema validation."""
    b = _copy(bench, tmp_path / "b")

    def add(lines: list[str]) -> list[str]:
        doc = json.loads(lines[0])
        doc["hint"] = "x"
        return [json.dumps(doc), *lines[1:]]

    _edit(b / "public" / "cases.v2.jsonl", add)
    _reseal(b)
    with pytest.raises(InputError, match="PublicCase2"):
        bench_episodes(open_bench(b))


def test_foreign_schema_is_refused(bench: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """A published v2 schema that is not this version's (resealed) is an IntegrityError."""
    b = _copy(bench, tmp_path / "b")
    path = b / "public" / "schemas" / "public_case.v2.schema.json"
    doc = json.loads(path.read_text())
    doc["$id"] = "rungbench.records/3/public_case"
    path.write_text(json.dumps(doc))
    _reseal(b)
    with pytest.raises(IntegrityError, match="schema differs"):
        bench_episodes(open_bench(b))


def test_undeclared_v2_file_is_refused(bench: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """v2 files sealed into a bench whose manifest declares no records_v2 are refused."""
    b = _copy(bench, tmp_path / "b")
    man = b / "public" / "manifest.json"
    doc = json.loads(man.read_text())
    del doc["records_v2"]
    man.write_text(json.dumps(doc))
    write_seal(b, kind=BENCH_KIND)
    with pytest.raises(IntegrityError, match="declares no records_v2"):
        open_bench(b)


def _variant_oracle(cid: str, kind: str, parent: str, world: str = "w1",
                    skin: str = "linux") -> PrivateOracle:
    return PrivateOracle.model_validate({
        "case_id": cid, "world_id": world, "family": "f", "structure": "fork", "skin": skin,
        "item_type": "exact", "rung": 2, "estimand": "e", "scm_hash": "h", "seed": 1,
        "identifiable": True, "value": 0.5,
        "variant": {"label": "correlation_as_causation", "kind": kind, "parent": parent,
                    "seed": 2}})


def test_check_variants_refuses_a_broken_pair() -> None:
    """A whole pair passes; a twin whose parent is absent, not an item, of another world
    cluster, or of the other skin kind is an IntegrityError naming the case."""
    item = _variant_oracle("w1-q01d", "item", "w1-q01d")
    twin = _variant_oracle("v9-q00d", "edge_real", "w1-q01d", skin="physics")
    check_variants({o.case_id: o for o in (item, twin)}, "oracle.jsonl")
    for bad in (_variant_oracle("v9-q00d", "edge_real", "w1-q07d"),
                _variant_oracle("v9-q00d", "edge_real", "w1-q01d", world="w2"),
                _variant_oracle("v9-q00d", "edge_real", "w1-q01d", skin="nonsense"),
                _variant_oracle("v9-q00d", "item", "w1-q01d")):
        with pytest.raises(IntegrityError, match="v9-q00d"):
            check_variants({o.case_id: o for o in (item, bad)}, "oracle.jsonl")


def _mutated_oracle(cid: str, parent: str, world: str = "w1", value: float = 0.5,
                    mutation: bool = True) -> PrivateOracle:
    return PrivateOracle.model_validate({
        "case_id": cid, "world_id": world, "family": "f", "structure": "fork",
        "skin": "linux", "item_type": "exact", "rung": 2, "estimand": "e", "scm_hash": "h",
        "seed": 1, "identifiable": True, "value": value,
        **({"mutation": {"kind": "paraphrase", "parent": parent, "template": 0,
                         "table": "rungbench.causal.paraphrases/1"}} if mutation else {})})


def test_check_mutations_refuses_a_paraphrase_that_is_not_its_originals_question() -> None:
    """A paraphrase of an original case with its world cluster and answer passes; one whose
    original is absent or itself a paraphrase, or whose world or value differs, is an
    IntegrityError naming the case (and the differing fields)."""
    original = _mutated_oracle("w1-q01d", "", mutation=False)
    good = _mutated_oracle("v9-q00d", "w1-q01d")
    check_mutations({o.case_id: o for o in (original, good)}, "oracle.jsonl")
    for bad, why in ((_mutated_oracle("v9-q00d", "w1-q07d"), "not an original"),
                     (_mutated_oracle("v9-q00d", "v8-q00d"), "not an original"),
                     (_mutated_oracle("v9-q00d", "w1-q01d", world="w2"), "world_id"),
                     (_mutated_oracle("v9-q00d", "w1-q01d", value=0.6), "value")):
        chain = _mutated_oracle("v8-q00d", "w1-q01d")
        with pytest.raises(IntegrityError, match=rf"v9-q00d.*{why}"):
            check_mutations({o.case_id: o for o in (original, chain, bad)}, "oracle.jsonl")


def test_check_mutations_holds_a_renaming_to_its_skin_and_a_skin_swap_to_another() -> None:
    """A renaming keeps its original's skin and a skin swap changes it; the reverse is an
    IntegrityError naming the skin."""
    original = _mutated_oracle("w1-q01d", "", mutation=False)

    def respelled(kind: str, skin: str) -> PrivateOracle:
        return _mutated_oracle("v9-q00d", "w1-q01d").model_copy(update={
            "skin": skin, "mutation": Mutation(kind=kind, parent="w1-q01d")})  # type: ignore[arg-type]

    for kind, good, bad in (("renaming", "linux", "physics"), ("skin_swap", "physics", "linux")):
        check_mutations({o.case_id: o for o in (original, respelled(kind, good))}, "o.jsonl")
        with pytest.raises(IntegrityError, match=r"v9-q00d.*skin"):
            check_mutations({o.case_id: o for o in (original, respelled(kind, bad))}, "o.jsonl")


def test_a_paraphrase_bench_opens_and_its_mutations_are_checked(tmp_path: pathlib.Path) -> None:
    """A built paraphrase bench opens; editing one paraphrase's value (resealed) is refused
    on reading the oracle."""
    b = tmp_path / "b"
    build_split("dev", 2, 4, b, paraphrases=1, families="negative")
    oracles = bench_oracles(open_bench(b))
    assert sum(o.mutation is not None for o in oracles.values()) == len(oracles) // 3
    edited: list[str] = []

    def edit(lines: list[str]) -> list[str]:
        out = []
        for text in lines:
            record = json.loads(text)
            if "mutation" in record and record["value"] is not None and not edited:
                record["value"] = 0.1 if record["value"] > 0.5 else 0.9
                edited.append(record["case_id"])
            out.append(json.dumps(record))
        return out

    _edit(b / "private" / "oracle.jsonl", edit)
    _reseal(b)
    assert edited
    with pytest.raises(IntegrityError, match="differs from its original"):
        bench_oracles(open_bench(b))
