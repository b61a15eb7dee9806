"""Tests for causal.bench.episode_build: records/2 files in a sealed bench, opt-in, leak-scanned."""

from __future__ import annotations

import json
import pathlib
import shutil
import stat
from typing import Any

import pytest
from tests.blas_kernels import outputs_under_kernels

from rungbench.causal.bench.audit import public_listing_share
from rungbench.causal.bench.build import build_split
from rungbench.causal.bench.episode_build import FAMILY_NAMES, parse_families
from rungbench.causal.bench.leaks import scan_bench
from rungbench.causal.bench.records import EPISODE_FAMILIES, EpisodeCase, EpisodeOracle
from rungbench.errors import Refusal
from rungbench.evidence.canonical import file_digest

ALL = ",".join(FAMILY_NAMES)

DEFAULT_SEAL = "sha256:4f10c23475ff18ee067a8764f5e3e49440448453319290a3ba8795763584ab57"
"""SEAL.json digest of ``build_split("dev", 3, 11, …)`` without episode families. First
pinned before ``episode_build`` existed; pinned again when the oracle's
sums stopped going through BLAS (whose kernel, and so the last bit of a value, depended on
the CPU: the old pin held only on AVX-512 hosts); pinned again when the private_oracle
record gained its optional ``variant`` field for the diagnostic twins (``--twins``): built
without twins, only public/schemas/private_oracle.schema.json and the manifest line giving
its digest changed. The families left it unchanged every time."""

SEAL_SCRIPT = """
import pathlib, shutil, sys
from rungbench.causal.bench.build import build_split
from rungbench.evidence.canonical import file_digest
build_split("dev", 3, 11, pathlib.Path(sys.argv[1]), families=sys.argv[2] or None)
print(file_digest(sys.argv[1] + "/SEAL.json"))
shutil.rmtree(sys.argv[1])
"""


def _digests(root: pathlib.Path) -> dict[str, str]:
    return {str(p.relative_to(root)): file_digest(str(p))
            for p in sorted(root.rglob("*")) if p.is_file()}


def _lines(path: pathlib.Path) -> list[dict[str, Any]]:
    return [json.loads(t) for t in path.read_text().splitlines() if t.strip()]


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[pathlib.Path, pathlib.Path]:
    """The same split built without and with every episode family."""
    root = tmp_path_factory.mktemp("nb")
    build_split("dev", 3, 11, root / "plain")
    build_split("dev", 3, 11, root / "next", families=ALL)
    return root / "plain", root / "next"


@pytest.mark.parametrize("families", ["", ALL])
def test_a_build_is_byte_identical_whatever_blas_kernel_the_cpu_picks(
        tmp_path: pathlib.Path, families: str) -> None:
    """The same build under OpenBLAS's oldest kernel (Prescott, SSE3, on x86) and under the
    one this CPU picks has the same seal: no sealed value goes through a BLAS product, whose
    summation order (and so a value's last bit) is the kernel's. Before, a bench built on an
    AVX-512 host and on an AVX2 one differed in private/oracle.jsonl."""
    oldest, native = outputs_under_kernels(SEAL_SCRIPT, str(tmp_path / "build"), families)
    assert oldest == native
    assert native.startswith("sha256:")
    if not families:
        assert native.strip() == DEFAULT_SEAL


def test_default_build_is_byte_identical_to_before(pair: tuple[pathlib.Path, ...]) -> None:
    """Without --families the bench's seal (every file's digest) is the pinned old one."""
    plain, _ = pair
    assert file_digest(str(plain / "SEAL.json")) == DEFAULT_SEAL
    assert not (plain / "public" / "cases.v2.jsonl").exists()


def test_records_1_files_are_unchanged_by_families(pair: tuple[pathlib.Path, ...]) -> None:
    """With --families the records/1 case, oracle, world and schema files keep their bytes."""
    plain, with_families = pair
    a, b = _digests(plain), _digests(with_families)
    for name in ("public/cases.jsonl", "private/oracle.jsonl", "private/worlds.jsonl",
                 "public/schemas/public_case.schema.json"):
        assert a[name] == b[name]


