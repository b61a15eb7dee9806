"""Preregistration: pilot, commit, one look per candidate, retirement, contamination."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

import pytest

from rungbench.agents.protocol import Request, Response, ToolCall
from rungbench.agents.providers import serve_on_loopback
from rungbench.causal.ablations import prereg
from rungbench.causal.ablations.arms import load_matrix
from rungbench.causal.ablations.planted import planted_agent
from rungbench.causal.bench.verified import CASES, open_bench
from rungbench.errors import Refusal
from rungbench.execute.events import EventLog

T0 = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)


def _at(t: dt.datetime) -> prereg.Now:
    return lambda: t


@pytest.fixture(scope="module")
def committed(dev_bench: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A preregistration with its pilot run (A0, A2, A9 × 2 samples) and committed margins."""
    root = tmp_path_factory.mktemp("prereg") / "p"
    with serve_on_loopback(planted_agent("reader")) as agent:
        pilot = prereg.pilot(root, load_matrix(), dev_bench, agent, per_world=3, concurrency=8,
                              now=_at(T0))
    assert pilot["cells"] == 3 * 8 * 3 * 2
    assert pilot["arms"]["A9"]["accuracy"]["mean"] > pilot["arms"]["A0"]["accuracy"]["mean"]
    assert pilot["pairs"]["A2-A9:accuracy"]["discordance"] > 0
    prereg.commit(root, load_matrix(), now=_at(T0))
    return root


