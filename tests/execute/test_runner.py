"""The resumable cell runner with in-process agents."""

from __future__ import annotations

import copy
import dataclasses
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from rungbench.agents.outcomes import CallFailure, Outcome
from rungbench.agents.protocol import Request, Response, ToolCall
from rungbench.chess.reference_agents import RandomMover, move_choice_request, validate_move
from rungbench.errors import IntegrityError, Refusal
from rungbench.execute.events import CHAIN, chained_lines, read_events
from rungbench.execute.policy import RetryPolicy
from rungbench.execute.runner import create_run, describe_agent, execute_run, verify_run
from rungbench.execute.schedule import Schedule

FENS = [
    "r5k1/pp3p1p/2b2qp1/3pr3/8/4P2P/R1PN1PP1/Q3K2R w K - 0 19",
    "1r6/1PN5/3p4/4kpp1/1R6/P3n3/K1P5/8 b - - 0 49",
    "8/8/8/4k3/8/8/4P3/4K3 w - - 0 1",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
]


def _schedule(n: int) -> Schedule:
    return Schedule.of(
        "chess.move_choice/1",
        "test",
        [move_choice_request(f"c{i:03d}", FENS[i % len(FENS)]) for i in range(n)],
    )


class Scripted:
    """Counts calls per cell; fails a cell's first calls as told, then plays randomly."""

    def __init__(self, failures: dict[str, list[Any]] | None = None) -> None:
        self.name = "scripted-test"
        self.failures = failures or {}
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()

    def respond(self, request: Request) -> Response:
        with self._lock:
            index = self.calls[request.case_id]
            self.calls[request.case_id] += 1
        plan = self.failures.get(request.case_id, [])
        if index < len(plan):
            step = plan[index]
            if isinstance(step, Response):
                return step
            raise CallFailure(step, f"injected {step.value}", retry_after=None)
        return RandomMover(seed=1).respond(request)


def _run(tmp_path: Path, agent: Scripted, n: int = 6, **kwargs: Any) -> tuple[Path, Any]:
    policy = kwargs.pop("policy", RetryPolicy(max_attempts=3, backoff_s=(0.0,)))
    run_dir = create_run(tmp_path, _schedule(n), describe_agent(agent), policy=policy)
    return run_dir, execute_run(run_dir, agent, validator=validate_move, **kwargs)


def _rewrite(run_dir: Path, records: list[dict[str, Any]]) -> None:
    """Write ``records`` as the run's log with a recomputed chain (a forger's rewrite)."""
    bare = [{k: v for k, v in r.items() if k != CHAIN} for r in records]
    (run_dir / "events.jsonl").write_bytes(chained_lines(bare)[0])


def _events(run_dir: Path, kind: str) -> list[dict[str, Any]]:
    return [e for e in read_events(run_dir / "events.jsonl") if e["kind"] == kind]


def test_every_cell_gets_one_final_and_one_tool_event_per_call(tmp_path: Path) -> None:
    """A clean run: one attempt, one tool_event and one final per cell, all answered."""
    agent = Scripted()
    run_dir, summary = _run(tmp_path, agent, n=6)
    assert summary.outcomes == {"answered": 6} and summary.sent == 6
    assert len(_events(run_dir, "attempt")) == len(_events(run_dir, "tool_event")) == 6
    assert verify_run(run_dir).ok
    for event in _events(run_dir, "tool_event"):
        assert {"tokens_in", "tokens_out", "cost_usd", "latency_s"} <= set(event)


def test_reliability_failures_are_retried_in_the_same_cell(tmp_path: Path) -> None:
    """A 500 then a timeout are retried with the identical request digest until answered."""
    agent = Scripted({"c001": [Outcome.PROVIDER_ERROR, Outcome.TIMEOUT]})
    run_dir, summary = _run(tmp_path, agent, n=3)
    attempts = [e for e in _events(run_dir, "attempt") if e["cell"] == "c001"]
    assert [e["attempt"] for e in attempts] == [1, 2, 3]
    assert len({e["request_digest"] for e in attempts}) == 1
    outcomes = [e["outcome"] for e in _events(run_dir, "tool_event") if e["cell"] == "c001"]
    assert outcomes == ["provider_error", "timeout", "answered"]
    assert summary.outcomes == {"answered": 3}