def test_layout_modes_and_manifests(pair: tuple[pathlib.Path, ...]) -> None:
    """v2 cases and schemas are public, v2 oracle and worlds private 0600, both manifests agree."""
    _, with_families = pair
    for name in ("public_case", "private_oracle", "agent_response", "verdict"):
        assert (with_families / "public" / "schemas" / f"{name}.v2.schema.json").is_file()
    for name in ("oracle.v2.jsonl", "worlds.v2.jsonl"):
        assert stat.S_IMODE((with_families / "private" / name).stat().st_mode) == 0o600
    public = json.loads((with_families / "public" / "manifest.json").read_text())
    private = json.loads((with_families / "private" / "manifest.json").read_text())
    block = public["records_v2"]
    digest = file_digest(str(with_families / "public" / "cases.v2.jsonl"))
    assert block["digest"] == public["files"]["cases.v2.jsonl"] == digest
    assert private["public_digest_v2"] == digest
    assert block["families"] == sorted(EPISODE_FAMILIES) and block["n_worlds"] == 3
    cases = [EpisodeCase.model_validate(c)
             for c in _lines(with_families / "public" / "cases.v2.jsonl")]
    oracles = [EpisodeOracle.model_validate(o)
               for o in _lines(with_families / "private" / "oracle.v2.jsonl")]
    assert [c.case_id for c in cases] == [o.case_id for o in oracles]
    assert block["n_cases"] == len(cases) and "seed" not in block


def test_twins_listing_and_public_family(pair: tuple[pathlib.Path, ...]) -> None:
    """Each v2 case has its nonsense-skin twin; edge/listing agreement stays ≤ 0.55."""
    _, with_families = pair
    oracles = {str(o["case_id"]): o for o in _lines(with_families / "private" / "oracle.v2.jsonl")}
    for cid, o in oracles.items():
        twin = oracles[str(o["cf_link"])]
        assert twin["cf_link"] == cid and {o["skin"], twin["skin"]} >= {"nonsense"}
        assert len(twin["identified_set"] or []) == len(o["identified_set"] or [])
    share = public_listing_share(_lines(with_families / "public" / "cases.v2.jsonl"))
    assert share["edges"] > 50 and share["pass"] and share["rate"] <= 0.55


def test_same_seed_same_bytes_and_splits_apart(
    pair: tuple[pathlib.Path, ...], tmp_path: pathlib.Path
) -> None:
    """Rebuilding gives identical digests; another split draws other episode-family worlds."""
    _, with_families = pair
    build_split("dev", 3, 11, tmp_path / "again", families=ALL)
    assert _digests(tmp_path / "again") == _digests(with_families)
    build_split("validation", 3, 11, tmp_path / "val", families="incident")
    ids = set(json.loads((with_families / "public" / "manifest.json").read_text())["records_v2"]
              ["world_ids"])
    val = json.loads((tmp_path / "val" / "public" / "manifest.json").read_text())["records_v2"]
    assert not ids & set(val["world_ids"])


def test_family_subset_keeps_case_ids(pair: tuple[pathlib.Path, ...],
                                      tmp_path: pathlib.Path) -> None:
    """--families provenance,negative holds only those families, with the full build's ids."""
    _, with_families = pair
    build_split("dev", 3, 11, tmp_path / "sub", families="provenance,negative")
    sub = _lines(tmp_path / "sub" / "public" / "cases.v2.jsonl")
    full = {str(c["case_id"]): c for c in _lines(with_families / "public" / "cases.v2.jsonl")}
    assert {c["family"] for c in sub} == {"provenance_source_dependence", "negative_evidence"}
    assert all(full[str(c["case_id"])] == c for c in sub)


def test_unknown_family_is_refused() -> None:
    """An unknown --families name is a bad_request refusal naming the known names."""
    with pytest.raises(Refusal) as exc:
        parse_families("incident,telepathy")
    assert exc.value.codes == ("bad_request",)
    assert parse_families("incident, active") == {"root_cause_debugging", "active_experiments"}


