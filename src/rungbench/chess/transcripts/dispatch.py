"""Versioned replay of the LLM Chess conversational dispatcher (seed 000, A104).

The historical dispatcher answered each reply of a player with a fixed
precedence: a board query, then a legal-list query, then reflection (the
follow-up to a reflection prompt, or a ``do_reflection`` request), and only
then an attempt to recover a ``make_move`` command. Matching is by substring on
the lowercased, stripped reply; a ``remove_text`` regex (``_run.json``) strips
reasoning before matching in the versions that honour it.

A104 replays this grammar rather than inventing a convenient interpretation
after seeing the outputs, so every rule that changed between program versions
is a field of :class:`DispatcherVersion`; :data:`VERSIONS` names the versions
visible in the bundled public runs (see ``shared/data/SOURCES.md``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Literal

import chess
from rungbench.errors import InputError
from rungbench.evidence.canonical import digest

BOARD_ACTION = "get_current_board"
LEGAL_ACTION = "get_legal_moves"
REFLECT_ACTION = "do_reflection"
MAKE_MOVE_ACTION = "make_move"

MOVE_MADE = "Move made, switching player"
TOO_MANY_WRONG_ACTIONS = "Too many wrong actions"

REFLECT_PROMPT = (
    "Before deciding on the next move you can reflect on your current situation, "
    "write down notes and evaluate.\n"
    "Here're a few recommendations that you can follow to make a better move decision:\n"
    "- Shortlist the most valuable next moves\n"
    "- Consider how they affect the situation\n"
    "- What could be the next moves from your opponent in each case\n"
    "- Is there any strategy fitting the situation and your choice of moves\n"
    "- Rerank the shortlisted moves based on the previous steps\n"
)
"""The reply to ``do_reflection`` (LLM Chess ``reflect_prompt``)."""

REFLECTION_FOLLOWUP = (
    "Now that you reflected please choose any of the valid actions: "
    f"{BOARD_ACTION}, {LEGAL_ACTION}, {REFLECT_ACTION}, {MAKE_MOVE_ACTION} <UCI formatted move>"
)
"""The reply to whatever follows a reflection prompt (unless it is a board or list query)."""

Colour = Literal["white", "black"]

RANDOM_PLAYER = "Random_Player"
"""The name of LLM Chess's random player (``RandomPlayerAgent``)."""
ENGINE_PLAYER_PREFIX = "Chess_Engine_"
"""How the names of its engine players begin (``Chess_Engine_Stockfish_White``,
``Chess_Engine_Dragon_Black``)."""


def is_llm_player(name: str) -> bool:
    """Whether the player called ``name`` is the LLM side of a game (the agent).

    LLM Chess names its two non-LLM players itself (the random player and the engine
    players); every other player is a model, whatever the run called it (``Player_Black``,
    the ensemble runs' ``NoN_Synthesizer``).
    """
    return name != RANDOM_PLAYER and not name.startswith(ENGINE_PLAYER_PREFIX)


class VerdictKind(StrEnum):
    """What the dispatcher made of one reply, in precedence order."""

    BOARD_QUERY = "board_query"
    LEGAL_QUERY = "legal_query"
    REFLECTION_FOLLOWUP = "reflection_followup"
    REFLECTION = "reflection"
    MOVE_ACCEPTED = "move_accepted"
    MOVE_REJECTED = "move_rejected"
    INVALID_ACTION = "invalid_action"


VERSIONS_DEFAULT_ACTIONS = (BOARD_ACTION, LEGAL_ACTION, REFLECT_ACTION, MAKE_MOVE_ACTION)
"""The actions every regular (unaided) program version answers."""

TOOL_KINDS = frozenset({VerdictKind.BOARD_QUERY, VerdictKind.LEGAL_QUERY})
"""Verdicts that answer with state information (the two A104 tool queries)."""


