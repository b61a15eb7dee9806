"""Pure regret, outcome-class and conversion-model rules (no engine)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import chess
from rungbench.chess.studies.evaluator import EvaluatorConfig, registered_model, registry
from rungbench.chess.studies.regret import (
    CATASTROPHIC_PPM,
    Answer,
    CellInfo,
    PositionValues,
    mover_ppm,
    rule_ppm,
    score_answers,
    summarize,
)
from rungbench.chess.studies.wdl_model import (
    PPM,
    FitPoint,
    WdlModel,
    fit_model,
    load_model,
    logistic,
    model_file,
)
from rungbench.errors import Refusal

FEN = "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4"
KEY = "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq -"
MODEL = WdlModel("test", 1, "Test 1.0", 8, 0.01, 0.0)


def _values() -> PositionValues:
    legal = sorted(m.uci() for m in chess.Board(FEN).legal_moves)
    values = dict.fromkeys(legal, 300_000)
    values["f3g5"] = 600_000
    values["d2d4"] = 600_000
    values["c4f7"] = 100_000
    return PositionValues(KEY, values)


def test_regret_is_best_minus_chosen_and_ties_share_the_best() -> None:
    """E_best − E_chosen, never negative; two moves at the maximum both have regret 0."""
    values = _values()
    assert values.best_moves == ("d2d4", "f3g5")
    assert values.regret_ppm("f3g5") == values.regret_ppm("d2d4") == 0
    assert values.regret_ppm("c4f7") == 500_000
    assert min(values.regret_ppm(m) for m in values.values) == 0


def _cell(i: int = 0, condition: str = "all") -> CellInfo:
    return CellInfo(f"c{i}", FEN, KEY, condition)


def test_model_failures_get_maximal_regret_in_their_class() -> None:
    """Illegal, malformed, refusal and a move-less answer score 1.0, each in its own class."""
    cells = [_cell(i) for i in range(5)]
    answers = [Answer("c0", "illegal", "e1e8", "illegal move"),
               Answer("c1", "malformed", None, "arguments are not JSON"),
               Answer("c2", "refusal", None, "no"),
               Answer("c3", "answered", None),
               Answer("c4", "answered", "f3g5")]
    scored = score_answers(cells, answers, {KEY: _values()})
    got = [(c.cell_class, c.regret_ppm) for c in scored.cells]
    assert got == [("illegal", PPM), ("malformed", PPM), ("refusal", PPM), ("missing", PPM),
                   ("legal", 0)]
    summary = summarize(scored, "route")
    assert summary["classes"]["illegal"] == 1 and summary["classes"]["missing"] == 1
    assert summary["catastrophic"] == 4 and summary["scored"] == 5


def test_bad_input_is_classified_and_counted_never_dropped() -> None:
    """Unknown cell and duplicate are kept as anomalies; non-UCI and wrong-position are illegal."""
    cells = [_cell(0), _cell(1), _cell(2)]
    answers = [Answer("c0", "answered", "Nf3!!"),
               Answer("c1", "answered", "e7e5"),
               Answer("c2", "answered", "d2d4"),
               Answer("c2", "answered", "c4f7"),
               Answer("zz", "answered", "d2d4")]
    scored = score_answers(cells, answers, {KEY: _values()})
    assert [(c.cell_class, c.detail) for c in scored.cells] == [
        ("illegal", "not_uci"), ("illegal", "illegal_in_position"), ("legal", "legal")]
    assert scored.cells[2].regret_ppm == 0  # the first answer of a cell counts
    assert [(a["anomaly"], a["cell"], a["move"]) for a in scored.anomalies] == [
        ("duplicate_answer", "c2", "c4f7"), ("unknown_cell", "zz", "d2d4")]
    bad = summarize(scored, "route")["bad_input"]
    assert bad == {"illegal_details": {"illegal_in_position": 1, "not_uci": 1},
                   "anomalies": {"unknown_cell": 1, "duplicate_answer": 1}}


def test_reliability_outcomes_have_no_regret_and_fill_the_hazard_table() -> None:
    """Network errors and unsent cells get no regret and are counted by condition and route."""
    cells = [_cell(0, "top5"), _cell(1, "top5"), _cell(2, "none")]
    answers = [Answer("c0", "network_error", None, "reset"), Answer("c2", "answered", "c4f7")]
    scored = score_answers(cells, answers, {KEY: _values()})
    assert [c.regret_ppm for c in scored.cells] == [None, None, 500_000]
    summary = summarize(scored, "openai:m")
    assert summary["scored"] == 1 and summary["mean_wdl_regret"] == 0.5
    rows = {r["condition"]: r for r in summary["hazard"]}
    assert rows["top5"]["missing"] == 2 and rows["top5"]["hazard"] == 1.0
    assert rows["top5"]["by_class"]["network_error"] == 1
    assert rows["top5"]["by_class"]["not_sent"] == 1
    assert rows["none"]["missing"] == 0 and rows["none"]["route"] == "openai:m"


def test_mate_and_terminal_rules() -> None:
    """Mate for the opponent → 0, mate for the mover → 1; checkmate 1, stalemate 0.5."""
    board = chess.Board(FEN)
    assert mover_ppm({"mate": 3}, board, MODEL) == 0
    assert mover_ppm({"mate": -2}, board, MODEL) == PPM
    assert mover_ppm({"cp": 0}, board, MODEL) == PPM // 2
    assert rule_ppm("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - -", "a1a8") == PPM
    assert rule_ppm("7k/8/6Q1/8/8/8/8/K7 w - -", "g6f7") == PPM // 2  # stalemate
    assert rule_ppm(FEN, "d2d4") is None


@given(st.integers(-3000, 3000), st.floats(0.0, 1.0))
def test_conversion_is_symmetric(cp: int, phase: float) -> None:
    """E(-cp) = 1 - E(cp): negating to the mover and converting commute."""
    assert MODEL.expectation(-cp, phase) == pytest.approx(1 - MODEL.expectation(cp, phase),
                                                          abs=1e-12)


def test_fit_recovers_a_known_slope() -> None:
    """A fit on targets generated from k0=0.006, k1=0.002 recovers them."""
    points = [FitPoint(cp, phase, logistic(cp * (0.006 + 0.002 * phase)))
              for cp in range(-800, 801, 40) for phase in (0.0, 0.5, 1.0)]
    model, report = fit_model(points, name="t", version=1, engine="T", depth=1)
    assert model.k0 == pytest.approx(0.006, rel=1e-3)
    assert model.k1 == pytest.approx(0.002, rel=1e-2)
    assert report["n"] == len(points) and len(report["calibration_by_decile"]) == 10
    assert report["log_loss"] == pytest.approx(report["log_loss_floor"], abs=1e-5)


def test_registered_models_match_the_registry_and_carry_a_fit_report() -> None:
    """Every registered model file hashes to its registered digest and reports n, loss, deciles."""
    for key, entry in registry()["evaluators"].items():
        model, report = load_model(model_file(entry["model"]["file"]))
        assert model.digest == entry["model"]["digest"], key
        assert report["n"] >= 1000 and 0 < report["log_loss"] < report["log_loss_constant_half"]
        assert len(report["calibration_by_decile"]) == 10


def test_a_changed_conversion_model_is_refused(tmp_path: Path) -> None:
    """A model file whose digest differs from the registered one refuses before any engine."""
    document = json.loads(model_file("wdl_ethereal.json").read_text())
    document["model"]["parameters"]["k0"] *= 1.01
    changed = tmp_path / "wdl.json"
    changed.write_text(json.dumps(document))
    with pytest.raises(Refusal) as caught:
        registered_model(EvaluatorConfig(model_path=changed))
    assert caught.value.codes == ("conversion_model_changed",)


def test_threshold_sits_between_two_pawns_and_a_piece() -> None:
    """Under the registered Ethereal model, two pawns cost < 0.40 and a minor piece ≥ 0.40."""
    model = registered_model(EvaluatorConfig())
    piece = PPM // 2 - model.expectation_ppm(-300, 1.0)
    pawns = PPM // 2 - model.expectation_ppm(-200, 1.0)
    assert pawns < CATASTROPHIC_PPM <= piece
