"""A105 byte-matched panels (seed 000, "The control cannot merely be a shorter prompt")."""

from __future__ import annotations

import json

import pytest

import chess
from rungbench.chess.reference_agents import SUBMIT_MOVE_TOOL
from rungbench.chess.studies.panels import (
    MASK,
    Panel,
    a105_audit,
    a105_request,
    board_panel,
    legal_panel,
    legal_uci,
    load_positions,
    masked_leaks,
    payload_render,
    render_prompt,
)
from rungbench.design.matching import Render, check_block, differing_offsets
from rungbench.design.presets import factorial_design

DESIGN = factorial_design()
PROMO_FEN = "8/P7/8/8/8/8/8/k6K w - - 0 1"


def test_board_panel_masks_every_square_with_one_byte() -> None:
    """The masked board keeps labels and layout; 64 one-byte slots all become x."""
    board = chess.Board()
    shown, hidden = board_panel(board, revealed=True), board_panel(board, revealed=False)
    assert len(shown.spans) == len(hidden.spans) == 64
    assert len(shown.text.encode()) == len(hidden.text.encode())
    assert hidden.contents() == [MASK] * 64
    assert shown.contents()[:8] == list("rnbqkbnr") and shown.contents()[-8:] == list("RNBQKBNR")
    assert "8 | x x x x x x x x\n" in hidden.text
    outside = [i for i in differing_offsets(shown.text.encode(), hidden.text.encode())
               if not any(a <= i < b for a, b in shown.spans)]
    assert outside == []


def test_legal_panel_masks_to_token_length() -> None:
    """Promotion moves (5 chars) mask to xxxxx, others to xxxx; the slot count is kept."""
    moves = legal_uci(chess.Board(PROMO_FEN))
    hidden = legal_panel(moves, revealed=False)
    assert [len(t) for t in hidden.contents()] == [len(m) for m in moves]
    assert "xxxxx" in hidden.contents() and all(set(t) == {"x"} for t in hidden.contents())
    assert len(hidden.text) == len(legal_panel(moves, revealed=True).text)


@pytest.mark.parametrize("order", ["board_first", "legal_list_first"])
def test_prompts_differ_only_at_registered_offsets(order: str) -> None:
    """All four conditions' user messages and provider payloads match outside content spans."""
    prompts = {c.name: render_prompt(PROMO_FEN, c, order) for c in DESIGN.conditions}
    assert check_block({n: p.user for n, p in prompts.items()}).matched
    payloads = {n: payload_render(a105_request(f"c:{n}", p), p.user) for n, p in prompts.items()}
    assert check_block(payloads).matched
    full = payloads["board_plus_legal_list"]
    none = payloads["no_information"]
    changed = differing_offsets(full.data, none.data)
    assert changed and all(full.content_mask()[i] for i in changed)


def test_tampered_prompt_is_caught() -> None:
    """Changing one label byte in one condition shows up as a stray offset."""
    prompts = [render_prompt(PROMO_FEN, c, "board_first") for c in DESIGN.conditions]
    renders = {p.condition: p.user for p in prompts}
    data = renders["board_only"].data.replace(b"[board panel]", b"[Board panel]")
    renders["board_only"] = Render(data, renders["board_only"].spans)
    assert check_block(renders).stray_offsets == 1


def test_every_cell_gets_the_same_full_fen_and_tool() -> None:
    """Each condition's request shows the identical FEN line and the non-enumerated tool."""
    requests = [a105_request("x", render_prompt(PROMO_FEN, c, "legal_list_first"))
                for c in DESIGN.conditions]
    lines = {r.messages[1].content.splitlines()[0] for r in requests}
    assert lines == {f"Position (FEN): {chess.Board(PROMO_FEN).fen()}"}
    assert all(r.tools == (SUBMIT_MOVE_TOOL,) for r in requests)
    assert "enum" not in json.dumps(SUBMIT_MOVE_TOOL)


def test_masked_leak_detector() -> None:
    """Clean masked panels leak nothing; a masked panel carrying a move or piece is caught."""
    board = chess.Board(PROMO_FEN)
    assert masked_leaks(board_panel(board, revealed=False)) == 0
    assert masked_leaks(legal_panel(legal_uci(board), revealed=False)) == 0
    leaky = Panel("[legal-action panel]\nxxxx, a7a8q\n", ((21, 25), (27, 32)), revealed=False)
    assert masked_leaks(leaky) >= 2
    piece = Panel("[board panel]\n8 | K\n", ((18, 19),), revealed=False)
    assert masked_leaks(piece) == 1


def test_load_positions_applies_setup_move() -> None:
    """The first puzzle's position is its FEN after Moves[0] (a2a7, hand-applied)."""
    fens = load_positions(3)
    assert fens[0] == "r5k1/Rp3p1p/2b2qp1/3pr3/8/4P2P/2PN1PP1/Q3K2R b K - 0 19"
    assert len(fens) == 3


def test_a105_audit_600_blocks() -> None:
    """300 puzzle positions × 2 orders: zero mismatches and leaks, equal bytes per condition."""
    report = a105_audit(replicates=2)
    assert report.ok, report.failed()
    figures = {f.key: f.ours for f in report.figures}
    assert figures["audit_blocks"] == 600
    assert figures["byte_length_mismatches"] == 0 and figures["masked_token_leaks"] == 0
    assert figures["stray_offsets"] == 0
    per_condition = {figures[f"panel_bytes_{c}"] for c in DESIGN.condition_names}
    assert len(per_condition) == 1


def test_legal_list_is_sorted_uci() -> None:
    """The start position's 20 moves are listed in UCI string order, a2a3 first."""
    moves = legal_uci(chess.Board())
    assert len(moves) == 20
    assert moves[:4] == ["a2a3", "a2a4", "b1a3", "b1c3"] and moves[-1] == "h2h4"


def test_panel_order_and_side_to_move_are_rendered() -> None:
    """legal_list_first puts the list before the board; a black-to-move FEN says Black."""
    fen = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"
    condition = DESIGN.conditions[-1]
    first = render_prompt(fen, condition, "legal_list_first")
    text = first.user.data.decode()
    assert "Side to move: Black." in text
    assert text.index(first.legal.text) < text.index(first.board.text)
    other = render_prompt(fen, condition, "board_first").user.data.decode()
    assert other.index(first.board.text) < other.index(first.legal.text)