def test_retry_limit_leaves_the_cell_unresolved_and_resume_retries_it(tmp_path: Path) -> None:
    """A cell failing every attempt of a session gets no final (unresolved, counted); the
    next resume retries it within the per-session limit and can finish it."""
    agent = Scripted({"c000": [Outcome.NETWORK_ERROR] * 5})
    run_dir, summary = _run(tmp_path, agent, n=2)
    assert agent.calls["c000"] == 3
    assert not [e for e in _events(run_dir, "final") if e["cell"] == "c000"]
    assert summary.outcomes == {"answered": 1}
    assert (summary.unresolved, summary.unresolved_outcomes) == (1, {"network_error": 1})
    assert verify_run(run_dir).problems == (
        "cell 'c000': no final outcome (last network_error after 3 attempts)",)
    second = execute_run(run_dir, agent, validator=validate_move)
    assert agent.calls["c000"] == 6 and second.sent == 3
    assert second.outcomes == {"answered": 2} and verify_run(run_dir).ok


def test_model_failures_are_final_at_once(tmp_path: Path) -> None:
    """Malformed, refused and illegal answers are never re-asked."""
    garbage = Response(text=None, tool_calls=(ToolCall("submit_move", "{bad"),))
    refused = Response(text="no", refusal="no")
    illegal = Response(text=None, tool_calls=(ToolCall("submit_move", '{"move":"a1a8"}'),))
    agent = Scripted({"c000": [garbage], "c001": [refused], "c002": [illegal]})
    _, summary = _run(tmp_path, agent, n=4)
    assert summary.outcomes == {"malformed": 1, "refusal": 1, "illegal": 1, "answered": 1}
    assert set(agent.calls.values()) == {1}


def test_resume_skips_completed_cells(tmp_path: Path) -> None:
    """A session stopped after 3 cells resumes with the other 5; none is sent twice."""
    agent = Scripted()
    run_dir, first = _run(tmp_path, agent, n=8, max_cells=3)
    assert (first.finalized, verify_run(run_dir).final) == (3, 3)
    second = execute_run(run_dir, agent, validator=validate_move, concurrency=3)
    assert (second.session, second.skipped, second.finalized) == (2, 3, 5)
    assert set(agent.calls.values()) == {1} and len(agent.calls) == 8
    assert verify_run(run_dir).ok


def test_in_flight_attempt_is_closed_as_interrupted(tmp_path: Path) -> None:
    """An attempt with no result (a crash) is logged interrupted and counts toward the limit."""
    agent = Scripted()
    run_dir, _ = _run(tmp_path, agent, n=2, max_cells=1)
    cell = _schedule(2).cells[1]
    _append(run_dir, [{"kind": "attempt", "cell": cell.cell_id, "attempt": 1,
                       "request_digest": cell.request_digest}])
    execute_run(run_dir, agent, validator=validate_move)
    tool_events = [e for e in _events(run_dir, "tool_event") if e["cell"] == "c001"]
    assert [(e["attempt"], e["outcome"]) for e in tool_events] == [
        (1, "interrupted"),
        (2, "answered"),
    ]
    assert verify_run(run_dir).ok


def _drop_final(run_dir: Path, cell_id: str) -> None:
    records = read_events(run_dir / "events.jsonl")
    _rewrite(run_dir, [r for r in records if not (r["kind"] == "final" and r["cell"] == cell_id)])


def test_lost_final_is_restored_without_resending(tmp_path: Path) -> None:
    """A cell answered before a crash but missing its final gets it from its tool_event."""
    agent = Scripted()
    run_dir, _ = _run(tmp_path, agent, n=3)
    _drop_final(run_dir, "c001")
    assert not verify_run(run_dir).ok
    summary = execute_run(run_dir, agent, validator=validate_move)
    assert summary.sent == 0 and agent.calls["c001"] == 1
    restored = [e for e in _events(run_dir, "final") if e["cell"] == "c001"]
    assert restored[0]["note"] == "final restored from tool_event"
    assert restored[0]["arguments"] is not None and verify_run(run_dir).ok


