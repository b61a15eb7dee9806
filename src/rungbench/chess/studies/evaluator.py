"""Evaluator engines of another family than the labeller (seed 002, "cannot grade its own exam").

The label stage's Stockfish proposes, ranks and classifies; the primary regret endpoint
is scored by a **different engine family and binary**. Registered evaluators
(:data:`EVALUATORS`):

* ``ethereal`` — Debian ``ethereal-chess``, "Ethereal 12.00" (independent lineage; primary);
* ``toga2`` — Debian ``toga2``, "Toga II 3.0" (Fruit lineage; secondary, sensitivity only);
* ``stockfish`` — the labeller's family; usable only as the internal proxy.

The family of a binary is decided by its ``id name`` through :data:`FAMILY_TABLE`
(Stockfish and its ancestor Glaurung are one family; Toga II and Fruit are one family).

Contract, from measurements on this machine (python-chess 1.11): neither Ethereal nor
Toga honours ``go nodes`` (Ethereal answers at depth 1, Toga hangs), both honour
``go depth``. So every search is a **registered fixed depth** on one thread with a
registered hash, preceded by ``ucinewgame`` (python-chess sends it for a fresh
``game`` object), and every engine call has a timeout: start-up and configuration
through ``popen_uci(timeout=...)``, each search through :func:`start_search`, whose
hang becomes :class:`EvaluatorError` naming the engine.

Determinism, measured: Ethereal 12.00 at depth 10 and 12 repeats score, best move and
node count exactly, whatever it searched before (orders 0-1-2-3, 3-2-1-0, 2-2-2-0-0 of
four positions gave identical triples). Toga II 3.0 does **not**: with ``OwnBook`` off,
one thread and 16 MB, node counts at depth 10 vary by up to 11 in 174,213 between
repeats, even in a fresh process per search and with the hash re-allocated between
searches; scores and best moves repeated in every trial. Toga is therefore registered
as a secondary evaluator with ``deterministic_nodes = False``: its reference signature
compares best moves and scores only, and its caveat is recorded with every output.

Identity (:class:`EvaluatorIdentity`): binary sha256, ``id name``, family, every UCI
option with the value in force, and a **reference signature** — a fixed-depth search of
:data:`SIGNATURE_FENS` whose best moves, scores and (when deterministic) node counts are
compared on start with the registered ones (``chess/data/evaluators.json``); a
mismatch refuses (``engine_changed``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import chess.engine

import chess
from rungbench.chess.engine import binary_digest
from rungbench.chess.studies.wdl_model import WdlModel, load_model, model_file
from rungbench.errors import InputError, Reason, Refusal, RungbenchError
from rungbench.evidence.canonical import digest, loads_canonical

FAMILY_TABLE: tuple[tuple[str, str], ...] = (
    ("Stockfish", "stockfish"),
    ("Glaurung", "stockfish"),
    ("Ethereal", "ethereal"),
    ("Toga", "fruit"),
    ("Fruit", "fruit"),
)
"""``id name`` prefix → engine family (Glaurung is Stockfish's ancestor, Toga is Fruit's)."""

PROXY_LABEL = "internal proxy (same family as the labeller)"
"""The label of every output produced with ``--proxy stockfish``."""
PRIMARY_LABEL = "different-family evaluator"
"""The label of every output produced by an evaluator of another family than the labeller."""

SIGNATURE_DEPTH = 8
"""Depth of the reference-signature searches."""
SIGNATURE_FENS: tuple[str, ...] = (
    chess.STARTING_FEN,
    "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4",
    "r2q1rk1/pp2bppp/2n1pn2/3p4/3P4/2NBPN2/PP3PPP/R2Q1RK1 w - - 0 10",
    "8/5pk1/6p1/8/3R4/6P1/5PKP/r7 b - - 0 40",
)
"""Fixed positions of the reference signature (opening, middlegame, endgame)."""

REGISTRY_FILE = "evaluators.json"
"""Bundled registry of the evaluators' names, signatures and conversion models."""


class EvaluatorError(RungbenchError):
    """Raised when an evaluator engine cannot start, hangs or answers outside the contract."""


@dataclass(frozen=True)
class EvaluatorSpec:
    """One registered evaluator engine."""

    key: str
    """Registry key (``ethereal``, ``toga2``, ``stockfish``)."""
    path: Path
    """Debian binary."""
    family: str
    """Engine family (:data:`FAMILY_TABLE`)."""
    threads_option: str
    """Name of the engine's thread-count option."""
    fixed_options: Mapping[str, int | bool | str]
    """Further options the contract sets (e.g. Toga's ``OwnBook`` off)."""
    depth: int
    """Registered search depth."""
    deterministic_nodes: bool
    """Whether node counts repeat exactly after ``ucinewgame`` (measured)."""
    caveat: str = ""
    """What every output of this evaluator must say about it."""


