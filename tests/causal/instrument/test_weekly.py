"""The weekly report on a synthetic week whose counts are known by construction."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from rungbench.causal.instrument import claims, logger, weekly
from rungbench.causal.instrument.client import ClaimClient
from rungbench.errors import IntegrityError
from rungbench.evidence.database import connect

H = "sha256:" + "ab" * 32
WEEK = weekly.parse_window("2026-10-05")


class Week:
    """Appends events to a scratch store through the logger's own validation and appender."""

    def __init__(self, path: Path) -> None:
        self.db = sqlite3.connect(path, isolation_level=None)
        claims.create_store(self.db)
        self.app = claims.Appender(self.db)
        self.db.execute("BEGIN")

    def add(self, event: str, **fields: Any) -> None:
        self.app.append(event, claims.validate_event(event, fields), "2026-10-12T00:00:00Z")

    def close(self) -> None:
        self.db.execute("COMMIT")
        self.db.close()


    def opp(self, ep: str, seq: int, t: str) -> None:
        self.add("opportunity", episode_id=ep, seq=seq, t=t, detector_version="regex1+logreg1",
                 kind="why", text_span_hash=H)

    def call(self, ep: str, seq: int, tool: str) -> None:
        self.add("tool_call", episode_id=ep, seq=seq, tool=tool, args_hash=H, result_hash=H,
                 returned_edges=1, latency_ms=10, cost_usd=0.01)

    def claim(self, ep: str, t: str, status: str, evidence: bool, competing: bool) -> None:
        self.add("claim", claim_id=f"c{ep}", episode_id=ep, seq=5, t=t, author="piper",
                 rung="counterfactual", cause="swap", effect="oom", polarity="positive",
                 confidence=0.6, status=status, evidence_ids=["ev"] if evidence else [],
                 competing_ids=["alt"] if competing else [])

    def pred(self, ep: str, observed: str | None, resolver: str | None = None) -> None:
        self.add("prediction", pred_id=f"p{ep}", claim_id=f"c{ep}", episode_id=ep, seq=6,
                 action="restart swap daemon", predicted_effect="oom stops", p=0.8)
        if observed is not None and resolver is not None:
            self.add("resolution", pred_id=f"p{ep}", episode_id=ep, seq=20, executed=1,
                     observed_effect=observed, resolved_t="2026-10-11T00:00:00Z",
                     resolver=resolver)


class TargetWeek(Week):
    """The same events appended to a store at a path or a ``postgresql://`` URL."""

    def __init__(self, target: str) -> None:
        self.target = claims.open_target(target, create=True)
        self.app = claims.Appender(self.target)
        self.target.begin(write=True, lock=claims.TABLE_NAMES)

    def close(self) -> None:
        self.target.commit()
        self.target.close()


class SocketWeek(Week):
    """The same events sent through a real logger's socket."""

    def __init__(self, client: ClaimClient) -> None:
        self.client = client

    def add(self, event: str, **fields: Any) -> None:
        self.client.insert(event, fields)

    def close(self) -> None:
        pass


def build_week(w: Week) -> None:
    """20 opportunities, 5 routed, 10 claims, 7 old claims of which 5 resolved, 3 useful."""
    w.opp("e0", 0, "2026-09-28T09:00:00Z")  # previous week: outside every weekly count
    w.opp("e0", 10, "2026-09-28T09:05:00Z")
    w.claim("e0", "2026-09-28T09:00:00Z", "asserted", True, True)
    w.pred("e0", "oom stops", "telemetry")
    for i in range(1, 11):
        ep = f"e{i}"
        w.opp(ep, 0, "2026-10-05T08:00:00Z")
        w.opp(ep, 10, "2026-10-05T08:30:00Z")
        old = i <= 6
        w.claim(ep, "2026-10-05T00:00:00Z" if old else "2026-10-08T00:00:00Z",
                "hypothesis" if i >= 9 else "asserted", i <= 7, i <= 3)
    for i in range(1, 5):
        w.call(f"e{i}", 1, "causal")
    w.call("e5", 11, "causal")
    w.call("e6", 2, "graph")
    w.call("e7", 3, "logs")
    for ep, observed, resolver in [("e1", "oom stops", "telemetry"),
                                   ("e2", "oom stops", "sandbox"),
                                   ("e3", "oom continues", "operator"),
                                   ("e4", "oom stops", "telemetry"), ("e5", None, None),
                                   ("e7", "oom stops", "telemetry"),
                                   ("e9", "oom stops", "sandbox")]:
        w.pred(ep, observed, resolver)
    w.add("model_revision", rev_id="r4", claim_id="ce4", episode_id="e4", seq=30,
          old_status="asserted", new_status="retracted", trigger_evidence_id="ev9")
    w.add("experiment_proposed", exp_id="x1", episode_id="e1", seq=0, proposed_seq=0,
          discriminates=["ce1", "ce2"], predicted="swap high")
    w.add("experiment_executed", exp_id="x1", episode_id="e1", seq=1, executed_seq=1,
          observed="swap high")
    w.add("experiment_proposed", exp_id="x2", episode_id="e2", seq=0, proposed_seq=0,
          discriminates=["ce2"], predicted="disk full")
    w.add("experiment_executed", exp_id="x2", episode_id="e2", seq=7, executed_seq=7,
          observed="disk full")  # no tool event at seq 7: an intention, not an execution
    w.add("experiment_proposed", exp_id="x3", episode_id="e3", seq=0, proposed_seq=0,
          discriminates=["ce3", "ce4"], predicted="x")
    w.add("experiment_proposed", exp_id="x6", episode_id="e6", seq=0, proposed_seq=0,
          discriminates=["ce6", "ce7"], predicted="cache cold")
    w.add("experiment_executed", exp_id="x6", episode_id="e6", seq=2, executed_seq=2,
          observed="cache warm")
    w.close()


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "claims.sqlite"
    build_week(Week(path))
    return path


