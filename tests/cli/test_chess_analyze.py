"""Tests of `chess analyze` through a Typer app built around its ``register``."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from typer.testing import CliRunner

from rungbench.chess.studies.cells import PromptAudit, write_cell_table
from rungbench.chess.studies.planted_tables import PlantedA105, a105_table
from rungbench.cli.chess_analyze import register
from rungbench.design.presets import factorial_design
from rungbench.evidence.canonical import digest

AUDIT = PromptAudit(digest=digest({"audit": 2}), blocks=4, stray_offsets=0,
                    length_mismatches=0, masked_token_leaks=0)


def app() -> typer.Typer:
    """A root app holding only ``analyze``."""
    root = typer.Typer()
    register(root)

    @root.callback()
    def _root() -> None:
        """Keep ``analyze`` a named sub-command."""

    return root


def write(tmp_path: Path, family: str = "ethereal") -> Path:
    """A planted board-limited cell table on disk."""
    header, rows = a105_table({"luna": PlantedA105("board_limited"),
                               "deepseek-v4-flash": PlantedA105("null")}, positions=40,
                              games=20, seed=4, design_digest=factorial_design().digest,
                              prompt_audit=AUDIT, evaluator_family=family)
    path = tmp_path / "cells.jsonl"
    write_cell_table(path, header, rows)
    return path


def test_json_mode_prints_one_document_with_claims(tmp_path: Path) -> None:
    """--json prints one document: ok, the table digest and a verdict per model × factor."""
    result = CliRunner().invoke(app(), ["analyze", str(write(tmp_path)), "--json",
                                        "--n-boot", "300"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["ok"] and doc["table"].startswith("sha256:")
    assert {(c["model"], c["factor"]) for c in doc["a105"]["claims"]} == {
        (m, f) for m in ("luna", "deepseek-v4-flash") for f in ("board", "legal_list")}


def test_markdown_mode_prints_the_section(tmp_path: Path) -> None:
    """Without --json the Markdown section with the claims heading is printed."""
    result = CliRunner().invoke(app(), ["analyze", str(write(tmp_path)), "--n-boot", "300"])
    assert result.exit_code == 0, result.output
    assert "## A105 analysis" in result.stdout and "### Claims" in result.stdout


def test_same_family_refusal_exits_three_and_proxy_is_accepted(tmp_path: Path) -> None:
    """A labeller-family evaluation exits 3 with its code; --proxy stockfish runs it."""
    path = write(tmp_path, family="stockfish")
    refused = CliRunner().invoke(app(), ["analyze", str(path), "--json", "--n-boot", "300"])
    assert refused.exit_code == 3
    assert json.loads(refused.stdout)["reasons"][0]["code"] == "evaluator_same_family"
    ok = CliRunner().invoke(app(), ["analyze", str(path), "--json", "--n-boot", "300",
                                    "--proxy", "stockfish"])
    assert ok.exit_code == 0 and "internal proxy" in json.loads(ok.stdout)["role"]


def test_usage_and_input_errors_exit_two_and_one(tmp_path: Path) -> None:
    """A bad --proxy value is a usage error (2); a malformed file is one line, exit 1."""
    path = write(tmp_path)
    assert CliRunner().invoke(app(), ["analyze", str(path), "--proxy", "toga"]).exit_code == 2
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    result = CliRunner().invoke(app(), ["analyze", str(bad), "--json"])
    assert result.exit_code == 1 and json.loads(result.stdout)["error"] == "input_error"
    missing = CliRunner().invoke(app(), ["analyze", str(tmp_path / "none.jsonl")])
    assert missing.exit_code == 1 and "Traceback" not in missing.output


def test_out_publishes_a_sealed_directory_and_refuses_to_overwrite(tmp_path: Path) -> None:
    """--out seals analysis.json + analysis.md; a second run without --force exits 3."""
    from rungbench.chess.studies.analysis_report import ANALYSIS_KIND
    from rungbench.evidence.sealed import verify_sealed

    path, out = write(tmp_path), tmp_path / "analysis"
    args = ["analyze", str(path), "--n-boot", "300", "--json", "--out", str(out)]
    first = CliRunner().invoke(app(), args)
    assert first.exit_code == 0, first.output
    seal = verify_sealed(out, kind=ANALYSIS_KIND)
    assert {"analysis.json", "analysis.md"} <= {e["path"] for e in seal["files"]}
    assert json.loads((out / "analysis.json").read_text())["table"] == \
        json.loads(first.stdout)["table"]
    assert CliRunner().invoke(app(), args).exit_code == 3
    assert CliRunner().invoke(app(), [*args, "--force"]).exit_code == 0
