"""The labelling engine through python-chess UCI (seed 002, "Two passes, one narrow question").

The engine is one of the registered builds of :mod:`rungbench.chess.engine_builds`
(``EngineConfig.build``): Stockfish 18 as WebAssembly under ``node`` (the registration,
the default where installed) or Debian's Stockfish 15.1. Identity = the build (key,
package, version, the sha256 of every file, the NNUE networks it declares) + the sha256
of its files + its ``id name`` + its ``bench`` node signature (native builds; the
WebAssembly build has no ``bench``) + every UCI option with the value in force + the
options this package sends. The search contract is Threads=1, Hash=256 MB,
``UCI_ShowWDL``, MultiPV 10 through ``analyse(..., multipv=10)`` (MultiPV cannot be set
through ``configure``), a node limit (50,000 by default), and a ``Clear Hash`` before
every uncached position. WDL is the engine's own report; it is never converted from
centipawns.

Every engine process this package starts goes through :func:`start_uci` or
:func:`run_bench`, so a test can prove that a refusal came before any of them.

No engine call can hang: every python-chess command (handshake, ``configure``, search
start, ``quit``) has :data:`COMMAND_TIMEOUT_S`, every search
:func:`search_timeout`, ``bench`` :data:`BENCH_TIMEOUT_S`. A timeout, a dead engine or a
python-chess error is an :class:`EngineError` naming the engine binary. Each configured
option is checked against the range the engine declares in its ``uci`` handshake (and
``Hash`` against this host's memory) before anything is sent, so ``--hash-mb`` beyond
what the engine or host can hold fails at once, naming the option.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import chess.engine

import chess
from rungbench.chess.engine_builds import (
    BUILD_KEYS,
    DEBIAN_STOCKFISH,
    EngineBuild,
    EngineError,
    build_of,
    command,
    default_build,
    default_path,
    file_digests,
    files_digest,
    installed_version,
    networks,
)
from rungbench.chess.workspace import Workspace, read_json, write_canonical
from rungbench.errors import InputError, RungbenchError
from rungbench.evidence.canonical import digest, file_digest

DEFAULT_ENGINE = DEBIAN_STOCKFISH
"""Debian's Stockfish 15.1 binary (the ``stockfish-15-debian`` build; the README names its
apt package)."""

DEFAULT_NODES = 50_000
"""Seed 002's fixed node budget per search."""

MAX_NODES = 1_000_000_000
"""Largest registered node limit per search."""
MAX_HASH_MB = 2**30
"""Largest Hash any configuration may ask for (1 PiB; the engine and host bound it further)."""
COMMAND_TIMEOUT_S = 60.0
"""Seconds any engine command but a search may take (handshake, configure, quit)."""
SEARCH_TIMEOUT_S = 120.0
"""Fixed allowance, in seconds, of every search on top of its node budget."""
MIN_NODES_PER_S = 10_000.0
"""Slowest search speed the timeout of a search allows for."""
BENCH_TIMEOUT_S = 600.0
"""Seconds ``<binary> bench`` may take."""
OPTION_FLAGS = {"Hash": "--hash-mb", "Threads": "threads"}
"""The setting each configured UCI option comes from, named in errors."""

_BENCH_RE = re.compile(r"Nodes searched\s*:\s*(\d+)")