def test_weekly_numbers_match_the_construction(store: Path) -> None:
    """Routing, experiments, outcomes, useful conclusions and coverage equal the known counts."""
    doc = weekly.weekly_report(store, WEEK)
    cov = doc["coverage"]
    assert (doc["episodes"], cov["opportunities"], cov["routed"]) == (10, 20, 5)
    assert cov["routing_rate"]["rate"] == 0.25
    assert cov["graph_calls_diagnostic"] == 6
    ex = doc["experiments"]
    assert (ex["proposed"], ex["executed"], ex["executed_claimed_without_tool_event"]) == (4, 2, 1)
    assert (ex["discriminating"]["k"], ex["outcome_matched_prediction"]["k"]) == (3, 1)
    assert doc["predictions"] == {"n": 7, "as_predicted": 5, "not_as_predicted": 1,
                                  "unresolved": 1}
    useful = doc["useful_conclusions"]
    assert useful["claim_ids"] == ["ce1", "ce2", "ce7"]
    assert useful["per_100_opportunities"] == 15.0
    rc = doc["resolution_coverage"]
    assert (rc["k"], rc["n"]) == (5, 7)
    cs = doc["claim_support"]
    assert (cs["with_evidence_ids"]["k"], cs["competing_recorded"]["k"], cs["claims"]) == (7, 3, 10)
    assert cs["status"] == {"asserted": 7, "hypothesis": 2, "retracted": 1}
    assert doc["cost"]["tool_calls"] == 7 and doc["cost"]["usd_per_episode"] == 0.007


def test_unresolved_prediction_is_not_a_failure(store: Path) -> None:
    """The prediction without a resolver is counted unresolved, not as not-as-predicted."""
    doc = weekly.weekly_report(store, WEEK)
    assert doc["predictions"]["unresolved"] == 1 and doc["predictions"]["not_as_predicted"] == 1


def test_questions_are_inconclusive_without_runs(store: Path) -> None:
    """With no bench or sandbox runs, all three questions are inconclusive with no interval."""
    doc = weekly.weekly_report(store, WEEK)
    assert {q["answer"] for q in doc["questions"].values()} == {"inconclusive"}
    text = weekly.to_markdown(doc)
    for block in ("Bench", "Coverage", "Query reliability", "Claim support", "Experiments",
                  "Diagnosis and repair", "Revision and provenance", "Cost",
                  "Resolution coverage"):
        assert f"| {block} |" in text
    assert text.count("**inconclusive**") == 3 and len(text.splitlines()) < 40


def test_questions_follow_the_interval(store: Path) -> None:
    """An interval above 0 answers yes, below 0 no, straddling 0 inconclusive."""
    def paired(lo: float, hi: float) -> dict[str, Any]:
        return {"paired": {"delta": {"mean": (lo + hi) / 2, "low": lo, "high": hi, "n": 200}}}

    doc = weekly.weekly_report(store, WEEK, weekly.Inputs(
        bench=paired(0.02, 0.09), graph_vs_text=paired(-0.04, 0.03),
        decisions=paired(-0.3, -0.1)))
    q = doc["questions"]
    assert q["understands_causation_better"]["answer"] == "yes"
    assert q["understands_causation_better"]["interval"] == [0.02, 0.09]
    assert q["graph_tool_contributes"]["answer"] == "inconclusive"
    assert q["decisions_improve_at_acceptable_cost"]["answer"] == "yes"  # loss fell; 5/7 ≥ 0.5
    worse = weekly.weekly_report(store, WEEK, weekly.Inputs(bench=paired(-0.09, -0.01)))
    assert worse["questions"]["understands_causation_better"]["answer"] == "no"


def test_detector_caveat_reaches_the_report(store: Path) -> None:
    """A detector recall below 0.8 puts its caveat on the report."""
    doc = weekly.weekly_report(store, WEEK, weekly.Inputs(detector={
        "version": "v", "precision": 0.9, "recall": 0.7, "caveat": "recall 0.700 < 0.8"}))
    assert "recall 0.700 < 0.8" in doc["caveats"]


def test_broken_store_is_not_reported_on(store: Path) -> None:
    """An edited row makes the weekly report refuse (IntegrityError naming the row)."""
    db = sqlite3.connect(store)
    db.execute("DROP TRIGGER causal_claim_no_update")
    db.execute("UPDATE causal_claim SET status = 'asserted' WHERE claim_id = 'ce9'")
    db.commit()
    db.close()
    with pytest.raises(IntegrityError, match="causal_claim row 10 edited"):
        weekly.weekly_report(store, WEEK)


