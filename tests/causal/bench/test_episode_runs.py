"""Tests for causal.bench.episode_runs: episodes through the runner and the real openai client on
loopback, every tool call logged, scoring on the evidence delivered, P2 vs premature commitment,
no oracle value in any tool reply, SIGKILL and resume."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from rungbench.agents.protocol import Request, Response, ToolCall
from rungbench.agents.spec import parse_agent
from rungbench.causal.bench.build import build_split
from rungbench.causal.bench.episode_runs import (
    paired_regret,
    run_agent,
    run_episodes,
    score_episode_run,
)
from rungbench.causal.bench.episode_tools import episode_cases
from rungbench.causal.bench.protocols import p2_comparison
from rungbench.causal.bench.records import EpisodeOracle
from rungbench.causal.bench.verified import bench_episodes, open_bench
from rungbench.evidence.canonical import digest
from rungbench.evidence.store import ObjectStore
from rungbench.execute.events import read_events
from rungbench.execute.runner import EVENTS, load_run

WORLDS = 20
"""Incident worlds of the small bench (issue 19 brief: "e.g. 20 incident worlds")."""


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 20-world dev bench of the incident family (diagnosis + experiment items)."""
    root = tmp_path_factory.mktemp("er") / "bench"
    build_split("dev", WORLDS, 3, root, None, families="incident")
    return root


