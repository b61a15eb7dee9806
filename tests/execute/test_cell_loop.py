"""The runner's event-loop path: an OpenAI-compatible provider's cells run as coroutines on
its loop, with the records, objects and outcomes of the thread path, faults retried the
same way, and every stored response durable before the records naming it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.execute.test_executors_cells import SIX_FENS, objects, per_cell

from rungbench.agents.loopback import Fault, LoopbackServer
from rungbench.agents.openai_provider import OpenAIProvider
from rungbench.agents.protocol import LoopAgent, Request, Response
from rungbench.chess.reference_agents import RandomMover, move_choice_request, validate_move
from rungbench.errors import IntegrityError
from rungbench.execute import cell_loop
from rungbench.execute.object_batch import BatchedObjects
from rungbench.execute.policy import RetryPolicy
from rungbench.execute.runner import create_run, describe_agent, execute_run, verify_run
from rungbench.execute.schedule import Schedule

KEY = "sk-cell-loop-test-key"


class Threaded:
    """The provider behind the plain Agent protocol only (so the runner uses threads)."""

    def __init__(self, inner: OpenAIProvider) -> None:
        self.inner = inner
        self.name = inner.name

    def respond(self, request: Request) -> Response:
        """The provider's blocking call."""
        return self.inner.respond(request)

    def describe(self) -> dict[str, Any]:
        """The provider's identity (the run's manifest names the same agent)."""
        return self.inner.describe()


def _schedule(copies: int = 2) -> Schedule:
    return Schedule.of("chess.move_choice/1", "loop-test",
                       [move_choice_request(f"c{i}", fen)
                        for i, fen in enumerate(SIX_FENS * copies)])


REQUESTS = [cell.request for cell in _schedule()]


def _run(tmp_path: Path, name: str, server: LoopbackServer, *, threaded: bool,
         concurrency: int = 4, policy: RetryPolicy | None = None, **kwargs: Any) -> Any:
    provider = OpenAIProvider("loopback", base_url=server.base_url, api_key_env="K",
                              environ={"K": KEY})
    agent: Any = Threaded(provider) if threaded else provider
    run_dir = create_run(tmp_path / name, _schedule(), describe_agent(agent),
                         policy=policy or RetryPolicy(max_attempts=3, backoff_s=(0.0,)))
    try:
        summary = execute_run(run_dir, agent, validator=validate_move,
                              concurrency=concurrency, **kwargs)
    finally:
        provider.close()
    return run_dir, summary


def test_the_provider_is_a_loop_agent_and_a_wrapper_is_not() -> None:
    """The runner takes the loop path for the provider itself and threads for an agent with
    only ``respond`` (what decides which path a run takes)."""
    with LoopbackServer(RandomMover(seed=3), api_key=KEY, requests=REQUESTS) as server:
        provider = OpenAIProvider("loopback", base_url=server.base_url, api_key_env="K",
                                  environ={"K": KEY})
        assert isinstance(provider, LoopAgent)
        assert not isinstance(Threaded(provider), LoopAgent)
        provider.close()


