"""Tests of the seven A105 claim gates on planted cell tables and a real prompt audit."""

from __future__ import annotations

from functools import cache
from typing import Any

from rungbench.chess.studies.analysis import Settings, analyze_a105
from rungbench.chess.studies.analysis_report import analyze_table
from rungbench.chess.studies.cells import CellTable, build_table
from rungbench.chess.studies.gates import evaluate_gates, prompt_audit
from rungbench.chess.studies.panels import panel_audit
from rungbench.chess.studies.planted_tables import PlantedA105, a105_table
from rungbench.design.presets import factorial_design

SETTINGS = Settings(n_boot=600, seed=3)
FENS = ("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1",
        "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3",
        "8/8/8/4k3/8/8/4P3/4K3 w - - 0 1")
BOARD_CELLS = ("board_only", "board_plus_legal_list")


@cache
def real_audit() -> Any:
    """The gate-4 evidence of a real panels audit over three positions."""
    return prompt_audit(panel_audit(FENS, factorial_design()))


def table(agents: dict[str, PlantedA105], **kw: Any) -> CellTable:
    """A planted table carrying the real prompt audit."""
    header, rows = a105_table(agents, positions=60, games=30, seed=21,
                              design_digest=factorial_design().digest,
                              prompt_audit=real_audit(), **kw)
    return build_table(header, list(enumerate(rows, start=2)))


def gates(t: CellTable, model: str, factor: str) -> dict[int, bool]:
    """Gate number → passed."""
    analysis = analyze_a105(t, SETTINGS)
    return {g.number: g.passed for g in evaluate_gates(analysis, t, model, factor)}


@cache
def board_table() -> CellTable:
    """Luna board-limited, DeepSeek null."""
    return table({"luna": PlantedA105("board_limited"), "deepseek-v4-flash": PlantedA105("null")})


def test_real_prompt_audit_feeds_gate_four() -> None:
    """The panels audit of real positions has zero stray offsets, so gate 4 can pass."""
    audit = real_audit()
    assert audit.blocks == 2 * len(FENS) and audit.stray_offsets == 0
    assert audit.length_mismatches == 0 and audit.masked_token_leaks == 0


def test_board_limited_passes_all_seven_for_board_and_fails_gate_one_for_list() -> None:
    """The board-limited agent clears every gate for the board; the list fails gate 1."""
    assert gates(board_table(), "luna", "board") == dict.fromkeys(range(1, 8), True)
    assert not gates(board_table(), "luna", "legal_list")[1]


def test_sign_reversal_between_panel_orders_fails_gate_three() -> None:
    """A board benefit in board_first that reverses in legal_list_first fails gate 3 only."""
    shift = {"board_first": dict.fromkeys(BOARD_CELLS, -0.2),
             "legal_list_first": dict.fromkeys(BOARD_CELLS, 0.2)}
    t = table({"luna": PlantedA105("board_limited", order_shift=shift),
               "deepseek-v4-flash": PlantedA105("null")})
    result = gates(t, "luna", "board")
    assert result[1] and not result[3]
    analysis = analyze_a105(t, SETTINGS)
    g3 = evaluate_gates(analysis, t, "luna", "board")[2]
    assert g3.evidence["reversed_under"] == ["panel_order=legal_list_first"]


def test_differential_network_attrition_fails_gate_three_under_the_bounds() -> None:
    """Network errors only in the board cells are differential and reverse the worst bound."""
    t = table({"luna": PlantedA105("board_limited", network_hazard=dict.fromkeys(
        BOARD_CELLS, 0.35)), "deepseek-v4-flash": PlantedA105("null")})
    analysis = analyze_a105(t, SETTINGS)
    g3 = evaluate_gates(analysis, t, "luna", "board")[2]
    assert not g3.passed and g3.evidence["differential_attrition"]
    assert "attrition_worst" in g3.evidence["reversed_under"]
    assert analysis.results[("luna", "held_out")].primary["main_b"].test.low > 0


def test_pooled_effect_present_in_one_model_fails_gate_seven_for_the_other() -> None:
    """DeepSeek gets no claim from the pooled average: gate 7 fails for it, passes for Luna."""
    assert not gates(board_table(), "deepseek-v4-flash", "board")[7]
    doc = analyze_table(board_table(), SETTINGS)
    pooled = doc["a105"]["pooled_headline"]["board"]
    assert pooled["low"] > 0 and pooled["blocked_by"] == 7
    assert pooled["gate7_fails_for"] == ["deepseek-v4-flash"]


def test_tool_schema_or_universe_mismatch_fails_gate_five() -> None:
    """One cell offering another tool schema, or another action universe, fails gate 5."""
    header, rows = a105_table({"luna": PlantedA105("board_limited")}, positions=30, games=15,
                              seed=2, design_digest=factorial_design().digest,
                              prompt_audit=real_audit())
    rows[3] = {**rows[3], "action_universe_digest": "sha256:" + "a" * 64}
    t = build_table(header, list(enumerate(rows, start=2)))
    g5 = evaluate_gates(analyze_a105(t, SETTINGS), t, "luna", "board")[4]
    assert not g5.passed and g5.evidence["positions_with_differing_universe"] == 1


def test_missing_prompt_audit_fails_gate_four() -> None:
    """Without a prompt-byte audit gate 4 fails (nothing to show the bytes match)."""
    header, rows = a105_table({"luna": PlantedA105("board_limited")}, positions=30, games=15,
                              seed=2, design_digest=factorial_design().digest)
    t = build_table(header, list(enumerate(rows, start=2)))
    assert not evaluate_gates(analyze_a105(t, SETTINGS), t, "luna", "board")[3].passed


def test_gate_six_shows_legal_only_beside_all_requests_never_randomized() -> None:
    """Gate 6's evidence carries both results and labels the legal subset non-randomized."""
    analysis = analyze_a105(board_table(), SETTINGS)
    g6 = evaluate_gates(analysis, board_table(), "luna", "board")[5]
    assert g6.passed and g6.evidence["legal_only_randomized"] is False
    assert set(g6.evidence["legal_only"]) == set(g6.evidence["all_requests"])
