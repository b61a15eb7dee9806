"""Game harness: scripted and reference agents against random and engine opponents."""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path
from typing import Literal

import pytest

import chess
from rungbench.agents.outcomes import CallFailure, Outcome
from rungbench.agents.protocol import Message, Request, Response
from rungbench.chess.transcripts.census import census_path
from rungbench.chess.transcripts.corpus import load_corpus
from rungbench.chess.transcripts.dispatch import is_board_display, version
from rungbench.chess.transcripts.harness import (
    HarnessConfig,
    RandomOpponent,
    RetryingAgent,
    ScriptedAgent,
    engine_opponent,
    play_corpus,
    reference_game_agent,
)
from rungbench.errors import InputError
from rungbench.execute.policy import RetryPolicy
from rungbench.execute.runner import describe_agent

SCRIPT = (("board", "move"), ("list", "move"), ("junk", "move"), ("board", "list", "move"),
          ("illegal", "toolcall", "move"), ("think",), ("reflect", "junk", "move"))
_CLASS = {"board": "board_query", "list": "legal_list_query", "junk": "non_tool_unresolved",
          "illegal": "non_tool_unresolved", "toolcall": "non_tool_unresolved",
          "reflect": "reflection", "move": "accepted", "think": "accepted"}


def _classes(turn: tuple[str, ...]) -> list[str]:
    """What the script's actions are under the dispatcher: after 'reflect', the next
    non-query reply gets the reflection follow-up (class reflection), by design."""
    out = []
    for i, action in enumerate(turn):
        after_reflect = i > 0 and turn[i - 1] == "reflect" and action not in ("board", "list")
        out.append("reflection" if after_reflect else _CLASS[action])
    return out


def _expected(turns: int) -> tuple[Counter[str], Counter[str], int, int]:
    n: Counter[str] = Counter()
    k: Counter[str] = Counter()
    attempts = transitions = 0
    for i in range(turns):
        classes = _classes(SCRIPT[i % len(SCRIPT)])
        attempts += len(classes)
        for prior, nxt in itertools.pairwise(classes):
            n[prior] += 1
            k[prior] += nxt == "accepted"
            transitions += 1
    return n, k, attempts, transitions


def _cfg(agent_colour: Literal["white", "black"] = "black") -> HarnessConfig:
    return HarnessConfig(dispatcher=version("llmchess-2025-08"), max_plies=30,
                         agent_colour=agent_colour)


def test_census_counts_equal_the_script(tmp_path: Path) -> None:
    """On a scripted-agent corpus every census count equals the count implied by the script."""
    play_corpus(tmp_path, ScriptedAgent(SCRIPT, seed=3), RandomOpponent(11), _cfg(), games=8)
    corpus = load_corpus(tmp_path)
    turns = sum(len(g.moves[1::2]) for g in corpus.games)
    n, k, attempts, transitions = _expected(turns)
    doc = census_path(tmp_path)
    assert doc["counts"]["eligible_attempts"] == attempts
    assert doc["counts"]["same_position_transitions"] == transitions
    assert doc["counts"]["position_chains"] == turns
    rows = {r["prior"]: (r["transitions"], r["accepted"]) for r in doc["transition_table"]}
    for prior in ("board_query", "legal_list_query", "non_tool_unresolved", "reflection"):
        assert rows[prior] == (n[prior], k[prior])
    escalations = sum(("board", "list") in itertools.pairwise(SCRIPT[i % len(SCRIPT)])
                      for i in range(turns))
    assert escalations >= turns // len(SCRIPT) > 0
    assert doc["board_to_list_escalations"] == {"harness/UNICODE_ONLY/no-reflection": escalations}


def test_same_seed_same_bytes(tmp_path: Path) -> None:
    """Same agent seed and opponent seed give byte-identical corpus digests."""
    digests = []
    for name in ("a", "b"):
        manifest = play_corpus(tmp_path / name, ScriptedAgent(SCRIPT, seed=5), RandomOpponent(9),
                               _cfg(), games=3)
        digests.append([f["digest"] for f in manifest["files"]])
    assert digests[0] == digests[1]


class _Recorder:
    """Plays the first legal move and keeps every request it saw."""

    name = "recorder"

    def __init__(self) -> None:
        self.requests: list[Request] = []

    def respond(self, request: Request) -> Response:
        self.requests.append(request)
        if request.metadata["attempt"] == 1:
            return Response(text="get_current_board")
        return Response(text=f"make_move {request.metadata['legal_moves'][0]}")


def test_requests_carry_history_and_fen(tmp_path: Path) -> None:
    """Each request holds the dialogue so far and the FEN/legal moves as metadata."""
    agent = _Recorder()
    play_corpus(tmp_path, agent, RandomOpponent(1), _cfg(agent_colour="white"), games=1)
    first, second = agent.requests[0], agent.requests[1]
    assert first.metadata["fen"] == chess.STARTING_FEN and first.metadata["colour"] == "white"
    assert len(first.messages) == 1 and "play as white" in first.messages[0].content
    assert [m.role for m in second.messages] == ["user", "assistant", "user"]
    assert is_board_display(second.messages[2].content)


