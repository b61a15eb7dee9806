"""Game harness: an agent plays one colour in the LLM Chess conversational grammar.

Each agent move is a fresh dialogue, as in LLM Chess: the turn prompt, then the
agent's replies (``get_current_board``, ``get_legal_moves``, ``do_reflection``,
``make_move <uci>``) each answered by a :mod:`rungbench.chess.transcripts.dispatch` version,
until a move is accepted, the failed-attempt limit is reached (the game is lost)
or the turn limit is hit. The opponent moves directly (a seeded random mover or a
UCI engine at a fixed node budget). Every prompt and reply is written to an
AutoGen-style transcript, and every reply becomes an :class:`Attempt` whose byte
ranges point into it.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import chess.engine
import numpy as np

import chess
from rungbench.agents.outcomes import CallFailure
from rungbench.agents.protocol import Agent, Message, Request, Response, ToolCall, close_agent
from rungbench.chess.reference_agents import DescribedAgent, reference_move_agent
from rungbench.chess.transcripts.corpus import (
    DASHES,
    Attempt,
    GameRecord,
    ToolCallDisplay,
    format_tool_calls,
    write_corpus,
)
from rungbench.chess.transcripts.dispatch import (
    BOARD_ACTION,
    LEGAL_ACTION,
    MAKE_MOVE_ACTION,
    REFLECT_ACTION,
    TOO_MANY_WRONG_ACTIONS,
    DispatcherVersion,
    dispatch,
    turn_prompt,
)
from rungbench.errors import InputError
from rungbench.execute.policy import RetryPolicy

Colour = Literal["white", "black"]
_PROXY = "Proxy"


class Opponent(Protocol):
    """Whatever answers the agent's moves: it picks a legal move in a position."""

    name: str

    def choose(self, board: chess.Board) -> chess.Move:
        """Return a legal move in ``board``."""
        ...


class RandomOpponent:
    """Uniformly random legal mover driven by an explicit seed."""

    def __init__(self, seed: int) -> None:
        self.name = f"random(seed={seed})"
        self._rng = np.random.default_rng(seed)

    def choose(self, board: chess.Board) -> chess.Move:
        """Return a uniformly drawn legal move (python-chess generator order)."""
        moves = list(board.legal_moves)
        return moves[int(self._rng.integers(len(moves)))]


class EngineOpponent:
    """A UCI engine searching a fixed number of nodes per move (one thread)."""

    def __init__(self, engine: chess.engine.SimpleEngine, nodes: int) -> None:
        if nodes < 1:
            raise InputError(f"node budget must be positive, got {nodes}", field="nodes")
        self.name = f"{engine.id.get('name', 'engine')}(nodes={nodes})"
        self._engine, self._nodes = engine, nodes

    def choose(self, board: chess.Board) -> chess.Move:
        """Return the engine's move at the node budget."""
        result = self._engine.play(board, chess.engine.Limit(nodes=self._nodes))
        if result.move is None:
            raise InputError(f"engine returned no move in {board.fen()}", field="engine")
        return result.move


@contextlib.contextmanager
def engine_opponent(path: str = "/usr/games/stockfish", *, nodes: int) -> Iterator[EngineOpponent]:
    """Start a UCI engine (Threads 1) and yield it as an opponent; it is closed afterwards."""
    engine = chess.engine.SimpleEngine.popen_uci(path)
    try:
        engine.configure({"Threads": 1})
        yield EngineOpponent(engine, nodes)
    finally:
        engine.quit()


Action = Literal["board", "list", "reflect", "junk", "illegal", "toolcall", "think", "move"]
_ACTIONS: tuple[str, ...] = ("board", "list", "reflect", "junk", "illegal", "toolcall", "think",
                             "move")


