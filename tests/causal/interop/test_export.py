"""Tests for rungbench.causal.interop.export: CSV/Parquet/JSON tables that round-trip."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rungbench.causal.bench.build import build_split
from rungbench.causal.bench.evaluate import evaluate
from rungbench.causal.bench.verified import open_run, run_verdicts
from rungbench.causal.interop import export
from rungbench.errors import InputError, Refusal


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("exp")
    build_split("dev", 4, 17, root / "bench")
    evaluate(root / "bench", "reference:rung1", root / "run")
    return root / "run"


def test_parquet_round_trip_equals_the_json_records(run_dir: Path, tmp_path: Path) -> None:
    """Verdicts written as Parquet read back with pyarrow equal the JSON records exactly."""
    pytest.importorskip("pyarrow", reason="pyarrow not installed (extra parquet)")
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    records = export.verdict_records(run_verdicts(open_run(run_dir)))
    assert len(records) > 20 and {r["outcome"] for r in records} >= {"correct", "wrong"}
    export.write_table(records, export.VERDICTS, tmp_path / "v.parquet", "parquet")
    export.write_table(records, export.VERDICTS, tmp_path / "v.json", "json")
    table = pq.read_table(str(tmp_path / "v.parquet"))
    assert table.schema.names == [c.name for c in export.VERDICTS.columns]
    _, from_json = export.read_table(tmp_path / "v.json", "json")
    _, from_parquet = export.read_table(tmp_path / "v.parquet", "parquet")
    assert from_parquet == from_json == export.validate(records, export.VERDICTS)
    raw = table.to_pylist()
    assert [r["case_id"] for r in raw] == [r["case_id"] for r in records]
    assert [json.loads(r["labels"]) for r in raw] == [r["labels"] for r in records]


def test_csv_round_trip_keeps_types_and_nulls(run_dir: Path, tmp_path: Path) -> None:
    """CSV with the schema reads back to the same records (floats exact, nulls empty)."""
    records = export.verdict_records(run_verdicts(open_run(run_dir)))
    export.write_table(records, export.VERDICTS, tmp_path / "v.csv", "csv")
    _, back = export.read_table(tmp_path / "v.csv", "csv", export.VERDICTS)
    assert back == export.validate(records, export.VERDICTS)
    header = (tmp_path / "v.csv").read_text().splitlines()[0]
    assert header.startswith("case_id,outcome,abs_error")


def test_values_are_type_checked_before_writing(tmp_path: Path) -> None:
    """A string in a float column or an unknown column is refused, nothing written."""
    bad = [{"case_id": "c1", "outcome": "correct", "abs_error": "0.1"}]
    with pytest.raises(InputError, match="not a float"):
        export.write_table(bad, export.VERDICTS, tmp_path / "x.csv", "csv")
    with pytest.raises(InputError, match="not in the causal-verdicts schema"):
        export.write_table([{"case_id": "c", "colour": 1}], export.VERDICTS,
                           tmp_path / "x.csv", "csv")
    assert not (tmp_path / "x.csv").exists()


def test_generic_records_get_an_inferred_schema(tmp_path: Path) -> None:
    """A JSONL of flat records exports with inferred column types and round-trips."""
    src = tmp_path / "t.jsonl"
    rows: list[dict[str, Any]] = [
        {"game": 1, "move": "e4", "ok": True, "score": 1, "extra": [1, 2]},
        {"game": 2, "move": "d4", "ok": False, "score": 0.5, "extra": None}]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = export.export_source(src, tmp_path / "t.json", "records", "json")
    types = {c["name"]: c["type"] for c in result["schema"]["columns"]}
    assert types == {"game": "int", "move": "str", "ok": "bool", "score": "float",
                     "extra": "json"}
    _, back = export.read_table(tmp_path / "t.json", "json")
    assert back == [{**r, "score": float(r["score"])} for r in rows]
    with pytest.raises(Refusal):
        export.export_source(src, tmp_path / "t.json", "records", "json")


def test_scored_run_directory_exports_its_verified_verdicts(run_dir: Path,
                                                             tmp_path: Path) -> None:
    """``causal-verdicts`` from a run directory reads the sealed private verdicts."""
    result = export.export_source(run_dir, tmp_path / "v.csv", "causal-verdicts", "csv")
    assert result["rows"] == len(run_verdicts(open_run(run_dir)))


def test_a_run_with_twins_mutations_and_networks_exports_every_row(tmp_path: Path) -> None:
    """A bench built with twins, paraphrases, a skin swap, a renaming, an imported network and
    the incident episodes exports its verdicts whole: each row names its mutation or twin
    kind (originals null), episode rows their episode and stage."""
    build_split("dev", 3, 5, tmp_path / "bench", twins=True, paraphrases=1, skin_swap=True,
                renaming=True, networks="asia", families="incident")
    evaluate(tmp_path / "bench", "reference:rung1", tmp_path / "run")
    result = export.export_source(tmp_path / "run", tmp_path / "v.json", "causal-verdicts",
                                  "json")
    _, rows = export.read_table(tmp_path / "v.json", "json")
    assert result["rows"] == len(rows) == len(run_verdicts(open_run(tmp_path / "run")))
    kinds = {r["mutation"] for r in rows}
    assert kinds == {None, "paraphrase", "skin_swap", "renaming"}
    assert any(r["twin"] is not None for r in rows)
    assert any(r["family"] == "network" and r["mutation"] is None for r in rows)
    assert any(r["version"] is not None and r["episode_id"] for r in rows)


def test_an_unknown_table_is_named_before_the_source_is_read(run_dir: Path,
                                                             tmp_path: Path) -> None:
    """An unknown --table is refused naming it, whatever the source (a run directory gave
    'is a directory'), and nothing is written."""
    with pytest.raises(InputError, match="unknown table 'nosuch'"):
        export.export_source(run_dir, tmp_path / "t.csv", "nosuch", "csv")
    assert not (tmp_path / "t.csv").exists()


def test_lists_inside_json_documents_export_by_key_path(tmp_path: Path) -> None:
    """``select`` picks a record list (census transition table) or a list of pairs."""
    doc = {"schema": "x", "transition_table": [
        {"prior": "illegal", "transitions": 12, "accepted": 5, "rate": 5 / 12,
         "ci": [0.15, 0.72]}], "manifest": {"pairs": [["k1", "sha256:aa"], ["k2", "sha256:bb"]]}}
    src = tmp_path / "census.json"
    src.write_text(json.dumps(doc))
    export.export_source(src, tmp_path / "t.json", "census-transitions", "json",
                         select="transition_table")
    _, rows = export.read_table(tmp_path / "t.json", "json")
    assert rows == doc["transition_table"]
    export.export_source(src, tmp_path / "m.csv", "records", "csv", select="manifest.pairs")
    assert (tmp_path / "m.csv").read_text() == "col0,col1\nk1,sha256:aa\nk2,sha256:bb\n"
    with pytest.raises(InputError, match="no key"):
        export.export_source(src, tmp_path / "n.csv", "records", "csv", select="nope")
