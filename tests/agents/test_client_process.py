"""The provider's calls sent by helper processes: the same answers and failures as in the
runner's own process, the same run records, a dead helper's calls failed and the helper
replaced, no key on a command line or in an environment, no helper outliving its runner."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from tests.execute.test_cell_loop import REQUESTS, _schedule
from tests.execute.test_executors_cells import objects, per_cell

from rungbench.agents import client_process
from rungbench.agents.loopback import Fault, LoopbackServer
from rungbench.agents.openai_provider import OpenAIProvider
from rungbench.agents.outcomes import CallFailure, Outcome
from rungbench.agents.protocol import Request
from rungbench.chess.reference_agents import RandomMover, validate_move
from rungbench.errors import InputError
from rungbench.execute.policy import RetryPolicy
from rungbench.execute.runner import create_run, describe_agent, execute_run, verify_run

KEY = "sk-client-process-test-key-0123456789"


def _provider(server: LoopbackServer, processes: int) -> OpenAIProvider:
    return OpenAIProvider("loopback", base_url=server.base_url, api_key_env="K",
                          environ={"K": KEY}, client_processes=processes)


def _owner(server: LoopbackServer, processes: int, imports: str) -> str:
    """The start of a script run as the provider's owner: ``imports``, then ``p``, a
    provider with ``processes`` helpers against ``server`` (``REQUESTS`` imported)."""
    return (f"{imports}\nfrom tests.execute.test_cell_loop import REQUESTS\n"
            "from rungbench.agents.openai_provider import OpenAIProvider\n"
            f"p = OpenAIProvider('loopback', base_url={server.base_url!r}, api_key_env='K', "
            f"environ={{'K': {KEY!r}}}, client_processes={processes})\n")


def _gone(pid: int) -> bool:
    """Whether ``pid`` has exited (a zombie awaiting its reaper counts as exited)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            return any(line.startswith("State:") and "Z" in line for line in fh)
    except FileNotFoundError:
        return True


