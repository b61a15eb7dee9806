"""Unit tests for rungbench.causal.bench.leaks on a hand-made private/public bench."""

from __future__ import annotations

import json
import pathlib
from typing import Any

from rungbench.causal.bench.leaks import load_secrets, scan_bench


def _bench(tmp_path: pathlib.Path, case: dict[str, Any]) -> pathlib.Path:
    bench = tmp_path / "bench"
    (bench / "private").mkdir(parents=True)
    (bench / "public").mkdir()
    (bench / "private" / "manifest.json").write_text(
        json.dumps({"seed": 20240611, "split_seed": 99887766}))
    (bench / "private" / "worlds.jsonl").write_text(json.dumps({"seed": 31415926}) + "\n")
    oracle = {"case_id": "c1", "scm_hash": "sha256:" + "ab" * 32, "witness_hash": None,
              "value": None, "bounds": [0.2345, 0.6789],
              "confusions": {"rung1": 0.4321, "rung2_population": None, "resampled": 1.0}}
    (bench / "private" / "oracle.jsonl").write_text(json.dumps(oracle) + "\n")
    (bench / "public" / "cases.jsonl").write_text(json.dumps(case) + "\n")
    return bench


def _case(**extra: Any) -> dict[str, Any]:
    return {"case_id": "c1", "question": "What is P(Y=1)?", "query": {"rung": 1},
            "evidence": {"kind": "joint", "payload": {}}, **extra}


def test_secrets_collect_bound_ends_and_confusion_values(tmp_path: pathlib.Path) -> None:
    """Bound ends and confusion values strictly inside (0, 1) are private numbers; 1.0 is not."""
    secrets = load_secrets(_bench(tmp_path, _case()) / "private")
    assert secrets.values == (0.2345, 0.4321, 0.6789)
    assert {"20240611", "99887766", "31415926"} <= secrets.strings


def test_bound_end_in_question_is_a_value_leak(tmp_path: pathlib.Path) -> None:
    """A question printing a private bound end (0.679 ≈ 0.6789 to 3 decimals) is a value leak."""
    report = scan_bench(_bench(tmp_path, _case(question="Is it below 0.679?")))
    assert [f.kind for f in report.findings] == ["value"]


def test_decimal_in_query_is_scanned_but_evidence_is_exempt(tmp_path: pathlib.Path) -> None:
    """A private number inside the query is a leak; the same number in evidence is exempt."""
    leaky = _case(query={"rung": 1, "hint": 0.4321})
    assert [f.kind for f in scan_bench(_bench(tmp_path / "a", leaky)).findings] == ["value"]
    exempt = _case(evidence={"kind": "joint", "payload": {"p": 0.4321}})
    assert scan_bench(_bench(tmp_path / "b", exempt)).ok


def test_private_key_nested_in_a_list_is_an_oracle_field_leak(tmp_path: pathlib.Path) -> None:
    """A private key (``confusions``) inside a list element of a public case is found."""
    case = _case(evidence={"kind": "joint", "payload": {"rows": [{"confusions": {}}]}})
    report = scan_bench(_bench(tmp_path, case))
    assert [(f.kind, f.detail) for f in report.findings] == [
        ("oracle_field", "private key 'confusions'")]


def _twin_bench(tmp_path: pathlib.Path, twin_case: dict[str, Any]) -> pathlib.Path:
    """A bench whose one twin (``t1``, parent ``w0-q03d`` of world ``w0``) is public."""
    bench = _bench(tmp_path, _case())
    (bench / "private" / "worlds.jsonl").write_text(json.dumps(
        {"seed": 31415926, "twins": [{"seed": 27182818, "kind": "z_removed"}]}) + "\n")
    twin = {"case_id": "t1", "world_id": "w0", "scm_hash": "sha256:" + "cd" * 32,
            "value": None, "variant": {"label": "confounding_neglect", "kind": "z_removed",
                                       "parent": "w0-q03d", "seed": 27182818,
                                       "confused": [0.5813]}}
    with (bench / "private" / "oracle.jsonl").open("a") as f:
        f.write(json.dumps(twin) + "\n")
    with (bench / "public" / "cases.jsonl").open("a") as f:
        f.write(json.dumps(twin_case) + "\n")
    return bench