class ScriptedAgent:
    """A reference agent whose behaviour is fixed in advance.

    Turn *i* of the agent (counting across games) follows ``script[i % len(script)]``,
    a sequence of actions: ``board``/``list``/``reflect`` ask for the board, the legal
    list or a reflection; ``junk`` is free text with no command; ``illegal`` is a
    well-formed make_move of a move that is not legal; ``toolcall`` is a tool-call
    suggestion with empty content; ``think`` hides commands inside ``<think>`` tags
    before a legal make_move; ``move`` is a legal make_move, drawn from the legal
    moves (in the request metadata) with the agent's own seeded generator.
    """

    def __init__(self, script: Sequence[Sequence[str]], *, seed: int, name: str = "scripted"):
        if not script or any(not turn for turn in script):
            raise InputError("a script needs at least one non-empty turn", field="script")
        for turn in script:
            for action in turn:
                if action not in _ACTIONS:
                    raise InputError(f"unknown scripted action {action!r}", field="script")
        self.name = name
        self.script = tuple(tuple(turn) for turn in script)
        self._rng = np.random.default_rng(seed)
        self._turn = -1

    def respond(self, request: Request) -> Response:
        """Answer with the next scripted action of the current turn."""
        meta = request.metadata
        if meta["attempt"] == 1:
            self._turn += 1
        turn = self.script[self._turn % len(self.script)]
        action = turn[min(meta["attempt"] - 1, len(turn) - 1)]
        return self._render(action, meta["legal_moves"])

    def _render(self, action: str, legal: list[str]) -> Response:
        if action == "toolcall":
            return Response(text="", tool_calls=(ToolCall(BOARD_ACTION, "{}"),))
        move = legal[int(self._rng.integers(len(legal)))] if legal else "a1a1"
        text = {
            "board": BOARD_ACTION, "list": LEGAL_ACTION, "reflect": REFLECT_ACTION,
            "junk": "Let me think about the position for a moment.",
            "illegal": f"{MAKE_MOVE_ACTION} {_illegal_move(legal)}",
            "think": f"<think>maybe {MAKE_MOVE_ACTION} {_illegal_move(legal)} or "
                     f"{REFLECT_ACTION}</think>{MAKE_MOVE_ACTION} {move}",
            "move": f"{MAKE_MOVE_ACTION} {move}",
        }[action]
        return Response(text=text)


def _illegal_move(legal: list[str]) -> str:
    """A well-formed UCI move that is not in ``legal`` (first in a fixed scan)."""
    files, ranks = "abcdefgh", "12345678"
    for a in files:
        for b in ranks:
            uci = f"{a}{b}{a}{'8' if b != '8' else '1'}"
            if uci not in legal:
                return uci
    raise AssertionError("every rook-line move is legal")  # pragma: no cover


REFERENCE_SCRIPT = (("board", "move"), ("list", "move"), ("junk", "move"),
                    ("board", "list", "move"), ("illegal", "toolcall", "move"), ("think",),
                    ("reflect", "junk", "move"))
"""The scripted reference agent's script (demo and ``chess play``): it exercises every row
of the A104 census."""

GAME_REFERENCE_AGENTS = ("scripted", "random", "engine")
"""Reference agents that can play a game: they need only the position (``metadata.fen``)."""


def reference_game_agent(
    name: str, *, seed: int, nodes: int, script: Sequence[Sequence[str]]
) -> Agent:
    """Return reference agent ``name`` (:data:`GAME_REFERENCE_AGENTS`) for the game harness.

    ``scripted`` follows ``script``; ``random`` and ``engine`` are the move-choice reference
    agents, which answer a request without tools with ``make_move <uci>``. The synthetic
    selectors are refused: they need the hidden best move of a move-choice cell.
    """
    if name == "scripted":
        agent = ScriptedAgent(script, seed=seed, name="reference:scripted")
        description = {"kind": "reference", "name": agent.name, "seed": seed,
                       "script": [list(turn) for turn in agent.script]}
        return DescribedAgent(agent, description)
    if name not in GAME_REFERENCE_AGENTS:
        raise InputError(f"reference agent {name!r} cannot play a game; game agents: "
                         f"{', '.join(GAME_REFERENCE_AGENTS)} (the synthetic selectors need the "
                         "hidden best move of a move-choice cell)", field="agent")
    return reference_move_agent(name, seed=seed, nodes=nodes)


