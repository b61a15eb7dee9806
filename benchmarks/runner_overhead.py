"""Runner throughput and memory against the loopback server, beside the ideal and the targets.

Every cell goes the whole production path: frozen request → digest check → ``attempt``
record made durable (group commit: one fsync per batch) → the real ``openai`` client →
HTTP on 127.0.0.1 → a reference chess agent behind the loopback server → response stored
(fsynced) in the object store → classification → ``tool_event`` and ``final`` records
(durable before the run returns). The loopback server runs in a child process, as a real
endpoint would be outside the runner's process (it has its own interpreter lock).

Measured (issue 21, item 3), each the best and the median of ``--repeats`` fresh runs:

* cells/s at concurrency 1, 16 and 64 with no added latency (target: ≥ 1,000 cells/s at
  concurrency 64) and with a fixed latency per reply (ideal ``concurrency / latency``;
  target: ≥ 90 % of ideal at concurrency 16 and 64);
* each row in the runner's process (p=0) and with the calls sent by p helper processes
  (``OpenAIProvider(client_processes=p)``: the SDK's work off the runner's interpreter
  lock), beside the most the host's cores allow at the measured CPU per cell;
* the same rows with the real client alone (no runner: its own coroutine under the same
  bound), the ceiling of the rows above on this host, and the runner's share of it;
* the same rows with the runner alone (an in-process agent that sleeps the latency), which
  separates the runner's own cost from the SDK's and the server's;
* memory per cell: the growth of the runner process's resident set over a run, per cell,
  between a small and a large run (target: flat, i.e. about the size of the frozen request
  the runner holds for each cell, whatever the number of cells);
* CPU time per cell of the runner's process (runner, SDK, HTTP client) and of the server's
  process, each the median over the row's runs: on a shared host these move far less
  than the rates do, and their sum against the cores available bounds the rate.

Usage: ``.venv/bin/python benchmarks/runner_overhead.py [--cells N] [--latency-ms MS]
[--repeats K] [--concurrency 1 16 64] [--client-processes 0 1 2]``. The host may be shared:
say so beside the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import multiprocessing.connection
import os
import resource
import statistics
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from rungbench.agents.loopback import LoopbackServer
from rungbench.agents.openai_provider import OpenAIProvider
from rungbench.agents.protocol import Request, Response, ToolCall
from rungbench.chess.reference_agents import RandomMover, validate_move
from rungbench.chess.studies.move_choice import puzzle_schedule
from rungbench.evidence.paths import shared_data_dir
from rungbench.execute.policy import RetryPolicy
from rungbench.execute.runner import create_run, describe_agent, execute_run, verify_run
from rungbench.execute.schedule import Schedule

KEY = "sk-benchmark-not-a-secret"
TARGET_CELLS_PER_S = 1000.0
"""Issue 21: cells/s at concurrency 64 with a zero-latency server."""
TARGET_IDEAL_SHARE = 0.90
"""Issue 21: share of ``concurrency / latency`` at 50 ms, concurrency 16 and 64."""
BEFORE_CELLS_PER_S = {(16, 0.0): "200-310", (16, 0.05): "197-256"}
"""Issue 21's measurements of the runner before group commit."""


def _schedule(cells: int) -> Schedule:
    return puzzle_schedule(shared_data_dir() / "lichess_puzzles" / "puzzles.csv", limit=cells)


def _cpu_s() -> float:
    """User and system CPU seconds of this process so far (all its threads)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _serve(cells: int, latency_s: float, conn: multiprocessing.connection.Connection) -> None:
    """Child process: serve the schedule's cells until told to stop; report the CPU time
    spent serving."""
    schedule = _schedule(cells)
    # the random mover answers in a fraction of a millisecond: on the loop thread itself
    with LoopbackServer(RandomMover(seed=0), api_key=KEY, requests=[c.request for c in schedule],
                        delay_s=latency_s, inline_agent=True) as server:
        start = _cpu_s()
        conn.send(server.base_url)
        conn.recv()
        conn.send(_cpu_s() - start)


def _rss_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096


@contextlib.contextmanager
def _server(cells: int, latency_s: float, served: list[float]) -> Iterator[str]:
    """The loopback server in a child process, for the block; yields its base URL and, on
    leaving, appends the CPU seconds it spent serving to ``served`` (NaN if it did not
    say)."""
    ctx = multiprocessing.get_context("spawn")
    here, there = ctx.Pipe()
    child = ctx.Process(target=_serve, args=(cells, latency_s, there), daemon=True)
    child.start()
    try:
        yield here.recv()
    finally:
        here.send("stop")
        served.append(here.recv() if here.poll(10) else float("nan"))
        child.join(10)
        if child.is_alive():
            child.kill()


def _helper_cpu_s(pids: list[int]) -> float:
    """User and system CPU seconds of the processes ``pids`` so far (from /proc)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / ticks


