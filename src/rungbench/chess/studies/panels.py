"""A105 byte-matched panels: the root board and the complete legal-action list, each either
revealed or masked, in a prompt whose bytes are identical outside registered content
(seed 000, "The control cannot merely be a shorter prompt", "Why the FEN changes the
scientific claim", "Hold the action interface still too").

Every cell shows the same full FEN and the same ``submit_move`` tool with a
non-enumerated UCI argument. A masked board square becomes one ``x``; a masked legal
move becomes as many ``x`` as its UCI string has characters. Labels, delimiters, the
64-square layout, the slot count, token lengths and total UTF-8 bytes never change
within a matched block. What a masked panel still reveals — the board's shape, the
number of legal actions and each action's length — is retained structural information.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import Any

import chess
from rungbench.agents.protocol import Message, Request
from rungbench.chess.reference_agents import SUBMIT_MOVE_TOOL, TASK
from rungbench.design.audit import AuditReport, Figure, factorial_audit
from rungbench.design.matching import Render, check_block
from rungbench.design.presets import FactorialCondition, FactorialDesign, factorial_design
from rungbench.errors import InputError
from rungbench.evidence.canonical import canonical_bytes, digest
from rungbench.evidence.paths import shared_data_dir

MASK = "x"
"""One-byte mask token (seed 000)."""
BOARD_OPEN = "[board panel]\n"
BOARD_CLOSE = "    a b c d e f g h\n[end board panel]\n"
LEGAL_OPEN = "[legal-action panel]\n"
LEGAL_CLOSE = "\n[end legal-action panel]\n"
SEPARATOR = ", "
SYSTEM_PROMPT = (
    "You are a chess player. You will be shown one chess position. "
    "Answer only by calling the tool you are given."
)
INSTRUCTION = "Choose your move and submit it with the submit_move tool, in UCI notation."
MASK_NOTE = "Panel content shown as x characters is masked."

PIECE_RE = re.compile(r"[pnbrqkPNBRQK]")
SQUARE_RE = re.compile(r"[a-h][1-8]")
UCI_RE = re.compile(r"[a-h][1-8][a-h][1-8][qrbn]?")
FEN_LINE_RE = re.compile(r"^Position \(FEN\): (.+)$", re.MULTILINE)


@dataclass(frozen=True)
class Panel:
    """One rendered panel and the spans of its content slots."""

    text: str
    """The panel's ASCII text, labels and delimiters included."""
    spans: tuple[tuple[int, int], ...]
    """Half-open character spans of the content slots (squares or moves)."""
    revealed: bool
    """Whether the slots show the true content."""

    def contents(self) -> list[str]:
        """The text of every slot, in order."""
        return [self.text[a:b] for a, b in self.spans]


@dataclass(frozen=True)
class Prompt:
    """A rendered A105 cell: the user message, its panels and its byte render."""

    fen: str
    """The full FEN every cell shows."""
    condition: str
    """Condition name."""
    order: str
    """``board_first`` or ``legal_list_first``."""
    board: Panel
    """The board panel."""
    legal: Panel
    """The legal-action panel."""
    user: Render
    """UTF-8 bytes of the user message and its registered content spans."""

    @property
    def panel_bytes(self) -> int:
        """UTF-8 bytes of the two panels."""
        return len(self.board.text.encode()) + len(self.legal.text.encode())


def square_slots(board: chess.Board) -> list[str]:
    """The 64 square characters, rank 8 to 1 and file a to h: piece letter or ``.``."""
    return [_square_char(board, chess.square(f, r)) for r in range(7, -1, -1) for f in range(8)]


def _square_char(board: chess.Board, square: int) -> str:
    piece = board.piece_at(square)
    return piece.symbol() if piece else "."


def board_panel(board: chess.Board, *, revealed: bool) -> Panel:
    """The 64-square board panel with rank and file labels; masked squares are ``x``."""
    slots = square_slots(board) if revealed else [MASK] * 64
    parts: list[str] = [BOARD_OPEN]
    spans: list[tuple[int, int]] = []
    pos = len(BOARD_OPEN)
    for rank in range(8):
        head = f"{8 - rank} |"
        parts.append(head)
        pos += len(head)
        for char in slots[rank * 8:(rank + 1) * 8]:
            parts.append(" " + char)
            spans.append((pos + 1, pos + 2))
            pos += 2
        parts.append("\n")
        pos += 1
    parts.append(BOARD_CLOSE)
    return Panel("".join(parts), tuple(spans), revealed)


def legal_panel(moves: Sequence[str], *, revealed: bool) -> Panel:
    """The complete legal UCI list; a masked move is as many ``x`` as its UCI length."""
    tokens = list(moves) if revealed else [MASK * len(m) for m in moves]
    spans: list[tuple[int, int]] = []
    pos = len(LEGAL_OPEN)
    for i, token in enumerate(tokens):
        if i:
            pos += len(SEPARATOR)
        spans.append((pos, pos + len(token)))
        pos += len(token)
    return Panel(LEGAL_OPEN + SEPARATOR.join(tokens) + LEGAL_CLOSE, tuple(spans), revealed)