@dataclass(frozen=True)
class DispatcherVersion:
    """One historical (or native) version of the conversational dispatcher."""

    name: str
    """Stable identifier recorded with every verdict."""
    description: str
    """Where the version's rules come from."""
    make_move_pattern: str = r"make_move ([a-zA-Z0-9]{4,5})"
    """Regex searched in the lowercased reply; group 1 is the UCI candidate."""
    remove_text: str | None = None
    """Regex removed (DOTALL) from the reply before matching, or None."""
    failure_scope: Literal["move", "game"] = "move"
    """Whether the failed-attempt counter restarts at every move or runs for the game."""
    max_failed_attempts: int = 3
    """Failed replies (invalid action or rejected move) after which the game is lost."""
    max_turns: int = 10
    """Replies per move dialogue; the last one is never dispatched (AutoGen ``max_turns``)."""
    wrong_counters_per_move: bool = False
    """Whether wrong_moves/wrong_actions restart at every move, so a game record holds
    only its last move's failures (the January 2025 program did this)."""
    action_counters: bool = True
    """Whether the version counts board, list and make_move actions per player."""
    enable_reflection: bool = False
    """Whether the turn prompt offers ``do_reflection`` (the dispatcher accepts it either way)."""
    board_mode: Literal["UNICODE_ONLY", "FEN_ONLY"] = "UNICODE_ONLY"
    """How ``get_current_board`` renders the position."""
    actions: tuple[str, ...] = VERSIONS_DEFAULT_ACTIONS
    """Actions the dispatcher answers; a reply naming none of them is an invalid action
    (the "only make_move" ablation of May 2025 answers ``make_move`` alone)."""
    candidates_in_prompt: bool = False
    """Whether every turn prompt already shows the board and the legal-move list
    (candidate-assisted); False for the regular, unaided interface."""
    previous_moves_in_prompt: bool = False
    """Whether every turn prompt after the first move starts with the game's moves so far
    (``Previous moves (UCI): 1. d2d3 d7d5, 2. c2c3`` and a blank line; the May 2025
    "previous moves" ablation)."""
    pgn_moves: Literal["san", "uci", "none"] = "san"
    """How the game PGN writes its move text: SAN, the UCI strings the dispatcher accepted
    (the May 2025 "only make_move" ablation), or not at all (a program that filled its
    move list only in the ``UNICODE_WITH_PGN`` board mode, so a PGN holds headers and
    result alone)."""
    evidence_window: tuple[str, str] = ("", "")
    """First and last run date (``YYYY.MM.DD``) a run without ``_run.json`` may carry to be
    matched to this version (its prompts must match too); ``("", "")``: never matched by
    date, only named. The windows extend the dated logs each version was read from to
    the neighbouring program changes (see ``description``)."""

    def with_config(
        self, *, remove_text: str | None, enable_reflection: bool, max_failed_attempts: int,
        max_turns: int, board_mode: Literal["UNICODE_ONLY", "FEN_ONLY"],
    ) -> DispatcherVersion:
        """Return this version with a run's configuration (``_run.json``) applied.

        A configuration that differs from the version's own gets a name suffixed with a
        digest of the configuration, so two differently configured runs never share a name.
        """
        configured = replace(
            self, remove_text=remove_text, enable_reflection=enable_reflection,
            max_failed_attempts=max_failed_attempts, max_turns=max_turns, board_mode=board_mode,
        )
        if configured == self:
            return self
        return replace(configured, name=f"{self.name}+{digest(configured.to_json())[7:15]}")

    def to_json(self) -> dict[str, object]:
        """Return the version as a JSON-ready mapping."""
        return {
            "name": self.name, "make_move_pattern": self.make_move_pattern,
            "remove_text": self.remove_text, "failure_scope": self.failure_scope,
            "max_failed_attempts": self.max_failed_attempts, "max_turns": self.max_turns,
            "wrong_counters_per_move": self.wrong_counters_per_move,
            "action_counters": self.action_counters, "enable_reflection": self.enable_reflection,
            "board_mode": self.board_mode, "actions": list(self.actions),
            "candidates_in_prompt": self.candidates_in_prompt,
            # only when set, so the digests of the versions without it do not change
            **({"previous_moves_in_prompt": True} if self.previous_moves_in_prompt else {}),
            **({"pgn_moves": self.pgn_moves} if self.pgn_moves != "san" else {}),
        }


