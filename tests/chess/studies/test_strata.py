"""The strata of a cell from its frozen metadata and pass A list (chess/studies/strata.py)."""

from __future__ import annotations

from typing import Any

from rungbench.chess.labels.stage_records import CandidateList
from rungbench.chess.studies.strata import position_strata, usage

FEN = "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3"


def _list(expectations: list[float]) -> CandidateList:
    """A pass A list of ten moves: ``expectations`` first, then falling by 0.01."""
    moves = ["f1b5", "f1c4", "d2d4", "b1c3", "h2h3", "a2a3", "g2g3", "b2b3", "c2c3", "e1e2"]
    expectations = [*expectations, *(round(min(expectations) - 0.01 * (i + 1), 6)
                                     for i in range(10 - len(expectations)))]
    return CandidateList.model_validate({
        "schema": "rungbench.chess.candidates/1", "key": "k", "fen": FEN, "engine": "test",
        "contract": {}, "pass": "A", "record": "test",
        "candidates": [{"rank": i + 1, "uci": m, "san": m, "score": {"cp": 0},
                        "wdl": (int(e * 1000), 0, 1000 - int(e * 1000)), "expectation": e,
                        "search": {"depth": 1, "seldepth": 1, "nodes": 1}, "pv": [m]}
                       for i, (m, e) in enumerate(zip(moves, expectations, strict=False))]})


def test_strata_come_from_the_position_and_pass_a_only() -> None:
    """Side to move and legal moves from the FEN; phase and class from the metadata; the
    value gap is rank 1 minus rank 2; the spread is over the shown moves only."""
    meta: dict[str, Any] = {"fen": FEN, "phase": "opening", "label": "quiet",
                            "candidates": ["d2d4", "f1b5"]}
    got = position_strata(meta, _list([0.62, 0.55, 0.50, 0.40]))
    assert got == {"phase": "opening", "tacticality": "quiet", "side_to_move": "white",
                   "legal_moves": 27, "value_gap": 0.07, "shown_spread": 0.12}


def test_unlisted_or_unaided_cells_have_no_spread() -> None:
    """An unaided cell shows no list; a shown move pass A never ranked leaves no spread; a
    missing pass A list leaves no gap."""
    meta: dict[str, Any] = {"fen": FEN, "phase": "opening", "label": "quiet"}
    assert position_strata(meta, _list([0.6, 0.5]))["shown_spread"] is None
    meta["candidates"] = ["d2d4", "a2a4"]
    assert position_strata(meta, _list([0.6, 0.5, 0.4]))["shown_spread"] is None
    assert position_strata(meta, None)["value_gap"] is None


def test_usage_is_the_deciding_events() -> None:
    """Latency, tokens and cost are copied from the event; a cell never sent has none."""
    event = {"latency_s": 0.5, "tokens_in": 10, "tokens_out": 3, "cost_usd": 0.001}
    assert usage(event) == event
    assert set(usage(None).values()) == {None}