def legal_uci(board: chess.Board) -> list[str]:
    """The complete legal-action universe in UCI, sorted."""
    return sorted(m.uci() for m in board.legal_moves)


def render_prompt(fen: str, condition: FactorialCondition, order: str) -> Prompt:
    """Render one cell's user message; ``condition.present`` is (board, legal list)."""
    board = _board(fen)
    show_board, show_legal = condition.present
    bp = board_panel(board, revealed=show_board)
    lp = legal_panel(legal_uci(board), revealed=show_legal)
    if order not in ("board_first", "legal_list_first"):
        raise InputError(f"unknown panel order {order!r}", field="order")
    first, second = (bp, lp) if order == "board_first" else (lp, bp)
    side = "White" if board.turn == chess.WHITE else "Black"
    head = f"Position (FEN): {board.fen()}\nSide to move: {side}.\n{MASK_NOTE}\n\n"
    text = head + first.text + "\n" + second.text + "\n" + INSTRUCTION
    offset_first, offset_second = len(head), len(head) + len(first.text) + 1
    spans = tuple((a + offset_first, b + offset_first) for a, b in first.spans) + tuple(
        (a + offset_second, b + offset_second) for a, b in second.spans)
    return Prompt(board.fen(), condition.name, order, bp, lp, Render(text.encode(), spans))


def a105_request(case_id: str, prompt: Prompt, *, design_digest: str | None = None) -> Request:
    """The complete request of one cell: fresh context, one required ``submit_move`` tool.

    ``design_digest`` (the registered preset's digest) is recorded in the metadata.
    """
    extra = {} if design_digest is None else {"design_digest": design_digest}
    return Request(
        case_id=case_id,
        messages=(Message("system", SYSTEM_PROMPT), Message("user", prompt.user.data.decode())),
        tools=(SUBMIT_MOVE_TOOL,), tool_choice="required",
        metadata={"task": TASK, "fen": prompt.fen, "design": "A105",
                  "condition": prompt.condition, "panel_order": prompt.order, **extra})


def payload_render(request: Request, user: Render) -> Render:
    """The canonical provider payload bytes with the user render's spans carried into them."""
    data = canonical_bytes(request.payload())
    text = user.data.decode()
    widths = [len(json.dumps(ch, ensure_ascii=False)) - 2 for ch in text]
    cumulative = [0, *accumulate(widths)]
    escaped = json.dumps(text, ensure_ascii=False)[1:-1].encode()
    if data.count(escaped) != 1:
        raise InputError("user message is not uniquely located in the payload", field="payload")
    base = data.index(escaped)
    return Render(data, tuple((base + cumulative[a], base + cumulative[b])
                              for a, b in user.spans))


def masked_leaks(panel: Panel) -> int:
    """Chess tokens a masked panel leaks: any non-mask slot byte or piece letter in a slot,
    and any square name or UCI move anywhere in the panel (labels included)."""
    if panel.revealed:
        return 0
    slot_leaks = sum(1 for s in panel.contents()
                     if set(s) - {MASK} or PIECE_RE.search(s) or UCI_RE.search(s))
    return slot_leaks + len(SQUARE_RE.findall(panel.text)) + len(UCI_RE.findall(panel.text))


def load_positions(count: int = 300, *, data_dir: Path | None = None) -> list[str]:
    """FENs of the first ``count`` Lichess puzzles after their setup move ``Moves[0]``."""
    path = (data_dir or shared_data_dir()) / "lichess_puzzles" / "puzzles.csv"
    fens: list[str] = []
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            for line, row in enumerate(csv.DictReader(fh), start=2):
                if len(fens) >= count:
                    break
                fens.append(_puzzle_fen(row, str(path), line))
    except OSError as exc:
        raise InputError(f"cannot read puzzles: {exc.strerror}", path=str(path)) from exc
    if len(fens) < count:
        raise InputError(f"only {len(fens)} puzzles, {count} requested", path=str(path))
    return fens


def _puzzle_fen(row: dict[str, str], path: str, line: int) -> str:
    try:
        board = chess.Board(row["FEN"])
        board.push_uci(row["Moves"].split()[0])
    except (KeyError, IndexError, ValueError) as exc:
        raise InputError(f"bad puzzle row: {exc}", path=path, line=line, field="FEN") from exc
    return str(board.fen())


def _board(fen: str) -> chess.Board:
    try:
        board = chess.Board(fen)
    except ValueError as exc:
        raise InputError(f"invalid FEN {fen!r}: {exc}", field="fen") from exc
    if not board.is_valid():
        raise InputError(f"FEN {fen!r} is not a valid position", field="fen")
    return board


@dataclass
class _Tally:
    """Running counts of the panel audit."""

    blocks: int = 0
    length_mismatches: int = 0
    stray_offsets: int = 0
    span_mismatches: int = 0
    leaks: int = 0
    wrong_content: int = 0
    fen_mismatches: int = 0
    panel_bytes: dict[str, int] = field(default_factory=dict)
    prompt_bytes: dict[str, int] = field(default_factory=dict)
    payload_bytes: dict[str, int] = field(default_factory=dict)
    tool_digests: set[str] = field(default_factory=set)
    universe_mismatches: int = 0
    masked_boards: set[str] = field(default_factory=set)