def test_loop_path_stores_what_the_thread_path_stores(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Twelve cells through the real client, once on the loop and once on threads: the same
    objects byte for byte, the same records per cell and the same outcomes; the loop path
    really ran (its coroutine driver was entered) and its stored responses were batched."""
    entered: list[int] = []
    real = cell_loop.run_cells

    def spy(session: Any, agent: Any, todo: Any, concurrency: int) -> None:
        entered.append(len(todo))
        real(session, agent, todo, concurrency)

    monkeypatch.setattr("rungbench.execute.runner.run_cells", spy)
    runs = {}
    for kind in ("loop", "threads"):
        with LoopbackServer(RandomMover(seed=3), api_key=KEY, requests=REQUESTS) as server:
            runs[kind] = _run(tmp_path, kind, server, threaded=kind == "threads")
    assert entered == [12]
    (loop_dir, loop_sum), (thread_dir, thread_sum) = runs["loop"], runs["threads"]
    assert loop_sum.outcomes == thread_sum.outcomes == {"answered": 12}
    assert objects(loop_dir) == objects(thread_dir)
    assert per_cell(loop_dir) == per_cell(thread_dir)
    assert verify_run(loop_dir, validate_move).ok


def test_loop_path_retries_faults_in_the_identical_cell(tmp_path: Path) -> None:
    """A 500 then an answer, and a 429 with Retry-After then an answer, on the loop path:
    each cell final after two attempts, the session's injectable sleep given the server's
    wait, and each payload sent once more than it has cells."""
    waits: list[float] = []
    first, second = (_schedule().cells[i].request.payload_digest() for i in (0, 1))
    faults = {first: [Fault.SERVER_ERROR], second: [Fault.RATE_LIMIT]}
    with LoopbackServer(RandomMover(seed=3), api_key=KEY, faults=faults, requests=REQUESTS,
                        retry_after_s=0.25) as server:
        run_dir, summary = _run(tmp_path, "faults", server, threaded=False,
                                sleep=waits.append)
        # each payload is also c6's and c7's (the schedule holds every position twice)
        assert server.counts[first] == server.counts[second] == 3
    assert summary.outcomes == {"answered": 12}
    cells = per_cell(run_dir)
    assert [e["kind"] for e in cells["c0"]] == ["attempt", "tool_event", "attempt",
                                               "tool_event", "final"]
    assert cells["c0"][1]["outcome"] == "provider_error" and cells["c0"][1]["status"] == 500
    assert cells["c1"][1]["status"] == 429 and 0.25 in waits


def test_loop_path_refuses_a_request_changed_since_it_was_frozen(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A frozen digest that no longer matches its cell stops the loop path with an
    IntegrityError naming the cell, and that cell's request never reaches the server (the
    digest check precedes every send)."""
    from rungbench.execute import runner as runner_module

    original = runner_module._Session.begin

    def begin(self: Any, cell: Any, attempt: int) -> Any:
        if cell.cell_id == "c5":
            self.frozen[cell.cell_id] = "sha256:" + "0" * 64
        return original(self, cell, attempt)

    monkeypatch.setattr(runner_module._Session, "begin", begin)
    target = _schedule().cells[5].request.payload_digest()
    with LoopbackServer(RandomMover(seed=3), api_key=KEY, requests=REQUESTS) as server:
        with pytest.raises(IntegrityError, match="'c5'"):
            _run(tmp_path, "tampered", server, threaded=False, concurrency=2)
        assert server.counts[target] == 0 and sum(server.counts.values()) >= 1


@pytest.mark.parametrize("use_syncfs", [True, False])
def test_batched_objects_reach_the_disk_only_in_a_flush(tmp_path: Path, use_syncfs: bool) -> None:
    """Before a flush a put leaves nothing on disk (not even a temp file); after it, each
    object is in place once with its bytes and mode 0444 and no temp file is left, under
    syncfs and under per-file fsyncs alike, and a second flush has nothing to do."""
    from rungbench.evidence.store import ObjectStore

    store = ObjectStore(tmp_path / "run")
    batch = BatchedObjects(store, use_syncfs=use_syncfs)
    names = [batch.put(b'{"n":%d}' % i) for i in range(5)] + [batch.put(b'{"n":0}')]
    assert store.verify() == [] and store.temp_files() == []
    assert not any(store.has(name) for name in names) and names[0] == names[-1]
    batch.flush()
    assert store.temp_files() == [] and store.verify() == []
    assert all(store.get_bytes(name) == b'{"n":%d}' % (i % 5) for i, name in enumerate(names))
    assert all((store.path_for(name).stat().st_mode & 0o777) == 0o444 for name in names)
    batch.flush()
    assert batch.flushes == 1