VERSIONS: dict[str, DispatcherVersion] = {
    v.name: v
    for v in (
        DispatcherVersion(
            name="llmchess-2025-01",
            description=(
                "LLM Chess as run in January 2025 (gpt-35-turbo-0301 log): substring "
                "dispatch, make_move regex with optional promotion letter, no remove_text, "
                "only wrong_moves/wrong_actions/reflection counters, and those two reset at "
                "every move (game 13 of the log: one invalid action at move 2, three at move "
                "4, recorded as 3; the printed aggregate's 90 = 30 x 3)"
            ),
            action_counters=False,
            wrong_counters_per_move=True,
            evidence_window=("2024.11.01", "2025.03.31"),
        ),
        DispatcherVersion(
            name="llmchess-2025-05-pgn-headers",
            description=(
                "LLM Chess as run on 1 May 2025 (the ensemble run "
                "ensemble-phi-4-...-t03_2025-05-01-16-04, no _run.json): the January "
                "dispatcher and prompts, but wrong_moves/wrong_actions run for the whole game "
                "(the console's 15 wrong moves of game 1 are the game's total) and the game "
                "PGN is written with headers and result only: the program's move list was "
                "filled only in the UNICODE_WITH_PGN board mode (upstream llm_chess.py, "
                "commit 010e2d4: make_move appends to game_moves under that mode alone, "
                "get_pgn_string writes game_moves)"
            ),
            pgn_moves="none",
            evidence_window=("2025.04.01", "2025.05.01"),
        ),
        DispatcherVersion(
            name="llmchess-2025-05",
            description=(
                "LLM Chess as run from May 2025 (o1-low and o4-mini-ensemble against Dragon, "
                "no _run.json): the January dispatcher and prompts; wrong_moves/wrong_actions "
                "run for the whole game (o4-mini-ensemble game 1: 15 wrong actions spread "
                "over many moves), the game JSON records the board, list and make_move "
                "counters, and the PGN writes every move in SAN; the March 2025 runs (o3-mini "
                "high, 2025.03.01) still reset the counters at every move, so the change lies "
                "between 2025.03.01 and 2025.05.01"
            ),
            evidence_window=("2025.05.02", "2025.07.31"),
        ),
        DispatcherVersion(
            name="llmchess-2025-05-only-make-move",
            description=(
                "the May 2025 'only make_move' ablation (grok-3-mini-beta against Dragon, "
                "no _run.json): every turn prompt shows 'Current board state:' and 'Legal "
                "moves:' before offering make_move alone, and the invalid-action reply "
                "names make_move alone; that get_current_board and get_legal_moves are "
                "answered as invalid actions is inferred from those two texts (no bundled "
                "reply of this version names them); the game PGN writes the accepted UCI "
                "strings as its move text ('1. h2h3 e7e5 2. a2a3 g8f6', run "
                "grok-3-mini-beta-only-make-move-vs-dragon_2025-05-06-08-46-29)"
            ),
            action_counters=False,
            wrong_counters_per_move=True,
            actions=(MAKE_MOVE_ACTION,),
            candidates_in_prompt=True,
            pgn_moves="uci",
            evidence_window=("2025.05.01", "2025.07.31"),
        ),
        DispatcherVersion(
            name="llmchess-2025-05-previous-moves",
            description=(
                "the May 2025 'previous moves' ablation (o4-mini against the random player, "
                "no _run.json): the regular unaided dispatcher and turn prompt, but every "
                "prompt after the first move is prefixed with the game's moves so far in UCI "
                "('Previous moves (UCI): 1. d2d3 d7d5, 2. c2c3' and a blank line), the "
                "random player's prompt too; counters as the other May 2025 ablation (no "
                "game JSON of the bundled run survives to check them against)"
            ),
            action_counters=False,
            wrong_counters_per_move=True,
            previous_moves_in_prompt=True,
            evidence_window=("2025.05.01", "2025.07.31"),
        ),
        DispatcherVersion(
            name="llmchess-2025-08",
            description=(
                "LLM Chess as run in August 2025 (gpt-oss-20b log, _run.json): remove_text "
                "applied before dispatch, per-player board/list/make_move counters, tool-call "
                "suggestions with empty content answered as invalid actions"
            ),
            remove_text=r"<think>.*?</think>",
            evidence_window=("2025.08.01", "2025.08.31"),
        ),
        DispatcherVersion(
            name="uci4-no-promotion",
            description=(
                "the make_move grammar without a promotion letter (exactly four characters): "
                "'make_move e7e8q' is recovered as e7e8, which python-chess rejects"
            ),
            make_move_pattern=r"make_move ([a-zA-Z0-9]{4})",
        ),
    )
}
"""Dispatcher versions by name."""


