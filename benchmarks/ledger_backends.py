"""Ledger appends per second on SQLite and on PostgreSQL (a real local server), side by side.

Each backend: one writer appending N events through ``Ledger.append`` (verified tail, durable
commit: SQLite WAL with ``synchronous = FULL``; PostgreSQL with its defaults, ``fsync`` and
``synchronous_commit = on``), then two spawned writers appending N/2 each at once, then a full
``verify_chain`` walk. The reference is the ledger's documented cost on SQLite: ~3 ms per
synchronous commit (~330 appends/s) and ~26 µs per row verified. The PostgreSQL server is a
throw-away one from Debian's binaries (``rungbench.evidence.database.postgres_server``) on
127.0.0.1, so every PostgreSQL append pays five loopback round trips besides its commit.

Run: .venv/bin/python benchmarks/ledger_backends.py [--events 2000]
"""

from __future__ import annotations

import argparse
import multiprocessing
import tempfile
import time
from pathlib import Path

from rungbench.evidence.database import postgres_server, postgres_unavailable
from rungbench.evidence.ledger import Ledger, verify_chain

REFERENCE_APPENDS_PER_S = 1 / 0.003
REFERENCE_VERIFY_US_PER_ROW = 26.0


def _append(target: str, tag: int, n: int) -> None:
    with Ledger(target) as ledger:
        for i in range(n):
            ledger.append("bench", {"writer": tag, "i": i})


def _measure(target: str, n: int) -> dict[str, float]:
    Ledger(target).close()
    start = time.perf_counter()
    _append(target, 0, n)
    one = n / (time.perf_counter() - start)
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_append, args=(target, k, n // 2)) for k in (1, 2)]
    start = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    two = 2 * (n // 2) / (time.perf_counter() - start)
    if [w.exitcode for w in workers] != [0, 0]:
        raise SystemExit(f"a writer failed on {target}")
    start = time.perf_counter()
    report = verify_chain(target)
    walk = time.perf_counter() - start
    if not report.ok or report.count != n + 2 * (n // 2):
        raise SystemExit(f"chain not intact after the benchmark: {report.to_json()}")
    return {"one": one, "two": two, "verify_us": 1e6 * walk / report.count}


def main() -> None:
    """Measure both backends and print appends/s beside the reference and each other."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=2000)
    args = parser.parse_args()
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        results["sqlite"] = _measure(str(Path(tmp) / "ledger.sqlite"), args.events)
    reason = postgres_unavailable()
    if reason is None:
        with postgres_server() as server:
            results["postgresql"] = _measure(server.create_database("bench"), args.events)
    else:
        print(f"postgresql: not measured ({reason})")
    base = results["sqlite"]
    print(f"{'backend':<11} {'1 writer/s':>11} {'x ref':>6} {'2 writers/s':>12} "
          f"{'x sqlite':>9} {'verify us/row':>14} {'x ref':>6}")
    for name, r in results.items():
        print(f"{name:<11} {r['one']:>11.0f} {r['one'] / REFERENCE_APPENDS_PER_S:>6.2f} "
              f"{r['two']:>12.0f} {r['two'] / base['two']:>9.2f} {r['verify_us']:>14.1f} "
              f"{r['verify_us'] / REFERENCE_VERIFY_US_PER_ROW:>6.2f}")
    print(f"reference (SQLite, ledger docstring): {REFERENCE_APPENDS_PER_S:.0f} appends/s, "
          f"{REFERENCE_VERIFY_US_PER_ROW:.0f} us/row verified; events per phase: {args.events}")


if __name__ == "__main__":
    main()