def panel_audit(fens: Sequence[str], d: FactorialDesign) -> AuditReport:
    """Render every (position, panel order) block under all conditions and match them."""
    tally = _Tally()
    for i, fen in enumerate(fens):
        for order in d.orders:
            _audit_block(f"p{i:04d}:{order}", fen, order, d, tally)
    return _panel_report(d, tally)


def _audit_block(block: str, fen: str, order: str, d: FactorialDesign, tally: _Tally) -> None:
    prompts = {c.name: render_prompt(fen, c, order) for c in d.conditions}
    requests = {n: a105_request(f"{block}:{n}", p, design_digest=d.digest)
                for n, p in prompts.items()}
    payloads = {n: payload_render(requests[n], p.user) for n, p in prompts.items()}
    tally.blocks += 1
    for check in (check_block({n: p.user for n, p in prompts.items()}), check_block(payloads)):
        tally.length_mismatches += check.length_mismatches
        tally.span_mismatches += check.span_mismatches
        tally.stray_offsets += check.stray_offsets
    panel_sizes = {(len(p.board.text), len(p.legal.text)) for p in prompts.values()}
    tally.length_mismatches += len(panel_sizes) - 1
    board = _board(fen)
    truth_board, truth_legal = square_slots(board), legal_uci(board)
    universes = set()
    for name, p in prompts.items():
        tally.leaks += masked_leaks(p.board) + masked_leaks(p.legal)
        tally.wrong_content += (p.board.revealed and p.board.contents() != truth_board) + (
            p.legal.revealed and p.legal.contents() != truth_legal)
        shown = FEN_LINE_RE.findall(p.user.data.decode())
        tally.fen_mismatches += shown != [board.fen()]
        for key, size in (("panel", p.panel_bytes), ("prompt", len(p.user.data)),
                          ("payload", len(payloads[name].data))):
            table = getattr(tally, f"{key}_bytes")
            table[name] = table.get(name, 0) + size
        tally.tool_digests.add(digest(list(requests[name].tools)))
        universes.add(digest(legal_uci(_board(requests[name].metadata["fen"]))))
        if not p.board.revealed:
            tally.masked_boards.add(p.board.text)
    tally.universe_mismatches += len(universes) - 1


def _panel_report(d: FactorialDesign, t: _Tally) -> AuditReport:
    s = d.seed_figures.get
    per_condition = [Figure(f"panel_bytes_{n}", f"aggregate panel bytes, {n}", t.panel_bytes[n],
                            s("panel_bytes_per_condition"), False) for n in d.condition_names]
    figures = [
        Figure("audit_blocks", "position-presentation blocks", t.blocks, s("audit_blocks"), True),
        Figure("byte_length_mismatches", "byte-length mismatches", t.length_mismatches,
               s("byte_length_mismatches"), True),
        Figure("masked_token_leaks", "masked chess-token leaks", t.leaks,
               s("masked_token_leaks"), True),
        *per_condition,
        Figure("stray_offsets", "differing bytes outside registered content offsets",
               t.stray_offsets, None, False),
    ]
    checks = {
        "no_length_mismatch": t.length_mismatches == 0,
        "no_span_mismatch": t.span_mismatches == 0,
        "prompt_bytes_differ_only_at_registered_offsets": t.stray_offsets == 0,
        "no_masked_leak": t.leaks == 0,
        "revealed_content_correct": t.wrong_content == 0,
        "same_full_fen_in_every_cell": t.fen_mismatches == 0,
        "panel_bytes_equal_across_conditions": len(set(t.panel_bytes.values())) == 1,
        "prompt_bytes_equal_across_conditions": len(set(t.prompt_bytes.values())) == 1,
        "tool_schema_identical": len(t.tool_digests) == 1,
        "action_universe_identical": t.universe_mismatches == 0,
        "masked_board_panel_position_free": len(t.masked_boards) == 1,
    }
    detail = {"panel_bytes": t.panel_bytes, "prompt_bytes": t.prompt_bytes,
              "payload_bytes": t.payload_bytes, "tool_schema_digests": sorted(t.tool_digests),
              "wrong_content": t.wrong_content, "fen_mismatches": t.fen_mismatches}
    return AuditReport(d.id, d.digest, figures, checks, detail)


def a105_audit(d: FactorialDesign | None = None, *, positions: int = 300,
               replicates: int = 20, data_dir: Path | None = None) -> AuditReport:
    """The A105 design audit: schedule, MDE envelope, factorial recovery and panels."""
    d = d or factorial_design()
    schedule = factorial_audit(d, replicates=replicates)
    panels = panel_audit(load_positions(positions, data_dir=data_dir), d)
    detail: dict[str, Any] = {**schedule.detail, "panels": panels.detail,
                              "positions": positions}
    return AuditReport(d.id, d.digest, [*schedule.figures, *panels.figures],
                       {**schedule.checks, **panels.checks}, detail)
