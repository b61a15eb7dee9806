"""Tests for rungbench.causal.report (accuracy with intervals, tables, paired delta)."""

from __future__ import annotations

import pathlib

import pytest

from rungbench.causal.build import build_split
from rungbench.causal.evaluate import evaluate
from rungbench.causal.report import accuracy, build_report, to_markdown
from rungbench.stats import clopper_pearson


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pathlib.Path]:
    root = tmp_path_factory.mktemp("report")
    build_split("dev", 14, 9, root / "bench")
    out = {}
    for agent in ("oracle", "rung1", "always_abstain"):
        out[agent] = root / agent
        evaluate(root / "bench", f"reference:{agent}", out[agent])
    return out


def test_accuracy_uses_clopper_pearson() -> None:
    """accuracy() reports k/n with the stats package's Clopper–Pearson interval."""
    rows = [{"verdict": {"outcome": o}} for o in ["correct", "wrong", "correct_non_id", "abstain"]]
    a = accuracy(rows)
    assert (a["k"], a["n"], a["accuracy"]) == (2, 4, 0.5)
    assert a["ci95"] == list(clopper_pearson(2, 4))


def test_report_tables_match_outcomes(runs: dict[str, pathlib.Path]) -> None:
    """The identification table sums to n; the oracle is right everywhere; abstain is a cell."""
    rep = build_report(runs["oracle"])
    table = rep["identification"]
    assert sum(sum(r.values()) for r in table.values()) == rep["overall"]["n"]
    assert table["not_identifiable"]["correct_non_id"] > 0
    assert rep["overall"]["accuracy"] == 1.0
    assert build_report(runs["rung1"])["failure_labels"]["observation_intervention_confusion"] > 0
    abst = build_report(runs["always_abstain"])["identification"]
    assert sum(r["abstain"] for r in abst.values()) == rep["overall"]["n"]


def test_paired_delta_over_worlds(runs: dict[str, pathlib.Path]) -> None:
    """Oracle minus always-abstain is exactly +1 with a degenerate interval; rung1 is worse."""
    d = build_report(runs["oracle"], runs["always_abstain"])["paired"]["delta"]
    assert (d["mean"], d["low"], d["high"]) == (1.0, 1.0, 1.0)
    assert d["n_clusters"] == 14
    d2 = build_report(runs["rung1"], runs["oracle"])["paired"]["delta"]
    assert d2["mean"] < 0 and d2["excludes_zero"]


def test_markdown_has_every_section(runs: dict[str, pathlib.Path]) -> None:
    """The Markdown report holds family, rung, identification, calibration and paired sections."""
    md = to_markdown(build_report(runs["rung1"], runs["oracle"]))
    for heading in ("Accuracy by family", "Accuracy by rung", "Identification table",
                    "Calibration", "Failure labels", "Paired difference"):
        assert f"## {heading}" in md
