"""Label-stage throughput per engine build, runner overhead and worker speed-up (seed 002).

For each registered build (``stockfish-18-wasm``: Stockfish 18 as WebAssembly under node,
the registration; ``stockfish-15-debian``: Debian's native 15.1) on the same bundled pool:

positions per second = pool positions ÷ wall time of ``run_label_stage`` (1 worker, two
passes, clean cache); the WebAssembly build's time per position ÷ the native build's is
printed beside the goal (≤ 1.3×, docs/CONTRACTS.md, "Chess label stage").

overhead = wall time of ``run_label_stage`` labelling N positions (two passes, clean cache)
           ÷ the engine's own time for the same searches in a bare UCI session
           (target ≤ 1.05).

The bare session is a raw pipe to the same binary with the runner's options (Threads,
Hash, UCI_ShowWDL, UCI_AnalyseMode, MultiPV, Ponder) and repeats exactly what the runner
sends the engine: ``ucinewgame`` before the first search (python-chess sends it), then
for every search ``setoption name Clear Hash``, ``position fen <FEN with counters>``,
``go nodes N``. Clears are timed separately (``isready`` sync) from searches
(``go`` → ``bestmove``), and every bare search is checked against the runner's cache
record (nodes, PV, WDL and score of all ten lines), so both sessions did the same work.

Two ratios are printed: wall ÷ search time, and wall ÷ (clear + search) time. The
contract clears a 256 MB hash before every search (seed 002), so the second is the
runner's overhead proper. Runner and bare session alternate ``--repeats`` times on a
shared host and the minimum of each is kept. The speed-up is wall(1 worker) ÷ wall(2
workers), each from a clean cache. The bench signature is a property of the binary;
it is measured once beforehand and reused (as a repeat run would), not counted.

Usage: .venv/bin/python benchmarks/label_overhead.py [--positions 100] [--nodes 50000]
       [--repeats 2] [--builds stockfish-18-wasm,stockfish-15-debian]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from rungbench.chess.engine import EngineConfig, bench_signature, engine_sha256
from rungbench.chess.engine_builds import BUILD_KEYS, REGISTERED_BUILD
from rungbench.chess.labels.cohort import freeze_cohort
from rungbench.chess.labels.config import LabelConfig
from rungbench.chess.labels.idle import IdleGate
from rungbench.chess.labels.label import run_label_stage
from rungbench.chess.labels.pool import (
    PoolConfig,
    PoolSource,
    bundled_data_dir,
    freeze_pool,
    load_pool,
)
from rungbench.chess.labels.qualify import qualify
from rungbench.chess.workspace import Workspace
from rungbench.evidence.canonical import loads_canonical

TARGET = 1.05
"""The runner's overhead target."""
WASM_GOAL = 1.3
"""Goal for the WebAssembly build's time per position relative to native 15.1."""