EVALUATORS: dict[str, EvaluatorSpec] = {
    "ethereal": EvaluatorSpec("ethereal", Path("/usr/games/ethereal-chess"), "ethereal",
                              "Threads", {}, 12, True),
    "toga2": EvaluatorSpec(
        "toga2", Path("/usr/games/toga2"), "fruit", "Number of Threads", {"OwnBook": False},
        10, False,
        "secondary sensitivity evaluator: node counts are not reproducible between repeats "
        "(scores and best moves were); the signature compares best moves and scores only"),
    "stockfish": EvaluatorSpec("stockfish", Path("/usr/games/stockfish"), "stockfish",
                               "Threads", {}, 12, True),
}
"""The registered evaluators."""


def family_of(engine_name: str) -> str:
    """Return the family of an ``id name``; refuse (``evaluator_family_unknown``) otherwise."""
    for prefix, family in FAMILY_TABLE:
        if engine_name.startswith(prefix):
            return family
    raise Refusal([Reason("evaluator_family_unknown",
                          f"engine {engine_name!r} is in no registered family", subject="engine",
                          data={"name": engine_name})], gate="chess evaluator")


def spec_of(key: str) -> EvaluatorSpec:
    """Return the registered evaluator ``key``; an unknown key is an input error."""
    if key not in EVALUATORS:
        raise InputError(f"unknown evaluator {key!r}; known: {', '.join(EVALUATORS)}",
                         field="evaluator")
    return EVALUATORS[key]


def registry() -> dict[str, Any]:
    """Return the bundled registry (names, signatures, model files and digests)."""
    path = model_file(REGISTRY_FILE)
    document = loads_canonical(path.read_bytes(), path=str(path))
    if not isinstance(document, dict) or document.get("schema") != "rungbench.chess.evaluators/1":
        raise InputError("not a rungbench.chess.evaluators/1 registry", path=str(path))
    return document


@dataclass(frozen=True)
class EvaluatorConfig:
    """The registered evaluation contract of one run."""

    evaluator: str = "ethereal"
    """Registry key of the evaluator."""
    depth: int | None = None
    """Search depth (None: the evaluator's registered depth)."""
    hash_mb: int = 16
    """UCI hash in MB."""
    timeout_s: float = 60.0
    """Timeout of every engine call (start, configure, each search)."""
    path: Path | None = None
    """Binary (None: the registered Debian binary)."""
    model_path: Path | None = None
    """Conversion-model file (None: the registered one)."""
    proxy: bool = False
    """Whether the evaluator is the labeller-family internal proxy (``--proxy stockfish``)."""

    def __post_init__(self) -> None:
        spec_of(self.evaluator)
        if self.depth is not None and not 1 <= self.depth <= 40:
            raise InputError(f"depth must be in 1..40, got {self.depth!r}", field="depth")
        if self.hash_mb < 1 or self.timeout_s <= 0:
            raise InputError("hash_mb must be >= 1 and timeout_s > 0", field="contract")

    @property
    def spec(self) -> EvaluatorSpec:
        """The registered evaluator."""
        return EVALUATORS[self.evaluator]

    @property
    def binary(self) -> Path:
        """The binary to start."""
        return self.path or self.spec.path

    @property
    def search_depth(self) -> int:
        """The depth of every search."""
        return self.depth if self.depth is not None else self.spec.depth

    def uci_options(self) -> dict[str, int | bool | str]:
        """Return every option the contract sets."""
        return {self.spec.threads_option: 1, "Hash": self.hash_mb, **self.spec.fixed_options}

    def contract(self) -> dict[str, Any]:
        """Return the search contract as recorded (part of the evaluator identity)."""
        return {"depth": self.search_depth, "threads": 1, "hash_mb": self.hash_mb,
                "options": dict(sorted(self.uci_options().items())), "clear": "ucinewgame",
                "timeout_s": self.timeout_s}


@dataclass(frozen=True)
class EvaluatorIdentity:
    """Who evaluated: binary, name, family, options, contract, signature and model."""

    sha256: str
    """``sha256:`` of the binary."""
    name: str
    """The engine's ``id name``."""
    family: str
    """Its family by :data:`FAMILY_TABLE`."""
    options: dict[str, Any]
    """Every UCI option: type, default and value in force."""
    contract: dict[str, Any]
    """The search contract (depth, threads, hash, options, clearing, timeout)."""
    signature: list[dict[str, Any]]
    """The reference signature measured on start."""
    model: str
    """Digest of the conversion model."""
    caveat: str = ""
    """The evaluator's registered caveat (empty for a fully reproducible one)."""

    def to_json(self) -> dict[str, Any]:
        """Return the identity as a JSON-ready mapping."""
        return {"sha256": self.sha256, "name": self.name, "family": self.family,
                "options": self.options, "contract": self.contract,
                "signature": self.signature, "model": self.model, "caveat": self.caveat}

    @property
    def digest(self) -> str:
        """Digest of the identity (first part of every cache key)."""
        return digest(self.to_json())


