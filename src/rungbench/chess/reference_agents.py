"""Reference chess agents behind the Agent protocol, and the move-choice task they answer.

The task (seed 000, "Hold the action interface still too"): a position given as a
FEN, and one required ``submit_move`` tool whose only argument is a UCI string.
The schema never enumerates legal moves — an enum would reveal the legal list.

Agents read ``Request.metadata`` (never sent to a provider): ``fen``; optionally
``best_move`` (the anchor the synthetic selectors need) and ``candidates`` (an
externally supplied list, the oracle-list arm of seed 001).

* :class:`RandomMover` — a uniformly random legal move, seeded per request.
* :class:`EngineAgent` — Stockfish at a fixed node budget, hash cleared per search.
* :class:`SyntheticSelector` — the two-stage generation/selection model of seed 001
  ("One outcome, two hidden stages"): the best move enters the shortlist with
  probability ``coverage`` (C) and is chosen with probability
  ``conditional_selection`` (S) when present, so P(best) = C × S.
  ``ideas-limited`` is C=0.35, S=0.90; ``vision-limited`` is C=0.90, S=0.35.

Each agent answers with a ``submit_move`` call when the request offers that tool,
with a ``submit_shortlist`` call when it offers that one (the self-shortlist arm),
and with the text ``make_move <uci>`` for a conversational request without tools.
"""

from __future__ import annotations

import functools
import json
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import chess.engine
import numpy as np

import chess
from rungbench.agents.protocol import Agent, Message, Request, Response, ToolCall, close_agent
from rungbench.errors import InputError

TASK = "chess.move_choice/1"
STOCKFISH = Path("/usr/games/stockfish")

SUBMIT_MOVE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "submit_move",
        "description": "Submit your move for the side to move, in UCI notation (e.g. e2e4, e7e8q).",
        "parameters": {
            "type": "object",
            "properties": {"move": {"type": "string", "description": "One move in UCI notation."}},
            "required": ["move"],
            "additionalProperties": False,
        },
    },
}

SUBMIT_SHORTLIST_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "submit_shortlist",
        "description": "Submit the candidate moves you would consider, in UCI notation.",
        "parameters": {
            "type": "object",
            "properties": {
                "moves": {"type": "array", "items": {"type": "string"}, "description": "UCI moves."}
            },
            "required": ["moves"],
            "additionalProperties": False,
        },
    },
}

SYSTEM_PROMPT = (
    "You are a chess player. You will be shown one chess position. "
    "Answer only by calling the tool you are given."
)

_FEN_RE = re.compile(
    r"([pnbrqkPNBRQK1-8]{1,8}(?:/[pnbrqkPNBRQK1-8]{1,8}){7}) "
    r"([wb]) (-|[KQkq]{1,4}) (-|[a-h][36]) (\d+) (\d+)"
)


def board_from_fen(fen: str, *, field: str = "fen") -> chess.Board:
    """Return the board of ``fen``; raise :class:`InputError` on an invalid one."""
    try:
        board = chess.Board(fen)
    except ValueError as exc:
        raise InputError(f"invalid FEN {fen!r}: {exc}", field=field) from exc
    if not board.is_valid():
        raise InputError(f"FEN {fen!r} is not a valid position", field=field)
    return board


def playable_board(fen: str, *, field: str = "fen") -> chess.Board:
    """Return the board of ``fen`` when the side to move has a legal move.

    A checkmate or stalemate is no move-choice cell (there is nothing to choose): an
    :class:`InputError` naming ``field``, like an invalid FEN.
    """
    board = board_from_fen(fen, field=field)
    if not any(board.legal_moves):
        ending = "checkmate" if board.is_checkmate() else "stalemate"
        raise InputError(f"FEN {fen!r} has no legal move ({ending}): not a move-choice cell",
                         field=field)
    return board


def legal_moves(fen: str) -> list[str]:
    """Return the legal moves of ``fen`` in UCI, sorted."""
    return list(_legal_moves(fen))


