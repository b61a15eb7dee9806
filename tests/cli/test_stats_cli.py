"""`rungbench stats ...`: seed figures from the CLI, one JSON document, one-line errors."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from rungbench.cli import app


def _json(args: list[str]) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["stats", *args, "--json"])
    assert result.exit_code == 0, result.output
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def _error(args: list[str]) -> str:
    result = CliRunner().invoke(app, ["stats", *args])
    assert result.exit_code == 1
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    return lines[0]


@pytest.mark.parametrize(("k", "n", "bound", "printed", "digits"), [
    (0, 40, 1, 0.088, 3), (5, 5, 0, 0.48, 2), (2, 5, 0, 0.05, 2), (2, 5, 1, 0.85, 2)])
def test_binom_reproduces_seed_003_bounds(k: int, n: int, bound: int, printed: float,
                                          digits: int) -> None:
    """`stats binom` gives the seed 003 Clopper–Pearson bounds (8.8%, 48%, 5–85%)."""
    doc = _json(["binom", str(k), str(n)])
    assert round(doc["clopper_pearson"][bound], digits) == printed
    assert doc["wilson"][0] <= k / n <= doc["wilson"][1]


def test_binom_alpha_option_and_table() -> None:
    """--alpha changes the coverage; without --json a table names both intervals."""
    narrow = _json(["binom", "3", "10", "--alpha", "0.2"])["clopper_pearson"]
    wide = _json(["binom", "3", "10"])["clopper_pearson"]
    assert wide[0] < narrow[0] and narrow[1] < wide[1]
    result = CliRunner().invoke(app, ["stats", "binom", "2", "5"])
    assert result.exit_code == 0
    assert "Clopper–Pearson" in result.stdout and "Wilson" in result.stdout


@pytest.mark.parametrize(("sd", "clusters", "printed"), [
    ("0.10", None, 0.0273), ("0.40", None, 0.1091), ("0.10", "75", 0.0386),
    ("0.40", "75", 0.1542)])
def test_mde_reproduces_seed_000_envelope(sd: str, clusters: str | None, printed: float) -> None:
    """`stats mde --n 150 --sd SD --tests 4 [--clusters 75]` prints the seed 000 MDEs."""
    args = ["mde", "--n", "150", "--sd", sd, "--tests", "4", "--power", "0.8", "--alpha", "0.05"]
    doc = _json(args + (["--clusters", clusters] if clusters else []))
    assert round(doc["mde"], 4) == printed


def test_mcnemar_n_reproduces_seed_003() -> None:
    """`stats mcnemar-n --effect 0.1 --discordance 0.25` gives 194 (about 200) pairs."""
    doc = _json(["mcnemar-n", "--effect", "0.1", "--discordance", "0.25"])
    assert doc["n"] == 194
    result = CliRunner().invoke(app, ["stats", "mcnemar-n", "--effect", "0.1",
                                      "--discordance", "0.25"])
    assert result.exit_code == 0 and "194" in result.stdout


@pytest.mark.parametrize(("args", "needle"), [
    (["binom", "6", "5"], "k must not exceed n"),
    (["mde", "--n", "150", "--sd", "-0.4", "--tests", "4"], "sd"),
    (["mde", "--n", "150", "--sd", "0.1", "--tests", "4", "--clusters", "200"], "clusters"),
    (["mcnemar-n", "--effect", "0.3", "--discordance", "0.25"], "discordance")])
def test_bad_input_is_one_line_exit_1(args: list[str], needle: str) -> None:
    """K > N, negative SD, clusters > n, discordance < effect: one clear line, exit 1."""
    assert needle in _error(args)


def test_bad_input_under_json_is_one_document() -> None:
    """Under --json an error is still one JSON document naming the field, with exit 1."""
    result = CliRunner().invoke(app, ["stats", "binom", "6", "5", "--json"])
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["ok"] is False and doc["error"] == "input_error" and "'k'" in doc["message"]


def test_seeds_command_reports_all_matches() -> None:
    """`stats seeds --json` lists the nine seed figures, all matching."""
    doc = _json(["seeds"])
    assert len(doc) == 9 and all(f["match"] for f in doc.values())
