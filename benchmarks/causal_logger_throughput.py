"""Events per second through the claim logger's socket at 1 and 8 clients (seed 003), on the
SQLite store and on a real PostgreSQL server (a throw-away one from Debian's binaries).

Every event is committed and fsynced before its acknowledgement (SQLite WAL with
``synchronous=FULL``; PostgreSQL with ``synchronous_commit`` on); the figure is the cost of
that guarantee on this machine. The chains are verified after each run.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rungbench.causal.instrument import client, logger
from rungbench.evidence.database import postgres_server, postgres_unavailable


def _measure(folder: Path, db_url: str | None) -> list[dict[str, Any]]:
    cfg = logger.LoggerConfig(str(folder / "s"), allow_root=True, namespace="bench:",
                              reserved=(), db_url=db_url)
    with logger.running(cfg):
        runs = [client.throughput(cfg.socket_path, n, 2000) for n in (1, 8)]
    if not logger.verify(cfg).ok:
        raise SystemExit("chain verification failed after the benchmark")
    return runs


@contextlib.contextmanager
def _postgres() -> Iterator[str | None]:
    if postgres_unavailable() is not None:
        yield None
        return
    with postgres_server() as server:
        yield server.create_database("logger_bench")


def main() -> None:
    """Run 2,000 events per client count on each backend; print events/s and the ratios."""
    results: dict[str, list[dict[str, Any]]] = {}
    folder = Path(tempfile.mkdtemp(prefix="rbb-", dir="/tmp"))
    try:
        results["sqlite"] = _measure(folder / "lite", None)
        with _postgres() as url:
            if url is None:
                print(f"postgresql: not measured ({postgres_unavailable()})")
            else:
                results["postgresql"] = _measure(folder / "pg", url)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    base = results["sqlite"]
    for name, runs in results.items():
        for r, ref in zip(runs, base, strict=True):
            print(f"{name:<11} {r['clients']} client(s): {r['events_per_second']} events/s "
                  f"(ratio {r['events_per_second'] / runs[0]['events_per_second']:.2f} vs 1 "
                  f"client, {r['events_per_second'] / ref['events_per_second']:.2f} vs sqlite)")


if __name__ == "__main__":
    main()
