"""`rungbench causal build --families …` → eval → report: episode families from the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from typer.testing import CliRunner

from rungbench.cli.causal_bench import register

app = typer.Typer()
register(app)

FAMILIES = "incident,active,revision,provenance,negative"


def _run(args: list[str]) -> Any:
    return CliRunner().invoke(app, [*args, "--json"])


def _json(args: list[str]) -> dict[str, Any]:
    result = _run(args)
    assert result.exit_code == 0, result.output
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def test_families_build_eval_report_round_trip(tmp_path: Path) -> None:
    """An agent's answers to the new families are scored and reported from the CLI."""
    bench, run = tmp_path / "bench", tmp_path / "run"
    built = _json(["build", "--split", "dev", "--worlds", "3", "--seed", "9", "--out",
                   str(bench), "--families", FAMILIES])
    assert built["leak_scan"]["ok"] and built["records_v2"]["n_cases"] > 0
    ev = _json(["eval", "--bench", str(bench), "--agent", "reference:double_count",
                "--out", str(run)])
    assert ev["signature"]["label"] == "source_duplication" and ev["signature"]["rate"] == 1.0
    rep = _json(["report", "--run", str(run)])
    assert rep["by_family"]["provenance_source_dependence"]["accuracy"] == 0.0
    assert rep["by_family"]["negative_evidence"]["accuracy"] == 1.0
    assert "root_cause_debugging" in rep["next_stage"]["families"]


def test_unknown_family_is_exit_3(tmp_path: Path) -> None:
    """--families with an unknown name is a refusal (exit 3) and builds nothing."""
    result = _run(["build", "--split", "dev", "--worlds", "1", "--seed", "1", "--out",
                   str(tmp_path / "b"), "--families", "incident,ghosts"])
    assert result.exit_code == 3 and not (tmp_path / "b").exists()
    assert json.loads(result.stdout)["reasons"][0]["code"] == "bad_request"


def test_tampered_v2_cases_make_eval_exit_1_naming_the_file(tmp_path: Path) -> None:
    """An edited cases.v2.jsonl is an integrity error (exit 1) naming the file."""
    bench = tmp_path / "bench"
    _json(["build", "--split", "dev", "--worlds", "1", "--seed", "2", "--out", str(bench),
           "--families", "provenance"])
    path = bench / "public" / "cases.v2.jsonl"
    path.write_text(path.read_text().replace("P(", "Q(", 1))
    result = _run(["eval", "--bench", str(bench), "--agent", "reference:oracle", "--out",
                   str(tmp_path / "run")])
    assert result.exit_code == 1 and str(path) in json.loads(result.stdout)["message"]