@functools.lru_cache(maxsize=4096)
def _legal_moves(fen: str) -> tuple[str, ...]:
    return tuple(sorted(m.uci() for m in board_from_fen(fen).legal_moves))


def board_diagram(board: chess.Board) -> str:
    """Return the board as eight labelled text ranks (rank 8 first) and a file line."""
    rows = str(board).splitlines()
    return "\n".join(f"{8 - i} {row}" for i, row in enumerate(rows)) + "\n  a b c d e f g h"


def move_choice_request(
    case_id: str,
    fen: str,
    *,
    best_move: str | None = None,
    candidates: list[str] | None = None,
    shortlist_size: int | None = None,
    extra: Mapping[str, Any] | None = None,
) -> Request:
    """Render one move-choice cell: the position, its FEN, and one required tool.

    ``candidates`` adds a candidate list to the prompt (oracle-list arm);
    ``shortlist_size`` asks for a shortlist through ``submit_shortlist`` instead of a
    move (self-shortlist arm). ``best_move`` is metadata only: never shown. A position
    without a legal move is refused (:func:`playable_board`).
    """
    board = playable_board(fen)
    side = "White" if board.turn == chess.WHITE else "Black"
    lines = [
        f"Position (FEN): {board.fen()}",
        f"Side to move: {side}.",
        "Board (White pieces upper case, rank 8 at the top):",
        board_diagram(board),
    ]
    if candidates is not None:
        lines.append("Candidate moves (UCI): " + ", ".join(candidates))
    if shortlist_size is not None:
        lines.append(
            f"List the {shortlist_size} moves you would consider, in UCI notation, "
            "with the submit_shortlist tool."
        )
        tool = SUBMIT_SHORTLIST_TOOL
    else:
        lines.append("Choose your move and submit it with the submit_move tool, in UCI notation.")
        tool = SUBMIT_MOVE_TOOL
    metadata: dict[str, Any] = {"task": TASK, "fen": board.fen(), **dict(extra or {})}
    if best_move is not None:
        metadata["best_move"] = best_move
    if candidates is not None:
        metadata["candidates"] = list(candidates)
    if shortlist_size is not None:
        metadata["shortlist_size"] = shortlist_size
    return Request(
        case_id=case_id,
        messages=(Message("system", SYSTEM_PROMPT), Message("user", "\n".join(lines))),
        tools=(tool,),
        tool_choice="required",
        metadata=metadata,
    )


def validate_move(request: Request, tool: str, arguments: Mapping[str, Any]) -> str | None:
    """Return why a schema-valid ``submit_move`` call is illegal in the request's position."""
    if tool != "submit_move":
        return None
    fen = _fen(request)
    text = str(arguments.get("move", ""))
    try:
        move = chess.Move.from_uci(text.strip())
    except ValueError:
        return f"not a UCI move: {text[:40]!r}"
    if move not in board_from_fen(fen).legal_moves:
        return f"illegal move {move.uci()!r} in {fen}"
    return None


def fen_metadata(payload: Mapping[str, Any]) -> dict[str, Any]:
    """Recover ``{"fen": ...}`` from the last message of a payload that shows a FEN."""
    for message in reversed(list(payload.get("messages", []))):
        match = _FEN_RE.search(str(message.get("content") or ""))
        if match:
            return {"task": TASK, "fen": match.group(0)}
    return {}


def submitted_move(response: Response) -> str | None:
    """Return the UCI string an agent submitted (tool call or ``make_move`` text), if any."""
    for call in response.tool_calls:
        if call.name == "submit_move":
            try:
                value = json.loads(call.arguments).get("move")
            except (json.JSONDecodeError, AttributeError):
                return None
            return value if isinstance(value, str) else None
    match = re.search(r"make_move\s+([a-h][1-8][a-h][1-8][qrbn]?)", response.text or "")
    return match.group(1) if match else None


def answer(request: Request, move: str) -> Response:
    """Answer ``request`` with ``move`` through its tool, or as ``make_move`` text."""
    if any(_tool_name(t) == "submit_move" for t in request.tools):
        return Response(
            text=None, tool_calls=(ToolCall("submit_move", json.dumps({"move": move})),)
        )
    return Response(text=f"make_move {move}")