@dataclass(frozen=True)
class EngineConfig:
    """The registered search contract and the engine build that runs it."""

    build: str = field(default_factory=default_build)
    """Registered engine build (:data:`rungbench.chess.engine_builds.BUILDS`): seed 002's
    ``stockfish-18-wasm`` where installed, else ``stockfish-15-debian``."""
    path: Path | None = None
    """Engine file; None: the build's installed file (see :attr:`file`)."""
    nodes: int = DEFAULT_NODES
    """Node limit of every search."""
    threads: int = 1
    """UCI Threads (1: node-limited searches repeat bit for bit with a cleared hash)."""
    hash_mb: int = 256
    """UCI Hash in MB."""
    multipv: int = 10
    """Lines per search, passed to ``analyse``."""

    def __post_init__(self) -> None:
        if self.build not in BUILD_KEYS:
            raise InputError(f"engine build must be one of {', '.join(BUILD_KEYS)}, got "
                             f"{self.build!r}", field="build")
        for name, value, top in (("nodes", self.nodes, MAX_NODES),
                                 ("hash_mb", self.hash_mb, MAX_HASH_MB),
                                 ("threads", self.threads, 1024), ("multipv", self.multipv, 500)):
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top:
                raise InputError(f"{name} must be an integer in 1..{top}, got {value!r}",
                                 field=name)

    @property
    def engine_build(self) -> EngineBuild:
        """The registered build."""
        return build_of(self.build)

    @property
    def file(self) -> Path:
        """The engine file: ``path``, or the build's installed file."""
        return self.path if self.path is not None else default_path(self.engine_build)

    def command(self) -> list[str]:
        """The command line starting the engine (``node <file>`` for the WebAssembly build)."""
        return command(self.engine_build, self.file)

    def uci_options(self, declared: Collection[str] | None = None) -> dict[str, int | bool]:
        """Return the options set through ``configure``.

        ``UCI_AnalyseMode`` is set explicitly when the engine declares it (``declared``
        None: assume it does; Stockfish 15.1 does, Stockfish 18 no longer has it):
        python-chess's ``analyse`` would otherwise switch it on behind the identity's back
        (Stockfish's default is false), and the identity must record the value in force.
        """
        options: dict[str, int | bool] = {"Threads": self.threads, "Hash": self.hash_mb,
                                          "UCI_ShowWDL": True}
        if declared is None or "UCI_AnalyseMode" in declared:
            options["UCI_AnalyseMode"] = True
        return options

    def to_json(self) -> dict[str, Any]:
        """Return the contract as recorded in the stage (the cache key drops ``path`` and
        ``build``: the engine identity it holds names the build and its files' digests)."""
        return {"build": self.build, "path": str(self.file), "nodes": self.nodes,
                "threads": self.threads, "hash_mb": self.hash_mb, "multipv": self.multipv}


@dataclass(frozen=True)
class EngineIdentity:
    """Who answered: build, files, name, bench signature and every option."""

    sha256: str
    """``sha256:`` of the engine's files (a native binary's own digest; for several files
    the digest of their name → digest map, :func:`rungbench.chess.engine_builds.files_digest`)."""
    name: str
    """The engine's ``id name`` line."""
    bench_nodes: int | None
    """``Nodes searched`` printed by ``<binary> bench`` (the release signature); None for a
    build without ``bench`` (the WebAssembly build)."""
    options: dict[str, Any]
    """Every UCI option: type, default and the value in force."""
    build: dict[str, Any]
    """The build: key, package, version, file name → sha256, NNUE networks, and the options
    this package sends (``sent``)."""

    def to_json(self) -> dict[str, Any]:
        """Return the identity as a JSON-ready mapping."""
        return {"sha256": self.sha256, "name": self.name, "bench_nodes": self.bench_nodes,
                "options": self.options, "build": self.build}

    @property
    def digest(self) -> str:
        """Digest of the identity (enters every cache key)."""
        return digest(self.to_json())

    def engine_json(self) -> dict[str, Any]:
        """The identity without the option values: what must not change within one
        workspace (the engine), as opposed to the contract (Hash, MultiPV)."""
        build = {k: v for k, v in self.build.items() if k != "sent"}
        return {"sha256": self.sha256, "name": self.name, "bench_nodes": self.bench_nodes,
                "build": build}

    @property
    def engine_digest(self) -> str:
        """Digest of :meth:`engine_json`."""
        return digest(self.engine_json())