def version(name: str) -> DispatcherVersion:
    """Return the dispatcher version called ``name``."""
    try:
        return VERSIONS[name]
    except KeyError:
        raise InputError(
            f"unknown dispatcher version {name!r}; known: {', '.join(sorted(VERSIONS))}",
            field="dispatcher",
        ) from None


@dataclass(frozen=True)
class Verdict:
    """The dispatcher's answer to one reply."""

    kind: VerdictKind
    """Which rule fired."""
    move: str | None
    """The UCI string recovered from a make_move command (accepted or rejected)."""
    reply: str
    """The text the dispatcher sent back (before any too-many-failures substitution)."""
    failed: bool
    """Whether the reply counts as a failed attempt (invalid action or rejected move)."""

    @property
    def accepted(self) -> bool:
        """Whether the reply contained a legal command the parser accepted."""
        return self.kind is VerdictKind.MOVE_ACCEPTED


_ACTION_LINES = {
    BOARD_ACTION: f"- '{BOARD_ACTION}' to get the schema and current status of the board\n",
    LEGAL_ACTION: f"- '{LEGAL_ACTION}' to get a UCI formatted list of available moves\n",
    REFLECT_ACTION: f"- '{REFLECT_ACTION}' to take a moment to think about your strategy\n",
}


def turn_prompt(colour: Colour, *, enable_reflection: bool,
                actions: tuple[str, ...] = VERSIONS_DEFAULT_ACTIONS) -> str:
    """Return the LLM Chess turn prompt for ``colour`` offering ``actions``."""
    offered = "".join(line for action, line in _ACTION_LINES.items()
                      if action in actions and (action != REFLECT_ACTION or enable_reflection))
    return (
        f"You are a professional chess player and you play as {colour}. "
        "Now is your turn to make a move. Before making a move you can pick one of the "
        "following actions:\n"
        + offered
        + f"- '{MAKE_MOVE_ACTION} <UCI formatted move>' when you are ready to complete your turn "
        f"(e.g., '{MAKE_MOVE_ACTION} e2e4')"
    )


PREVIOUS_MOVES_PREFIX_TEXT = "Previous moves (UCI): "
PREVIOUS_MOVES_PREFIX = re.compile(r"\APrevious moves \(UCI\): [^\n]*\n\n")
"""The moves-so-far line the "previous moves" ablation puts before a turn prompt."""


def previous_moves_prefix(ucis: list[str]) -> str:
    """The prefix the "previous moves" ablation prints for a game whose moves are ``ucis``
    (empty before the first move)."""
    if not ucis:
        return ""
    pairs = [" ".join(ucis[i:i + 2]) for i in range(0, len(ucis), 2)]
    listed = ", ".join(f"{n}. {pair}" for n, pair in enumerate(pairs, start=1))
    return f"Previous moves (UCI): {listed}\n\n"


def strip_previous_moves(body: str) -> str:
    """``body`` without a leading moves-so-far line (see :data:`PREVIOUS_MOVES_PREFIX`)."""
    match = PREVIOUS_MOVES_PREFIX.match(body)
    return body[match.end():] if match else body


def invalid_action_message(*, enable_reflection: bool,
                           actions: tuple[str, ...] = VERSIONS_DEFAULT_ACTIONS) -> str:
    """Return the LLM Chess invalid-action reply for the offered ``actions``."""
    named = [a for a in actions if a != MAKE_MOVE_ACTION
             and (a != REFLECT_ACTION or enable_reflection)]
    listed = "".join(f"{a}, " for a in named)
    return (
        "Invalid action. Pick one, reply exactly with the name and space delimitted argument: "
        f"{listed}{MAKE_MOVE_ACTION} <UCI formatted move>"
    )