@pytest.fixture(scope="module")
def runs(bench: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Both reference policies run through the loopback server and the openai client."""
    out = tmp_path_factory.mktemp("runs")
    return {p: run_policy(bench, out, p, families=frozenset({"root_cause_debugging"}))
            for p in ("p2_protocol", "premature_commitment")}


def _oracles(bench: Path) -> dict[str, EpisodeOracle]:
    return bench_episodes(open_bench(bench))[1]


NUMBER = re.compile(r"-?\d+\.\d+(?:[eE]-?\d+)?")


def leaked(text: str, private: set[float]) -> list[float]:
    """Numbers in ``text`` equal (to 1e-9, or as printed to 6 places) to a private value."""
    hits = []
    for m in NUMBER.finditer(text):
        x = float(m.group())
        if any(abs(x - v) < 1e-9 or (len(m.group().split(".")[1]) >= 4
                                     and abs(x - round(v, 6)) < 1e-6) for v in private):
            hits.append(x)
    return hits


def _public_numbers(record: dict[str, Any]) -> set[float]:
    return {float(m.group()) for m in NUMBER.finditer(json.dumps(record))} | {0.0, 1.0}


def test_the_leak_scan_finds_a_planted_value() -> None:
    """The scanner reports a private value printed in a reply (so a clean scan means something)."""
    assert leaked('{"x": 0.7345612}', {0.73456121}) == [0.7345612]
    assert leaked('{"cost": 1.25}', {0.73456121}) == []


def test_every_tool_reply_is_logged_and_none_carries_an_oracle_value(bench: Path, runs) -> None:
    """Each deciding attempt's tool_call count matches its tool_event, each stored reply
    matches its digest, and no reply prints an EIG, decision value or expected loss that
    the public case does not already state."""
    oracles = _oracles(bench)
    scanned = 0
    for result in runs.values():
        run_dir = Path(result["run"])
        _, schedule = load_run(run_dir)
        store = ObjectStore(run_dir)
        events = read_events(run_dir / EVENTS)
        calls = Counter((e["cell"], e["attempt"]) for e in events if e["kind"] == "tool_call")
        for e in events:
            if e["kind"] == "tool_event":
                assert calls[(e["cell"], e["attempt"])] == e["tool_calls"]
        for cell in schedule:
            cases, _ = episode_cases(cell.request)
            private: set[float] = set()
            public: set[float] = set()
            for c in cases:
                o = oracles[c.case_id]
                for block in (o.eig_bits, o.experiment_loss, o.expected_loss):
                    private |= set((block or {}).values())
                public |= _public_numbers(c.model_dump(mode="json"))
            secret = {v for v in private if not any(abs(v - p) < 1e-9 for p in public)}
            for e in events:
                if e["kind"] == "tool_call" and e["cell"] == cell.cell_id:
                    reply = store.get_json(e["result"])
                    assert digest(reply) == e["result_digest"]
                    assert leaked(json.dumps(reply), secret) == []
                    scanned += 1
    assert scanned > 4 * WORLDS


def test_p2_beats_premature_commitment_with_the_offline_sign(runs) -> None:
    """On 20 incident worlds, premature − P2 decision regret (episode, probe cost included)
    has the sign of the offline P2 comparison (3.34 → 0.15); the lucky rate is separate."""
    offline = p2_comparison(200, n_boot=200)
    assert offline["mean_regret_premature"] == pytest.approx(3.34, abs=0.01)
    assert offline["mean_regret_p2"] == pytest.approx(0.15, abs=0.01)
    pair = paired_regret(runs["premature_commitment"]["rows"], runs["p2_protocol"]["rows"],
                         n_boot=500)
    assert pair["n"] == 2 * WORLDS
    delta = pair["paired_difference"]
    assert delta["mean"] > 0 and delta["low"] > 0 and delta["n_clusters"] == WORLDS
    assert set(pair["lucky_rate"]) == {"a", "b"}
    fams = {p: r["scored"]["families"]["root_cause_debugging"] for p, r in runs.items()}
    assert fams["premature_commitment"]["mean_experiments"] == 0
    assert fams["p2_protocol"]["mean_experiments"] > 0
    assert fams["p2_protocol"]["mean_decision_regret"] < \
        fams["premature_commitment"]["mean_decision_regret"]


class _Blind:
    """Names the true cause at once, never reading telemetry (knows it from the oracle)."""

    name = "test:blind"

    def __init__(self, truth: dict[str, str]) -> None:
        self.truth = truth

    def respond(self, request: Request) -> Response:
        """Answer the true cause with its repair."""
        cause = self.truth[request.case_id]
        return Response(text=None, tool_calls=(ToolCall("submit_answer", json.dumps(
            {"status": "answer", "label": cause, "action": f"repair:{cause.split('+')[0]}"})),))


def test_an_agent_that_fetched_nothing_is_scored_on_the_outage_alone(
        bench: Path, tmp_path: Path) -> None:
    """Naming the true cause without reading telemetry is never ``correct`` where the outage
    alone leaves several causes, though the sealed record (full telemetry) would say so."""
    oracles = _oracles(bench)
    truth = {c: o.true_cause or "" for c, o in oracles.items()}
    _, _, rows = run_episodes(bench, tmp_path, _Blind(truth), worlds=6,
                              families=frozenset({"root_cause_debugging"}))
    diag = [r for r in rows if r["item_type"] == "diagnosis"]
    assert diag and all(r["evidence"]["telemetry_calls"] == 0 for r in diag)
    sealed_correct = [r for r in diag if len(oracles[r["case_id"]].identified_set or []) == 1]
    assert sealed_correct
    for r in diag:
        expected = "correct" if len(r["identified_set"]) == 1 else "lucky"
        assert r["verdict"]["outcome"] == expected
    assert any(r["verdict"]["outcome"] == "lucky" for r in sealed_correct)


CHILD = r"""
import sys
from pathlib import Path
from rungbench.agents.providers import serve_on_loopback
from rungbench.causal.bench import episode_runs as er
from rungbench.causal.bench.episode_agents import EpisodePolicyAgent

with serve_on_loopback(EpisodePolicyAgent("p2_protocol"), delay_s=0.05) as provider:
    er.run_episodes(Path(sys.argv[1]), Path(sys.argv[2]), provider,
                    worlds=8, families=frozenset({"root_cause_debugging"}))
"""


def run_policy(bench: Path, out: Path, policy: str, **options: Any) -> dict[str, Any]:
    """Episode policy ``policy`` served on loopback through :func:`run_agent`."""
    return run_agent(bench, out, parse_agent(f"reference:{policy}"), **options)


def test_sigkill_then_resume_loses_and_repeats_no_episode(bench: Path, tmp_path: Path) -> None:
    """kill -9 mid-run, resume: every episode has exactly one final, no deciding attempt's
    tool calls are duplicated, and the scores equal an uninterrupted run's."""
    out = tmp_path / "killed"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3] / "src")}
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(bench), str(out)], env=env)
    deadline = time.monotonic() + 60
    run_dir = None
    while time.monotonic() < deadline:
        logs = list(out.glob("runs/*/events.jsonl"))
        if logs and sum(b'"kind":"final"' in line for line in logs[0].read_bytes()
                        .splitlines()) >= 3:
            run_dir = logs[0].parent
            break
        time.sleep(0.02)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert run_dir is not None and child.returncode == -signal.SIGKILL
    before = {e["cell"] for e in read_events(run_dir / EVENTS) if e["kind"] == "final"}
    _, schedule = load_run(run_dir)
    assert 3 <= len(before) < len(schedule)
    resumed = run_policy(bench, out, "p2_protocol", resume=run_dir)
    events = read_events(run_dir / EVENTS)
    finals = Counter(e["cell"] for e in events if e["kind"] == "final")
    assert set(finals) == {c.cell_id for c in schedule} and set(finals.values()) == {1}
    sent_again = {e["cell"] for e in events if e["kind"] == "attempt"
                  and e["cell"] in before and e["attempt"] > 1}
    assert not sent_again
    fresh = run_policy(bench, tmp_path / "fresh", "p2_protocol", worlds=8,
                       families=frozenset({"root_cause_debugging"}))

    def key(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        return sorted((r["case_id"], r["verdict"]["outcome"], r.get("episode_regret"),
                       tuple(r["evidence"]["experiments"])) for r in rows)

    assert key(resumed["rows"]) == key(fresh["rows"])
    assert key(score_episode_run(run_dir, _oracles(bench))) == key(fresh["rows"])


class _Looper:
    """Reads the logs forever (never answers)."""

    name = "test:looper"

    def respond(self, request: Request) -> Response:
        """Call logs again."""
        return Response(text=None, tool_calls=(ToolCall("logs", "{}"),))


def test_an_episode_that_never_answers_scores_invalid_after_its_tool_budget(
        bench: Path, tmp_path: Path) -> None:
    """The tool budget ends the episode; its cases are invalid, naming how it ended."""
    _, summary, rows = run_episodes(bench, tmp_path, _Looper(), worlds=1,
                                    families=frozenset({"root_cause_debugging"}))
    assert rows and summary.cells == len(rows)
    for r in rows:
        assert r["verdict"]["outcome"] == "invalid"
        assert r["run_outcome"] != "answered" and r["evidence"]["telemetry_calls"] > 0


def test_a_zero_experiment_budget_refuses_every_probe(bench: Path, tmp_path: Path) -> None:
    """With budget 0 the P2 policy's checks are refused up front: it runs none, spends 0."""
    from rungbench.causal.bench.episode_agents import EpisodePolicyAgent

    run_dir, _, rows = run_episodes(bench, tmp_path, EpisodePolicyAgent("p2_protocol"),
                                    worlds=3, experiment_budget=0.0,
                                    families=frozenset({"root_cause_debugging"}))
    _, schedule = load_run(run_dir)
    assert all(episode_cases(c.request)[1] == 0.0 for c in schedule)
    assert rows and all(r["evidence"]["spent"] == 0 and not r["evidence"]["experiments"]
                        for r in rows)


def test_fabricating_agent_gets_mechanism_fabrication_and_nothing_else_new(
        bench: Path, runs: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    """The fabricating policy is p2_protocol plus a claimed link between two candidate faults
    (roots: no delivered path joins them). Every answer claiming it carries
    mechanism_fabrication, traced against the edges the episode delivered; its verdicts and
    its other labels are p2's, case for case; p2 itself never carries the label; and the
    published scored run keeps the label."""
    fab = run_policy(bench, tmp_path, "fabricating",
                     families=frozenset({"root_cause_debugging"}))
    p2 = {r["case_id"]: r for r in runs["p2_protocol"]["rows"]}
    claimed = [r for r in fab["rows"] if r.get("fabricated")]
    assert claimed
    for r in fab["rows"]:
        mine, theirs = r["labels"], p2[r["case_id"]]["labels"]
        assert r["verdict"]["outcome"] == p2[r["case_id"]]["verdict"]["outcome"]
        if r.get("fabricated"):
            assert mine[-1] == "mechanism_fabrication"
            assert mine[:-1] == [lb for lb in theirs if lb != "unexplained"]
        else:
            assert mine == theirs
    assert all("mechanism_fabrication" not in r["labels"] for r in p2.values())
    summary = json.loads((Path(fab["published"]) / "summary.json").read_text())
    assert summary["labels"]["mechanism_fabrication"] == len(claimed)