def test_twin_seed_and_confused_value_are_secrets(tmp_path: pathlib.Path) -> None:
    """A twin's derived seed and its variant's confused values join the private secrets."""
    secrets = load_secrets(_twin_bench(tmp_path, _case(case_id="t1")) / "private")
    assert "27182818" in secrets.strings
    assert 0.5813 in secrets.values
    assert dict(secrets.links) == {"t1": ("w0-q03d", "w0")}


def test_twin_naming_its_parent_is_a_twin_link_leak(tmp_path: pathlib.Path) -> None:
    """A twin's public record naming its parent case (or world) is a ``twin_link`` leak."""
    leaky = _case(case_id="t1", question="Same as w0-q03d, Z removed: what is P(Y=1)?")
    kinds = [f.kind for f in scan_bench(_twin_bench(tmp_path / "a", leaky)).findings]
    assert kinds == ["twin_link", "twin_link"]  # the parent case id holds the world id too
    assert scan_bench(_twin_bench(tmp_path / "b", _case(case_id="t1"))).ok


def test_variant_key_in_a_public_case_is_an_oracle_field_leak(tmp_path: pathlib.Path) -> None:
    """A public case carrying a ``variant`` block (or its ``order_agrees``) is a leak."""
    case = _case(variant={"kind": "order_opposed"}, meta={"order_agrees": False})
    report = scan_bench(_bench(tmp_path, case))
    assert sorted(f.detail for f in report.findings) == [
        "private key 'order_agrees'", "private key 'variant'"]


def test_built_bench_public_side_says_nothing_about_twins(tmp_path: pathlib.Path) -> None:
    """In a built bench, no public byte names a twin kind, a variant, or a twin's parent; a
    twin's public world id is its own and its cases are not listed beside its parent's."""
    from rungbench.causal.bench.build import build_split
    from rungbench.causal.bench.variants import TWIN_KINDS

    bench = tmp_path / "built"
    build_split("dev", 14, 5, bench, twins=True)
    oracles = [json.loads(x) for x in (bench / "private" / "oracle.jsonl").read_text().splitlines()]
    twins = [o for o in oracles if o.get("variant", {}).get("kind", "item") != "item"]
    assert twins
    public = "".join(p.read_text() for p in (bench / "public").rglob("*.json*")
                     if "schemas" not in p.parts)
    for word in (*TWIN_KINDS, "variant", "twin", "confused"):
        assert word not in public, word
    cases = [json.loads(x) for x in (bench / "public" / "cases.jsonl").read_text().splitlines()]
    index = {c["case_id"]: i for i, c in enumerate(cases)}
    public_world = {c["case_id"]: c["world_id"] for c in cases}
    for t in twins:
        parent = t["variant"]["parent"]
        assert public_world[t["case_id"]] != public_world[parent] == t["world_id"]
        assert t["case_id"] not in json.dumps(cases[index[parent]])
    assert [c["case_id"] for c in cases] == sorted(index)
    assert scan_bench(bench).ok


def _paraphrase_bench(tmp_path: pathlib.Path, case: dict[str, Any]) -> pathlib.Path:
    """A bench whose one private record is a paraphrase of case w0-q03d of world w0."""
    bench = _bench(tmp_path, case)
    oracle = {"case_id": "p1", "world_id": "w0", "scm_hash": "sha256:" + "cd" * 32,
              "value": 0.25, "mutation": {"kind": "paraphrase", "parent": "w0-q03d",
                                          "template": 1, "table": "t/1"}}
    (bench / "private" / "oracle.jsonl").write_text(json.dumps(oracle) + "\n")
    return bench


def test_a_paraphrase_naming_its_original_is_a_twin_link_leak(tmp_path: pathlib.Path) -> None:
    """A paraphrase's public record naming its original case (or that case's world) is a
    ``twin_link`` leak, and a public ``mutation`` key is a private key; a paraphrase that
    names neither is clean."""
    leaky = _case(case_id="p1", question="Reworded from w0-q03d: what is P(Y=1)?")
    kinds = [f.kind for f in scan_bench(_paraphrase_bench(tmp_path / "a", leaky)).findings]
    assert kinds == ["twin_link", "twin_link"]
    keyed = _case(case_id="p1", mutation={"kind": "paraphrase"})
    report = scan_bench(_paraphrase_bench(tmp_path / "b", keyed))
    assert [f.detail for f in report.findings] == ["private key 'mutation'"]
    assert scan_bench(_paraphrase_bench(tmp_path / "c", _case(case_id="p1"))).ok