_UNICODE_PIECES = {
    (colour, piece): chess.UNICODE_PIECE_SYMBOLS[
        chess.piece_symbol(piece).upper() if colour else chess.piece_symbol(piece)]
    for colour in chess.COLORS for piece in chess.PIECE_TYPES
}
_FEN_PIECES = {
    (colour, piece): chess.piece_symbol(piece).upper() if colour else chess.piece_symbol(piece)
    for colour in chess.COLORS for piece in chess.PIECE_TYPES
}


def _cells(board: chess.Board, symbols: dict[tuple[bool, int], str], empty: str) -> list[str]:
    """The 64 squares (a1 first) as ``symbols`` of their pieces, ``empty`` where none stands,
    read off the bitboards in one pass."""
    cells = [empty] * 64
    masks = ((chess.PAWN, board.pawns), (chess.KNIGHT, board.knights),
             (chess.BISHOP, board.bishops), (chess.ROOK, board.rooks),
             (chess.QUEEN, board.queens), (chess.KING, board.kings))
    for colour in chess.COLORS:
        occupied = board.occupied_co[colour]
        for piece, mask in masks:
            symbol = symbols[(colour, piece)]
            bits = mask & occupied
            while bits:  # chess.scan_forward, without a generator per mask
                low = bits & -bits
                cells[low.bit_length() - 1] = symbol
                bits ^= low
    return cells


def fast_fen(board: chess.Board) -> str:
    """``board.fen()`` (standard chess: no promoted-piece marks, the en-passant square only
    when an en-passant capture is legal), built from the bitboards; a test holds it equal to
    python-chess's own on every position of the bundled games. Other board classes (chess
    variants) get python-chess's ``fen()`` itself."""
    if type(board) is not chess.Board:
        return board.fen()
    cells = _cells(board, _FEN_PIECES, ".")
    placement = "/".join("".join(cells[rank:rank + 8]) for rank in range(56, -1, -8))
    for run, digit in _EMPTY_RUNS:  # longest first: a run never spans two ranks
        placement = placement.replace(run, digit)
    ep = board.ep_square
    passant = chess.SQUARE_NAMES[ep] if ep is not None and board.has_legal_en_passant() else "-"
    return (f"{placement} {'w' if board.turn else 'b'} {_castling_field(board)} "
            f"{passant} {board.halfmove_clock} {board.fullmove_number}")


_EMPTY_RUNS = tuple(("." * n, str(n)) for n in range(8, 0, -1))
_CORNERS = chess.BB_A1 | chess.BB_H1 | chess.BB_A8 | chess.BB_H8
_CASTLING_LETTERS = ((chess.BB_H1, "K"), (chess.BB_A1, "Q"), (chess.BB_H8, "k"),
                     (chess.BB_A8, "q"))


def _castling_field(board: chess.Board) -> str:
    """``board.castling_xfen()``: in standard chess, with every right on a corner rook and
    that side's king on its e-file square, the letters ``KQkq`` of the rights held (what
    python-chess's scan gives there); anything else is left to python-chess."""
    rights = board.clean_castling_rights()
    if not rights:
        return "-"
    if (board.chess960 or rights & ~_CORNERS
            or (rights & chess.BB_RANK_1 and board.king(chess.WHITE) != chess.E1)
            or (rights & chess.BB_RANK_8 and board.king(chess.BLACK) != chess.E8)):
        return board.castling_xfen()
    return "".join(letter for mask, letter in _CASTLING_LETTERS if rights & mask)


def render_board(board: chess.Board, mode: str = "UNICODE_ONLY") -> str:
    """Return the ``get_current_board`` reply: python-chess's unicode board or the FEN.

    The unicode display is ``board.unicode()`` (rank 8 first, squares joined by spaces,
    ``⭘`` for an empty square), built from the bitboards in one pass; a test holds it
    equal to python-chess's own on every position of the bundled games.
    """
    if mode == "FEN_ONLY":
        return fast_fen(board)
    cells = _cells(board, _UNICODE_PIECES, "⭘")
    return "\n".join(" ".join(cells[rank * 8:rank * 8 + 8]) for rank in range(7, -1, -1))