def _answer_shortlist(moves: list[str]) -> Response:
    return Response(
        text=None, tool_calls=(ToolCall("submit_shortlist", json.dumps({"moves": moves})),)
    )


def _tool_name(tool: Mapping[str, Any]) -> str:
    return str(tool.get("function", {}).get("name", ""))


def _fen(request: Request) -> str:
    fen = request.metadata.get("fen")
    if not isinstance(fen, str):
        raise InputError(
            f"request {request.case_id!r} has no FEN in its metadata", field="metadata.fen"
        )
    return fen


def request_rng(seed: int, request: Request) -> np.random.Generator:
    """Return a generator determined by ``seed`` and the request digest (order-free)."""
    return np.random.default_rng([seed, int(request.digest()[7:23], 16)])


@dataclass
class RandomMover:
    """Plays a uniformly random legal move (or candidate, when a list is given)."""

    seed: int = 0
    """Base seed; each request draws from ``(seed, request digest)``."""
    name: str = "reference:random"
    """Agent name recorded in run manifests."""

    def respond(self, request: Request) -> Response:
        """Answer with a random legal move of the request's position."""
        rng = request_rng(self.seed, request)
        pool = _candidates_or_legal(request)
        if request.metadata.get("shortlist_size") is not None:
            size = min(int(request.metadata["shortlist_size"]), len(pool))
            return _answer_shortlist([pool[i] for i in rng.choice(len(pool), size, replace=False)])
        return answer(request, pool[int(rng.integers(len(pool)))])


class EngineAgent:
    """Stockfish at a fixed node budget; one thread, hash cleared before every search."""

    def __init__(self, *, nodes: int = 20_000, engine_path: Path = STOCKFISH) -> None:
        if nodes <= 0:
            raise InputError(f"node budget must be positive, got {nodes!r}", field="nodes")
        if not engine_path.exists():
            raise InputError(f"engine binary not found: {engine_path}", path=str(engine_path))
        self.nodes = nodes
        self.name = f"reference:engine@{nodes}"
        self._engine = chess.engine.SimpleEngine.popen_uci(str(engine_path))
        self._engine.configure({"Threads": 1, "Hash": 16})
        self._lock = threading.Lock()

    def respond(self, request: Request) -> Response:
        """Answer with the engine's move at the node budget (restricted to candidates if given)."""
        board = board_from_fen(_fen(request))
        roots = request.metadata.get("candidates")
        root_moves = [chess.Move.from_uci(m) for m in roots] if roots else None
        with self._lock:
            # a fresh game object makes python-chess send ucinewgame: hash cleared, reproducible
            result = self._engine.play(
                board, chess.engine.Limit(nodes=self.nodes), root_moves=root_moves, game=object()
            )
        if result.move is None:
            raise InputError(f"engine returned no move for {board.fen()}", field="metadata.fen")
        return answer(request, result.move.uci())

    def close(self) -> None:
        """Quit the engine process."""
        self._engine.quit()