class BareUci:
    """A raw UCI session over pipes: no python-chess, no runner."""

    def __init__(self, config: EngineConfig) -> None:
        self.proc = subprocess.Popen(config.command(), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)
        self.send("uci")
        handshake: list[str] = []
        self.until("uciok", handshake)
        declared = {line.split(" type ")[0].removeprefix("option name ").strip()
                    for line in handshake if line.startswith("option name ")}
        # python-chess's analyse sends UCI_AnalyseMode (where declared), MultiPV and Ponder.
        analyse = {"UCI_AnalyseMode": True} if "UCI_AnalyseMode" in declared else {}
        options = {**analyse, **config.uci_options(declared), "MultiPV": config.multipv,
                   "Ponder": False}
        for name, value in options.items():
            text = str(value).lower() if isinstance(value, bool) else str(value)
            self.send(f"setoption name {name} value {text}")
        self.ready()
        self.first = True

    def send(self, line: str) -> None:
        """Write one command."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")

    def until(self, prefix: str, seen: list[str] | None = None) -> str:
        """Read lines until one starts with ``prefix``; return it (others go to ``seen``)."""
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("engine closed its output")
            if line.startswith(prefix):
                return line.strip()
            if seen is not None:
                seen.append(line)

    def ready(self) -> None:
        """Synchronize with isready/readyok."""
        self.send("isready")
        self.until("readyok")

    def clear_and_search(self, fen: str, nodes: int) -> tuple[float, float, dict[int, str]]:
        """Return (clear seconds, go→bestmove seconds, last info line per MultiPV rank)."""
        start = time.perf_counter()
        self.send("setoption name Clear Hash")
        if self.first:  # python-chess sends ucinewgame before its first search
            self.send("ucinewgame")
            self.first = False
        self.ready()
        cleared = time.perf_counter()
        self.send(f"position fen {fen}")
        self.send(f"go nodes {nodes}")
        seen: list[str] = []
        self.until("bestmove", seen)
        searched = time.perf_counter()
        last: dict[int, str] = {}
        for line in seen:
            found = MULTIPV_RE.search(line)
            if line.startswith("info") and " pv " in line and found:
                last[int(found.group(1))] = line
        return cleared - start, searched - cleared, last

    def close(self) -> None:
        """Quit the engine."""
        self.send("quit")
        self.proc.wait(timeout=30)


MULTIPV_RE = re.compile(r" multipv (\d+) ")


def same_search(info: dict[int, str], record: dict[str, Any]) -> bool:
    """Return whether a bare search's last lines equal the runner's record, line by line."""
    lines = record["payload"]["lines"]
    if sorted(info) != list(range(1, len(lines) + 1)):
        return False
    for line in lines:
        tokens = info[line["rank"]].split()
        pv = tokens[tokens.index("pv") + 1:]
        score_kind, score_value = tokens[tokens.index("score") + 1: tokens.index("score") + 3]
        wdl = [int(t) for t in tokens[tokens.index("wdl") + 1: tokens.index("wdl") + 4]]
        nodes = int(tokens[tokens.index("nodes") + 1])
        if (pv, wdl, nodes, {score_kind: int(score_value)}) != (
                line["pv"], line["wdl"], line["search"]["nodes"], line["score"]):
            return False
    return True


def make_workspace(root: Path, positions: int) -> Workspace:
    """Freeze a pool of about ``positions`` bundled positions and qualify it."""
    data = bundled_data_dir()
    ws = Workspace(root)
    half = max(1, positions // 3)
    games = data / "kaggle_chess_positions" / "filtered_chess_positions.jsonl"
    freeze_pool(ws, [PoolSource("lichess_puzzles", data / "lichess_puzzles" / "puzzles.csv", half),
                     PoolSource("pgn_jsonl", games, positions - 2 * half)],
                PoolConfig(reserve=0))
    llm = data / "llm_chess"
    freeze_cohort(ws, "pilot", sorted((llm / "gpt-oss-20b-low_2025-08-12-15-06-46")
                                      .glob("2025*.json")), terminal=True)
    freeze_cohort(ws, "replication", [llm / "gpt-35-turbo-0301_2025-01-22" / "output.txt"],
                  terminal=True)
    qualify(ws)
    return ws


def timed_run(base: Path, name: str, positions: int,
              config: LabelConfig) -> tuple[float, Workspace, dict[str, Any]]:
    """Label a fresh workspace; return (wall seconds, workspace, summary)."""
    ws = make_workspace(base / name, positions)
    shutil.copytree(base / "bench", ws.root / "cache" / "bench")
    start = time.perf_counter()
    summary = run_label_stage(ws, config, IdleGate(max_load=1e9))
    return time.perf_counter() - start, ws, summary


def bare_session(ws: Workspace, engine: EngineConfig) -> tuple[float, float, int]:
    """Repeat the runner's searches and clears in a bare UCI session, in the runner's order
    (pass A over the pool, then pass B): (clear s, search s, searches identical to the
    runner's records)."""
    pool = load_pool(ws.pool)
    labels = {row["key"]: row for row in loads_canonical((ws.stage / "labels.json").read_bytes())}
    bare = BareUci(engine)
    clear_s = search_s = 0.0
    same = 0
    for pass_ in ("A", "B"):
        for pos in pool.positions:
            c, s, info = bare.clear_and_search(pos.fen, engine.nodes)
            clear_s += c
            search_s += s
            same += same_search(info, ws.store.get_json(labels[pos.key]["records"][pass_]))
    bare.close()
    return clear_s, search_s, same


def measure(build: str, args: argparse.Namespace, base: Path) -> dict[str, Any]:
    """Run the runner (1 and 2 workers) and the bare session on ``build``; print the figures."""
    engine = EngineConfig(build=build, nodes=args.nodes)
    warm = Workspace(base / f"warm-{build}")
    warm.root.mkdir(parents=True)
    if engine.engine_build.has_bench:
        bench_signature(engine.file, engine_sha256(engine), warm)
    (warm.root / "cache" / "bench").mkdir(parents=True, exist_ok=True)
    shutil.copytree(warm.root / "cache" / "bench", base / "bench", dirs_exist_ok=True)
    load_before = os.getloadavg()[0]

    walls1: list[float] = []
    walls2: list[float] = []
    bares: list[tuple[float, float, int]] = []
    for repeat in range(args.repeats):
        wall1, ws1, run1 = timed_run(base, f"{build}-w1-{repeat}", args.positions,
                                     LabelConfig(engine=engine))
        bares.append(bare_session(ws1, engine))
        wall2, _, run2 = timed_run(base, f"{build}-w2-{repeat}", args.positions,
                                   LabelConfig(engine=engine, workers=2))
        assert run1["manifest"] == run2["manifest"], "worker count changed the manifest"
        walls1.append(wall1)
        walls2.append(wall2)
    pool = load_pool(ws1.pool)
    wall1, wall2 = min(walls1), min(walls2)
    clear_s, search_s = min(b[0] for b in bares), min(b[1] for b in bares)
    engine_s = min(b[0] + b[1] for b in bares)
    same = min(b[2] for b in bares)
    positions = len(pool.positions)
    searches = 2 * positions
    name = run1["flow_report"]["engine"]["name"]
    print(f"== {build} ({name}): {positions} positions × 2 passes = {searches} "
          f"searches, {args.nodes} nodes, MultiPV 10, Threads 1, Hash 256 MB, "
          f"{os.cpu_count()} CPUs shared with other work, load average {load_before:.2f} → "
          f"{os.getloadavg()[0]:.2f}; min of {args.repeats} alternating runs")
    print(f"  throughput, 1 worker: {positions / wall1:.3f} positions/s "
          f"({wall1 / positions * 1000:.0f} ms per position, two passes); 2 workers: "
          f"{positions / wall2:.3f} positions/s")
    print(f"  bare UCI session: clear hash {clear_s:.2f} s + search (go→bestmove) {search_s:.2f} s"
          f" = {engine_s:.2f} s; identical to the runner's records in {same}/{searches} "
          "searches (nodes, PV, WDL, score of all ten lines)")
    print(f"  runner, 1 worker:  wall {wall1:.2f} s ({run1['labelled']} labels, "
          f"{run1['excluded']} exclusions); all runs {[round(w, 2) for w in walls1]}")
    print(f"  overhead = wall / (clear + search) = {wall1 / engine_s:.3f}   target ≤ {TARGET}"
          f"   {'MET' if wall1 / engine_s <= TARGET else 'NOT MET'}; per repeat (runner ÷ "
          f"the bare session right after it) "
          f"{[round(w / (b[0] + b[1]), 3) for w, b in zip(walls1, bares, strict=True)]}")
    print(f"  overhead = wall / search only      = {wall1 / search_s:.3f}   (the 256 MB clears "
          f"are engine work the contract requires: {clear_s / searches * 1000:.1f} ms each)")
    print(f"  runner time outside the engine's work: {wall1 - engine_s:.2f} s "
          f"({(wall1 - engine_s) / searches * 1000:.1f} ms per search, fixed costs included)")
    print(f"  runner, 2 workers: wall {wall2:.2f} s; speed-up 2 vs 1 = {wall1 / wall2:.2f}× "
          f"(ideal 2.00× on an otherwise idle 2-CPU host); all runs "
          f"{[round(w, 2) for w in walls2]}")
    return {"positions": positions, "wall1": wall1, "search_s": search_s}


def main() -> None:
    """Measure every requested build and print the figures next to the targets."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--positions", type=int, default=100)
    parser.add_argument("--nodes", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=2, help="Alternate runs; keep the min.")
    parser.add_argument("--builds", default=",".join(BUILD_KEYS),
                        help="Comma-separated engine builds to measure.")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="rungbench-label-bench-"))
    (base / "bench").mkdir()
    figures = {build: measure(build, args, base) for build in args.builds.split(",")}
    others = [b for b in figures if b != REGISTERED_BUILD]
    if REGISTERED_BUILD in figures and others:
        wasm, native = figures[REGISTERED_BUILD], figures[others[0]]
        ratio = (wasm["wall1"] / wasm["positions"]) / (native["wall1"] / native["positions"])
        engine_ratio = wasm["search_s"] / native["search_s"]
        print(f"== {REGISTERED_BUILD} ÷ {others[0]} per position: runner wall {ratio:.2f}×, "
              f"bare search time {engine_ratio:.2f}×   goal ≤ {WASM_GOAL}×   "
              f"{'MET' if ratio <= WASM_GOAL else 'NOT MET'}")
    shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