def render_legal_moves(board: chess.Board) -> str:
    """Return the ``get_legal_moves`` reply: legal UCI moves joined by commas, generator order.

    ``move.uci()`` of every move of ``board.generate_legal_moves()``, formatted from the
    squares directly (a legal move of standard chess is never a drop or the null move); a
    test holds it equal to python-chess's own ``uci()`` on every position of the bundled
    games. Other board classes (chess variants) get ``uci()`` itself.
    """
    if type(board) is not chess.Board:
        return ",".join(move.uci() for move in board.legal_moves)
    names, promoted = chess.SQUARE_NAMES, _PROMOTION_LETTERS
    return ",".join(names[move.from_square] + names[move.to_square] + promoted[move.promotion]
                    for move in board.generate_legal_moves())


def is_game_over(board: chess.Board) -> bool:
    """``board.is_game_over()`` (``claim_draw`` False) with fewer generator runs.

    In standard chess the variant ends never apply, checkmate and stalemate together are
    "no legal move", the 75-move rule is the half-move clock at 150 or more once a legal
    move exists, and a fivefold repetition needs at least 8 plies without a capture or
    pawn move (python-chess's scan stops at the first such move; a position recurs after
    2 plies at the earliest, with null moves, and 4 without), so python-chess's scan of
    the whole move stack runs only when the half-move clock allows a repetition. A test
    holds it equal to python-chess's own on every position of the bundled games. Other
    board classes (chess variants) get ``is_game_over()`` itself.
    """
    if type(board) is not chess.Board:
        return board.is_game_over()
    if board.is_insufficient_material():
        return True
    for _ in board.generate_legal_moves():
        break
    else:
        return True
    clock = board.halfmove_clock
    return clock >= 150 or (clock >= 8 and board.is_repetition(5))


_PROMOTION_LETTERS: dict[int | None, str] = {
    None: "", **{piece: chess.piece_symbol(piece) for piece in chess.PIECE_TYPES}}


_BOARD_ROW = re.compile(r"^[♜♞♝♛♚♟♖♘♗♕♔♙⭘]( [♜♞♝♛♚♟♖♘♗♕♔♙⭘]){7}$")
_UCI_LIST = re.compile(r"^[a-h][1-8][a-h][1-8][qrbn]?(,[a-h][1-8][a-h][1-8][qrbn]?)*$")


def is_board_display(text: str) -> bool:
    """Return whether ``text`` has the board-display shape: 8 rows of 8 unicode squares."""
    rows = text.split("\n")
    return len(rows) == 8 and all(_BOARD_ROW.match(row) for row in rows)


def is_legal_list(text: str) -> bool:
    """Return whether ``text`` is a comma-separated list of UCI moves."""
    return bool(_UCI_LIST.match(text))


_PATTERNS: dict[tuple[str, int], re.Pattern[str]] = {}


def _compiled(pattern: str, flags: int) -> re.Pattern[str]:
    """``re.compile(pattern, flags)``, compiled once per pattern (a version's own regexes)."""
    hit = _PATTERNS.get((pattern, flags))
    if hit is None:
        if len(_PATTERNS) >= 64:
            _PATTERNS.clear()
        hit = _PATTERNS[(pattern, flags)] = re.compile(pattern, flags)
    return hit


def visible_text(version: DispatcherVersion, content: str) -> str:
    """Return what the dispatcher matches: ``remove_text`` applied, lowercased, stripped."""
    if version.remove_text:
        content = _compiled(version.remove_text, re.DOTALL).sub("", content)
    return content.lower().strip()


