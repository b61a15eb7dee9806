"""Tests for causal.bench.decisions: question 3 from two episode runs on the same incidents —
planted best-repair vs wrong-repair agents, equal agents, missing prices, and every refusal
(different cases, unfinished, tampered, another bench)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from rungbench.agents.protocol import Request, Response, ToolCall
from rungbench.agents.providers import serve_on_loopback
from rungbench.agents.spec import Pricing
from rungbench.causal.bench.build import build_split
from rungbench.causal.bench.decisions import (
    DECISIONS_SCHEMA,
    decisions_document,
    read_run_repairs,
)
from rungbench.causal.bench.episode_agents import read_conversation
from rungbench.causal.bench.episode_runs import run_episodes
from rungbench.causal.bench.episode_tools import ANSWER, diagnosis_of
from rungbench.causal.bench.repair_outcomes import NO_PRICES, sandbox_success
from rungbench.causal.bench.verified import bench_episodes, open_bench
from rungbench.causal.instrument.weekly import answer_decisions
from rungbench.errors import IntegrityError, Refusal
from rungbench.execute.runner import EVENTS

FAMILY = frozenset({"root_cause_debugging"})
PRICES = Pricing(0.15, 0.60)


class RepairPicker:
    """A planted episode agent: reads logs and metrics, then repairs the fault of least
    (``best``) or greatest (``wrong``) expected loss under the delivered evidence."""

    def __init__(self, pick: str) -> None:
        self.pick = pick
        self.name = f"planted:{pick}_repair"

    def describe(self) -> dict[str, Any]:
        """The run-manifest description."""
        return {"kind": "planted", "name": self.name}

    def respond(self, request: Request) -> Response:
        """Telemetry tools first, then the answer."""
        seen = read_conversation(request.messages)
        view = seen.view
        assert view is not None
        missing = [t for t in view["tools"] if t not in seen.called]
        if missing:
            return Response(None, tuple(ToolCall(t, "{}") for t in missing))
        loss = diagnosis_of(view, seen.observed).expected_loss
        repairs = sorted(a for a in loss if a.startswith("repair:"))
        action = (min if self.pick == "best" else max)(repairs, key=lambda a: loss[a])
        fields = {"status": "answer", "label": action.removeprefix("repair:"),
                  "action": action, "confidence": 0.5}
        return Response(None, (ToolCall(ANSWER, json.dumps(fields, sort_keys=True)),))


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 12-world dev bench of the incident family."""
    root = tmp_path_factory.mktemp("dec") / "bench"
    build_split("dev", 12, 3, root, None, families="incident")
    return root


def planted_run(bench: Path, out: Path, pick: str, prices: Pricing | None = PRICES,
                **options: Any) -> Path:
    """An episode run of :class:`RepairPicker` through loopback and the openai client."""
    agent = RepairPicker(pick)
    with serve_on_loopback(agent, pricing=prices) as provider:
        run_dir, _, _ = run_episodes(bench, out, provider, families=FAMILY, **options)
    return run_dir