def measure(cells: int, concurrency: int, latency_s: float, workdir: Path,
            processes: int = 0) -> dict[str, float]:
    """Return cells/s and the resident-set growth of one fresh run of ``cells`` puzzle cells
    (the provider's calls sent by ``processes`` helper processes; 0: in the runner's).

    The provider is warmed first (two calls per helper, or two in-process) so that a
    helper's one-off start (a spawned interpreter importing the SDK) is not charged to the
    cells; it is returned as ``start_s``.
    """
    served: list[float] = []
    with _server(cells, latency_s, served) as base_url:
        schedule = _schedule(cells)
        provider = OpenAIProvider("loopback", base_url=base_url, api_key_env="K",
                                  environ={"K": KEY}, client_processes=processes)
        started = time.perf_counter()
        for cell in schedule.cells[:2 * max(processes, 1)]:
            provider.respond(cell.request)
        start_s = time.perf_counter() - started
        pids = provider.client_pids()
        run_dir = create_run(workdir / f"c{concurrency}-l{latency_s}-n{cells}-p{processes}",
                             schedule, describe_agent(provider),
                             policy=RetryPolicy(max_attempts=1))
        del schedule
        before, cpu, helpers = _rss_bytes(), _cpu_s(), _helper_cpu_s(pids)
        summary = execute_run(run_dir, provider, validator=validate_move,
                              concurrency=concurrency)
        cpu, grown = _cpu_s() - cpu, _rss_bytes() - before
        helpers = _helper_cpu_s(pids) - helpers
        provider.close()
    if not verify_run(run_dir, validate_move).ok or summary.outcomes != {"answered": cells}:
        raise SystemExit(f"run incomplete: {summary.outcomes}")
    return {"rate": summary.cells_per_s, "rss": float(grown), "cpu": (cpu + helpers) / cells,
            "server_cpu": served[0] / cells, "start_s": start_s}


def measure_bare(cells: int, concurrency: int, latency_s: float,
                 workdir: Path) -> dict[str, float]:
    """Calls/s of the real client alone against the same server: the provider's own
    coroutine under a bound of ``concurrency`` calls, no runner (no log, store or
    classification). The ceiling of the rows above on this host."""
    del workdir
    served: list[float] = []
    with _server(cells, latency_s, served) as base_url:
        requests = [c.request for c in _schedule(cells)]
        provider = OpenAIProvider("loopback", base_url=base_url, api_key_env="K",
                                  environ={"K": KEY})

        async def main() -> float:
            bound = asyncio.Semaphore(concurrency)

            async def one(request: Request) -> None:
                async with bound:
                    await provider.respond_async(request)

            start = time.perf_counter()
            await asyncio.gather(*(one(r) for r in requests))
            return time.perf_counter() - start

        cpu = _cpu_s()
        elapsed = provider.drive(main)
        cpu = _cpu_s() - cpu
        provider.close()
    return {"rate": cells / elapsed, "rss": 0.0, "cpu": cpu / cells,
            "server_cpu": served[0] / cells}


class _Sleeper:
    """An in-process agent that waits ``latency_s`` and answers one fixed move: the runner
    alone (log, store, digests, threads), without the SDK, HTTP or a server."""

    name = "sleeper"

    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s

    def respond(self, request: Request) -> Response:
        """Wait, then answer."""
        time.sleep(self.latency_s)
        return Response(text=None, tool_calls=(ToolCall("submit_move", '{"move": "e2e4"}'),))


def measure_runner_alone(cells: int, concurrency: int, latency_s: float,
                         workdir: Path) -> dict[str, float]:
    """Cells/s of the runner with :class:`_Sleeper` as the agent (no validator)."""
    schedule = _schedule(cells)
    agent = _Sleeper(latency_s)
    run_dir = create_run(workdir / f"alone-c{concurrency}-l{latency_s}", schedule,
                         describe_agent(agent), policy=RetryPolicy(max_attempts=1))
    cpu = _cpu_s()
    summary = execute_run(run_dir, agent, concurrency=concurrency)
    cpu = _cpu_s() - cpu
    if summary.finalized != cells:
        raise SystemExit(f"run incomplete: {summary.outcomes}")
    return {"rate": summary.cells_per_s, "rss": 0.0, "cpu": cpu / cells, "server_cpu": 0.0}


def _isolated(cells: int, concurrency: int, latency_s: float, *,
              alone: bool = False, bare: bool = False, processes: int = 0) -> dict[str, float]:
    """:func:`measure` in a fresh process (so resident-set figures start from the same base)."""
    ctx = multiprocessing.get_context("spawn")
    with (ProcessPoolExecutor(1, mp_context=ctx) as pool,
          tempfile.TemporaryDirectory(prefix="rungbench-bench-") as tmp):
        if alone or bare:
            fn = measure_runner_alone if alone else measure_bare
            return pool.submit(fn, cells, concurrency, latency_s, Path(tmp)).result()
        return pool.submit(measure, cells, concurrency, latency_s, Path(tmp),
                           processes).result()


