"""Reference chess agents and the move-choice task they answer."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import chess
from rungbench.agents.outcomes import classify
from rungbench.agents.protocol import Agent, Request, Response
from rungbench.chess.reference_agents import (
    SUBMIT_MOVE_TOOL,
    EngineAgent,
    RandomMover,
    SyntheticSelector,
    board_diagram,
    fen_metadata,
    legal_moves,
    move_choice_request,
    reference_agent,
    submitted_move,
    validate_move,
)
from rungbench.chess.studies.move_choice import puzzle_schedule
from rungbench.errors import InputError
from rungbench.evidence.paths import shared_data_dir

# puzzle oY29r (line 226 of puzzles.csv): after the setup move d1e2, e3g1 is mate in one
MATE_FEN = "R7/2p4k/6p1/3B1ppp/3b4/4qP2/1PP1Q1PP/5K2 b - - 1 25"


def _move(response: Response) -> str:
    move = submitted_move(response)
    assert move is not None
    return move


def test_move_choice_schema_never_enumerates_moves() -> None:
    """The submit_move argument is a bare string: no enum, one required field (seed 000)."""
    request = move_choice_request("p", MATE_FEN, best_move="e3g1")
    schema = request.tools[0]["function"]["parameters"]
    assert "enum" not in json.dumps(request.tools)
    assert schema["properties"] == {
        "move": {"type": "string", "description": "One move in UCI notation."}
    }
    assert schema["required"] == ["move"] and request.tool_choice == "required"
    assert request.tools == (SUBMIT_MOVE_TOOL,)


def test_hidden_metadata_stays_out_of_what_is_sent() -> None:
    """The FEN is in the prompt; the best move is metadata only, absent from the payload."""
    request = move_choice_request("p", MATE_FEN, best_move="e3g1")
    sent = json.dumps(request.payload())
    assert MATE_FEN in sent and "e3g1" not in sent
    assert fen_metadata(request.payload())["fen"] == MATE_FEN


def test_validator_separates_legal_illegal_and_non_uci() -> None:
    """A legal move passes; an illegal one and a non-UCI string are named."""
    request = move_choice_request("p", MATE_FEN)
    assert validate_move(request, "submit_move", {"move": "e3g1"}) is None
    assert "illegal move 'h7h5'" in str(validate_move(request, "submit_move", {"move": "h7h5"}))
    assert "not a UCI move" in str(validate_move(request, "submit_move", {"move": "Qg1#"}))


def test_random_mover_is_legal_and_seeded_per_request() -> None:
    """Moves are legal, identical for the same request, and vary across case ids."""
    mover = RandomMover(seed=4)
    start = chess.STARTING_FEN
    requests = [move_choice_request(f"r{i}", start) for i in range(40)]
    moves = [_move(mover.respond(r)) for r in requests]
    assert set(moves) <= set(legal_moves(start)) and len(set(moves)) > 5
    assert _move(mover.respond(requests[0])) == moves[0]
    assert all(
        classify(r, mover.respond(r), validate_move).outcome.value == "answered"
        for r in requests[:5]
    )


def test_conversational_request_gets_make_move_text() -> None:
    """Without a tool, a reference agent answers in the make_move grammar."""
    from rungbench.agents.protocol import Message

    chat = Request("g", (Message("user", "Your turn"),), metadata={"fen": chess.STARTING_FEN})
    text = RandomMover().respond(chat).text
    assert text is not None and text.startswith("make_move ")


def test_engine_finds_the_mate_in_one() -> None:
    """Stockfish at 5,000 nodes plays the puzzle's mating move, reproducibly."""
    engine = EngineAgent(nodes=5_000)
    try:
        request = move_choice_request("m", MATE_FEN)
        moves = {_move(engine.respond(request)) for _ in range(2)}
    finally:
        engine.close()
    assert moves == {"e3g1"}
    board = chess.Board(MATE_FEN)
    board.push_uci("e3g1")
    assert board.is_checkmate()


def _positions() -> list[tuple[str, str]]:
    schedule = puzzle_schedule(shared_data_dir() / "lichess_puzzles" / "puzzles.csv", limit=60)
    out = []
    for cell in schedule:
        fen, best = cell.request.metadata["fen"], cell.request.metadata["best_move"]
        if len(legal_moves(fen)) >= 5:
            out.append((fen, best))
    return out


def _arm_rates(agent: Agent, n: int) -> tuple[float, float, float]:
    """Coverage (self-shortlist arm), selection (oracle-list arm), unaided best-move rate."""
    arms = []
    for fen, best in _positions():
        others = [m for m in legal_moves(fen) if m != best][:4]
        arms.append(
            (
                best,
                move_choice_request("s", fen, best_move=best, shortlist_size=5),
                move_choice_request("o", fen, best_move=best, candidates=sorted([best, *others])),
                move_choice_request("u", fen, best_move=best),
            )
        )
    covered = chosen_given = unaided = 0
    for i in range(n):
        best, shortlist, oracle, alone = arms[i % len(arms)]
        listed = agent.respond(replace(shortlist, case_id=f"s{i}")).tool_calls[0].arguments
        covered += best in json.loads(listed)["moves"]
        chosen_given += _move(agent.respond(replace(oracle, case_id=f"o{i}"))) == best
        unaided += _move(agent.respond(replace(alone, case_id=f"u{i}"))) == best
    return covered / n, chosen_given / n, unaided / n


