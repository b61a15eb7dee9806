"""The strata of a cell (seed 001, "Outcomes that can prove us wrong": effects may reverse by
model, colour, phase or tacticality; a width effect may vanish after conditioning on value
gap), computed from the frozen label stage and the position alone, never from the model's
answer; and what the cell cost, from the run's log.

* ``phase`` and ``tacticality``: the label stage's phase and class of the position (the
  frozen manifest row carries both, each by the stage's registered rule);
* ``side_to_move`` and ``legal_moves``: from the FEN;
* ``value_gap``: pass A's WDL expectation of rank 1 minus rank 2 (how clear the best move
  is); ``shown_spread``: the largest minus the smallest pass A expectation among the moves
  a list showed (null for a cell that showed none, or showed a move pass A did not rank);
* ``latency_s``, ``tokens_in``, ``tokens_out``, ``cost_usd``: the deciding attempt's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import chess
from rungbench.chess.labels.stage_records import CandidateList

USAGE = ("latency_s", "tokens_in", "tokens_out", "cost_usd")
"""Cost columns of a cell row."""


def position_strata(meta: Mapping[str, Any], lst: CandidateList | None) -> dict[str, Any]:
    """The strata of a cell from its request's frozen metadata and its pass A list."""
    board = chess.Board(str(meta["fen"]))
    out: dict[str, Any] = {
        "phase": meta.get("phase"), "tacticality": meta.get("label"),
        "side_to_move": "white" if board.turn == chess.WHITE else "black",
        "legal_moves": board.legal_moves.count(), "value_gap": None, "shown_spread": None}
    if lst is None:
        return out
    values = [c.expectation for c in lst.candidates]
    if len(values) >= 2:
        out["value_gap"] = round(values[0] - values[1], 9)
    shown = meta.get("candidates")
    if isinstance(shown, list) and shown:
        by_move = {c.uci: c.expectation for c in lst.candidates}
        if all(m in by_move for m in shown):
            spread = [by_move[m] for m in shown]
            out["shown_spread"] = round(max(spread) - min(spread), 9)
    return out


def usage(event: Mapping[str, Any] | None) -> dict[str, Any]:
    """Latency, tokens and cost of a cell's deciding attempt (its last tool_event)."""
    if event is None:
        return dict.fromkeys(USAGE)
    return {"latency_s": event.get("latency_s"), "tokens_in": event.get("tokens_in"),
            "tokens_out": event.get("tokens_out"), "cost_usd": event.get("cost_usd")}