def test_leak_scan_covers_v2_files(pair: tuple[pathlib.Path, ...]) -> None:
    """The scan of a families build is clean and reads the v2 public files."""
    _, with_families = pair
    report = scan_bench(with_families)
    assert report.ok and report.files == 13  # manifest, 2 case files, 6 + 4 schemas


@pytest.mark.parametrize("plant", ["value", "alt_value", "field", "seed"])
def test_planted_leak_in_v2_file_is_found(
    pair: tuple[pathlib.Path, ...], tmp_path: pathlib.Path, plant: str
) -> None:
    """An oracle value, a twin's value, a records/2 oracle key or a seed in cases.v2 is found."""
    _, with_families = pair
    bench = tmp_path / "b"
    shutil.copytree(with_families, bench)
    path = bench / "public" / "cases.v2.jsonl"
    cases = _lines(path)
    oracles = _lines(bench / "private" / "oracle.v2.jsonl")
    i, o = next((i, o) for i, o in enumerate(oracles)
                if o["item_type"] == "posterior" and 0.05 < float(o["value"]) < 0.95)
    case = dict(cases[i])
    if plant == "value":
        case["question"] = f"{case['question']} (about {float(o['value']):.4f})"
    elif plant == "alt_value":
        alt = next(iter(o["alt_values"].values()))
        case["assumptions"] = [*case["assumptions"], f"twin {alt:.5f}"]
    elif plant == "field":
        case["query"] = {**case["query"], "true_cause": "f0"}
    else:
        case["assumptions"] = [*case["assumptions"], f"world {o['seed']}"]
    cases[i] = case
    path.write_text("".join(json.dumps(c) + "\n" for c in cases))
    report = scan_bench(bench)
    kinds = {f.kind for f in report.findings}
    assert kinds == {"value": {"value"}, "alt_value": {"value"}, "field": {"oracle_field"},
                     "seed": {"secret"}}[plant]
    assert all(f"cases.v2.jsonl:{i + 1}" in f.where for f in report.findings)


def test_interaction_structure_is_held_out_for_test(pair: tuple[pathlib.Path, ...],
                                                    tmp_path: pathlib.Path) -> None:
    """The interaction incident world appears in the test split's bench and never in dev's."""
    _, with_families = pair
    dev = json.loads((with_families / "private" / "manifest.json").read_text())["structures_v2"]
    assert "interaction_incident" not in dev and "incident" in dev
    build_split("test", 3, 11, tmp_path / "t", families="incident")
    test = json.loads((tmp_path / "t" / "private" / "manifest.json").read_text())
    assert test["structures_v2"]["interaction_incident"] > 0


def test_audit_checks_v2_twins_and_listing(pair: tuple[pathlib.Path, ...]) -> None:
    """`causal audit` on a families bench: every v2 twin pair has one skin-free form."""
    from rungbench.causal.bench.audit import audit_bench

    _, with_families = pair
    result = audit_bench(with_families)
    sk = result["skin_structure_v2"]
    assert sk["pairs"] > 20 and sk["mismatched"] == 0
    assert result["listing_order_v2"]["pass"] and result["skin_structure_v2"]["pass"]


def test_audit_catches_a_twin_that_reads_differently(pair: tuple[pathlib.Path, ...],
                                                     tmp_path: pathlib.Path) -> None:
    """Reordering the evidence of one domain-skin question makes its twin pair mismatch."""
    from rungbench.causal.bench.audit import skin_structure_audit

    _, with_families = pair
    cases = _lines(with_families / "public" / "cases.v2.jsonl")
    i = next(i for i, c in enumerate(cases)
             if c["item_type"] == "posterior" and c["skin"] != "nonsense")
    head, tail = cases[i]["question"].removeprefix("Given ").split(", what is ")
    cases[i]["question"] = f"Given {', '.join(reversed(head.split(', ')))}, what is {tail}"
    assert skin_structure_audit(cases)["mismatched"] == 1
