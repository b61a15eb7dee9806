"""Planted-mechanism agents: each decides from what the prompt shows, as its mechanism states."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

import chess
from rungbench.agents.loopback import Fault
from rungbench.agents.protocol import Request
from rungbench.chess.studies.panels import a105_request, render_prompt
from rungbench.chess.studies.planted import (
    A105_MECHANISMS,
    PLANTED_NAMES,
    PanelAgent,
    SoftmaxSelector,
    TwoStageAgent,
    condition_drops,
    panels_shown,
    planted_agent,
)
from rungbench.design.presets import FactorialCondition, factorial_design
from rungbench.errors import InputError

FEN = "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4"
BEST = "f3g5"


@pytest.mark.parametrize("condition", factorial_design().conditions, ids=lambda c: c.name)
def test_panels_shown_reads_the_rendered_prompt(condition: FactorialCondition) -> None:
    """The agent sees a panel as revealed exactly when the condition reveals it."""
    for order in ("board_first", "legal_list_first"):
        text = render_prompt(FEN, condition, order).user.data.decode()
        assert panels_shown(text) == condition.present


@pytest.mark.parametrize("mechanism", A105_MECHANISMS)
def test_panel_agent_best_move_rate_follows_its_mechanism(mechanism: str) -> None:
    """Over 400 distinct prompts, P(best) is base + lift exactly where the mechanism says."""
    agent = PanelAgent(mechanism)
    for condition in factorial_design().conditions:
        hits = 0
        for i in range(400):
            req = a105_request(f"c{i}", render_prompt(
                chess.Board(FEN).fen().replace(" 4 4", f" 4 {4 + i}"), condition, "board_first"))
            req = replace(req, metadata={**req.metadata, "best_moves": [BEST]})
            move = json.loads(agent.respond(req).tool_calls[0].arguments)["move"]
            assert move in [m.uci() for m in chess.Board(FEN).legal_moves]
            hits += move == BEST
        want = 0.2 + (0.5 if agent.helped(*condition.present) else 0.0)
        assert abs(hits / 400 - want) < 0.08, (condition.name, hits)


def test_two_stage_selection_is_s_when_the_best_is_shown() -> None:
    """A list holding the best move yields it with probability S; unlisted moves never."""
    agent = TwoStageAgent("vision_limited", 0.9, 0.35)
    rng = np.random.default_rng(1)
    picks = [agent.select(rng, ["a", "b", "c"], ["a"]) for _ in range(4000)]
    assert abs(picks.count("a") / 4000 - 0.35) < 0.03
    assert set(picks) <= {"a", "b", "c"}


def test_softmax_selector_probabilities() -> None:
    """Sharp T 0.25 gives rank 1 of (1..5) 0.926; primacy shifts mass to early slots."""
    sharp = SoftmaxSelector("sharp", 0.25)
    assert sharp.probabilities([1, 2, 3, 4, 5])[0] == pytest.approx(0.9256, abs=1e-3)
    primacy = SoftmaxSelector("primacy", 1.0, 0.5)
    assert primacy.probabilities([3, 3])[0] > primacy.probabilities([3, 3])[1]


def test_every_registered_name_builds_and_unknown_refuses() -> None:
    """Each registered planted name builds an agent; an unknown one is an input error."""
    assert {planted_agent(n).name.split(":", 1)[1] for n in PLANTED_NAMES} == set(PLANTED_NAMES)
    with pytest.raises(InputError):
        planted_agent("a105:psychic")


def test_reversed_order_makes_the_panel_hurt_in_that_order() -> None:
    """With reversed_order, the board panel lowers P(best) in that order and lifts it in the
    other: 0.95 / 0.30 board-first, 0.05 / 0.30 legal-list-first."""
    agent = PanelAgent("board_limited", base=0.3, lift=0.65, reversed_order="legal_list_first",
                       reversal=0.25)
    conditions = {c.name: c for c in factorial_design().conditions}
    for order, name, want in (("board_first", "board_only", 0.95),
                              ("board_first", "no_information", 0.30),
                              ("legal_list_first", "board_only", 0.05),
                              ("legal_list_first", "no_information", 0.30)):
        hits = 0
        for i in range(400):
            req = a105_request(f"c{i}", render_prompt(
                chess.Board(FEN).fen().replace(" 4 4", f" 4 {4 + i}"), conditions[name], order))
            req = replace(req, metadata={**req.metadata, "best_moves": [BEST]})
            hits += json.loads(agent.respond(req).tool_calls[0].arguments)["move"] == BEST
        assert abs(hits / 400 - want) < 0.08, (order, name, hits)
    with pytest.raises(InputError):
        PanelAgent("board_limited", base=0.1, reversal=0.2)


def test_condition_drops_hit_one_condition_at_a_seeded_share_of_positions() -> None:
    """Drops depend on (seed, position key) only: both orders of a hit position fail, no
    other condition ever does, and about ``share`` of positions are hit."""
    drop = condition_drops("board_only", 0.25, seed=3)
    keys = [f"k{i}" for i in range(800)]

    def request(condition: str, key: str, order: str) -> Request:
        return Request(case_id=f"{key}:{condition}:{order}", messages=(),
                       metadata={"condition": condition, "key": key})

    hit = [drop(request("board_only", k, "board_first")) is Fault.DROP for k in keys]
    assert hit == [drop(request("board_only", k, "legal_list_first")) is Fault.DROP
                   for k in keys]
    assert abs(sum(hit) / len(keys) - 0.25) < 0.05
    assert all(drop(request(c, k, "board_first")) is None for k in keys[:50]
               for c in ("no_information", "legal_list_only", "board_plus_legal_list"))