def test_used_up_attempts_are_retried_on_resume(tmp_path: Path) -> None:
    """A cell whose session used up its attempts has no final; a resume gets a fresh budget."""
    agent = Scripted({"c000": [Outcome.TIMEOUT] * 3})
    run_dir, first = _run(tmp_path, agent, n=1)
    assert first.unresolved == 1 and first.outcomes == {}
    summary = execute_run(run_dir, agent, validator=validate_move)
    assert summary.sent == 1 and agent.calls["c000"] == 4
    assert summary.outcomes == {"answered": 1} and summary.unresolved == 0
    assert verify_run(run_dir).ok


def test_changed_request_digest_in_the_log_is_refused(tmp_path: Path) -> None:
    """A log naming another digest for a cell stops the resume with an integrity error."""
    agent = Scripted()
    run_dir, _ = _run(tmp_path, agent, n=2, max_cells=1)
    digest = _schedule(2).cells[0].request_digest
    records = read_events(run_dir / "events.jsonl")
    _rewrite(run_dir, [{**r, "request_digest": "sha256:" + "0" * 64}
                       if r.get("request_digest") == digest else r for r in records])
    with pytest.raises(IntegrityError, match="request digest"):
        execute_run(run_dir, agent, validator=validate_move)


def test_resuming_with_another_agent_is_refused(tmp_path: Path) -> None:
    """A run is one agent: resuming with a different one is a refusal with code 'different'."""
    run_dir, _ = _run(tmp_path, Scripted(), n=2, max_cells=1)
    with pytest.raises(Refusal) as caught:
        execute_run(run_dir, RandomMover(seed=9), validator=validate_move)
    assert caught.value.codes == ("different",)


def test_concurrency_does_not_change_answers(tmp_path: Path) -> None:
    """Per-request seeding: 16 threads give the same final arguments as one."""
    runs = [_run(tmp_path / str(k), Scripted(), n=24, concurrency=k)[0] for k in (1, 16)]
    finals = [{e["cell"]: e["arguments"] for e in _events(r, "final")} for r in runs]
    assert finals[0] == finals[1] and len(finals[0]) == 24


class _Tracked(Scripted):
    """A scripted agent that records the thread of every call and the most calls at once."""

    def __init__(self, failures: dict[str, list[Any]] | None = None) -> None:
        super().__init__(failures)
        self.threads: set[str] = set()
        self.in_flight = self.max_in_flight = 0

    def respond(self, request: Request) -> Response:
        with self._lock:
            self.threads.add(threading.current_thread().name)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            threading.Event().wait(0.01)
            return super().respond(request)
        finally:
            with self._lock:
                self.in_flight -= 1


def test_a_given_executor_carries_every_call_under_the_driver_bound(tmp_path: Path) -> None:
    """execute_run(executor=...) sends each call through it, at most `concurrency` at once,
    retries failures raised there, and logs the same finals as the driver's own threads."""
    from concurrent.futures import ThreadPoolExecutor

    failures = {"c001": [Outcome.PROVIDER_ERROR]}
    agent = _Tracked(failures)
    with ThreadPoolExecutor(max_workers=8, thread_name_prefix="given-pool") as pool:
        run_dir, summary = _run(tmp_path / "given", agent, n=12, concurrency=3, executor=pool)
    local_dir, _ = _run(tmp_path / "local", Scripted(failures), n=12, concurrency=3)
    assert agent.threads and all(t.startswith("given-pool") for t in agent.threads)
    assert agent.max_in_flight <= 3 and summary.sent == 13 and summary.finalized == 12
    assert agent.calls["c001"] == 2 and verify_run(run_dir, validate_move).ok
    finals = [{e["cell"]: (e["outcome"], e["arguments"], e["attempts"]) for e in
               _events(r, "final")} for r in (run_dir, local_dir)]
    assert finals[0] == finals[1] and len(finals[0]) == 12


def test_progress_hook_reaches_the_total(tmp_path: Path) -> None:
    """The progress hook starts at the skipped count and ends at the number of cells."""
    seen: list[tuple[int, int]] = []
    _run(tmp_path, Scripted(), n=5, progress=lambda d, t: seen.append((d, t)))
    assert seen[0] == (0, 5) and seen[-1] == (5, 5) and len(seen) == 6