def _copy(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


def _refusal(exc: pytest.ExceptionInfo[Refusal]) -> str:
    return exc.value.reasons[0].code


def test_commit_writes_frozen_margins_from_seed_defaults(committed: Path) -> None:
    """margins.json is read-only, pins the analysis digest and the seed's starting margins."""
    margins = json.loads((committed / "margins.json").read_text())
    assert oct((committed / "margins.json").stat().st_mode)[-3:] == "444"
    assert margins["analysis_digest"] == prereg.analysis_digest()
    aid = margins["candidates"]["reasoning_aid"]
    assert aid["useful_effect"] == 0.08
    assert margins["equivalence_margin"] is None  # none given at commit: none assumed
    assert aid["guardrails"]["false_non_id"]["max_increase"] == 0.03
    assert margins["cohort"] == {"max_looks": 20, "max_age_days": 30}
    with pytest.raises(Refusal) as exc:
        prereg.commit(committed, load_matrix())
    assert _refusal(exc) == "already_committed"


def test_validate_once_then_already_seen(committed: Path, validation_bench: Path,
                                         tmp_path: Path) -> None:
    """A candidate's first look runs and judges; a second look at the cohort refuses."""
    root = _copy(committed, tmp_path / "p")
    with serve_on_loopback(planted_agent("reader")) as agent:
        out = prereg.validate(root, load_matrix(), "A10", validation_bench, agent,
                              comparator="A5", kind="graph_routing", concurrency=8, now=_at(T0))
        assert out["decision"] == "accept" and out["primary"]["ci95"][0] > 0
        assert out["contamination"] == {"hits": 0, "by_kind": {}} and out["look"] == 1
        assert "rows" not in json.dumps(out) and "case_id" not in json.dumps(out)
        with pytest.raises(Refusal) as exc:
            prereg.validate(root, load_matrix(), "A10", validation_bench, agent,
                            comparator="A5", kind="graph_routing", concurrency=8, now=_at(T0))
    assert _refusal(exc) == "already_seen"


def test_changed_margins_refuse(committed: Path, validation_bench: Path, tmp_path: Path) -> None:
    """Editing margins.json after the commit refuses every validation (margins_changed)."""
    root = _copy(committed, tmp_path / "p")
    path = root / "margins.json"
    os.chmod(path, 0o644)
    doc = json.loads(path.read_text())
    doc["candidates"]["graph_routing"]["useful_effect"] = 0.0
    path.write_text(json.dumps(doc))
    with serve_on_loopback(planted_agent("reader")) as agent, pytest.raises(Refusal) as exc:
        prereg.validate(root, load_matrix(), "A10", validation_bench, agent, kind="graph_routing")
    assert _refusal(exc) == "margins_changed"


def _fake_looks(root: Path, cohort: str, n: int, at: dt.datetime) -> None:
    log = EventLog(root / "ledger.jsonl")
    for i in range(n):
        log.append({"kind": "look", "cohort": cohort, "candidate": f"X{i}",
                    "arm_digest": f"sha256:{i:064x}", "look": i + 1, "at": at.isoformat()})


def test_cohort_retires_after_twenty_looks(committed: Path, validation_bench: Path,
                                           tmp_path: Path) -> None:
    """After 20 candidate evaluations the cohort refuses (cohort_retired) and stays retired."""
    root = _copy(committed, tmp_path / "p")
    cohort = open_bench(validation_bench).digests[CASES]
    _fake_looks(root, cohort, 20, T0)
    with serve_on_loopback(planted_agent("reader")) as agent:
        for _ in range(2):
            with pytest.raises(Refusal) as exc:
                prereg.validate(root, load_matrix(), "A10", validation_bench, agent,
                                kind="graph_routing", concurrency=8, now=_at(T0))
            assert _refusal(exc) == "cohort_retired"
    kinds = [r["kind"] for r in EventLog(root / "ledger.jsonl").read()]
    assert kinds.count("retire") == 1


def test_cohort_retires_after_one_month(committed: Path, validation_bench: Path,
                                        tmp_path: Path) -> None:
    """A cohort whose first look is more than 30 days old refuses new candidates."""
    root = _copy(committed, tmp_path / "p")
    cohort = open_bench(validation_bench).digests[CASES]
    _fake_looks(root, cohort, 1, T0)
    with serve_on_loopback(planted_agent("reader")) as agent, pytest.raises(Refusal) as exc:
        prereg.validate(root, load_matrix(), "A10", validation_bench, agent,
                        kind="graph_routing", now=_at(T0 + dt.timedelta(days=31)))
    assert _refusal(exc) == "cohort_retired"


class Leaky:
    """The reader agent, except that it echoes a validation world id in every claim."""

    name = "planted:leaky"

    def __init__(self, world_id: str) -> None:
        self.inner = planted_agent("reader")
        self.world_id = world_id

    def respond(self, request: Request) -> Response:
        reply = self.inner.respond(request)
        call = reply.tool_calls[0]
        if call.name != "submit_answer":
            return reply
        fields: dict[str, Any] = json.loads(call.arguments)
        fields["claim_text"] = f"as in world {self.world_id}"
        return Response(None, (ToolCall("submit_answer", json.dumps(fields)),))


def test_planted_leak_retires_cohort(committed: Path, validation_bench: Path,
                                     tmp_path: Path) -> None:
    """A validation world id echoed in a response is a hit; the cohort is then retired."""
    root = _copy(committed, tmp_path / "p")
    world = json.loads((validation_bench / "public/manifest.json").read_text())["world_ids"][0]
    with serve_on_loopback(Leaky(world)) as agent:
        out = prereg.validate(root, load_matrix(), "A10", validation_bench, agent,
                              comparator="A9", kind="graph_routing", concurrency=8, now=_at(T0))
        assert out["cohort_retired"] and out["contamination"]["by_kind"]["world_id"] > 0
        assert world not in json.dumps(out)
        with pytest.raises(Refusal) as exc:
            prereg.validate(root, load_matrix(), "A5", validation_bench, agent,
                            kind="graph_routing", concurrency=8, now=_at(T0))
    assert _refusal(exc) == "cohort_retired"
    hits = (root / "private" / "hits.jsonl").read_text()
    assert world in hits and oct((root / "private" / "hits.jsonl").stat().st_mode)[-3:] == "600"


def test_final_test_needs_test_split_and_runs_once_per_release(
        committed: Path, validation_bench: Path, tmp_path: Path) -> None:
    """The final test refuses a non-test bench (not_held_out)."""
    root = _copy(committed, tmp_path / "p")
    with serve_on_loopback(planted_agent("reader")) as agent, pytest.raises(Refusal) as exc:
        prereg.validate(root, load_matrix(), "A10", validation_bench, agent,
                        kind="graph_routing", final_release="r1")
    assert _refusal(exc) == "not_held_out"


def test_validate_before_commit_refuses(tmp_path: Path, validation_bench: Path) -> None:
    """No committed margins: validation refuses (not_committed); commit needs a pilot."""
    with pytest.raises(Refusal) as exc:
        prereg.commit(tmp_path / "p", load_matrix())
    assert _refusal(exc) == "no_pilot"
    with serve_on_loopback(planted_agent("reader")) as agent, pytest.raises(Refusal) as exc:
        prereg.validate(tmp_path / "p", load_matrix(), "A10", validation_bench, agent)
    assert _refusal(exc) == "not_committed"


def test_final_test_runs_once_per_release(committed: Path, tmp_path: Path) -> None:
    """A fresh test split takes one final test per release; a reused bench is not fresh. Its
    3 worlds give 15 cells per arm, below the registered floor of 20 valid answers, so the
    look decides nothing (insufficient_valid_answers) — and still counts."""
    from rungbench.causal.bench.build import build_split

    bench = tmp_path / "test"
    build_split("test", 3, 99, bench)
    root = _copy(committed, tmp_path / "p")
    with serve_on_loopback(planted_agent("reader")) as agent:
        out = prereg.validate(root, load_matrix(), "A10", bench, agent, comparator="A5",
                              kind="graph_routing", final_release="r1", concurrency=8,
                              now=_at(T0))
        assert out["final_release"] == "r1"
        assert out["decision"] == out["primary"]["verdict"] == "insufficient_valid_answers"
        assert out["primary"]["valid"] == {"candidate": {"valid": 15, "total": 15},
                                           "comparator": {"valid": 15, "total": 15}}
        with pytest.raises(Refusal) as exc:
            prereg.validate(root, load_matrix(), "A11", bench, agent, comparator="A5",
                            kind="graph_routing", final_release="r1", now=_at(T0))
        assert _refusal(exc) == "already_seen"
        with pytest.raises(Refusal) as exc:
            prereg.validate(root, load_matrix(), "A11", bench, agent, comparator="A5",
                            kind="graph_routing", final_release="r2", now=_at(T0))
        assert _refusal(exc) == "not_held_out"


def test_commit_records_the_equivalence_margin_given(committed: Path, tmp_path: Path) -> None:
    """An equivalence margin given at commit is frozen in margins.json and read back; one
    outside (0, 1) is refused naming the field."""
    from rungbench.errors import InputError

    root = tmp_path / "p"
    _copy(committed / "pilot", root / "pilot")
    pilot = next(r for r in EventLog(committed / "ledger.jsonl").read() if r["kind"] == "pilot")
    EventLog(root / "ledger.jsonl").append({k: pilot[k] for k in ("kind", "digest", "at")})
    with pytest.raises(InputError) as exc:
        prereg.commit(root, load_matrix(), equivalence_margin=1.5, now=_at(T0))
    assert exc.value.field == "equivalence_margin"
    prereg.commit(root, load_matrix(), equivalence_margin=0.02, now=_at(T0))
    margins, _ = prereg.committed_margins(root)
    assert prereg.committed_equivalence(margins) == 0.02
