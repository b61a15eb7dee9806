"""Tests for causal.bench.build, splits and leaks (layout, determinism, held-out, leak scan)."""

from __future__ import annotations

import json
import pathlib
import re
import stat
from typing import Any

import pytest
from tests.causal.bench.test_episode_build import DEFAULT_SEAL

from rungbench.causal.bench.build import build_split
from rungbench.causal.bench.leaks import scan_bench
from rungbench.causal.bench.paraphrases import PARAPHRASE_TABLE, is_original_wording
from rungbench.causal.bench.records import PrivateOracle, PublicCase
from rungbench.causal.bench.splits import HELD_OUT, split_seed, world_plan
from rungbench.errors import Refusal
from rungbench.evidence.canonical import file_digest, is_digest


def _digests(root: pathlib.Path) -> dict[str, str]:
    return {str(p.relative_to(root)): file_digest(str(p))
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    out = tmp_path_factory.mktemp("dev") / "bench"
    build_split("dev", 16, 5, out)
    return out


def test_layout_and_private_mode(dev: pathlib.Path) -> None:
    """public/ holds cases, manifest and schemas; private/ is mode 0700 with the oracle."""
    assert (dev / "public" / "cases.jsonl").is_file()
    assert (dev / "public" / "schemas" / "public_case.schema.json").is_file()
    assert stat.S_IMODE((dev / "private").stat().st_mode) == 0o700
    assert stat.S_IMODE((dev / "private" / "oracle.jsonl").stat().st_mode) == 0o600
    cases = [PublicCase.model_validate_json(t)
             for t in (dev / "public" / "cases.jsonl").read_text().splitlines()]
    oracles = [PrivateOracle.model_validate_json(t)
               for t in (dev / "private" / "oracle.jsonl").read_text().splitlines()]
    assert [c.case_id for c in cases] == [o.case_id for o in oracles]
    manifest = json.loads((dev / "public" / "manifest.json").read_text())
    assert "seed" not in manifest and manifest["n_cases"] == len(cases)


def test_public_family_never_gives_away_non_identifiability(dev: pathlib.Path) -> None:
    """Non-ID items are insufficient_evidence privately, never so in the public family."""
    cases = [json.loads(t) for t in (dev / "public" / "cases.jsonl").read_text().splitlines()]
    oracles = [json.loads(t) for t in (dev / "private" / "oracle.jsonl").read_text().splitlines()]
    assert any(o["family"] == "insufficient_evidence" for o in oracles)
    assert all(c["family"] != "insufficient_evidence" for c in cases)
    non_id_families = {c["family"] for c, o in zip(cases, oracles, strict=True)
                       if not o["identifiable"]}
    id_families = {c["family"] for c, o in zip(cases, oracles, strict=True) if o["identifiable"]}
    assert non_id_families <= id_families


_BOTH_SIDES = {
    "public/cases.jsonl", "public/manifest.json", "public/schemas/public_case.schema.json",
    "private/oracle.jsonl", "private/worlds.jsonl", "private/manifest.json",
}


def test_same_seed_is_byte_identical(dev: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """Building the same split with the same seed twice gives identical file digests."""
    again = tmp_path / "again"
    build_split("dev", 16, 5, again)
    assert set(_digests(dev)) >= _BOTH_SIDES
    assert _digests(again) == _digests(dev)
    other = tmp_path / "other"
    build_split("dev", 16, 6, other)
    for name in ("public/cases.jsonl", "private/oracle.jsonl", "private/worlds.jsonl"):
        assert _digests(other)[name] != _digests(dev)[name]


def test_test_split_rebuild_is_byte_identical(tmp_path: pathlib.Path) -> None:
    """A test split (held-out families included) rebuilt in a fresh directory: same digests."""
    first, second = tmp_path / "a" / "bench", tmp_path / "b" / "bench"
    build_split("test", 16, 8, first)
    build_split("test", 16, 8, second)
    a, b = _digests(first), _digests(second)
    assert set(a) >= _BOTH_SIDES
    assert a == b
    assert all(is_digest(d) for d in a.values())


def _structures(bench: pathlib.Path) -> set[str]:
    rows = (bench / "private" / "worlds.jsonl").read_text().splitlines()
    return {json.loads(t)["structure"] for t in rows}


def test_built_test_split_holds_out_families_absent_from_dev(
    dev: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    """On real builds: test has front-door and M-bias worlds; dev and validation have none."""
    build_split("validation", 16, 5, tmp_path / "val")
    build_split("test", 16, 5, tmp_path / "test")
    assert not _structures(dev) & set(HELD_OUT)
    assert not _structures(tmp_path / "val") & set(HELD_OUT)
    assert set(HELD_OUT) <= _structures(tmp_path / "test")
    assert scan_bench(tmp_path / "val").ok and scan_bench(tmp_path / "test").ok
    oracles = [json.loads(t) for t in (dev / "private" / "oracle.jsonl").read_text().splitlines()]
    assert not {o["structure"] for o in oracles} & set(HELD_OUT)
    dev_worlds = set(json.loads((dev / "public" / "manifest.json").read_text())["world_ids"])
    test_worlds = json.loads((tmp_path / "test" / "public" / "manifest.json").read_text())
    assert not dev_worlds & set(test_worlds["world_ids"])


def test_every_built_family_and_item_type_present(tmp_path: pathlib.Path) -> None:
    """A test build covers all nine built families and all four item types."""
    summary = build_split("test", 30, 1, tmp_path / "t")
    fams = {k.split("/")[0] for k in summary["counts"]}
    types = {k.split("/")[1] for k in summary["counts"]}
    assert len(fams) == 9
    assert types == {"exact", "identification", "discovery", "cf_no_mechanism"}
    assert set(HELD_OUT) <= set(summary["structures"])


def test_splits_have_separate_seeds_and_held_out_structures() -> None:
    """Split seeds differ; dev and validation never draw front-door or M-bias."""
    assert len({split_seed(s, 1) for s in ("dev", "validation", "test")}) == 3
    for split in ("dev", "validation"):
        assert not {s for s, _ in world_plan(split, 200, 1)} & set(HELD_OUT)
    test_structures = {s for s, _ in world_plan("test", 30, 1)}
    assert set(HELD_OUT) <= test_structures
    dev_seeds = {w for _, w in world_plan("dev", 50, 1)}
    assert not dev_seeds & {w for _, w in world_plan("validation", 50, 1)}


def test_leak_scan_passes_real_build(dev: pathlib.Path) -> None:
    """The leak scan of a real build finds nothing."""
    report = scan_bench(dev)
    assert report.ok and report.files >= 3


@pytest.mark.parametrize("plant", ["value", "seed", "field", "digest"])
def test_leak_scan_fails_on_planted_leak(
    dev: pathlib.Path, tmp_path: pathlib.Path, plant: str
) -> None:
    """A private value, world seed, oracle field or scm_hash planted in a public file is found."""
    import shutil

    bench = tmp_path / "b"
    shutil.copytree(dev, bench)
    cases_path = bench / "public" / "cases.jsonl"
    lines = cases_path.read_text().splitlines()
    oracles = [json.loads(t) for t in (bench / "private" / "oracle.jsonl").read_text().splitlines()]
    i, o = next((i, o) for i, o in enumerate(oracles) if o["value"] and 0.05 < o["value"] < 0.95)
    case = json.loads(lines[i])
    if plant == "value":
        case["question"] += f" (hint: about {o['value']:.4f})"
    elif plant == "seed":
        case["assumptions"].append(f"world {o['seed']}")
    elif plant == "field":
        case["evidence"]["payload"]["confusions"] = {"rung1": 0.5}
    else:
        case["question"] += " " + o["scm_hash"]
    lines[i] = json.dumps(case)
    cases_path.write_text("\n".join(lines) + "\n")
    report = scan_bench(bench)
    assert not report.ok
    kinds = {f.kind for f in report.findings}
    assert kinds == {"value": {"value"}, "seed": {"secret"}, "field": {"oracle_field"},
                     "digest": {"secret"}}[plant]
    assert f"cases.jsonl:{i + 1}" in report.findings[0].where


def test_bad_world_count_is_refused(tmp_path: pathlib.Path) -> None:
    """--worlds 0 is a refusal with a reason code."""
    with pytest.raises(Refusal) as exc:
        build_split("dev", 0, 1, tmp_path / "x")
    assert exc.value.codes == ("bad_request",)


@pytest.mark.parametrize("where", ["manifest", "notes"])
def test_leak_scan_reads_every_public_file(
    dev: pathlib.Path, tmp_path: pathlib.Path, where: str
) -> None:
    """A split seed in the public manifest, or a world seed in a stray text file, is found."""
    import shutil

    bench = tmp_path / "b"
    shutil.copytree(dev, bench)
    private = json.loads((bench / "private" / "manifest.json").read_text())
    if where == "manifest":
        path = bench / "public" / "manifest.json"
        doc = json.loads(path.read_text())
        doc["note"] = f"built from {private['split_seed']}"
        path.write_text(json.dumps(doc))
    else:
        world = json.loads((bench / "private" / "worlds.jsonl").read_text().splitlines()[0])
        path = bench / "public" / "notes.txt"
        path.write_text(f"first world drawn from seed {world['seed']}\n")
    report = scan_bench(bench)
    assert not report.ok
    assert {f.kind for f in report.findings} == {"secret"}
    assert all(f.where == str(path) for f in report.findings)


# ------------------------------------------------------------------ paraphrase variants


@pytest.fixture(scope="module")
def paraphrased(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """A dev bench with three paraphrase variants of every item (and the diagnostic twins)."""
    out = tmp_path_factory.mktemp("para") / "bench"
    build_split("dev", 8, 5, out, twins=True, paraphrases=3)
    return out


def _records(bench: pathlib.Path) -> tuple[dict[str, Any], dict[str, Any]]:
    cases = {c["case_id"]: c for c in map(json.loads, (bench / "public" / "cases.jsonl")
                                          .read_text().splitlines())}
    oracles = {o["case_id"]: o for o in map(json.loads, (bench / "private" / "oracle.jsonl")
                                            .read_text().splitlines())}
    return cases, oracles


def _without_world_id(evidence: dict[str, Any]) -> dict[str, Any]:
    return {**evidence, "payload": {k: v for k, v in evidence["payload"].items()
                                    if k != "world_id"}}


def test_a_paraphrase_asks_its_original_question_in_other_words(
        paraphrased: pathlib.Path) -> None:
    """Each item's domain-skin case gets three paraphrases, each worded by a different
    template of the table and none by the original table; each keeps its original's skin,
    query, evidence (under its own world id), assumptions and answer format, and its private
    record is the original's (world cluster, value, bounds, confusions …) but for its case
    id, cf_link and the mutation record naming the original."""
    cases, oracles = _records(paraphrased)
    mutated = {cid: o for cid, o in oracles.items() if "mutation" in o}
    originals = [cid for cid, o in oracles.items()
                 if "mutation" not in o and o["skin"] != "nonsense"
                 and o.get("variant", {}).get("kind", "item") == "item"]
    assert len(mutated) == 3 * len(originals)
    templates: dict[str, set[int]] = {}
    for cid, o in mutated.items():
        m = o["mutation"]
        assert m["kind"] == "paraphrase" and m["table"] == PARAPHRASE_TABLE
        parent, case, original = oracles[m["parent"]], cases[cid], cases[m["parent"]]
        templates.setdefault(m["parent"], set()).add(m["template"])
        assert case["world_id"] != original["world_id"] and o["world_id"] == parent["world_id"]
        assert case["question"] != original["question"]
        assert not is_original_wording(case["question"])
        assert is_original_wording(original["question"])
        for key in ("skin", "query", "assumptions", "answer_format", "family", "item_type",
                    "rung", "permitted_interventions"):
            assert case[key] == original[key], key
        assert _without_world_id(case["evidence"]) == _without_world_id(original["evidence"])
        same = {k: v for k, v in o.items() if k not in ("case_id", "cf_link", "mutation")}
        assert same == {k: v for k, v in parent.items()
                        if k not in ("case_id", "cf_link", "variant")}
    assert sorted(templates) == sorted(originals)
    assert all(len(t) == 3 for t in templates.values())


def test_a_paraphrase_names_the_same_events_with_the_same_values(
        paraphrased: pathlib.Path) -> None:
    """The events a question names (``name=value``, in the order given, numbers included)
    are the same in a paraphrase as in its original: only the words around them change."""
    cases, oracles = _records(paraphrased)
    token = re.compile(r"[A-Za-z_][\w]*=\d|\d+(?:\.\d+)?")
    for cid, o in oracles.items():
        if "mutation" not in o:
            continue
        mine = token.findall(cases[cid]["question"])
        theirs = token.findall(cases[o["mutation"]["parent"]]["question"])
        assert sorted(mine) == sorted(theirs), (cases[cid]["question"], theirs)


def test_default_build_keeps_its_bytes_with_zero_paraphrases(tmp_path: pathlib.Path) -> None:
    """--paraphrases 0 is the default build: its seal is the pinned one, its private_oracle
    schema has no mutation property; with paraphrases the schema gains exactly that."""
    build_split("dev", 3, 11, tmp_path / "plain", paraphrases=0)
    assert file_digest(str(tmp_path / "plain" / "SEAL.json")) == DEFAULT_SEAL
    schema = json.loads((tmp_path / "plain" / "public" / "schemas" /
                         "private_oracle.schema.json").read_text())
    assert "mutation" not in schema["properties"]
    build_split("dev", 3, 11, tmp_path / "para", paraphrases=1)
    wider = json.loads((tmp_path / "para" / "public" / "schemas" /
                        "private_oracle.schema.json").read_text())
    assert set(wider["properties"]) - set(schema["properties"]) == {"mutation"}
    manifest = json.loads((tmp_path / "para" / "public" / "manifest.json").read_text())
    assert manifest["mutations"] == {"cases": {"paraphrase": manifest["n_cases"] * 1 // 3},
                                     "paraphrase_table": PARAPHRASE_TABLE}


@pytest.mark.parametrize("n", [-1, 4])
def test_a_paraphrase_count_outside_the_table_is_refused(tmp_path: pathlib.Path, n: int) -> None:
    """More paraphrases than the table has templates per kind, or fewer than 0, is a refusal
    naming the field, before anything is built."""
    with pytest.raises(Refusal) as exc:
        build_split("dev", 2, 1, tmp_path / "x", paraphrases=n)
    assert exc.value.codes == ("bad_request",)
    assert "paraphrases" in str(exc.value)
    assert not (tmp_path / "x").exists()


def test_paraphrase_bench_is_deterministic_and_leak_free(
        paraphrased: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """The same arguments give the same bytes; the public side names no paraphrase's
    original case or world and carries no mutation key; cases are ordered by case id."""
    build_split("dev", 8, 5, tmp_path / "again", twins=True, paraphrases=3)
    assert _digests(tmp_path / "again") == _digests(paraphrased)
    assert scan_bench(paraphrased).ok
    text = (paraphrased / "public" / "cases.jsonl").read_text()
    assert '"mutation"' not in text
    ids = [json.loads(t)["case_id"] for t in text.splitlines()]
    assert ids == sorted(ids)


@pytest.fixture(scope="module")
def respelled(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """A dev bench with a skin swap and a renaming of every item."""
    out = tmp_path_factory.mktemp("respelled") / "bench"
    build_split("dev", 8, 5, out, skin_swap=True, renaming=True)
    return out


@pytest.mark.parametrize("kind", ["skin_swap", "renaming"])
def test_a_skin_swap_or_renaming_asks_the_same_question_with_other_names(
        respelled: pathlib.Path, kind: str) -> None:
    """Each item gets one case of the kind: under another domain skin (skin swap) or the same
    skin with other names (renaming), listed in the same order. Mapping its listed names
    onto the original's turns its question, query and answer back into the original's word
    for word; its private record keeps the world cluster, value, bounds and identifiability."""
    cases, oracles = _records(respelled)
    mine = {cid: o for cid, o in oracles.items() if o.get("mutation", {}).get("kind") == kind}
    originals = [cid for cid, o in oracles.items()
                 if "mutation" not in o and o["skin"] != "nonsense"]
    assert sorted(o["mutation"]["parent"] for o in mine.values()) == sorted(originals)
    for cid, o in mine.items():
        parent = oracles[o["mutation"]["parent"]]
        case, original = cases[cid], cases[o["mutation"]["parent"]]
        assert (case["skin"] == original["skin"]) == (kind == "renaming")
        listed = [v["name"] for v in _listing(case)]
        back = dict(zip(listed, [v["name"] for v in _listing(original)], strict=True))
        assert back != {n: n for n in listed}
        assert _respelled(case["question"], back) == original["question"]
        assert json.loads(_respelled(json.dumps(case["query"]), back)) == original["query"]
        for key in ("world_id", "value", "bounds", "identifiable", "estimand", "rung"):
            assert o[key] == parent[key], key
        assert o["mutation"].get("template") is None


def _listing(case: dict[str, Any]) -> list[dict[str, Any]]:
    """The variables of a case in listing order, whatever its evidence kind."""
    payload = case["evidence"]["payload"]
    if "variables" in payload:
        return list(payload["variables"])
    if "graph" in payload:
        return list(payload["graph"])
    return [{"name": n} for n in payload["joint"]["names"]]


def _respelled(text: str, names: dict[str, str]) -> str:
    """``text`` with every name replaced by its image under ``names`` (longest names first)."""
    pattern = re.compile("|".join(sorted(map(re.escape, names), key=len, reverse=True)))
    return pattern.sub(lambda m: names[m.group(0)], text)