def test_ideas_and_vision_limited_selectors_alias_on_the_score() -> None:
    """Seed 001: C and S are recovered per arm; both unaided rates are C×S = 0.315."""
    n = 1200
    ideas = _arm_rates(reference_agent("ideas-limited", seed=1), n)
    vision = _arm_rates(reference_agent("vision-limited", seed=2), n)
    assert ideas[0] == pytest.approx(0.35, abs=0.04) and ideas[1] == pytest.approx(0.90, abs=0.04)
    assert vision[0] == pytest.approx(0.90, abs=0.04) and vision[1] == pytest.approx(0.35, abs=0.04)
    for coverage, selection, rate in (ideas, vision):
        assert rate == pytest.approx(0.315, abs=0.04)
        assert rate == pytest.approx(coverage * selection, abs=0.04)
    assert abs(ideas[2] - vision[2]) < 0.05  # identical headline, opposite diagnoses


def test_selector_shortlist_has_the_registered_width() -> None:
    """A self-generated shortlist has five distinct legal moves."""
    agent = SyntheticSelector(0.5, 0.5, seed=3)
    rng = np.random.default_rng(0)
    legal = legal_moves(chess.STARTING_FEN)
    for _ in range(50):
        picked = agent.shortlist(rng, legal, "e2e4", 5)
        assert len(picked) == len(set(picked)) == 5 and set(picked) <= set(legal)


def test_selectors_need_a_best_move_and_valid_probabilities() -> None:
    """A selector without best_move metadata, or with C outside [0, 1], is an input error."""
    with pytest.raises(InputError, match="best_move"):
        SyntheticSelector(0.5, 0.5).respond(move_choice_request("x", chess.STARTING_FEN))
    with pytest.raises(InputError, match="coverage"):
        SyntheticSelector(1.5, 0.5)
    with pytest.raises(InputError, match="unknown reference agent"):
        reference_agent("grandmaster")


def test_board_diagram_of_the_start_position() -> None:
    """The diagram puts rank 8 first with labels; the prompt shows it under the FEN."""
    lines = board_diagram(chess.Board()).splitlines()
    assert lines[0] == "8 r n b q k b n r"
    assert lines[7] == "1 R N B Q K B N R"
    assert lines[8] == "  a b c d e f g h"
    prompt = move_choice_request("s", chess.STARTING_FEN).messages[-1].content
    assert prompt.index(chess.STARTING_FEN) < prompt.index("8 r n b q k b n r")


def test_submit_move_schema_is_byte_identical_across_cells(tmp_path: Path) -> None:
    """Every move-choice cell — puzzles, FEN positions, the oracle-list arm — offers the same
    tool bytes, with no enum; a run's manifest records exactly one tool-schema digest."""
    from rungbench.chess.studies.move_choice import fen_schedule
    from rungbench.evidence.canonical import canonical_bytes
    from rungbench.execute.runner import create_run

    puzzles = puzzle_schedule(shared_data_dir() / "lichess_puzzles" / "puzzles.csv", limit=40)
    kaggle = shared_data_dir() / "kaggle_chess_positions" / "filtered_chess_positions.jsonl"
    requests = [c.request for c in puzzles] + [c.request for c in fen_schedule(kaggle, limit=10)]
    requests.append(move_choice_request("o", MATE_FEN, candidates=["e3g1", "e3e2", "d4g1"]))
    tool_bytes = {canonical_bytes(list(r.tools)) for r in requests}
    assert tool_bytes == {canonical_bytes([SUBMIT_MOVE_TOOL])}
    assert b"enum" not in next(iter(tool_bytes))
    run_dir = create_run(tmp_path, puzzles, {"name": "x"})
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert len(manifest["tool_schemas"]) == 1


def test_engine_agent_searches_exactly_its_node_budget() -> None:
    """EngineAgent at N nodes plays what a fresh single-thread Stockfish plays at N nodes, and
    the budget matters: one node and 3,000 nodes disagree on some puzzle; N <= 0 is refused."""
    import chess.engine

    from rungbench.chess.reference_agents import STOCKFISH

    cells = puzzle_schedule(shared_data_dir() / "lichess_puzzles" / "puzzles.csv", limit=8).cells
    shallow, deep = EngineAgent(nodes=1), EngineAgent(nodes=3_000)
    direct = chess.engine.SimpleEngine.popen_uci(str(STOCKFISH))
    try:
        direct.configure({"Threads": 1, "Hash": 16})
        pairs = []
        for cell in cells:
            board = chess.Board(cell.request.metadata["fen"])
            played = direct.play(board, chess.engine.Limit(nodes=3_000), game=object())
            assert played.move is not None
            pairs.append((_move(shallow.respond(cell.request)), _move(deep.respond(cell.request))))
            assert pairs[-1][1] == played.move.uci()
    finally:
        shallow.close()
        deep.close()
        direct.quit()
    assert any(a != b for a, b in pairs)
    with pytest.raises(InputError, match="node budget"):
        EngineAgent(nodes=0)