def start_engine(config: EvaluatorConfig) -> chess.engine.SimpleEngine:
    """Start one evaluator process with a timeout on every call and apply the contract."""
    try:
        engine = chess.engine.SimpleEngine.popen_uci(str(config.binary),
                                                     timeout=config.timeout_s)
    except (OSError, chess.engine.EngineError, TimeoutError) as exc:
        raise EvaluatorError(f"cannot start {config.binary}: {exc!r}") from exc
    missing = [o for o in config.uci_options() if o not in engine.options]
    if missing:
        engine.close()
        raise EvaluatorError(f"{config.binary} lacks UCI options {missing}")
    try:
        engine.configure(config.uci_options())
    except (chess.engine.EngineError, TimeoutError) as exc:
        engine.close()
        raise EvaluatorError(f"{config.binary} refused its options: {exc!r}") from exc
    return engine


def close_engine(engine: chess.engine.SimpleEngine) -> None:
    """Quit ``engine`` politely, or kill it."""
    try:
        engine.quit()
    except (chess.engine.EngineError, chess.engine.EngineTerminatedError, TimeoutError,
            concurrent.futures.TimeoutError):
        engine.close()


SEARCH_INFO = chess.engine.INFO_BASIC | chess.engine.INFO_SCORE | chess.engine.INFO_PV
"""What python-chess parses from each ``info`` line."""

Pending = concurrent.futures.Future[chess.engine.InfoDict]
"""A search in flight."""


def start_search(engine: chess.engine.SimpleEngine, board: chess.Board,
                 depth: int) -> Pending:
    """Send ``ucinewgame`` and a fixed-depth search of ``board``; return the search in flight."""
    coro = engine.protocol.analyse(board, chess.engine.Limit(depth=depth), game=object(),
                                   info=SEARCH_INFO)
    return asyncio.run_coroutine_threadsafe(coro, engine.protocol.loop)


def finish_search(engine: chess.engine.SimpleEngine, pending: Pending, *, name: str,
                  timeout_s: float, fen: str) -> chess.engine.InfoDict:
    """Wait for ``bestmove`` at most ``timeout_s``; a hang kills the engine and raises."""
    try:
        return pending.result(timeout=timeout_s)
    except concurrent.futures.TimeoutError as exc:
        # Kill the process; cancelling the command instead leaves python-chess waiting for a
        # bestmove that never comes, and its event-loop thread then outlives the program.
        engine.close()
        raise EvaluatorError(f"{name} did not finish a search of {fen!r} within "
                             f"{timeout_s:g} s (engine stopped)") from exc
    except (chess.engine.EngineError, chess.engine.EngineTerminatedError) as exc:
        raise EvaluatorError(f"{name} failed on {fen!r}: {exc!r}") from exc


def search(engine: chess.engine.SimpleEngine, board: chess.Board, depth: int, *,
           name: str, timeout_s: float) -> chess.engine.InfoDict:
    """Run one cleared, fixed-depth search with a timeout."""
    return finish_search(engine, start_search(engine, board, depth), name=name,
                         timeout_s=timeout_s, fen=board.fen())


def score_json(score: chess.engine.Score) -> dict[str, int]:
    """Return a side-to-move score as ``{"cp": n}`` or ``{"mate": n}``."""
    mate = score.mate()
    if mate is not None:
        return {"mate": int(mate)}
    return {"cp": int(score.score())}  # type: ignore[arg-type]


def signature_entry(board: chess.Board, info: chess.engine.InfoDict, *,
                    with_nodes: bool) -> dict[str, Any]:
    """Return one signature entry: FEN, best move, score and (when reproducible) nodes."""
    pv = info.get("pv") or []
    score = info.get("score")
    if not pv or score is None:
        raise EvaluatorError(f"signature search of {board.fen()!r} returned no move or score")
    entry: dict[str, Any] = {"fen": board.fen(), "best": pv[0].uci(),
                             "score": score_json(score.pov(board.turn))}
    if with_nodes:
        entry["nodes"] = int(info.get("nodes", 0))
    return entry


def measure_signature(engine: chess.engine.SimpleEngine, config: EvaluatorConfig,
                      name: str) -> list[dict[str, Any]]:
    """Run the reference signature: a cleared depth-:data:`SIGNATURE_DEPTH` search per FEN."""
    out = []
    for fen in SIGNATURE_FENS:
        board = chess.Board(fen)
        info = search(engine, board, SIGNATURE_DEPTH, name=name, timeout_s=config.timeout_s)
        out.append(signature_entry(board, info, with_nodes=config.spec.deterministic_nodes))
    return out