def binary_digest(path: Path) -> str:
    """Return ``sha256:`` of the engine binary."""
    if not path.is_file():
        raise EngineError(f"engine binary {path} does not exist")
    return file_digest(str(path))


def build_digests(config: EngineConfig) -> dict[str, str]:
    """Return ``sha256:`` of every file of the configured build, by name; a pinned build's
    files must equal its committed ``SHA256SUMS`` (a :class:`BuildError` otherwise)."""
    if not config.file.is_file():
        raise EngineError(f"engine binary {config.file} does not exist")
    return file_digests(config.engine_build, config.file)


def engine_sha256(config: EngineConfig) -> str:
    """Return the one ``sha256:`` of the configured build's files (re-checked at publication)."""
    return files_digest(build_digests(config))


def run_bench(path: Path) -> int:
    """Run ``<binary> bench`` and return its ``Nodes searched`` count."""
    try:
        done = subprocess.run([str(path), "bench"], capture_output=True, text=True,
                              check=False, timeout=BENCH_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        raise EngineError(f"{path} bench did not finish within {BENCH_TIMEOUT_S:.0f} s") from exc
    except OSError as exc:
        raise EngineError(f"cannot run {path} bench: {exc}") from exc
    found = _BENCH_RE.findall(done.stdout + done.stderr)
    if done.returncode != 0 or not found:
        raise EngineError(f"{path} bench exited {done.returncode} without 'Nodes searched'")
    return int(found[-1])


_BENCH_MEMO: dict[str, int] = {}


def bench_signature(path: Path, sha256: str, workspace: Workspace) -> int:
    """Return the bench signature of the binary hashing to ``sha256``, cached per binary.

    The signature is a property of the binary, so it is computed once per binary and
    process and recorded in the workspace (``cache/bench/<hex>.json``). A record that is
    malformed, names another binary or disagrees with this process's measurement is
    re-measured and rewritten, never trusted.
    """
    cached = workspace.root / "cache" / "bench" / f"{sha256[7:]}.json"
    expected_keys = {"sha256", "bench_nodes"}
    valid = False
    if cached.is_file():
        try:
            record = read_json(cached)
        except RungbenchError:
            record = None
        valid = (isinstance(record, dict) and set(record) == expected_keys
                 and record["sha256"] == sha256 and type(record["bench_nodes"]) is int
                 and record["bench_nodes"] > 0)
        if valid:
            nodes = int(record["bench_nodes"])
            valid = _BENCH_MEMO.setdefault(sha256, nodes) == nodes
    if sha256 not in _BENCH_MEMO:
        _BENCH_MEMO[sha256] = run_bench(path)
    if not valid:
        write_canonical(cached, {"sha256": sha256, "bench_nodes": _BENCH_MEMO[sha256]})
    return _BENCH_MEMO[sha256]


def physical_memory_mb() -> int:
    """This host's physical memory in MB."""
    return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2**20)


def option_problems(options: dict[str, chess.engine.Option], config: EngineConfig
                    ) -> list[str]:
    """Every reason ``config`` cannot be applied to an engine declaring ``options``."""
    wanted = config.uci_options(options)
    missing = [o for o in (*wanted, "Clear Hash") if o not in options]
    if missing:
        return [f"lacks UCI options {missing}"]
    problems = []
    for name, value in wanted.items():
        option = options[name]
        low, high = option.min, option.max
        if option.type == "spin" and isinstance(value, int) and low is not None \
                and high is not None and not low <= value <= high:
            problems.append(f"{name} {value} is outside the engine's range {low}..{high} "
                            f"({OPTION_FLAGS.get(name, name)})")
    memory = physical_memory_mb()
    if config.hash_mb > memory:
        problems.append(f"Hash {config.hash_mb} MB exceeds this host's {memory} MB of memory "
                        "(--hash-mb)")
    return problems