def test_real_client_faults_are_retried_as_registered(tmp_path: Path) -> None:
    """Through the openai client: 429 waits its Retry-After, 500/stall/drop are retried."""
    import datetime as dt

    from rungbench.agents.loopback import Fault, LoopbackServer
    from rungbench.agents.openai_provider import OpenAIProvider

    schedule = _schedule(4)
    key = "sk-runner-test"
    p = [c.request.payload_digest() for c in schedule]
    faults = {
        p[0]: [Fault.RATE_LIMIT],
        p[1]: [Fault.SERVER_ERROR, Fault.STALL],
        p[2]: [Fault.DROP, Fault.NOT_JSON],
        p[3]: [Fault.GARBAGE_ARGUMENTS],
    }
    requests = [c.request for c in schedule]
    with LoopbackServer(
        RandomMover(seed=2),
        api_key=key,
        requests=requests,
        faults=faults,
        retry_after_s=0.4,
        stall_s=1.0,
    ) as server:
        provider = OpenAIProvider(
            "loopback",
            base_url=server.base_url,
            api_key_env="K",
            environ={"K": key},
            timeout_s=0.5,
        )
        run_dir = create_run(
            tmp_path,
            schedule,
            describe_agent(provider),
            policy=RetryPolicy(max_attempts=3, backoff_s=(0.0,)),
        )
        summary = execute_run(run_dir, provider, validator=validate_move, concurrency=4)
    assert summary.outcomes == {"answered": 3, "malformed": 1}
    tool_events = _events(run_dir, "tool_event")
    trail = {
        c.cell_id: [e["outcome"] for e in tool_events if e["cell"] == c.cell_id] for c in schedule
    }
    assert trail == {
        "c000": ["provider_error", "answered"],
        "c001": ["provider_error", "timeout", "answered"],
        "c002": ["network_error", "provider_error", "answered"],
        "c003": ["malformed"],
    }
    starts = [
        dt.datetime.fromisoformat(e["t"])
        for e in _events(run_dir, "attempt")
        if e["cell"] == "c000"
    ]
    assert (starts[1] - starts[0]).total_seconds() >= 0.4  # Retry-After honoured
    assert sorted(server.counts.values()) == [1, 2, 3, 3] and verify_run(run_dir).ok


def _provider_run(
    tmp_path: Path, n: int, concurrency: int, **server_kwargs: Any
) -> tuple[Path, Any, Any]:
    """Run ``n`` cells through the openai client against a loopback server; return the lot."""
    from rungbench.agents.loopback import LoopbackServer
    from rungbench.agents.openai_provider import OpenAIProvider, Pricing

    schedule = _schedule(n)
    key = "sk-runner-limit-test"
    with LoopbackServer(
        RandomMover(seed=4), api_key=key, requests=[c.request for c in schedule], **server_kwargs
    ) as server:
        provider = OpenAIProvider(
            "loopback",
            base_url=server.base_url,
            api_key_env="K",
            environ={"K": key},
            timeout_s=5.0,
            pricing=Pricing(usd_per_mtok_in=3.0, usd_per_mtok_out=15.0),
        )
        run_dir = create_run(
            tmp_path,
            schedule,
            describe_agent(provider),
            policy=RetryPolicy(max_attempts=3, backoff_s=(0.0,)),
        )
        summary = execute_run(run_dir, provider, validator=validate_move, concurrency=concurrency)
        provider.close()
    return run_dir, summary, server


@pytest.mark.parametrize("concurrency", [1, 3])
def test_concurrency_limit_bounds_requests_in_flight(tmp_path: Path, concurrency: int) -> None:
    """The server never sees more than K requests at once, and with slow replies it sees K."""
    _, summary, server = _provider_run(tmp_path, 6, concurrency, delay_s=0.15)
    assert summary.outcomes == {"answered": 6}
    assert server.max_in_flight == concurrency and server.in_flight == 0


