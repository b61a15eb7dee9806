"""Planted arms through the real runner, the real loopback server and the real openai client."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from rungbench.agents.providers import serve_on_loopback
from rungbench.causal.ablations.analysis import ablation_report, paired_delta
from rungbench.causal.ablations.arms import load_matrix
from rungbench.causal.ablations.planted import planted_agent
from rungbench.causal.ablations.runs import ArmRun, run_arms
from rungbench.execute.events import read_events
from rungbench.execute.runner import verify_run

ARMS = ["A3", "A9", "A10", "A2", "A5"]


def _run(agent: str, bench: Path, out: Path) -> dict[str, ArmRun]:
    with serve_on_loopback(planted_agent(agent)) as provider:
        runs = run_arms(load_matrix(), ARMS, bench, out, provider, samples=1, per_world=3,
                        concurrency=8)
    return {r.arm: r for r in runs}


@pytest.fixture(scope="module")
def reader_runs(dev_bench: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, ArmRun]:
    """The information-only planted agent on five arms."""
    return _run("reader", dev_bench, tmp_path_factory.mktemp("reader"))


@pytest.fixture(scope="module")
def format_runs(dev_bench: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, ArmRun]:
    """The graph-format planted agent on five arms."""
    return _run("graph_only", dev_bench, tmp_path_factory.mktemp("graph_only"))


def _rows(runs: dict[str, ArmRun], arm: str) -> Sequence[dict[str, Any]]:
    return runs[arm].rows


def test_information_agent_graph_equals_text_and_facts_help(
        reader_runs: dict[str, ArmRun]) -> None:
    """Reader: A10 − A9 is exactly 0 and equivalent; A9 − A3 > 0 with an interval above 0."""
    same = paired_delta(_rows(reader_runs, "A10"), _rows(reader_runs, "A9"), "accuracy")
    assert same["mean"] == 0.0 and same["verdict"] == "equivalent"
    facts = paired_delta(_rows(reader_runs, "A9"), _rows(reader_runs, "A3"), "accuracy")
    assert facts["mean"] > 0.2 and facts["ci95"][0] > 0 and facts["verdict"] == "a_better"
    assert facts["n_worlds"] == 8


def test_format_agent_graph_beats_text(format_runs: dict[str, ArmRun]) -> None:
    """Graph-only agent: A10 − A9 > 0 (format), recovered with an interval above 0."""
    fmt = paired_delta(_rows(format_runs, "A10"), _rows(format_runs, "A9"), "accuracy")
    assert fmt["mean"] > 0.2 and fmt["ci95"][0] > 0 and fmt["verdict"] == "a_better"
    none = paired_delta(_rows(format_runs, "A9"), _rows(format_runs, "A3"), "accuracy")
    assert none["mean"] == 0.0


def test_every_tool_call_is_logged_and_evidence_recorded(reader_runs: dict[str, ArmRun]) -> None:
    """Each causal() call is a tool_call record with digests; rows record what was fetched."""
    run = reader_runs["A10"]
    assert verify_run(run.run_dir).ok
    events = read_events(run.run_dir / "events.jsonl")
    calls = [e for e in events if e["kind"] == "tool_call"]
    assert calls and all(e["tool"] == "causal" for e in calls)
    for e in calls:
        assert e["arguments_digest"].startswith("sha256:")
        assert e["result_digest"].startswith("sha256:") and e["latency_s"] >= 0
    finals = [e for e in events if e["kind"] == "tool_event"]
    multi = [e for e in finals if e["turns"] == 2]
    assert multi and all(e["tool_calls"] > 0 and e["stop"] == "answered" for e in multi)
    assert sum(r["tool_calls"] for r in run.rows) == len(calls)
    assert sum(r["edges_obtained"] for r in run.rows) > 0
    assert all(r["tool_calls"] == 0 for r in reader_runs["A9"].rows)


def test_production_graph_and_naive_query_cost_accuracy(reader_runs: dict[str, ArmRun]) -> None:
    """A thinned production graph (A5) and the naive query (A2) score below the oracle graph."""
    acc = {a: sum(r["right"] for r in reader_runs[a].rows) for a in ("A10", "A5", "A2")}
    assert acc["A10"] > acc["A5"] >= acc["A2"]
    wrong = sum(r["outcome"] == "wrong" for r in reader_runs["A2"].rows)
    assert wrong > 0


def test_report_answers_questions_with_intervals(format_runs: dict[str, ArmRun]) -> None:
    """The report's Q2 (graph vs text) is 'yes' for the format agent, with its interval."""
    report = ablation_report(load_matrix(), {a: r.rows for a, r in format_runs.items()})
    q2 = next(q for q in report["questions"] if q["id"] == "Q2")
    assert q2["answer"] == "yes" and q2["ci95"][0] > 0
    q1 = next(q for q in report["questions"] if q["id"] == "Q1")
    assert q1["answer"] == "inconclusive"  # A0 did not run
    assert {row["a"] + "-" + row["b"] for row in report["isolation"]} >= {"A10-A9", "A9-A3"}


def test_every_registered_arm_runs(dev_bench: Path, tmp_path: Path) -> None:
    """All twelve registered arms run through loopback; each run verifies and scores."""
    matrix = load_matrix()
    with serve_on_loopback(planted_agent("reader")) as provider:
        runs = run_arms(matrix, list(matrix.arms), dev_bench, tmp_path, provider, samples=1,
                        per_world=1, concurrency=8)
    assert [r.arm for r in runs] == list(matrix.arms)
    for r in runs:
        assert verify_run(r.run_dir).ok and len(r.rows) == 8
        assert r.summary.outcomes == {"answered": 8}
    report = ablation_report(matrix, {r.arm: r.rows for r in runs})
    assert len(report["isolation"]) == len(matrix.comparisons)


USER_ARMS = """
[design]
id = "user_arms"
version = 1
seed = "003_dc4fcca8b2a6b04f"
kind = "ablation_matrix"
[defaults]
samples = 1
items_per_world = 5
production_keep = 0.5
max_tool_calls = 12
max_tokens = 24000
[prompts]
causal = "Answer only by calling submit_answer."
[[arms]]
name = "G"
prompt = "causal"
facts = "graph"
content = "oracle"
query = "fixed"
tools = ["causal", "identify"]
[[arms]]
name = "G-identify"
prompt = "causal"
facts = "graph"
content = "oracle"
query = "fixed"
tools = ["causal"]
[[comparisons]]
a = "G"
b = "G-identify"
isolates = "identify() inside the oracle-graph arm"
"""


def test_user_arms_identify_tool_adds_value(dev_bench: Path, tmp_path: Path) -> None:
    """A user-written arm pair: identify() calls turn non-identifiable items right (delta > 0)."""
    (tmp_path / "arms.toml").write_text(USER_ARMS)
    matrix = load_matrix(tmp_path / "arms.toml")
    with serve_on_loopback(planted_agent("reader")) as provider:
        runs = {r.arm: r for r in run_arms(matrix, ["G", "G-identify"], dev_bench,
                                           tmp_path / "o", provider, concurrency=8)}
    used = {t for r in runs["G"].rows for t in r["tools_used"]}
    assert used == {"causal", "identify"}
    assert not any("identify" in r["tools_used"] for r in runs["G-identify"].rows)
    report = ablation_report(matrix, {a: r.rows for a, r in runs.items()})
    row = report["isolation"][0]
    assert row["mean"] > 0 and row["ci95"][1] > 0
    outcomes = {r["outcome"] for r in runs["G"].rows}
    assert "correct_non_id" in outcomes and "false_non_id" not in outcomes
