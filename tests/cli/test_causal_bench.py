"""`rungbench causal build|eval|report|audit`: thin commands, one JSON document, clear errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from typer.testing import CliRunner

from rungbench.cli.causal_bench import demo_stage, register

app = typer.Typer()
register(app)


def _json(args: list[str]) -> dict[str, Any]:
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def test_build_eval_report_audit_round_trip(tmp_path: Path) -> None:
    """build → eval → report → audit, each printing exactly one JSON document."""
    bench, run = tmp_path / "bench", tmp_path / "run"
    built = _json(["build", "--split", "dev", "--worlds", "8", "--seed", "3",
                   "--out", str(bench)])
    assert built["leak_scan"]["ok"] and built["n_worlds"] == 8
    ev = _json(["eval", "--bench", str(bench), "--agent", "reference:oracle", "--out", str(run)])
    assert ev["outcomes"]["correct"] + ev["outcomes"]["correct_non_id"] == ev["n"]
    rep = _json(["report", "--run", str(run)])
    assert rep["overall"]["accuracy"] == 1.0
    audit = _json(["audit", "--bench", str(bench), "--run", str(run)])
    assert audit["listing_order"]["before"]["rate"] == 1.0


def test_human_output_and_markdown(tmp_path: Path) -> None:
    """Without --json the report prints Markdown headings."""
    bench, run = tmp_path / "bench", tmp_path / "run"
    _json(["build", "--split", "test", "--worlds", "6", "--seed", "1", "--out", str(bench)])
    _json(["eval", "--bench", str(bench), "--agent", "reference:rung1", "--out", str(run)])
    result = CliRunner().invoke(app, ["report", "--run", str(run)])
    assert result.exit_code == 0
    assert "## Identification table" in result.stdout


def test_errors_are_one_line_with_exit_codes(tmp_path: Path) -> None:
    """A missing bench is exit 1 naming the file; an unknown split is a refusal (exit 3)."""
    args = ["eval", "--bench", str(tmp_path / "none"), "--agent", "reference:oracle",
            "--out", str(tmp_path / "r")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1 and result.stdout == ""
    assert "bench file missing" in " ".join(result.stderr.split())
    doc = json.loads(CliRunner().invoke(app, [*args, "--json"]).stdout)
    assert doc["error"] == "input_error" and "public/cases.jsonl" in doc["message"]
    refused = CliRunner().invoke(app, ["build", "--split", "final", "--seed", "1",
                                       "--out", str(tmp_path / "b"), "--json"])
    assert refused.exit_code == 3
    assert json.loads(refused.stdout)["reasons"][0]["code"] == "bad_request"


def test_scorer_agreement_prints_one_document() -> None:
    """`scorer-agreement --json` prints one document with both comparisons; exit 0 iff pass."""
    result = CliRunner().invoke(app, ["scorer-agreement", "--n", "120", "--json"])
    doc = json.loads(result.stdout)
    assert {"hand", "generated", "pass", "thresholds"} <= set(doc)
    assert doc["generated"]["n"] == 120
    assert result.exit_code == (0 if doc["pass"] else 1)


def test_demo_stage_runs_for_real(tmp_path: Path) -> None:
    """The demo stage builds, evaluates two reference agents and reports real figures."""
    summary = demo_stage(tmp_path, as_json=True)
    assert summary["oracle_accuracy"] == 1.0
    assert summary["rung1_accuracy"] < 1.0
    assert summary["rung1_signature"]["rate"] >= 0.95
    assert summary["leak_scan_ok"] and summary["skin_pairs_mismatched"] == 0


def test_score_names_bad_lines(tmp_path: Path) -> None:
    """`score` on a file with a malformed line counts it invalid and names its line number."""
    bench, run = tmp_path / "bench", tmp_path / "run"
    _json(["build", "--split", "dev", "--worlds", "4", "--seed", "2", "--out", str(bench)])
    _json(["eval", "--bench", str(bench), "--agent", "reference:oracle", "--out", str(run)])
    lines = (run / "responses.jsonl").read_text().splitlines()
    responses = tmp_path / "mine.jsonl"
    responses.write_text("\n".join([lines[0], "not json", *lines[1:]]) + "\n")
    doc = _json(["score", "--bench", str(bench), "--responses", str(responses),
                 "--out", str(tmp_path / "scored")])
    assert doc["outcomes"]["invalid"] == 1
    assert doc["invalid_lines"][0]["line"] == 2
    assert "malformed JSON" in doc["invalid_lines"][0]["error"]
    human = CliRunner().invoke(app, ["score", "--bench", str(bench), "--responses",
                                     str(responses), "--out", str(tmp_path / "s2")])
    assert human.exit_code == 0 and "invalid line 2" in human.stdout