def test_one_tool_event_per_http_call_with_tokens_latency_and_cost(tmp_path: Path) -> None:
    """Each HTTP call (a failed one included) has one tool_event; answered calls carry the
    usage the server reported, a measured latency and the priced cost; totals add up."""
    from rungbench.agents.loopback import Fault

    first = _schedule(3).cells[0].request.payload_digest()
    run_dir, summary, server = _provider_run(
        tmp_path, 3, 2, faults={first: [Fault.SERVER_ERROR]}
    )
    events = _events(run_dir, "tool_event")
    assert len(events) == len(server.served) == 4
    failed = [e for e in events if e["outcome"] == "provider_error"]
    assert len(failed) == 1 and (failed[0]["tokens_in"], failed[0]["cost_usd"]) == (0, 0.0)
    answered = [e for e in events if e["outcome"] == "answered"]
    assert len(answered) == 3
    for event in answered:
        assert event["tokens_in"] > 0 and event["tokens_out"] > 0 and event["latency_s"] > 0
        priced = (event["tokens_in"] * 3.0 + event["tokens_out"] * 15.0) / 1e6
        assert event["cost_usd"] == pytest.approx(priced)
    assert summary.tokens_in == sum(e["tokens_in"] for e in answered)
    assert summary.cost_usd == pytest.approx(sum(e["cost_usd"] for e in answered))


def test_attempt_record_and_request_bytes_exist_before_the_send(tmp_path: Path) -> None:
    """When the agent is called, the attempt record naming the digest is already durable and
    the stored request bytes hash to that digest."""
    from rungbench.evidence.canonical import bytes_digest
    from rungbench.evidence.store import ObjectStore

    checked: list[str] = []

    class Inspecting(Scripted):
        def respond(self, request: Request) -> Response:
            run_dir = next(tmp_path.glob("runs/*"))
            attempts = [
                e for e in read_events(run_dir / "events.jsonl")
                if e["kind"] == "attempt" and e["cell"] == request.case_id
            ]
            assert attempts and attempts[-1]["request_digest"] == request.digest()
            stored = ObjectStore(run_dir).get_bytes(request.digest())
            assert stored == request.canonical() and bytes_digest(stored) == request.digest()
            checked.append(request.case_id)
            return super().respond(request)

    agent = Inspecting()
    _run(tmp_path, agent, n=4, concurrency=2)
    assert sorted(checked) == ["c000", "c001", "c002", "c003"]


def _append(run_dir: Path, records: list[dict[str, Any]]) -> None:
    """Append ``records`` to the run's log, chained as the runner would."""
    head = read_events(run_dir / "events.jsonl")[-1][CHAIN]
    with open(run_dir / "events.jsonl", "ab") as fh:
        fh.write(chained_lines([{**r, "t": "x"} for r in records], head)[0])


def test_resumed_retries_number_on_from_earlier_sessions(tmp_path: Path) -> None:
    """Two reliability failures before a crash: the resume numbers on (3, 4, 5) and, the
    limit (3) being per session, sends three more before leaving the cell unresolved."""
    agent = Scripted({"c001": [Outcome.PROVIDER_ERROR] * 9})
    run_dir, _ = _run(tmp_path, agent, n=2, max_cells=1)
    cell = _schedule(2).cells[1]
    base = {"cell": cell.cell_id, "request_digest": cell.request_digest}
    failed = {"kind": "tool_event", "outcome": "provider_error", "detail": "500",
              "tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0, "latency_s": 0.1,
              "status": 500, "retry_after": None, "response": None}
    _append(run_dir, [
        {"kind": "attempt", **base, "attempt": 1}, {**failed, **base, "attempt": 1},
        {"kind": "attempt", **base, "attempt": 2}, {**failed, **base, "attempt": 2},
    ])
    summary = execute_run(run_dir, agent, validator=validate_move)
    assert agent.calls["c001"] == 3 and summary.sent == 3
    attempts = [e["attempt"] for e in _events(run_dir, "attempt") if e["cell"] == "c001"]
    assert attempts == [1, 2, 3, 4, 5]
    assert not [e for e in _events(run_dir, "final") if e["cell"] == "c001"]
    assert [e["attempts"] for e in _events(run_dir, "unresolved")] == [5]
    assert summary.unresolved == 1 and not verify_run(run_dir).ok