def _wait_gone(pids: list[int], within_s: float = 15.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if all(_gone(pid) for pid in pids):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("bad", [-1, 17, True, 1.5, "2"])
def test_client_processes_must_be_a_small_count(bad: object) -> None:
    """A negative, too large or non-integer count is an input error naming the field."""
    with pytest.raises(InputError) as raised:
        OpenAIProvider("m", base_url="http://127.0.0.1:9/v1", api_key_env="K",
                       environ={"K": KEY}, client_processes=bad)  # type: ignore[arg-type]
    assert raised.value.field == "client_processes"


def test_helpers_answer_what_the_provider_answers_in_process() -> None:
    """Every response through two helpers equals the in-process provider's for the same
    request (the loopback agent is deterministic per request), over both the blocking and
    the coroutine call; the helpers are separate processes, stopped by close()."""
    with LoopbackServer(RandomMover(seed=3), api_key=KEY, requests=REQUESTS) as server:
        local, remote = _provider(server, 0), _provider(server, 2)
        try:
            expected = [local.respond(r) for r in REQUESTS[:6]]
            assert [remote.respond(r) for r in REQUESTS[:6]] == expected

            async def both() -> list[object]:
                return [await remote.respond_async(r) for r in REQUESTS[:6]]

            assert remote.drive(both) == expected
            pids = remote.client_pids()
            assert len(pids) == 2 and os.getpid() not in pids
            assert local.client_pids() == []
        finally:
            local.close()
            remote.close()
    assert _wait_gone(pids, 5.0)
    assert remote.describe() == local.describe()  # an execution setting, not an identity


def test_a_helpers_failure_is_the_failure_the_provider_raises_in_process() -> None:
    """A 429 with Retry-After and a 500 reach the caller as the same CallFailure (outcome,
    status, retry_after, detail) as in the runner's own process."""
    faults = {REQUESTS[0].payload_digest(): [Fault.RATE_LIMIT, Fault.RATE_LIMIT],
              REQUESTS[1].payload_digest(): [Fault.SERVER_ERROR, Fault.SERVER_ERROR]}
    with LoopbackServer(RandomMover(seed=3), api_key=KEY, requests=REQUESTS, faults=faults,
                        retry_after_s=0.25) as server:
        seen: dict[int, list[tuple[object, ...]]] = {0: [], 1: []}
        for processes in (0, 1):
            provider = _provider(server, processes)
            try:
                for request in REQUESTS[:2]:
                    with pytest.raises(CallFailure) as raised:
                        provider.respond(request)
                    failure = raised.value
                    seen[processes].append((failure.outcome, failure.status,
                                            failure.retry_after, failure.detail))
            finally:
                provider.close()
    assert seen[0] == seen[1]
    assert seen[1][0][:3] == (Outcome.PROVIDER_ERROR, 429, 0.25)
    assert seen[1][1][:2] == (Outcome.PROVIDER_ERROR, 500)


def test_a_killed_helper_fails_its_calls_and_is_replaced() -> None:
    """SIGKILL of a helper holding a stalled call: that call fails as network_error naming
    the client process (the request may have left), and the next call is answered by a
    new helper."""
    stalled = REQUESTS[0].payload_digest()
    with LoopbackServer(RandomMover(seed=3), api_key=KEY, requests=REQUESTS,
                        faults={stalled: [Fault.STALL]}, stall_s=30.0) as server:
        provider = _provider(server, 1)
        try:
            provider.respond(REQUESTS[1])  # starts the helper
            (first,) = provider.client_pids()
            caught: list[BaseException] = []

            def call() -> None:
                try:
                    provider.respond(REQUESTS[0])
                except BaseException as exc:  # examined below
                    caught.append(exc)

            thread = threading.Thread(target=call)
            thread.start()
            deadline = time.monotonic() + 10
            while server.counts[stalled] == 0 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert server.counts[stalled] == 1
            os.kill(first, signal.SIGKILL)
            thread.join(10)
            assert not thread.is_alive()
            (failure,) = caught
            assert isinstance(failure, CallFailure)
            assert failure.outcome is Outcome.NETWORK_ERROR
            assert "client process" in failure.detail
            assert provider.respond(REQUESTS[2]).tool_calls
            (second,) = provider.client_pids()
            assert second != first
        finally:
            provider.close()


def test_a_stopped_helper_times_its_call_out_and_is_replaced(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A helper alive but not answering (SIGSTOP) holds a call no longer than the pool's
    deadline (twice the provider's timeout plus the grace): the call fails as ``timeout``
    naming the client process, a second call it held fails too, the helper is killed, and
    the next call is answered by a new helper (whose deadline runs only once it is ready,
    so a slow start on a loaded host does not kill it)."""
    monkeypatch.setattr(client_process, "GRACE_S", 0.5)
    with LoopbackServer(RandomMover(seed=3), api_key=KEY, requests=REQUESTS) as server:
        provider = OpenAIProvider("loopback", base_url=server.base_url, api_key_env="K",
                                  environ={"K": KEY}, client_processes=1, timeout_s=1.0)
        try:
            expected = provider.respond(REQUESTS[1])  # starts the helper
            (first,) = provider.client_pids()
            os.kill(first, signal.SIGSTOP)
            caught: list[BaseException] = []

            def call(request: Request) -> None:
                try:
                    provider.respond(request)
                except BaseException as exc:  # examined below
                    caught.append(exc)

            started = time.monotonic()
            threads = [threading.Thread(target=call, args=(r,)) for r in REQUESTS[:2]]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(15)
            waited = time.monotonic() - started
            assert not any(t.is_alive() for t in threads)
            assert len(caught) == 2 and all(isinstance(c, CallFailure) for c in caught)
            outcomes = sorted(c.outcome.value for c in caught if isinstance(c, CallFailure))
            assert "timeout" in outcomes and set(outcomes) <= {"timeout", "network_error"}
            timed_out = next(c for c in caught if isinstance(c, CallFailure)
                             and c.outcome is Outcome.TIMEOUT)
            assert "client process" in timed_out.detail and "2.5s" in timed_out.detail
            assert 2.0 <= waited < 10.0
            assert _wait_gone([first])  # killed (a stopped process takes SIGKILL too)
            assert provider.respond(REQUESTS[1]) == expected
            (second,) = provider.client_pids()
            assert second != first
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(first, signal.SIGCONT)
            provider.close()


def test_a_helper_not_ready_in_time_is_killed_and_its_call_fails(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A helper that has not said it is ready within ``START_S`` (here 0.05 s, less than an
    interpreter takes to import the SDK) is killed: its call fails as ``network_error``
    saying so, and with the usual allowance the next call is answered by a new helper."""
    monkeypatch.setattr(client_process, "START_S", 0.05)
    with LoopbackServer(RandomMover(seed=3), api_key=KEY, requests=REQUESTS) as server:
        provider = _provider(server, 1)
        try:
            with pytest.raises(CallFailure) as caught:
                provider.respond(REQUESTS[0])
            assert caught.value.outcome is Outcome.NETWORK_ERROR
            assert "not ready within 0.05s" in caught.value.detail
            (first,) = provider.client_pids()
            assert _wait_gone([first])
            monkeypatch.setattr(client_process, "START_S", 60.0)
            provider.respond(REQUESTS[0])
            assert provider.client_pids() != [first]
        finally:
            provider.close()


def test_the_key_is_on_no_helpers_command_line_or_environment() -> None:
    """A helper holds the key in memory only: not in its command line, not in its
    environment (the parent's environment does not hold it either)."""
    assert all(KEY not in value for value in os.environ.values())
    with LoopbackServer(RandomMover(seed=3), api_key=KEY, requests=REQUESTS) as server:
        provider = _provider(server, 1)
        try:
            provider.respond(REQUESTS[0])
            (pid,) = provider.client_pids()
            for part in ("cmdline", "environ"):
                assert KEY.encode() not in Path(f"/proc/{pid}/{part}").read_bytes()
            assert "sk-client" not in repr(provider)
        finally:
            provider.close()


def test_runs_through_helpers_store_what_the_runners_own_process_stores(
        tmp_path: Path) -> None:
    """Twelve cells with two helper processes and with none: the same objects byte for
    byte, the same records per cell, the same outcomes; the run verifies."""
    runs = {}
    for processes in (0, 2):
        with LoopbackServer(RandomMover(seed=3), api_key=KEY, requests=REQUESTS) as server:
            provider = _provider(server, processes)
            run_dir = create_run(tmp_path / f"p{processes}", _schedule(),
                                 describe_agent(provider),
                                 policy=RetryPolicy(max_attempts=3, backoff_s=(0.0,)))
            try:
                summary = execute_run(run_dir, provider, validator=validate_move,
                                      concurrency=4)
            finally:
                provider.close()
            runs[processes] = run_dir, summary
    (local_dir, local_sum), (remote_dir, remote_sum) = runs[0], runs[2]
    assert local_sum.outcomes == remote_sum.outcomes == {"answered": 12}
    assert objects(local_dir) == objects(remote_dir)
    assert per_cell(local_dir) == per_cell(remote_dir)
    assert verify_run(remote_dir, validate_move).ok


def test_no_helper_outlives_a_killed_runner(tmp_path: Path) -> None:
    """SIGKILL of the process owning the provider (no cleanup runs in it): its helpers see
    their sockets close and exit."""
    with LoopbackServer(RandomMover(seed=3), api_key=KEY, requests=REQUESTS) as server:
        script = _owner(server, 2, "import sys, time") + textwrap.dedent("""
            p.respond(REQUESTS[0]); p.respond(REQUESTS[1])
            print(" ".join(map(str, p.client_pids())), flush=True)
            time.sleep(60)
        """)
        runner = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                                  text=True, cwd=Path(__file__).parents[2])
        try:
            line = runner.stdout.readline() if runner.stdout else ""
            pids = [int(p) for p in line.split()]
            assert len(pids) == 2 and not any(_gone(pid) for pid in pids)
            runner.send_signal(signal.SIGKILL)
            runner.wait(10)
            assert _wait_gone(pids)
        finally:
            runner.kill()
            runner.wait(10)


def test_a_forked_copy_leaves_the_owners_helpers_alone() -> None:
    """A child forked from the owner that exits through the interpreter's exit handlers
    does not end the owner's helper sockets: the owner's next call is answered by the same
    helper."""
    with LoopbackServer(RandomMover(seed=3), api_key=KEY, requests=REQUESTS) as server:
        script = _owner(server, 1, "import os, sys, time") + textwrap.dedent("""
            p.respond(REQUESTS[0])
            before = p.client_pids()
            child = os.fork()
            if child == 0:
                sys.exit(0)  # the copy's normal exit: its atexit handlers run
            os.waitpid(child, 0)
            time.sleep(0.5)  # a helper whose socket the copy shut would be gone by now
            assert p.respond(REQUESTS[1]).tool_calls
            assert p.client_pids() == before, (p.client_pids(), before)
            p.close()
            print("same helper", flush=True)
        """)
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              cwd=Path(__file__).parents[2], timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "same helper"


def test_the_key_leaves_the_helpers_environment_even_when_the_runner_read_it_there(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """With the key in the runner's own environment (the usual OPENAI_API_KEY case), the
    helper's environment holds no value containing it."""
    monkeypatch.setenv("RB_CLIENT_TEST_KEY", KEY)
    with LoopbackServer(RandomMover(seed=3), api_key=KEY, requests=REQUESTS) as server:
        provider = OpenAIProvider("loopback", base_url=server.base_url,
                                  api_key_env="RB_CLIENT_TEST_KEY", client_processes=1)
        try:
            provider.respond(REQUESTS[0])
            (pid,) = provider.client_pids()
            assert KEY.encode() not in Path(f"/proc/{pid}/environ").read_bytes()
        finally:
            provider.close()


def test_a_module_in_the_working_directory_is_not_imported_by_a_helper(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An ``openai.py`` in the working directory (which ``python -c`` would put first on
    the path) is not what the helper imports: calls are answered as in-process."""
    (tmp_path / "openai.py").write_text("open('IMPORTED', 'w').close()\nraise SystemExit(9)\n")
    monkeypatch.chdir(tmp_path)
    with LoopbackServer(RandomMover(seed=3), api_key=KEY, requests=REQUESTS) as server:
        provider = _provider(server, 1)
        try:
            assert provider.respond(REQUESTS[0]).tool_calls
        finally:
            provider.close()
    assert not (tmp_path / "IMPORTED").exists()


def test_close_while_calls_start_fails_them_quietly() -> None:
    """Eight threads call while close() lands as the helpers start: every call returns or
    fails as network_error, none hangs, and asyncio prints nothing (no callback error)."""
    with LoopbackServer(RandomMover(seed=3), api_key=KEY, requests=REQUESTS) as server:
        script = textwrap.dedent(f"""
            import threading
            from tests.execute.test_cell_loop import REQUESTS
            from rungbench.agents.openai_provider import OpenAIProvider
            from rungbench.agents.outcomes import CallFailure, Outcome
            for round in range(3):
                p = OpenAIProvider("loopback", base_url={server.base_url!r}, api_key_env="K",
                                   environ={{"K": {KEY!r}}}, client_processes=2)
                seen = []
                def call(r):
                    try:
                        p.respond(r); seen.append("ok")
                    except CallFailure as f:
                        assert f.outcome is Outcome.NETWORK_ERROR, f
                        seen.append("failed")
                threads = [threading.Thread(target=call, args=(r,)) for r in REQUESTS[:8]]
                for t in threads: t.start()
                p.close()
                for t in threads: t.join(20)
                assert not any(t.is_alive() for t in threads) and len(seen) == 8, seen
            print("quiet", flush=True)
        """)
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              cwd=Path(__file__).parents[2], timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "quiet" and done.stderr == "", done.stderr


def test_a_forked_child_does_not_keep_a_dead_runners_helpers_alive() -> None:
    """The runner forks a long-lived child, then is SIGKILLed: its helpers still see their
    sockets close and exit (the child let go of its copies at the fork)."""
    with LoopbackServer(RandomMover(seed=3), api_key=KEY, requests=REQUESTS) as server:
        script = _owner(server, 1, "import os, time") + textwrap.dedent("""
            p.respond(REQUESTS[0])
            child = os.fork()
            if child == 0:
                time.sleep(60)
                os._exit(0)
            print(child, *p.client_pids(), flush=True)
            time.sleep(60)
        """)
        runner = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                                  text=True, cwd=Path(__file__).parents[2])
        child = 0
        try:
            line = runner.stdout.readline() if runner.stdout else ""
            child, *helpers = (int(p) for p in line.split())
            assert len(helpers) == 1
            runner.send_signal(signal.SIGKILL)
            runner.wait(10)
            assert _wait_gone(helpers) and not _gone(child)
        finally:
            runner.kill()
            runner.wait(10)
            if child:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child, signal.SIGKILL)
