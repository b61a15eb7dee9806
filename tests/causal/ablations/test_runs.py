"""Planted arms through the real runner, the real loopback server and the real openai client."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

from rungbench.agents.providers import serve_on_loopback
from rungbench.causal.ablations.analysis import ablation_report, paired_delta
from rungbench.causal.ablations.arms import load_matrix
from rungbench.causal.ablations.facts import arm_rows, world_edges
from rungbench.causal.ablations.planted import planted_agent
from rungbench.causal.ablations.runs import ArmRun, run_arms
from rungbench.causal.bench.verified import bench_cases, bench_oracles, open_bench
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
    """Reader: A10 − A9 is exactly 0 — equivalent inside a committed 0.03 margin, inconclusive
    without one; A9 − A3 > 0 with an interval above 0."""
    same = paired_delta(_rows(reader_runs, "A10"), _rows(reader_runs, "A9"), "accuracy",
                        margin=0.03)
    assert same["mean"] == 0.0 and same["verdict"] == "equivalent"
    bare = paired_delta(_rows(reader_runs, "A10"), _rows(reader_runs, "A9"), "accuracy",
                        margin=None)
    assert bare["verdict"] == "inconclusive"
    facts = paired_delta(_rows(reader_runs, "A9"), _rows(reader_runs, "A3"), "accuracy",
                         margin=None)
    assert facts["mean"] > 0.2 and facts["ci95"][0] > 0 and facts["verdict"] == "a_better"
    assert facts["n_worlds"] == 8


def test_format_agent_graph_beats_text(format_runs: dict[str, ArmRun]) -> None:
    """Graph-only agent: A10 − A9 > 0 (format), recovered with an interval above 0."""
    fmt = paired_delta(_rows(format_runs, "A10"), _rows(format_runs, "A9"), "accuracy",
                       margin=None)
    assert fmt["mean"] > 0.2 and fmt["ci95"][0] > 0 and fmt["verdict"] == "a_better"
    none = paired_delta(_rows(format_runs, "A9"), _rows(format_runs, "A3"), "accuracy",
                        margin=None)
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
    """All sixteen registered arms (A4, A6, A7, A8 among them) run through loopback; each run
    verifies and scores; with 8 cells per arm, below the registered floor of 20 valid answers,
    every comparison says insufficient_valid_answers."""
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
    assert {r["verdict"] for r in report["isolation"]} == {"insufficient_valid_answers"}


@pytest.fixture(scope="module")
def wide_bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sealed 24-world dev bench (seed 5): enough worlds for a one-item effect to show."""
    from rungbench.causal.bench.build import build_split

    out = tmp_path_factory.mktemp("wide") / "dev"
    build_split("dev", 24, 5, out)
    return out


_POINT = re.compile(r"(?:if|Had) (\w+)=[01] (?:had been set|been forced), "
                    r"(?:how likely is (\w+)=[01]\?|what is P\((\w+)=[01]\)\?)")


def _planted_size(bench: Path, rows: Sequence[dict[str, Any]]) -> int:
    """Cells the counterfactual module must turn right, counted from the bench alone: rung-3
    point items the oracle marks not identifiable whose outcome lies downstream of the
    treatment in A2's production graph (association rows included: A2's store is untyped)."""
    opened = open_bench(bench)
    cases = {c.case_id: c for c in bench_cases(opened)}
    oracles = bench_oracles(opened)
    edges = world_edges(cases.values())
    arm = load_matrix().arm("A2")
    count = 0
    for row in rows:
        case = cases[row["case_id"]]
        found = _POINT.search(case.question)
        if found is None or oracles[case.case_id].identifiable:
            continue
        held = arm_rows(edges.get((case.world_id, case.skin), ()), case.world_id, arm.content,
                        arm.production_keep, arm.production_associations, False)
        g = nx.DiGraph([(a, b) for a, b, _ in held])
        t, y = found.group(1), found.group(2) or found.group(3)
        count += t in g and y in g and nx.has_path(g, t, y)
    return count


def test_counterfactual_module_effect_is_detected_with_its_sign_and_size(
        wide_bench: Path, tmp_path: Path) -> None:
    """planted:counterfactual declines point-valued rung-3 items only through the module:
    A2 − A4 equals the planted size counted from the bench (k cells of n), is above 0 with a
    world-cluster interval above 0; A4 never declines."""
    matrix = load_matrix()
    with serve_on_loopback(planted_agent("counterfactual")) as provider:
        runs = {r.arm: r for r in run_arms(matrix, ["A2", "A4"], wide_bench, tmp_path,
                                           provider, samples=1, per_world=4, concurrency=8)}
    report = ablation_report(matrix, {a: r.rows for a, r in runs.items()})
    row = next(r for r in report["isolation"] if (r["a"], r["b"]) == ("A2", "A4"))
    k = _planted_size(wide_bench, runs["A2"].rows)
    assert k >= 5 and row["n"] == 96
    assert row["mean"] == pytest.approx(k / 96) and row["ci95"][0] > 0
    assert row["verdict"] == "a_better"
    assert sum(r["outcome"] == "correct_non_id" for r in runs["A2"].rows) == k
    assert not any(r["outcome"] == "correct_non_id" for r in runs["A4"].rows)
    assert "counterfactual" in {t for r in runs["A2"].rows for t in r["tools_used"]}


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
production_associations = 0.5
max_tool_calls = 12
max_tokens = 24000
[analysis]
min_valid_answers = 10
min_valid_share = 0.5
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