def _illegal_reason(board: chess.Board, uci: str, listed: str | None = None) -> str | None:
    """Return python-chess's error text for pushing ``uci``, or None when it is legal.

    A move python-chess holds legal as parsed is what ``parse_uci`` accepts too (its
    castling-notation conversions map such a move to itself), so only the others go
    through ``parse_uci`` for its verdict and error text. ``listed``, when given, is this
    position's :func:`render_legal_moves` reply (already rendered for a legal-move query
    at it): a move written as one of its entries is legal without asking again.
    """
    if listed and uci in listed.split(","):  # (an empty list: no move at all is legal)
        return None
    try:
        move = chess.Move.from_uci(uci)
        if move and board.is_legal(move):
            return None
        board.parse_uci(move.uci())  # what push_uci checks; the board is not changed
    except ValueError as exc:
        return str(exc)
    return None


_RENDERED: dict[tuple[str, str, str], str] = {}
_RENDERED_MAX = 200_000


def rendered(kind: Literal["board", "legal"], mode: str, *, fen: str,
             board: chess.Board | None = None) -> str:
    """The board display (``kind`` ``board``) or legal-move list of the position ``fen``.

    Memoised by FEN: a position is rendered once however many replies ask for it
    (replay, verification, chronology). ``board``, when given, must be that position
    and spares rebuilding it on a miss.
    """
    key = (fen, kind, mode)
    hit = _RENDERED.get(key)
    if hit is None:
        if len(_RENDERED) >= _RENDERED_MAX:
            _RENDERED.clear()
        position = board if board is not None else chess.Board(fen)
        hit = (render_board(position, mode) if kind == "board"
               else render_legal_moves(position))
        _RENDERED[key] = hit
    return hit


_FENS: dict[tuple[int | bool | None, ...], str] = {}


def fen_of(board: chess.Board) -> str:
    """``board.fen()`` (:func:`fast_fen`), memoised by the position's bitboards, side, rights
    and clocks."""
    key = (*board.occupied_co, board.pawns, board.knights, board.bishops, board.rooks,
           board.queens, board.kings, board.promoted, board.turn, board.castling_rights,
           board.ep_square, board.halfmove_clock, board.fullmove_number)
    hit = _FENS.get(key)
    if hit is None:
        if len(_FENS) >= _RENDERED_MAX:
            _FENS.clear()
        hit = _FENS[key] = fast_fen(board)
    return hit


def clear_render_cache() -> None:
    """Forget every memoised rendering, FEN, verdict and reflection-prompt answer (benchmarks
    time cold runs with it)."""
    _RENDERED.clear()
    _FENS.clear()
    _VERDICTS.clear()
    _REFLECTING.clear()


_REFLECTING: dict[tuple[str, str], bool] = {}
"""Memoised answers of :func:`_is_reflect_prompt` by (``remove_text`` pattern, prompt)."""


def _is_reflect_prompt(version: DispatcherVersion, prompt: str) -> bool:
    """Whether ``prompt``, ``remove_text`` applied, is the reflection prompt; memoised by
    pattern and prompt when there is a pattern to apply (a census asks it of every prompt
    twice: replay, then verification)."""
    if not version.remove_text:
        return prompt == REFLECT_PROMPT
    key = (version.remove_text, prompt)
    hit = _REFLECTING.get(key)
    if hit is None:
        if len(_REFLECTING) >= _RENDERED_MAX:
            _REFLECTING.clear()
        hit = _REFLECTING[key] = _strip_removed(version, prompt) == REFLECT_PROMPT
    return hit


def dispatch(
    version: DispatcherVersion, content: str, *, board: chess.Board, previous_prompt: str,
    fen: str | None = None,
) -> Verdict:
    """Apply the fixed precedence of ``version`` to one reply; the board is not modified.

    ``previous_prompt`` is the dispatcher's previous message in this dialogue; when it
    was the reflection prompt, any reply other than a board or list query gets the
    reflection follow-up, even a make_move command. ``fen``, when given, is the
    board's FEN: it keys the memoised displays and verdicts (the verdict of a reply depends
    only on the version, the reply, the position and whether the previous prompt was the
    reflection prompt, so a census that replays a transcript and then verifies every
    recorded verdict computes each one once; the answers are the same).
    """
    if fen is None:
        return _dispatch(version, content, board=board, previous_prompt=previous_prompt)
    reflecting = _is_reflect_prompt(version, previous_prompt)
    key = (version.name, content, fen, reflecting)
    hit = _VERDICTS.get(key)
    if hit is not None and (hit[0] is version or hit[0] == version):
        return hit[1]
    verdict = _dispatch(version, content, board=board, previous_prompt=previous_prompt, fen=fen,
                        reflecting=reflecting)
    if len(_VERDICTS) >= _RENDERED_MAX:
        _VERDICTS.clear()
    _VERDICTS[key] = (version, verdict)
    return verdict


