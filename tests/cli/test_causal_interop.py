"""`rungbench causal import|query|regrade|export-table` (rungbench.cli.causal_interop)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from typer.testing import CliRunner

from rungbench.cli.causal_interop import register

ROOT = Path(__file__).resolve().parents[2] / "data"
app = typer.Typer()
register(app)


def _invoke(args: list[str]) -> tuple[int, Any]:
    result = CliRunner().invoke(app, [*args, "--json"])
    return result.exit_code, json.loads(result.stdout) if result.stdout.strip() else None


def test_import_cladder_prints_counts_and_the_coupling_note(tmp_path: Path) -> None:
    """``import cladder`` prints one JSON document with the counts and the caveat."""
    code, doc = _invoke(["import", "cladder", str(ROOT / "cladder"), "--out",
                         str(tmp_path / "c")])
    assert code == 0
    assert doc["counts"]["models"] == 396 and doc["counts"]["quantities_wrong"] == 578
    assert doc["coupling"] is None and "refused unless a coupling is named" in doc[
        "coupling_note"]
    code, doc = _invoke(["import", "cladder", str(ROOT / "cladder"), "--out",
                         str(tmp_path / "c")])
    assert code == 3 and doc["reasons"][0]["code"] == "exists"
    code, doc = _invoke(["query", str(tmp_path / "c"), "--cladder-model", "0", "--estimand", "nde",
                         "--x", "X", "--y", "Y"])
    assert code == 0 and abs(doc["value"] - 0.4262715832796687) < 1e-12  # CLadder's gold
    pn = '{"rung": 3, "target": {"Y": 0}, "do": {"X": 0}, "evidence": {"X": 1, "Y": 1}}'
    code, doc = _invoke(["query", str(tmp_path / "c"), "--cladder-model", "0", "--query", pn])
    assert code == 3 and doc["reasons"][0]["code"] == "coupling_dependent"
    code, doc = _invoke(["query", str(tmp_path / "c"), "--estimand", "ate", "--x", "X",
                         "--y", "Y"])
    assert code == 1 and "--model" in doc["message"]


def test_regrade_writes_the_table_in_each_format(tmp_path: Path) -> None:
    """``regrade --format parquet|csv`` publishes the tables; a bad format is exit 2."""
    code, doc = _invoke(["regrade", str(ROOT / "cladder"), "--out", str(tmp_path / "p"),
                         "--format", "parquet"])
    assert code == 0 and (tmp_path / "p" / "disagreements.parquet").is_file()
    assert doc["counts"]["numeric_labels_flipped"] == 14
    code, _ = _invoke(["regrade", str(ROOT / "cladder"), "--out", str(tmp_path / "x"),
                       "--format", "xlsx"])
    assert code == 2


def test_bif_import_and_queries_through_the_cli(tmp_path: Path) -> None:
    """Rung 2 answers; a PN-type query is refused (3) until --coupling names one."""
    out = tmp_path / "asia"
    code, doc = _invoke(["import", "bif", str(ROOT / "bnlearn" / "asia.bif"), "--out", str(out)])
    assert code == 0 and doc["n_variables"] == 8
    code, doc = _invoke(["query", str(out), "--query",
                         '{"rung": 2, "target": {"dysp": 0}, "do": {"smoke": 1}}'])
    assert code == 0 and abs(doc["value"] - 0.3191332) < 1e-12
    pn = '{"rung": 3, "target": {"dysp": 0}, "do": {"smoke": 1}, "evidence": {"smoke": 0, ' \
         '"dysp": 1}}'
    code, doc = _invoke(["query", str(out), "--query", pn])
    assert code == 3 and doc["reasons"][0]["code"] == "coupling_dependent"
    code, doc = _invoke(["query", str(out), "--query", pn, "--coupling", "independent"])
    assert code == 0 and doc["coupling"] == "independent"
    code, _ = _invoke(["query", str(out), "--query", pn, "--coupling", "antitone"])
    assert code == 2
    code, doc = _invoke(["query", str(out), "--estimand", "nie", "--x", "smoke", "--y", "dysp"])
    assert code == 0 and doc["coupling_invariant"]
    code, doc = _invoke(["query", str(out), "--query", "{not json"])
    assert code == 1 and doc["error"] == "input_error"


def test_categorical_bif_queries_take_state_names(tmp_path: Path) -> None:
    """child (six-state Disease, the 'Asy/Patch' state) imports; --query may name states, an
    unknown state name is an input error naming the field (exit 1)."""
    out = tmp_path / "child"
    code, doc = _invoke(["import", "bif", str(ROOT / "bnlearn" / "child.bif"), "--out", str(out)])
    assert code == 0 and doc["n_variables"] == 20
    by_name = ('{"rung": 2, "target": {"ChestXray": "Asy/Patch"}, "do": {"Disease": "Lung"}, '
               '"evidence": {"LowerBodyO2": "<5"}}')
    code, doc = _invoke(["query", str(out), "--query", by_name])
    assert code == 0 and doc["query"]["target"] == {"ChestXray": 4}
    assert doc["query_states"]["do"] == {"Disease": "Lung"}
    code, same = _invoke(["query", str(out), "--query",
                          '{"rung": 2, "target": {"ChestXray": 4}, "do": {"Disease": 5}, '
                          '"evidence": {"LowerBodyO2": 0}}'])
    assert code == 0 and same["value"] == doc["value"]
    code, doc = _invoke(["query", str(out), "--query",
                         '{"rung": 1, "target": {"Disease": "Flu"}}'])
    assert code == 1 and doc["error"] == "input_error" and "target.Disease" in str(doc)


def test_export_table_writes_inferred_records(tmp_path: Path) -> None:
    """``export-table`` of a JSONL file writes the rows with the inferred schema."""
    src = tmp_path / "t.jsonl"
    src.write_text('{"a": 1, "b": "x"}\n{"a": 2, "b": null}\n')
    code, doc = _invoke(["export-table", str(src), "--out", str(tmp_path / "t.csv")])
    assert code == 0 and doc["rows"] == 2
    assert (tmp_path / "t.csv").read_text() == "a,b\n1,x\n2,\n"


def test_export_inspect_takes_a_cladder_import_or_a_bench_not_both(tmp_path: Path) -> None:
    """``export-inspect --cladder`` writes the task; neither or both sources is a usage error."""
    code, _ = _invoke(["import", "cladder", str(ROOT / "cladder"), "--out", str(tmp_path / "c")])
    assert code == 0
    code, doc = _invoke(["export-inspect", "--cladder", str(tmp_path / "c"), "--out",
                         str(tmp_path / "t")])
    assert code == 0 and doc["n_cases"] == 4164 - 68 and doc["target"] == "exact_label"
    assert (tmp_path / "t" / "task.py").is_file()
    code, doc = _invoke(["export-inspect", "--out", str(tmp_path / "t2")])
    assert code == 1 and doc["error"] == "input_error" and not (tmp_path / "t2").exists()
    code, doc = _invoke(["import", "inspect", str(tmp_path / "x.eval"), "--out",
                         str(tmp_path / "r.jsonl")])
    assert code == 1