ENGINE_FAILURES = (chess.engine.EngineError, chess.engine.EngineTerminatedError, TimeoutError,
                   asyncio.TimeoutError)
"""What python-chess raises when an engine misbehaves, dies or does not answer in time."""


def start_uci(config: EngineConfig) -> chess.engine.SimpleEngine:
    """Start one engine process, check the options it declares, and apply the registered ones.

    On any failure the process is stopped and an EngineError names the engine.
    """
    path = config.file
    try:
        engine = chess.engine.SimpleEngine.popen_uci(config.command(), timeout=COMMAND_TIMEOUT_S)
    except (OSError, *ENGINE_FAILURES) as exc:
        raise EngineError(f"cannot start {path}: {exc or type(exc).__name__}") from exc
    try:
        problems = option_problems(dict(engine.options), config)
        if problems:
            raise EngineError(f"{path}: " + "; ".join(problems))
        engine.configure(config.uci_options(engine.options))
    except BaseException as exc:
        engine.close()
        if isinstance(exc, ENGINE_FAILURES):
            raise EngineError(f"{path}: configure failed: "
                              f"{exc or type(exc).__name__}") from exc
        raise
    return engine


def options_sent(engine: chess.engine.SimpleEngine, config: EngineConfig) -> dict[str, Any]:
    """Return the options this package sends: those set through ``configure``, ``MultiPV``
    with every search, and the ``Clear Hash`` button before every search."""
    sent: dict[str, Any] = dict(config.uci_options(engine.options))
    sent["MultiPV"] = config.multipv
    sent["Clear Hash"] = None
    return dict(sorted(sent.items()))


def options_in_force(engine: chess.engine.SimpleEngine, config: EngineConfig) -> dict[str, Any]:
    """Return every UCI option with its type, default and the value in force."""
    configured: dict[str, Any] = dict(config.uci_options(engine.options))
    configured["MultiPV"] = config.multipv
    out: dict[str, Any] = {}
    for name in sorted(engine.options):
        option = engine.options[name]
        entry: dict[str, Any] = {"type": option.type, "default": option.default}
        if option.type != "button":
            entry["value"] = configured.get(name, option.default)
        out[name] = entry
    return out


def build_record(engine: chess.engine.SimpleEngine, config: EngineConfig,
                 digests: dict[str, str]) -> dict[str, Any]:
    """Return the build part of an identity: key, package, version, file digests, the NNUE
    networks the engine declares, and the options sent."""
    build = config.engine_build
    defaults = {name: option.default for name, option in engine.options.items()}
    return {"key": build.key, "package": build.package,
            "version": installed_version(build, config.file), "files": digests,
            "network": networks(defaults), "sent": options_sent(engine, config)}


def identify(engine: chess.engine.SimpleEngine, config: EngineConfig,
             workspace: Workspace, *, digests: dict[str, str] | None = None,
             bench_nodes: int | None = None) -> EngineIdentity:
    """Return the identity of a started engine.

    ``digests`` are the build's file digests when the caller already computed them (the
    runner hashes the files while the engine processes start); otherwise they are computed
    here. ``bench_nodes`` given (a worker whose files hash as the driver's) is taken as is;
    otherwise a native build is benched once per binary (:func:`bench_signature`).
    """
    files = build_digests(config) if digests is None else digests
    sha = files_digest(files)
    if bench_nodes is None and config.engine_build.has_bench:
        bench_nodes = bench_signature(config.file, sha, workspace)
    return EngineIdentity(sha, str(engine.id.get("name", "")), bench_nodes,
                          options_in_force(engine, config),
                          build_record(engine, config, files))


SEARCH_INFO = chess.engine.INFO_BASIC | chess.engine.INFO_SCORE | chess.engine.INFO_PV
"""What python-chess parses from each ``info`` line (the engine's WDL is always parsed)."""


def search_timeout(config: EngineConfig) -> float:
    """Seconds one search of ``config`` may take before it is an error."""
    return SEARCH_TIMEOUT_S + config.nodes / MIN_NODES_PER_S