_VERDICTS: dict[tuple[str, str, str, bool], tuple[DispatcherVersion, Verdict]] = {}
"""Memoised verdicts by (version name, reply, FEN, reflection prompt before); the version
is kept with each entry and must be the one asking or equal to it, so a version another
run configured alike (each run of a merged corpus builds its own, and the census verifies
with one of them) shares the entry, and a different version under the same name never
answers for another."""


def _dispatch(version: DispatcherVersion, content: str, *, board: chess.Board,
              previous_prompt: str, fen: str | None = None,
              reflecting: bool | None = None) -> Verdict:
    """:func:`dispatch` without the verdict memo (``reflecting``: whether
    ``previous_prompt`` is the reflection prompt, when already decided)."""
    choice = visible_text(version, content)
    if version.actions != VERSIONS_DEFAULT_ACTIONS:
        return _dispatch_restricted(version, choice, board)
    if BOARD_ACTION in choice:
        display = (render_board(board, version.board_mode) if fen is None
                   else rendered("board", version.board_mode, fen=fen, board=board))
        return Verdict(VerdictKind.BOARD_QUERY, None, display, False)
    if LEGAL_ACTION in choice:
        listed = (render_legal_moves(board) if fen is None
                  else rendered("legal", "", fen=fen, board=board))
        return Verdict(VerdictKind.LEGAL_QUERY, None, listed, False)
    if reflecting is None:
        reflecting = _is_reflect_prompt(version, previous_prompt)
    if reflecting:
        return Verdict(VerdictKind.REFLECTION_FOLLOWUP, None, REFLECTION_FOLLOWUP, False)
    if REFLECT_ACTION in choice:
        return Verdict(VerdictKind.REFLECTION, None, REFLECT_PROMPT, False)
    rendered_list = (_RENDERED.get((fen, "legal", "")) if fen is not None
                     and type(board) is chess.Board and not board.chess960 else None)
    return _make_move(version, choice, board, rendered_list)


def _dispatch_restricted(version: DispatcherVersion, choice: str, board: chess.Board) -> Verdict:
    """The same precedence over only the actions ``version`` offers."""
    if BOARD_ACTION in version.actions and BOARD_ACTION in choice:
        return Verdict(VerdictKind.BOARD_QUERY, None, render_board(board, version.board_mode),
                       False)
    if LEGAL_ACTION in version.actions and LEGAL_ACTION in choice:
        return Verdict(VerdictKind.LEGAL_QUERY, None, render_legal_moves(board), False)
    if REFLECT_ACTION in version.actions and REFLECT_ACTION in choice:
        return Verdict(VerdictKind.REFLECTION, None, REFLECT_PROMPT, False)
    return _make_move(version, choice, board)


def _make_move(version: DispatcherVersion, choice: str, board: chess.Board,
               listed: str | None = None) -> Verdict:
    """The make_move verdict of ``choice`` (``listed``: as for :func:`_illegal_reason`)."""
    match = _compiled(version.make_move_pattern, 0).search(choice)
    if match is None:
        invalid = invalid_action_message(enable_reflection=version.enable_reflection,
                                         actions=version.actions)
        return Verdict(VerdictKind.INVALID_ACTION, None, invalid, True)
    uci = match.group(1)
    reason = _illegal_reason(board, uci, listed)
    if reason is None:
        return Verdict(VerdictKind.MOVE_ACCEPTED, uci, MOVE_MADE, False)
    return Verdict(VerdictKind.MOVE_REJECTED, uci, f"Failed to make move: {reason}", True)


def _strip_removed(version: DispatcherVersion, text: str) -> str:
    if version.remove_text:
        return _compiled(version.remove_text, re.DOTALL).sub("", text)
    return text
