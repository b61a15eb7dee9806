"""Evaluator engines on real binaries: families, identity, refusals, timeouts, known answers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import chess.engine
import pytest

import chess
from rungbench.chess.studies import evaluator as ev
from rungbench.chess.studies.evaluation import position_values
from rungbench.chess.studies.wdl_model import PPM, WdlModel
from rungbench.errors import InputError, Refusal

DEPTH = 6
CONFIG = ev.EvaluatorConfig(evaluator="ethereal", depth=DEPTH, timeout_s=30)


@pytest.fixture(scope="module")
def ethereal() -> Iterator[tuple[chess.engine.SimpleEngine, WdlModel, ev.EvaluatorIdentity]]:
    """One identified Ethereal process and the registered model."""
    model = ev.registered_model(CONFIG)
    engine = ev.start_engine(CONFIG)
    try:
        yield engine, model, ev.identify(engine, CONFIG, model)
    finally:
        ev.close_engine(engine)


def test_family_table_groups_ancestors() -> None:
    """Stockfish and Glaurung are one family, Toga and Fruit another, Ethereal its own."""
    assert ev.family_of("Stockfish 15.1") == ev.family_of("Glaurung 2.2") == "stockfish"
    assert ev.family_of("Toga II 3.0") == ev.family_of("Fruit 2.1") == "fruit"
    assert ev.family_of("Ethereal 12.00") == "ethereal"
    with pytest.raises(Refusal) as caught:
        ev.family_of("Mystery 1.0")
    assert caught.value.codes == ("evaluator_family_unknown",)


def test_same_family_evaluator_is_refused_without_proxy() -> None:
    """Stockfish evaluating a Stockfish-labelled stage refuses unless it is the named proxy."""
    with pytest.raises(Refusal) as caught:
        ev.check_family("Stockfish 15.1", ev.EvaluatorConfig(evaluator="stockfish"))
    assert caught.value.codes == ("evaluator_same_family",)
    proxy = ev.check_family("Stockfish 15.1",
                            ev.EvaluatorConfig(evaluator="stockfish", proxy=True))
    assert proxy.role == ev.PROXY_LABEL == "internal proxy (same family as the labeller)"
    assert ev.check_family("Stockfish 15.1", CONFIG).role == ev.PRIMARY_LABEL
    with pytest.raises(InputError):
        ev.check_family("Stockfish 15.1", ev.EvaluatorConfig(evaluator="ethereal", proxy=True))


def test_identity_records_binary_name_family_options_and_signature(
        ethereal: tuple[chess.engine.SimpleEngine, WdlModel, ev.EvaluatorIdentity]) -> None:
    """Ethereal identifies as family ethereal (not the labeller's), with its model digest."""
    _, model, identity = ethereal
    assert identity.name == "Ethereal 12.00" and identity.family == "ethereal"
    assert identity.family != ev.family_of("Stockfish 15.1")
    assert identity.sha256.startswith("sha256:") and identity.model == model.digest
    assert identity.options["Threads"]["value"] == 1 and identity.options["Hash"]["value"] == 16
    assert [e["fen"] for e in identity.signature] == list(ev.SIGNATURE_FENS)
    assert all(isinstance(e["nodes"], int) and e["nodes"] > 0 for e in identity.signature)


def test_another_binary_behind_a_registered_name_refuses_engine_changed() -> None:
    """Stockfish started as "ethereal" is refused (engine_changed) on identification."""
    config = ev.EvaluatorConfig(evaluator="ethereal", path=Path("/usr/games/stockfish"),
                                timeout_s=30)
    model = ev.registered_model(config)
    engine = ev.start_engine(config)
    try:
        with pytest.raises(Refusal) as caught:
            ev.identify(engine, config, model)
    finally:
        ev.close_engine(engine)
    assert caught.value.codes == ("engine_changed",)


def test_a_search_that_outlives_its_timeout_names_the_engine() -> None:
    """A depth-20 search under a 1 ms timeout raises EvaluatorError naming Ethereal."""
    engine = ev.start_engine(CONFIG)
    try:
        with pytest.raises(ev.EvaluatorError, match=r"Ethereal 12\.00 did not finish"):
            ev.search(engine, chess.Board(), 20, name="Ethereal 12.00", timeout_s=0.001)
    finally:
        ev.close_engine(engine)


def test_repeated_searches_are_identical(
        ethereal: tuple[chess.engine.SimpleEngine, WdlModel, ev.EvaluatorIdentity]) -> None:
    """After ucinewgame a fixed-depth search repeats score, move and nodes, whatever came before."""
    engine = ethereal[0]
    board = chess.Board(ev.SIGNATURE_FENS[2])
    first = ev.search(engine, board, 8, name="e", timeout_s=30)
    ev.search(engine, chess.Board(ev.SIGNATURE_FENS[3]), 8, name="e", timeout_s=30)
    again = ev.search(engine, board, 8, name="e", timeout_s=30)
    assert (first["score"], first["nodes"], first["pv"][0]) == (
        again["score"], again["nodes"], again["pv"][0])


MATE_IN_ONE = "6k1/5ppp/8/7q/8/8/5PPP/R5K1 w - - 0 1"
"""Ra8# is the only mate; every other move leaves White a queen-for-rook down."""
ONE_MOVE = "7k/8/8/8/8/8/1r6/K7 w - - 0 1"
"""White's only legal move is Kxb2."""
TWO_MATES = "7k/8/6K1/8/8/8/8/Q7 w - - 0 1"
"""Qa8# and Qg7# both mate at once."""


def test_mate_in_one_known_answer(
        ethereal: tuple[chess.engine.SimpleEngine, WdlModel, ev.EvaluatorIdentity]) -> None:
    """The mate has regret 0; the best non-mating move has regret exactly 1 − E(best non-mate)."""
    engine, model, _ = ethereal
    values = position_values(engine, MATE_IN_ONE, CONFIG, model, name="Ethereal 12.00")
    assert values.best_moves == ("a1a8",) and values.e_best == PPM
    others = {m: e for m, e in values.values.items() if m != "a1a8"}
    best_other = max(others, key=lambda m: others[m])
    assert values.regret_ppm(best_other) == PPM - others[best_other]
    assert values.regret_ppm(best_other) > 800_000  # a queen for a rook down: near 1


def test_single_legal_move_has_regret_zero(
        ethereal: tuple[chess.engine.SimpleEngine, WdlModel, ev.EvaluatorIdentity]) -> None:
    """With exactly one legal move, that move is the best set and its regret is 0."""
    engine, model, _ = ethereal
    values = position_values(engine, ONE_MOVE, CONFIG, model, name="Ethereal 12.00")
    assert list(values.values) == ["a1b2"] and values.regret_ppm("a1b2") == 0


def test_two_moves_tied_for_best_both_have_regret_zero(
        ethereal: tuple[chess.engine.SimpleEngine, WdlModel, ev.EvaluatorIdentity]) -> None:
    """Two immediate mates tie at expectation 1: both are in the best set, both regret 0."""
    engine, model, _ = ethereal
    values = position_values(engine, TWO_MATES, CONFIG, model, name="Ethereal 12.00")
    assert {"a1a8", "a1g7"} <= set(values.best_moves)
    assert values.regret_ppm("a1a8") == values.regret_ppm("a1g7") == 0


def test_toga_is_a_secondary_fruit_family_evaluator_without_node_signature() -> None:
    """Toga II identifies as family fruit; its signature omits the unreproducible node counts."""
    config = ev.EvaluatorConfig(evaluator="toga2", timeout_s=60)
    model = ev.registered_model(config)
    engine = ev.start_engine(config)
    try:
        identity = ev.identify(engine, config, model)
    finally:
        ev.close_engine(engine)
    assert (identity.name, identity.family) == ("Toga II 3.0", "fruit")
    assert all("nodes" not in e for e in identity.signature)
    assert "not reproducible" in identity.caveat
    assert identity.options["OwnBook"]["value"] is False
