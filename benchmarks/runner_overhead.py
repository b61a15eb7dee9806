"""Runner overhead: cells per second at concurrency 1 and 16 against the loopback server.

Every cell goes the whole production path: frozen request → digest check → durable
``attempt`` record (fsync) → the real ``openai`` client → HTTP on 127.0.0.1 → a
reference chess agent behind the loopback server → response stored in the object
store → classification → durable ``tool_event`` and ``final`` records (fsync).

Two server settings are measured: no added latency (pure runner + SDK + HTTP
overhead) and a fixed latency per reply, where the latency-bound ideal is
``concurrency / latency`` cells per second; the table prints it beside the
measured rate. Usage:
``.venv/bin/python benchmarks/runner_overhead.py [--cells N] [--latency-ms MS]``.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from rungbench.agents.loopback import LoopbackServer
from rungbench.agents.openai_provider import OpenAIProvider
from rungbench.chess.reference_agents import RandomMover, validate_move
from rungbench.chess.studies.move_choice import puzzle_schedule
from rungbench.evidence.paths import shared_data_dir
from rungbench.execute.policy import RetryPolicy
from rungbench.execute.runner import create_run, describe_agent, execute_run, verify_run

KEY = "sk-benchmark-not-a-secret"


def measure(cells: int, concurrency: int, latency_s: float, workdir: Path) -> float:
    """Return cells per second of one fresh run of ``cells`` puzzle cells."""
    schedule = puzzle_schedule(shared_data_dir() / "lichess_puzzles" / "puzzles.csv", limit=cells)
    with LoopbackServer(
        RandomMover(seed=0), api_key=KEY, requests=[c.request for c in schedule], delay_s=latency_s
    ) as server:
        provider = OpenAIProvider(
            "loopback", base_url=server.base_url, api_key_env="K", environ={"K": KEY}
        )
        run_dir = create_run(
            workdir / f"c{concurrency}-l{latency_s}",
            schedule,
            describe_agent(provider),
            policy=RetryPolicy(max_attempts=1),
        )
        summary = execute_run(run_dir, provider, validator=validate_move, concurrency=concurrency)
        provider.close()
    if not verify_run(run_dir).ok or summary.outcomes != {"answered": cells}:
        raise SystemExit(f"run incomplete: {summary.outcomes}")
    return summary.cells_per_s


def main() -> None:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=300)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    args = parser.parse_args()
    latency = args.latency_ms / 1000.0
    print(f"{args.cells} puzzle cells per run; fsync on every event; real openai client")
    print(f"{'server latency':>16} {'concurrency':>12} {'cells/s':>10} {'ideal cells/s':>14}")
    with tempfile.TemporaryDirectory(prefix="rungbench-bench-") as tmp:
        for delay in (0.0, latency):
            for concurrency in (1, 16):
                rate = measure(args.cells, concurrency, delay, Path(tmp))
                ideal = f"{concurrency / delay:.1f}" if delay else "n/a"
                print(f"{delay * 1000:>13.0f} ms {concurrency:>12d} {rate:>10.1f} {ideal:>14}")


if __name__ == "__main__":
    main()
