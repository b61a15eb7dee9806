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
    (["mde", "--n", "150", "--sd", "0.1", "--tests", "4", "--clusters", "200"], "clusters"),
    (["mcnemar-n", "--effect", "0.3", "--discordance", "0.25"], "discordance")])
def test_bad_input_is_one_line_exit_1(args: list[str], needle: str) -> None:
    """K > N, clusters > n, discordance < effect: one clear line, exit 1."""
    assert needle in _error(args)


def test_bad_input_under_json_is_one_document() -> None:
    """Under --json an error is still one JSON document naming the field, with exit 1."""
    result = CliRunner().invoke(app, ["stats", "binom", "6", "5", "--json"])
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["ok"] is False and doc["error"] == "input_error"
    assert "(argument K)" in doc["message"]


def test_seeds_command_reports_all_matches() -> None:
    """`stats seeds --json` lists the nine seed figures, all matching."""
    doc = _json(["seeds"])
    assert len(doc) == 9 and all(f["match"] for f in doc.values())


_MDE = ["mde", "--n", "150", "--sd", "0.1", "--tests", "4"]
_MCN = ["mcnemar-n", "--effect", "0.1", "--discordance", "0.25"]


def _usage(args: list[str]) -> str:
    result = CliRunner().invoke(app, ["stats", *args])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    return lines[0]


@pytest.mark.parametrize("value", ["0", "-1", "1e-300", "0.5", "1", "1e308", "nan", "inf"])
@pytest.mark.parametrize("base", [_MDE, _MCN])
def test_bad_power_is_usage_error(base: list[str], value: str) -> None:
    """--power outside (0.5, 1), nan or inf is a one-line usage error naming --power, exit 2."""
    assert "--power" in _usage([*base, "--power", value])


@pytest.mark.parametrize(("args", "option"), [
    ([*_MDE, "--alpha", value], "--alpha") for value in ("0", "-1", "1", "nan", "inf")
] + [
    (["mde", "--n", n, "--sd", "0.1", "--tests", "4"], "--n") for n in ("0", "-3")
] + [
    (["mde", "--n", "150", "--sd", sd, "--tests", "4"], "--sd")
    for sd in ("0", "-0.4", "nan", "inf", "-inf")
] + [
    (["mde", "--n", "150", "--sd", "0.1", "--tests", t], "--tests") for t in ("0", "-1")
] + [
    ([*_MDE, "--clusters", c], "--clusters") for c in ("0", "-1")
] + [
    (["mcnemar-n", "--effect", e, "--discordance", "0.25"], "--effect")
    for e in ("0", "-0.1", "nan", "inf", "2")
] + [
    (["mcnemar-n", "--effect", "0.1", "--discordance", d], "--discordance")
    for d in ("0", "-1", "nan", "inf", "1.5")
] + [
    (["binom", "--", "-1", "5"], "'k'"), (["binom", "0", "0"], "'n'"),
    (["binom", "1", "--", "-5"], "'n'"), (["binom", "1", str(10**30)], "'n'"),
    (["binom", "1", "5", "--alpha", "nan"], "--alpha"),
])
def test_bad_option_values_are_usage_errors(args: list[str], option: str) -> None:
    """Zero, negative, nan, inf and out-of-range option values: one line naming it, exit 2."""
    assert option in _usage(args)


@pytest.mark.parametrize(("args", "needle"), [
    (["mcnemar-n", "--effect", "1e-300", "--discordance", "0.25"], "effect"),
    (["mde", "--n", "1", "--sd", "1e308", "--tests", "1"], "sd"),
    (["mde", "--n", "150", "--sd", "1e308", "--tests", "4", "--json"], "sd"),
])
def test_results_out_of_range_are_one_line_exit_1(args: list[str], needle: str) -> None:
    """A result no float can hold (tiny effect, huge SD or n) is one line naming the input."""
    result = CliRunner().invoke(app, ["stats", *args])
    assert result.exit_code == 1, result.output
    assert "internal error" not in result.output
    assert len(result.output.strip().splitlines()) == 1 or "--json" in args
    assert needle in result.output