def options_in_force(engine: chess.engine.SimpleEngine,
                     config: EvaluatorConfig) -> dict[str, Any]:
    """Return every UCI option with its type, default and the value in force."""
    configured = config.uci_options()
    out: dict[str, Any] = {}
    for name in sorted(engine.options):
        option = engine.options[name]
        entry: dict[str, Any] = {"type": option.type, "default": option.default}
        if option.type != "button":
            entry["value"] = configured.get(name, option.default)
        out[name] = entry
    return out


def registered(config: EvaluatorConfig) -> dict[str, Any]:
    """Return the registry entry of the configured evaluator."""
    entry = registry()["evaluators"].get(config.evaluator)
    if not isinstance(entry, dict):
        raise InputError(f"evaluator {config.evaluator!r} is not in the registry",
                         field="evaluator")
    return entry


def registered_model(config: EvaluatorConfig) -> WdlModel:
    """Load the conversion model; refuse (``conversion_model_changed``) unless registered."""
    entry = registered(config)
    path = config.model_path or model_file(str(entry["model"]["file"]))
    model, _ = load_model(path)
    if model.digest != entry["model"]["digest"]:
        raise Refusal([Reason("conversion_model_changed",
                              f"{path} holds conversion model {model.digest}, the study "
                              f"registers {entry['model']['digest']}", subject=str(path),
                              data={"found": model.digest,
                                    "registered": entry["model"]["digest"]})],
                      gate="chess evaluator")
    return model


def _changed(detail: str, data: dict[str, Any]) -> Refusal:
    return Refusal([Reason("engine_changed", detail, subject="evaluator", data=data)],
                   gate="chess evaluator")


def identify(engine: chess.engine.SimpleEngine, config: EvaluatorConfig, model: WdlModel,
             *, sha256: str | None = None) -> EvaluatorIdentity:
    """Identify a started evaluator and compare it with the registry (``engine_changed``)."""
    entry = registered(config)
    name = str(engine.id.get("name", ""))
    family = family_of(name)
    if name != entry["name"] or family != config.spec.family:
        raise _changed(f"{config.binary} answers as {name!r} (family {family}), registered "
                       f"{entry['name']!r} (family {config.spec.family})",
                       {"name": name, "registered": entry["name"]})
    signature = measure_signature(engine, config, name)
    if signature != entry["signature"]:
        raise _changed(f"{name} reference signature differs from the registered one",
                       {"measured": signature, "registered": entry["signature"]})
    return EvaluatorIdentity(
        sha256=binary_digest(config.binary) if sha256 is None else sha256, name=name,
        family=family, options=options_in_force(engine, config), contract=config.contract(),
        signature=signature, model=model.digest, caveat=config.spec.caveat)


@dataclass(frozen=True)
class FamilyCheck:
    """The outcome of the same-family gate."""

    labeller: str
    """``id name`` of the labeller (from the label stage record)."""
    labeller_family: str
    """Its family."""
    evaluator_family: str
    """The evaluator's registered family."""
    role: str = field(default=PRIMARY_LABEL)
    """:data:`PRIMARY_LABEL` or :data:`PROXY_LABEL`."""

    def to_json(self) -> dict[str, Any]:
        """Return the check as recorded."""
        return {"labeller": self.labeller, "labeller_family": self.labeller_family,
                "evaluator_family": self.evaluator_family, "role": self.role}


def check_family(labeller_name: str, config: EvaluatorConfig) -> FamilyCheck:
    """Refuse (``evaluator_same_family``) an evaluator of the labeller's family unless proxy.

    With ``proxy`` the evaluator must be of the labeller's family (the internal proxy is
    Stockfish); its outputs are labelled :data:`PROXY_LABEL`.
    """
    labeller_family = family_of(labeller_name)
    evaluator_family = config.spec.family
    same = labeller_family == evaluator_family
    if same and not config.proxy:
        raise Refusal([Reason(
            "evaluator_same_family",
            f"evaluator {config.evaluator} is of family {evaluator_family}, the labeller "
            f"{labeller_name!r} too; pass --proxy stockfish for the internal proxy",
            subject="evaluator", data={"labeller": labeller_name, "family": evaluator_family})],
            gate="chess evaluator")
    if config.proxy and not same:
        raise InputError(f"--proxy names the labeller's family ({labeller_family}); evaluator "
                         f"{config.evaluator} is of family {evaluator_family}", field="proxy")
    return FamilyCheck(labeller_name, labeller_family, evaluator_family,
                       PROXY_LABEL if config.proxy else PRIMARY_LABEL)