def test_weekly_report_on_both_backends(store_target: str) -> None:
    """The week appended to SQLite and to a real PostgreSQL server gives the same report
    (CLI `--db` takes the URL); a raw-SQL edit on either backend makes the report refuse."""
    build_week(TargetWeek(store_target))
    exe = str(Path(sys.executable).parent / "rungbench")
    r = subprocess.run([exe, "causal", "weekly-report", "--db", store_target,
                        "--week", "2026-10-05", "--json"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert (doc["coverage"]["routed"], doc["useful_conclusions"]["claim_ids"]) == (
        5, ["ce1", "ce2", "ce7"])
    assert (doc["resolution_coverage"]["k"], doc["resolution_coverage"]["n"]) == (5, 7)
    with connect(store_target) as db:
        on = " ON causal_claim" if db.dialect == "postgresql" else ""
        db.execute(f"DROP TRIGGER causal_claim_no_update{on}")
        db.execute("UPDATE causal_claim SET status = 'asserted' WHERE claim_id = 'ce9'")
    r = subprocess.run([exe, "causal", "weekly-report", "--db", store_target,
                        "--week", "2026-10-05"], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "causal_claim row 10 edited" in r.stderr
    assert "Traceback" not in r.stderr
    if "://" in store_target:  # the message names the database without its password
        assert store_target.split(":")[2].split("@")[0] not in r.stderr


def test_cli_report_on_a_week_sent_through_the_socket() -> None:
    """The same week sent through a real logger gives the same counts via `weekly-report`."""
    d = Path(tempfile.mkdtemp(prefix="rbw-", dir="/tmp"))
    config = logger.LoggerConfig(str(d / "s"), allow_root=True)
    try:
        with logger.running(config), ClaimClient(config.socket_path) as c:
            build_week(SocketWeek(c))
        exe = str(Path(sys.executable).parent / "rungbench")
        r = subprocess.run([exe, "causal", "weekly-report", "--db", str(config.db_path),
                            "--week", "2026-10-05", "--json"], capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        assert (doc["coverage"]["routed"], doc["useful_conclusions"]["count"]) == (5, 3)
        assert (doc["resolution_coverage"]["k"], doc["resolution_coverage"]["n"]) == (5, 7)
        assert doc["detector"]["recall"] < 0.8  # the blind set's recall qualifies coverage
        assert any("recall 0.333 < 0.8" in c for c in doc["caveats"])
        r = subprocess.run([exe, "causal", "weekly-report", "--db", str(config.db_path),
                            "--week", "2026-10-05"], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and "| Resolution coverage | 0.714 (5/7" in r.stdout
        r = subprocess.run([exe, "causal", "weekly-report", "--db", str(d / "none.sqlite"),
                            "--week", "2026-10-05"], capture_output=True, text=True, timeout=120)
        assert r.returncode == 1 and "no claim store" in r.stderr
        assert "Traceback" not in r.stderr
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _decisions(lo: float, hi: float, ratio: Any, acceptable: Any) -> dict[str, Any]:
    return {"schema": "rungbench.decisions/1",
            "paired": {"delta": {"mean": (lo + hi) / 2, "low": lo, "high": hi, "n": 40}},
            "success_per_usd": {"delta": {"mean": 5.0, "low": 1.0, "high": 9.0, "n": 40}},
            "cost": {"ceiling": 0.25, "ratio": ratio, "acceptable": acceptable}}


def test_question_3_gates_a_lower_loss_on_cost(store: Path) -> None:
    """From an endpoint document: lower loss within the cost ceiling is yes; over it, no;
    without prices, inconclusive (no_prices); a higher loss is no whatever it cost."""
    def q3(doc: dict[str, Any]) -> dict[str, Any]:
        report = weekly.weekly_report(store, WEEK, weekly.Inputs(decisions=doc))
        return dict(report["questions"]["decisions_improve_at_acceptable_cost"])

    ok = q3(_decisions(-2.0, -1.0, 1.1, True))
    assert ok["answer"] == "yes" and ok["interval"] == [-2.0, -1.0]
    assert ok["success_per_usd_delta"]["low"] == 1.0
    over = q3(_decisions(-2.0, -1.0, 1.4, False))
    assert over["answer"] == "no" and "ceiling" in over["why"]
    unpriced = q3(_decisions(-2.0, -1.0, "no_prices", "no_prices"))
    assert unpriced["answer"] == "inconclusive" and "no_prices" in unpriced["why"]
    assert q3(_decisions(0.5, 1.5, 0.9, True))["answer"] == "no"
    assert q3(_decisions(-0.5, 0.5, 0.9, True))["answer"] == "inconclusive"
    text = weekly.to_markdown(weekly.weekly_report(store, WEEK, weekly.Inputs(
        decisions=_decisions(-2.0, -1.0, 1.1, True))))
    assert "success per $ a − b +5.000" in text
