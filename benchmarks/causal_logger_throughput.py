"""Events per second through the claim logger's socket at 1 and 8 clients (seed 003).

Every event is committed and fsynced before its acknowledgement; the figure is the cost of
that guarantee on this machine. The chains are verified after the run.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from rungbench.causal.instrument import client, logger


def main() -> None:
    """Run 2,000 events per client count and print events/s beside the one-client figure."""
    folder = Path(tempfile.mkdtemp(prefix="rbb-", dir="/tmp"))
    try:
        cfg = logger.LoggerConfig(str(folder / "s"), allow_root=True, namespace="bench:",
                                  reserved=())
        with logger.running(cfg):
            runs = [client.throughput(cfg.socket_path, n, 2000) for n in (1, 8)]
        for r in runs:
            ratio = r["events_per_second"] / runs[0]["events_per_second"]
            print(f"{r['clients']} client(s): {r['events_per_second']} events/s "
                  f"(ratio {ratio:.2f} vs 1 client)")
        if not logger.verify(cfg).ok:
            raise SystemExit("chain verification failed after the benchmark")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