@dataclass
class SyntheticSelector:
    """Two-stage selector of seed 001: coverage C, then conditional selection S."""

    coverage: float
    """C: probability that the best move enters the self-generated shortlist."""
    conditional_selection: float
    """S: probability of choosing the best move when it is available."""
    shortlist_size: int = 5
    """Width of the self-generated shortlist (E023 holds width at five)."""
    seed: int = 0
    """Base seed; each request draws from ``(seed, request digest)``."""
    name: str = "reference:selector"
    """Agent name recorded in run manifests."""

    def __post_init__(self) -> None:
        for label, p in (
            ("coverage", self.coverage),
            ("conditional_selection", self.conditional_selection),
        ):
            if not 0.0 <= p <= 1.0:
                raise InputError(f"{label} must be in [0, 1], got {p!r}", field=label)
        if self.shortlist_size < 1:
            raise InputError(
                f"shortlist size must be >= 1, got {self.shortlist_size!r}", field="shortlist_size"
            )

    def respond(self, request: Request) -> Response:
        """Answer per arm: shortlist, oracle-list selection, or unaided (shortlist then select)."""
        rng = request_rng(self.seed, request)
        best = _best_move(request)
        legal = legal_moves(_fen(request))
        if request.metadata.get("shortlist_size") is not None:
            size = int(request.metadata["shortlist_size"])
            return _answer_shortlist(self.shortlist(rng, legal, best, size))
        candidates = request.metadata.get("candidates")
        pool = (
            list(candidates)
            if candidates
            else self.shortlist(rng, legal, best, self.shortlist_size)
        )
        return answer(request, self.select(rng, pool, best))

    def shortlist(
        self, rng: np.random.Generator, legal: list[str], best: str, size: int
    ) -> list[str]:
        """Draw a shortlist of ``size`` legal moves that holds ``best`` with probability C."""
        others = [m for m in legal if m != best]
        covered = bool(rng.random() < self.coverage)
        take = min(size - 1 if covered else size, len(others))
        picked = [others[i] for i in rng.choice(len(others), take, replace=False)] if take else []
        moves = [*picked, best] if covered else picked
        return [moves[i] for i in rng.permutation(len(moves))]

    def select(self, rng: np.random.Generator, pool: list[str], best: str) -> str:
        """Choose ``best`` with probability S when present, else uniformly among the rest."""
        if not pool:
            raise InputError(
                "cannot select from an empty candidate list", field="metadata.candidates"
            )
        others = [m for m in pool if m != best]
        if best in pool and (not others or rng.random() < self.conditional_selection):
            return best
        return others[int(rng.integers(len(others)))]


def _best_move(request: Request) -> str:
    best = request.metadata.get("best_move")
    if not isinstance(best, str):
        raise InputError(
            f"request {request.case_id!r} has no best_move in its metadata; "
            "synthetic selectors need it",
            field="metadata.best_move",
        )
    return best


def _candidates_or_legal(request: Request) -> list[str]:
    candidates = request.metadata.get("candidates")
    return list(candidates) if candidates else legal_moves(_fen(request))


IDEAS_LIMITED = (0.35, 0.90)
VISION_LIMITED = (0.90, 0.35)
REFERENCE_NAMES = ("random", "engine", "ideas-limited", "vision-limited")


def reference_agent(
    name: str, *, seed: int = 0, nodes: int = 20_000, engine_path: Path = STOCKFISH
) -> RandomMover | EngineAgent | SyntheticSelector:
    """Return the reference agent registered under ``name`` (see :data:`REFERENCE_NAMES`)."""
    if name == "random":
        return RandomMover(seed=seed)
    if name == "engine":
        return EngineAgent(nodes=nodes, engine_path=engine_path)
    if name == "ideas-limited":
        return SyntheticSelector(*IDEAS_LIMITED, seed=seed, name="reference:ideas-limited")
    if name == "vision-limited":
        return SyntheticSelector(*VISION_LIMITED, seed=seed, name="reference:vision-limited")
    raise InputError(
        f"unknown reference agent {name!r}; known: {', '.join(REFERENCE_NAMES)}", field="agent"
    )


def reference_move_agent(name: str, *, seed: int = 0, nodes: int = 20_000) -> DescribedAgent:
    """Return reference chess agent ``name`` described by name, seed and node budget."""
    chosen = reference_agent(name, seed=seed, nodes=nodes)
    return DescribedAgent(
        chosen, {"kind": "reference", "name": chosen.name, "seed": seed, "nodes": nodes}
    )


class DescribedAgent:
    """An agent plus the description that goes into the run manifest."""

    def __init__(self, inner: Agent, description: dict[str, Any]) -> None:
        self.inner = inner
        self.name = inner.name
        self.description = description

    def respond(self, request: Request) -> Response:
        """Delegate to the wrapped agent."""
        return self.inner.respond(request)

    def describe(self) -> dict[str, Any]:
        """Return the manifest description."""
        return self.description

    def close(self) -> None:
        """Close the wrapped agent when it holds a process or connection."""
        close_agent(self.inner)