class RetryingAgent:
    """Re-sends the identical request after a reliability failure, under a retry policy.

    A game has no runner, so this applies the runner's rule inside the dialogue (seed 000:
    a retry is the identical frozen request, up to the registered limit). Answers of any
    kind are never re-asked — the dispatcher judges them. After the last attempt the
    :class:`~rungbench.agents.outcomes.CallFailure` propagates and play stops.
    """

    def __init__(self, inner: Agent, policy: RetryPolicy,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.inner, self.policy, self.name = inner, policy, inner.name
        self._sleep = sleep
        self.retried: Counter[str] = Counter()
        """Reliability failures that were retried, by outcome class."""

    def respond(self, request: Request) -> Response:
        """Return the inner agent's response, retrying reliability failures."""
        for attempt in range(1, self.policy.max_attempts):
            try:
                return self.inner.respond(request)
            except CallFailure as failure:
                self.retried[failure.outcome.value] += 1
                self._sleep(self.policy.wait_before(attempt + 1, failure.retry_after))
        return self.inner.respond(request)

    def close(self) -> None:
        """Close the inner agent when it holds a process or connection."""
        close_agent(self.inner)


@dataclass(frozen=True)
class HarnessConfig:
    """How games are played and recorded."""

    dispatcher: DispatcherVersion
    """Dispatcher version that answers the agent."""
    agent_colour: Colour = "black"
    """Colour the agent plays."""
    max_plies: int = 80
    """Half-moves after which a game stops (``max plies``)."""
    run_group: str = "harness"
    """Run-group label written into every record."""
    variant: str = "harness/UNICODE_ONLY/no-reflection"
    """Variant label written into every record."""


class _Transcript:
    """Append-only AutoGen-style console capture that knows its byte offsets and lines."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size = 0
        self.lines = 1

    def _write(self, data: bytes) -> None:
        self.parts.append(data)
        self.size += len(data)
        self.lines += data.count(b"\n")

    def line(self, text: str) -> None:
        self._write(text.encode("utf-8") + b"\n")

    def block(self, sender: str, recipient: str, body: str) -> tuple[tuple[int, int], int]:
        """Write one message; return the body's byte range and 1-based first line."""
        self._write(f"{sender} (to {recipient}):\n\n".encode())
        start, line = self.size, self.lines
        self._write(body.encode("utf-8"))
        end = self.size
        self._write(("\n\n" + DASHES + "\n").encode())
        return (start, end), line

    def data(self) -> bytes:
        return b"".join(self.parts)


@dataclass
class _Turn:
    """One agent dialogue's outcome."""

    attempts: list[Attempt]
    move: chess.Move | None
    lost: str | None


def _agent_turn(agent: Agent, board: chess.Board, cfg: HarnessConfig, game: str,
                out: _Transcript, player: str) -> _Turn:
    dv = cfg.dispatcher
    prompt = turn_prompt(cfg.agent_colour, enable_reflection=dv.enable_reflection)
    prompt_range, _ = out.block(_PROXY, player, prompt)
    messages = [Message("user", prompt)]
    attempts: list[Attempt] = []
    failed = 0
    legal = [m.uci() for m in board.legal_moves]
    for number in range(1, dv.max_turns + 1):
        request = Request(
            case_id=f"{game}/ply{len(board.move_stack)}/a{number}", messages=tuple(messages),
            metadata={"fen": board.fen(), "legal_moves": legal, "ply": len(board.move_stack),
                      "attempt": number, "colour": cfg.agent_colour},
        )
        response = agent.respond(request)
        content = response.text or ""
        calls = tuple(ToolCallDisplay(f"call_{number}", c.name, c.arguments)
                      for c in response.tool_calls)
        response_range, line = out.block(player, _PROXY, content + format_tool_calls(calls))
        common: dict[str, Any] = dict(
            run_group=cfg.run_group, variant=cfg.variant, game=game, ply=len(board.move_stack),
            colour=cfg.agent_colour, player=player, role="agent", attempt=number,
            fen_before=board.fen(), prompt=prompt, response=content + format_tool_calls(calls),
            dispatcher=dv.name, source="transcript.txt", line=line,
            response_range=response_range, prompt_range=prompt_range,
            tool_calls=tuple(c.name for c in calls))
        if number == dv.max_turns:
            # AutoGen's max_turns: the last reply of the dialogue is never dispatched.
            attempts.append(Attempt(verdict=None, move=None, reply=None, **common))
            return _Turn(attempts, None, "Max turns in single dialog")
        verdict = dispatch(dv, content, board=board, previous_prompt=prompt)
        failed += verdict.failed
        reply = verdict.reply
        if failed >= dv.max_failed_attempts:
            out.line("BREAKING >>> " + reply)
            reply = TOO_MANY_WRONG_ACTIONS
        prompt_range, _ = out.block(_PROXY, player, reply)
        attempts.append(Attempt(verdict=verdict.kind.value, move=verdict.move, reply=reply,
                                **common))
        if verdict.accepted and verdict.move is not None:
            return _Turn(attempts, chess.Move.from_uci(verdict.move), None)
        if reply == TOO_MANY_WRONG_ACTIONS:
            return _Turn(attempts, None, TOO_MANY_WRONG_ACTIONS)
        messages += [Message("assistant", content), Message("user", reply)]
        prompt = reply
    raise AssertionError("unreachable: the last turn always returns")  # pragma: no cover


def play_game(agent: Agent, opponent: Opponent, cfg: HarnessConfig, game: str,
              out: _Transcript) -> tuple[list[Attempt], GameRecord]:
    """Play one game from the start position; return its attempts and game record."""
    board = chess.Board()
    agent_turn = chess.WHITE if cfg.agent_colour == "white" else chess.BLACK
    player = "Player_White" if agent_turn == chess.WHITE else "Player_Black"
    attempts: list[Attempt] = []
    termination = "max plies"
    out.line(f"GAME {game}: {agent.name} ({cfg.agent_colour}) vs {opponent.name}")
    while len(board.move_stack) < cfg.max_plies:
        if board.is_game_over(claim_draw=False):
            termination = board.outcome(claim_draw=False).termination.name.lower()  # type: ignore[union-attr]
            break
        if board.turn == agent_turn:
            turn = _agent_turn(agent, board, cfg, game, out, player)
            attempts.extend(turn.attempts)
            if turn.move is None:
                termination = turn.lost or "lost"
                break
            board.push(turn.move)
        else:
            move = opponent.choose(board)
            out.line(f"OPPONENT MOVE {move.uci()}")
            board.push(move)
        out.line(f"MADE MOVE {len(board.move_stack)}")
    out.line(f"GAME OVER {game}: {termination}")
    record = GameRecord(game=game, run_group=cfg.run_group, variant=cfg.variant,
                        agent_colour=cfg.agent_colour, start_fen=chess.STARTING_FEN,
                        moves=tuple(m.uci() for m in board.move_stack), termination=termination,
                        attempts=len(attempts))
    return attempts, record


def play_corpus(
    folder: Path, agent: Agent, opponent: Opponent, cfg: HarnessConfig, *, games: int,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Play ``games`` games and write them as a native corpus; return the manifest."""
    if games < 1:
        raise InputError(f"number of games must be positive, got {games}", field="games")
    out = _Transcript()
    attempts: list[Attempt] = []
    records: list[GameRecord] = []
    for index in range(games):
        game_attempts, record = play_game(agent, opponent, cfg, f"{cfg.run_group}/g{index:05d}",
                                          out)
        attempts.extend(game_attempts)
        records.append(record)
        if progress is not None:
            progress(index + 1)
    return write_corpus(
        folder, transcript=out.data(), attempts=attempts, games=records,
        dispatchers=[cfg.dispatcher],
        description=f"harness: {agent.name} as {cfg.agent_colour} vs {opponent.name}, "
                    f"{games} games, max {cfg.max_plies} plies",
    )
