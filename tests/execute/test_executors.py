"""The executor layer: dispatch, worker resources, portable errors, and Ray tasks on a local
cluster (one session-scoped ``ray.init(num_cpus=2)``)."""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from typer.testing import CliRunner

from rungbench.cli import app
from rungbench.errors import InputError, Reason, Refusal
from rungbench.execute import executors as ex
from rungbench.execute.executors import (
    ExtraMissing,
    RayExecutor,
    discard_resource,
    dispatch,
    executor_for,
    worker_resource,
)

pytestmark = pytest.mark.xdist_group("ray")


def _refuse(code: str) -> None:
    raise Refusal([Reason(code, "scripted", subject="s", data={"n": 1})], gate="test gate")


def _bad_input() -> None:
    raise InputError("bad value", path="x.json", line=3, field="f")


def _pid_of(_: int) -> int:
    return os.getpid()


def test_dispatch_keeps_at_most_window_in_flight_and_returns_every_result() -> None:
    """Twenty items, window 3: never more than 3 in flight, and every result reaches on_result."""
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}

    def work(item: int) -> int:
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.002)
        with lock:
            state["now"] -= 1
        return item * item

    got: dict[int, int] = {}
    with ThreadPoolExecutor(max_workers=8) as pool:
        dispatch(pool, work, range(20), window=3, before_submit=lambda: None,
                 on_result=got.__setitem__)
    assert got == {i: i * i for i in range(20)} and state["peak"] <= 3


def test_dispatch_gate_refusal_stops_hand_out_but_keeps_results_in_flight() -> None:
    """A gate refusing at the 5th hand-out raises after the 4 items in flight were stored."""
    calls = iter(range(100))

    def gate() -> None:
        if next(calls) == 4:
            _refuse("host_busy")

    got: list[int] = []
    with ThreadPoolExecutor(max_workers=2) as pool, pytest.raises(Refusal) as caught:
        dispatch(pool, lambda i: i, range(10), window=4, before_submit=gate,
                 on_result=lambda i, r: got.append(r))
    assert caught.value.codes == ("host_busy",) and sorted(got) == [0, 1, 2, 3]


def test_dispatch_raises_the_first_worker_failure() -> None:
    """An item whose call raises stops the hand-out; the exception reaches the driver as is."""
    def work(item: int) -> int:
        if item == 2:
            _refuse("engine_changed")
        return item

    with ThreadPoolExecutor(max_workers=1) as pool, pytest.raises(Refusal) as caught:
        dispatch(pool, work, range(50), window=2, before_submit=lambda: None,
                 on_result=lambda i, r: None)
    assert caught.value.codes == ("engine_changed",)


def test_worker_resource_is_reused_replaced_on_a_new_key_and_discarded() -> None:
    """Same key → the same object; a new key closes the old one; discard closes it too."""
    closed: list[str] = []
    made = iter(["r1", "r2", "r3"])
    first = worker_resource("test-slot", "k1", lambda: next(made), closed.append)
    assert worker_resource("test-slot", "k1", lambda: next(made), closed.append) == first == "r1"
    assert worker_resource("test-slot", "k2", lambda: next(made), closed.append) == "r2"
    assert closed == ["r1"]
    discard_resource("test-slot")
    assert closed == ["r1", "r2"]
    assert worker_resource("test-slot", "k2", lambda: next(made), closed.append) == "r3"
    discard_resource("test-slot")


def test_refusal_and_input_error_survive_the_trip_from_a_worker() -> None:
    """Exceptions whose constructors take more than a message are rebuilt with their fields."""
    refusal = ex._call(_refuse, ("stale",), {})
    assert refusal[0] is False
    again = refusal[1].rebuild()
    assert isinstance(again, Refusal) and again.codes == ("stale",) and again.gate == "test gate"
    assert again.reasons[0].data == {"n": 1} and str(again) == "test gate refused [stale] — " \
        "stale: scripted"
    bad = ex._call(_bad_input, (), {})[1].rebuild()
    assert isinstance(bad, InputError) and (bad.path, bad.line, bad.field) == ("x.json", 3, "f")
    plain = ex._call(int, ("x",), {})[1].rebuild()
    assert isinstance(plain, ValueError) and "invalid literal" in str(plain)


def test_local_executor_is_the_stages_own_workers_and_ray_address_needs_ray() -> None:
    """``local`` yields None (the stage runs its own workers); a Ray address with it refuses."""
    with executor_for("local") as pool:
        assert pool is None
    with pytest.raises(InputError), executor_for("local", address="127.0.0.1:1"):
        pass


def test_missing_extra_is_one_line_exit_2_naming_the_install(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Without Ray: the library raises ExtraMissing; ``--executor ray`` exits 2 in one line."""
    monkeypatch.setattr(ex.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ExtraMissing, match=r"pip install 'rungbench\[ray\]'"):
        ex.import_ray()
    for argv in (["chess", "label", "run", "--work", "w", "--executor", "ray"],
                 ["chess", "evaluate", "r", "--manifest", "m", "--executor", "ray"]):
        result = CliRunner().invoke(app, argv)
        assert result.exit_code == 2, result.output
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "pip install 'rungbench[ray]'" in lines[0]


def test_ray_address_without_ray_executor_is_a_usage_error() -> None:
    """``--ray-address`` with the local executor exits 2 naming the option."""
    result = CliRunner().invoke(app, ["chess", "label", "run", "--work", "w", "--ray-address",
                                      "127.0.0.1:1"])
    assert result.exit_code == 2 and "--ray-address needs --executor ray" in result.stderr


def test_ray_tasks_return_results_and_rebuilt_refusals(ray_cluster: Any) -> None:
    """On the local cluster: results come back, a worker's Refusal is raised as a Refusal."""
    pool = RayExecutor()
    assert pool.submit(pow, 3, 4).result(timeout=60) == 81
    with pytest.raises(Refusal) as caught:
        pool.submit(_refuse, "engine_changed").result(timeout=60)
    assert caught.value.codes == ("engine_changed",) and caught.value.gate == "test gate"
    pids: dict[int, int] = {}
    dispatch(pool, _pid_of, range(8), window=4, before_submit=lambda: None,
             on_result=pids.__setitem__)
    assert sorted(pids) == list(range(8)) and os.getpid() not in pids.values()
    assert ray_cluster.cpus == 2.0