@pytest.fixture(scope="module")
def runs(bench: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """best, wrong, a second best (equal agent) and an unpriced best."""
    out = tmp_path_factory.mktemp("decruns")
    return {"best": planted_run(bench, out, "best"), "wrong": planted_run(bench, out, "wrong"),
            "best2": planted_run(bench, out, "best"),
            "unpriced": planted_run(bench, out, "best", prices=None)}


def test_best_repair_against_wrong_repair_answers_yes(bench: Path, runs: dict[str, Path]) -> None:
    """The planted best-repair agent lowers expected repair loss against the wrong-repair one:
    the loss reduction's interval is above 0, success per $ rises, and question 3 says yes."""
    doc = decisions_document(bench, runs["best"], runs["wrong"])
    assert doc["schema"] == DECISIONS_SCHEMA
    d = doc["paired"]["delta"]
    assert d["n"] == doc["n"] > 0 and d["n_clusters"] == 12
    assert d["high"] < 0  # a − b: loss reduction b − a has interval [-high, -low] above 0
    assert doc["success_rate_delta"]["low"] > 0
    spd = doc["success_per_usd"]["delta"]
    assert spd["low"] > 0 and doc["success_per_usd"]["a"] > doc["success_per_usd"]["b"]
    assert doc["cost"]["acceptable"] is True
    q = answer_decisions(doc)
    assert q["answer"] == "yes" and q["interval"] == [d["low"], d["high"]]


def test_equal_agents_are_inconclusive(bench: Path, runs: dict[str, Path]) -> None:
    """Two runs of the same agent: the loss delta is 0 with an interval touching 0."""
    doc = decisions_document(bench, runs["best"], runs["best2"])
    d = doc["paired"]["delta"]
    assert d["mean"] == 0 and d["low"] <= 0 <= d["high"]
    assert answer_decisions(doc)["answer"] == "inconclusive"


def test_missing_prices_are_refused_as_no_prices(bench: Path, runs: dict[str, Path]) -> None:
    """A run without registered prices gets no_prices for every dollar figure, and question 3
    cannot say yes (inconclusive: the cost is unknown), though the loss improved."""
    doc = decisions_document(bench, runs["unpriced"], runs["wrong"])
    assert doc["runs"]["a"]["outcomes"]["usd"] == NO_PRICES
    assert doc["runs"]["b"]["outcomes"]["usd"] > 0
    assert doc["success_per_usd"]["delta"] == NO_PRICES
    assert doc["cost"]["acceptable"] == NO_PRICES
    assert doc["paired"]["delta"]["high"] < 0
    q = answer_decisions(doc)
    assert q["answer"] == "inconclusive" and "no_prices" in q["why"]


def test_case_values_agree_with_the_oracle(bench: Path, runs: dict[str, Path]) -> None:
    """Each case's loss is the delivered oracle record's loss of its repair, and its success is
    the exact success of that repair under the sealed true cause."""
    repairs = read_run_repairs(bench, runs["wrong"])
    cases, oracles = bench_episodes(open_bench(bench))
    by_id = {c.case_id: c for c in cases}
    assert all(c.action.startswith("repair:") for c in repairs.cases)
    for c in repairs.cases:
        truth = oracles[c.case_id].true_cause
        assert truth is not None
        d = diagnosis_of(by_id[c.case_id].model_dump(mode="json"), {})
        assert c.success == sandbox_success(d.iw, truth, c.action)
    assert sum(c.success for c in repairs.cases) < len(repairs.cases)


def test_different_case_sets_are_refused(bench: Path, runs: dict[str, Path],
                                          tmp_path: Path) -> None:
    """A run over fewer worlds covers other incidents: refused naming the difference."""
    short = planted_run(bench, tmp_path, "best", worlds=6)
    with pytest.raises(Refusal, match=r"different_cases.*only in"):
        decisions_document(bench, short, runs["wrong"])


def test_an_unfinished_run_is_refused(bench: Path, tmp_path: Path,
                                      runs: dict[str, Path]) -> None:
    """A run stopped before every cell has a final is refused as unfinished."""
    partial = planted_run(bench, tmp_path, "best", max_cells=3)
    with pytest.raises(Refusal, match="unfinished"):
        decisions_document(bench, partial, runs["wrong"])


def test_a_tampered_run_is_refused(bench: Path, runs: dict[str, Path], tmp_path: Path) -> None:
    """An edited event log does not verify: IntegrityError naming the file and line."""
    copy = tmp_path / "copy"
    shutil.copytree(runs["best"], copy)
    lines = (copy / EVENTS).read_bytes().split(b"\n")
    at = next(i for i, ln in enumerate(lines) if b'"kind":"tool_event"' in ln)
    lines[at] = lines[at].replace(b'"tokens_in":', b'"tokens_in":1', 1)
    (copy / EVENTS).write_bytes(b"\n".join(lines))
    with pytest.raises(IntegrityError, match=r"events\.jsonl"):
        decisions_document(bench, copy, runs["wrong"])


def test_a_run_on_another_bench_is_refused(runs: dict[str, Path], tmp_path: Path) -> None:
    """Runs made on one bench, scored against another bench's cases: refused."""
    other = tmp_path / "other"
    build_split("dev", 4, 5, other, None, families="incident")
    with pytest.raises(Refusal, match="other_bench"):
        decisions_document(other, runs["best"], runs["wrong"])


def test_a_bench_without_episodes_is_refused(runs: dict[str, Path], tmp_path: Path) -> None:
    """A bench built without --families holds no incidents: refused ``no_episodes`` before
    any run is read (it was a KeyError on the missing cases.v2 file)."""
    plain = tmp_path / "plain"
    build_split("dev", 2, 5, plain, None)
    with pytest.raises(Refusal, match="no_episodes"):
        decisions_document(plain, runs["best"], runs["wrong"])