def test_turn_limit_leaves_the_last_reply_undispatched(tmp_path: Path) -> None:
    """Ten board queries in a row: nine are answered, the tenth is never dispatched."""
    agent = ScriptedAgent([["board"] * 10], seed=0)
    play_corpus(tmp_path, agent, RandomOpponent(2), _cfg(), games=1)
    corpus = load_corpus(tmp_path)
    assert corpus.games[0].termination == "Max turns in single dialog"
    assert [a.verdict for a in corpus.attempts] == ["board_query"] * 9 + [None]
    doc = census_path(tmp_path)
    assert doc["counts"]["excluded_attempts"] == {"not_dispatched": 1}
    assert doc["counts"]["eligible_attempts"] == 9


def test_three_failures_lose_the_game(tmp_path: Path) -> None:
    """Three failed replies in one dialogue end the game with 'Too many wrong actions'."""
    play_corpus(tmp_path, ScriptedAgent([["junk", "toolcall", "illegal"]], seed=0),
                RandomOpponent(2), _cfg(), games=1)
    corpus = load_corpus(tmp_path)
    assert corpus.games[0].termination == "Too many wrong actions"
    assert corpus.attempts[-1].reply == "Too many wrong actions"
    assert b"BREAKING >>> Failed to make move" in corpus.sources["transcript.txt"]


def test_engine_opponent_plays_legal_moves(tmp_path: Path) -> None:
    """Stockfish at a 200-node budget answers as the opponent; the corpus censuses cleanly."""
    with engine_opponent(nodes=200) as opponent:
        cfg = HarnessConfig(dispatcher=version("llmchess-2025-08"), max_plies=8)
        play_corpus(tmp_path, ScriptedAgent(SCRIPT, seed=1), opponent, cfg, games=1)
    corpus = load_corpus(tmp_path)
    assert len(corpus.games[0].moves) == 8
    assert census_path(tmp_path)["counts"]["position_chains"] == 4


def test_bad_scripts_are_input_errors() -> None:
    """Unknown actions and empty turns are rejected when the agent is built."""
    with pytest.raises(InputError, match="unknown scripted action"):
        ScriptedAgent([["dance"]], seed=0)
    with pytest.raises(InputError):
        ScriptedAgent([[]], seed=0)


class _Flaky:
    """Fails its first ``failures`` calls with a 429 (Retry-After 5 s), then plays e7e5."""

    name = "flaky"

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.seen: list[Request] = []

    def respond(self, request: Request) -> Response:
        self.seen.append(request)
        if len(self.seen) <= self.failures:
            raise CallFailure(Outcome.PROVIDER_ERROR, "429 rate limited", status=429,
                              retry_after=5.0)
        return Response(text="make_move e7e5")


def test_retrying_agent_resends_the_identical_request_under_the_policy() -> None:
    """Two reliability failures are retried with the policy's waits (Retry-After honoured)."""
    waits: list[float] = []
    inner = _Flaky(failures=2)
    agent = RetryingAgent(inner, RetryPolicy(max_attempts=3, backoff_s=(1.0, 8.0)),
                          sleep=waits.append)
    request = Request("g/ply1/a1", (Message("user", "your move"),), metadata={"fen": "x"})
    assert agent.respond(request).text == "make_move e7e5"
    assert inner.seen == [request] * 3 and waits == [5.0, 8.0]
    assert agent.retried == {"provider_error": 2} and agent.name == "flaky"


def test_retrying_agent_gives_up_after_the_last_attempt() -> None:
    """A failure on the last permitted attempt propagates; no extra call is made."""
    inner = _Flaky(failures=5)
    agent = RetryingAgent(inner, RetryPolicy(max_attempts=2, backoff_s=(0.0,)),
                          sleep=lambda s: None)
    with pytest.raises(CallFailure):
        agent.respond(Request("c", (Message("user", "q"),)))
    assert len(inner.seen) == 2 and agent.retried == {"provider_error": 1}


def test_game_reference_agents(tmp_path: Path) -> None:
    """scripted/random play a game; selectors needing a hidden best move are refused."""
    scripted = reference_game_agent("scripted", seed=1, nodes=100, script=SCRIPT)
    assert describe_agent(scripted)["script"] == [list(t) for t in SCRIPT]
    play_corpus(tmp_path / "s", scripted, RandomOpponent(2), _cfg(), games=1)
    random_mover = reference_game_agent("random", seed=1, nodes=100, script=SCRIPT)
    play_corpus(tmp_path / "r", random_mover, RandomOpponent(2), _cfg(), games=1)
    assert census_path(tmp_path / "r")["counts"]["position_chains"] == 15
    for name in ("ideas-limited", "vision-limited", "psychic"):
        with pytest.raises(InputError, match="cannot play a game"):
            reference_game_agent(name, seed=1, nodes=100, script=SCRIPT)