def test_model_failure_with_a_lost_final_is_never_resent(tmp_path: Path) -> None:
    """A malformed answer whose final record was lost is finalized malformed on resume."""
    garbage = Response(text=None, tool_calls=(ToolCall("submit_move", "{bad"),))
    agent = Scripted({"c000": [garbage]})
    run_dir, _ = _run(tmp_path, agent, n=2)
    _drop_final(run_dir, "c000")
    summary = execute_run(run_dir, agent, validator=validate_move)
    assert summary.sent == 0 and agent.calls["c000"] == 1
    assert summary.outcomes == {"malformed": 1, "answered": 1} and verify_run(run_dir).ok


def test_a_run_executing_elsewhere_is_refused_then_resumable(tmp_path: Path) -> None:
    """While another process holds the run's lock a resume is refused (run_busy) and sends
    nothing; once the lock is gone (its holder ended or was killed) the resume proceeds."""
    import fcntl

    agent = Scripted()
    run_dir, _ = _run(tmp_path, agent, n=3, max_cells=1)
    with open(run_dir / ".lock", "a+b") as holder:
        fcntl.flock(holder.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(Refusal) as caught:
            execute_run(run_dir, agent, validator=validate_move)
    assert caught.value.codes == ("run_busy",) and sum(agent.calls.values()) == 1
    summary = execute_run(run_dir, agent, validator=validate_move)
    assert summary.finalized == 2 and verify_run(run_dir).ok


def test_waits_come_only_between_attempts_of_a_cell(tmp_path: Path) -> None:
    """Two failures then an answer sleep exactly backoff 2 s then 8 s; first sends never wait."""
    agent = Scripted({"c000": [Outcome.PROVIDER_ERROR, Outcome.TIMEOUT]})
    sleeps: list[float] = []
    _run(tmp_path, agent, n=3, policy=RetryPolicy(max_attempts=4, backoff_s=(2.0, 8.0)),
         sleep=sleeps.append)
    assert sleeps == [2.0, 8.0]


def test_verify_run_refuses_a_tool_event_after_the_final(tmp_path: Path) -> None:
    """A tool_event logged after a cell's final outcome is an integrity error naming the line."""
    run_dir, _ = _run(tmp_path, Scripted(), n=2)
    cell = _schedule(2).cells[0]
    _append(run_dir, [{"kind": "tool_event", "cell": cell.cell_id,
                       "request_digest": cell.request_digest, "attempt": 2,
                       "outcome": "answered"}])
    with pytest.raises(IntegrityError, match=r"events.jsonl:\d+: tool_event .* after its final"):
        verify_run(run_dir)


def test_verify_run_names_a_cell_without_a_final(tmp_path: Path) -> None:
    """A cell whose final record is missing is listed as having 0 final outcomes."""
    run_dir, _ = _run(tmp_path, Scripted(), n=2)
    _drop_final(run_dir, "c001")
    check = verify_run(run_dir)
    assert check.problems == ("cell 'c001': no final outcome (last answered after 1 attempts)",)
    assert check.final == 1


def test_request_changed_in_place_by_the_agent_is_refused_before_the_retry(
    tmp_path: Path,
) -> None:
    """An agent that edits the frozen request's tool schema, then fails, gets no retry sent."""

    class Tamperer(Scripted):
        def respond(self, request: Request) -> Response:
            request.tools[0]["function"]["description"] = "edited in place"
            return super().respond(request)

    base = move_choice_request("c000", FENS[0])
    own = dataclasses.replace(base, tools=copy.deepcopy(base.tools))  # never edit the shared tool
    schedule = Schedule.of("chess.move_choice/1", "test", [own])
    agent = Tamperer({"c000": [Outcome.PROVIDER_ERROR]})
    run_dir = create_run(tmp_path, schedule, describe_agent(agent),
                         policy=RetryPolicy(max_attempts=3, backoff_s=(0.0,)))
    with pytest.raises(IntegrityError, match="request changed since it was frozen"):
        execute_run(run_dir, agent, validator=validate_move)
    assert agent.calls["c000"] == 1