def _row(label: str, runs: list[dict[str, float]], ideal: float | None, target: str,
         bare: list[dict[str, float]] | None = None) -> str:
    rates = [r["rate"] for r in runs]
    best, median = max(rates), statistics.median(rates)
    shown = f"{ideal:>8.0f}" if ideal else f"{'n/a':>8}"
    share = f"{best / ideal:>6.0%} {median / ideal:>6.0%}" if ideal else f"{'':>6} {'':>6}"
    cpu = statistics.median(r["cpu"] for r in runs) * 1000
    served = statistics.median(r["server_cpu"] for r in runs) * 1000
    server = f"{served:>6.2f}" if served else f"{'-':>6}"
    bound = f"{CORES * 1000 / (cpu + served):>7.0f}"
    ceiling = (f"{median / statistics.median(r['rate'] for r in bare):>6.0%}" if bare
               else f"{'':>6}")
    return (f"{label:<22} {best:>8.0f} {median:>8.0f} {shown} {share} {cpu:>6.2f} {server}"
            f" {bound} {ceiling}   {target}")


CORES = os.cpu_count() or 1
HEADER = (f"{'latency, conc., helpers':<22} {'best/s':>8} {'median/s':>8} {'ideal/s':>8} "
          f"{'best':>6} {'median':>6} {'cpu ms':>6} {'server':>6} {'bound/s':>7} {'/bare':>6}"
          "   target (before)")


def _target(delay: float, concurrency: int) -> str:
    if delay and concurrency >= 16:
        target = f">= {TARGET_IDEAL_SHARE:.0%} of ideal"
    elif not delay and concurrency == 64:
        target = f">= {TARGET_CELLS_PER_S:.0f}/s"
    else:
        target = "-"
    before = BEFORE_CELLS_PER_S.get((concurrency, round(delay, 3)))
    return target + (f" ({before}/s before)" if before else "")


def main() -> None:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=1000)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--client-processes", type=int, nargs="+", default=[0, 1, 2],
                        help="Helper processes sending the calls (0: the runner's own).")
    parser.add_argument("--memory-cells", type=int, nargs=2, default=[200, 1000],
                        help="Two run sizes (the puzzle file holds 1,000 cells).")
    args = parser.parse_args()
    latency = args.latency_ms / 1000.0
    print(f"{args.cells} puzzle cells per run, {args.repeats} runs per row (best, median); "
          "group commit; cells as coroutines on the real openai client's loop (AsyncOpenAI "
          "over aiohttp), in the runner's process or in N helper processes (the provider "
          "warmed by two calls per helper first); asyncio loopback server in a child "
          "process; 'cpu ms': CPU time per cell of the runner's process and its helpers, "
          "'server': of the server's process (medians); 'bound/s': the most "
          f"{CORES} cores allow at those CPU costs ({CORES} / (cpu + server))")
    print(HEADER)
    bare: dict[tuple[float, int], list[dict[str, float]]] = {}
    starts: dict[int, list[float]] = {n: [] for n in args.client_processes}
    for delay in (0.0, latency):
        for concurrency in args.concurrency:
            bare[delay, concurrency] = [_isolated(args.cells, concurrency, delay, bare=True)
                                        for _ in range(args.repeats)]
            ideal = concurrency / delay if delay else None
            for processes in args.client_processes:
                runs = [_isolated(args.cells, concurrency, delay, processes=processes)
                        for _ in range(args.repeats)]
                starts[processes] += [r["start_s"] for r in runs]
                label = f"{delay * 1000:>4.0f} ms, c={concurrency:<3d} p={processes}"
                print(_row(label, runs, ideal, _target(delay, concurrency),
                           bare[delay, concurrency]))
    print("provider start (first calls, helpers spawned), median s: " + ", ".join(
        f"p={n}: {statistics.median(v):.2f}" for n, v in starts.items()))
    print("the openai client alone against the same server (no runner; '/bare' above is the "
          "runner's median over this row's):")
    for (delay, concurrency), runs in bare.items():
        print(_row(f"{delay * 1000:>4.0f} ms, c={concurrency:<3d}", runs,
                   concurrency / delay if delay else None, ""))
    print("the runner alone (an in-process agent that sleeps the latency; no SDK, HTTP or "
          "server):")
    for delay in (0.0, latency):
        for concurrency in args.concurrency:
            runs = [_isolated(args.cells, concurrency, delay, alone=True)
                    for _ in range(args.repeats)]
            print(_row(f"{delay * 1000:>4.0f} ms, c={concurrency:<3d}", runs,
                       concurrency / delay if delay else None, ""))
    small, large = args.memory_cells
    growth: dict[int, list[float]] = {n: [] for n in (small, large)}
    for _ in range(args.repeats):
        for n in (small, large):
            growth[n].append(_isolated(n, 16, 0.0)["rss"])
    per_cell = [(b - a) / (large - small) for a, b in zip(growth[small], growth[large],
                                                          strict=True)]
    request = _request_bytes()
    print(f"memory per cell (resident-set growth between {small} and {large} cells, c=16): "
          f"median {statistics.median(per_cell) / 1024:.1f} KB, best {min(per_cell) / 1024:.1f}"
          f" KB; a frozen request's canonical bytes: {request / 1024:.1f} KB "
          "(before: ~14 KB per cell)")


def _request_bytes() -> int:
    sample: list[Any] = list(_schedule(50))
    return sum(len(c.request.canonical()) for c in sample) // len(sample)


if __name__ == "__main__":
    main()