def start_search(engine: chess.engine.SimpleEngine, board: chess.Board,
                 config: EngineConfig) -> chess.engine.SimpleAnalysisResult:
    """Clear the hash and start one node-limited MultiPV search of ``board``; return its handle.

    ``Clear Hash`` goes out in the same command as the search, right before ``position``
    and ``go``. Stockfish's Clear Hash runs Search::clear(), the same reset as
    ``ucinewgame`` (hash, histories); sending both would clear 256 MB twice per search.
    The call returns once ``go`` is sent, so the caller may do other work meanwhile.
    """
    try:
        return engine.analysis(board, chess.engine.Limit(nodes=config.nodes),
                               multipv=config.multipv, info=SEARCH_INFO,
                               options={"Clear Hash": None})
    except ENGINE_FAILURES as exc:
        raise EngineError(f"{config.file}: search did not start: "
                          f"{exc or type(exc).__name__}") from exc


def finish_search(handle: chess.engine.SimpleAnalysisResult,
                  config: EngineConfig) -> list[chess.engine.InfoDict]:
    """Wait for ``bestmove`` (at most :func:`search_timeout`); return the last report of every
    MultiPV line, in rank order."""
    limit = search_timeout(config)
    loop = handle.simple_engine.protocol.loop
    try:
        asyncio.run_coroutine_threadsafe(handle.inner.wait(), loop).result(timeout=limit)
    except ENGINE_FAILURES as exc:
        what = (f"timed out after {limit:.0f} s without bestmove" if isinstance(exc, TimeoutError)
                else f"failed: {exc}")
        raise EngineError(f"{config.file}: search of {config.nodes} nodes {what}") from exc
    return list(handle.multipv)


def search(engine: chess.engine.SimpleEngine, board: chess.Board,
           config: EngineConfig) -> list[chess.engine.InfoDict]:
    """Clear the hash and run one node-limited MultiPV search of ``board``."""
    with start_search(engine, board, config) as handle:
        return finish_search(handle, config)


def score_json(score: chess.engine.Score) -> dict[str, int]:
    """Return a root-perspective score as ``{"cp": n}`` or ``{"mate": n}``."""
    mate = score.mate()
    if mate is not None:
        return {"mate": int(mate)}
    return {"cp": int(score.score())}  # type: ignore[arg-type]


def is_forcing(board: chess.Board, move: chess.Move) -> bool:
    """Return whether ``move`` is a capture, a check or a promotion."""
    return bool(board.is_capture(move) or board.gives_check(move) or move.promotion)


def line_json(board: chess.Board, info: chess.engine.InfoDict, rank: int) -> dict[str, Any]:
    """Return one MultiPV line as recorded: move, SAN, score, WDL, statistics and full PV."""
    pv = info.get("pv") or []
    wdl = info.get("wdl")
    score = info.get("score")
    if not pv or wdl is None or score is None:
        raise EngineError(f"line {rank} lacks pv, score or wdl (is UCI_ShowWDL on?)")
    w = wdl.pov(board.turn)
    return {
        "rank": rank, "uci": pv[0].uci(), "san": board.san(pv[0]),
        "score": score_json(score.pov(board.turn)),
        "wdl": [int(w.wins), int(w.draws), int(w.losses)],
        "forcing": is_forcing(board, pv[0]),
        "search": {"depth": int(info.get("depth", 0)), "seldepth": int(info.get("seldepth", 0)),
                   "nodes": int(info.get("nodes", 0))},
        "pv": [m.uci() for m in pv],
    }


def lines_json(board: chess.Board, infos: list[chess.engine.InfoDict]) -> list[dict[str, Any]]:
    """Return every line of a search, in MultiPV rank order."""
    return [line_json(board, info, rank) for rank, info in enumerate(infos, start=1)]
