"""Game-level eligibility: every registered exclusion reason on a real or minimally edited
real game, the census of what stays eligible, and --strict's all-or-nothing."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import typer
from tests.chess.transcripts.edits import copy_run, edit, excluded_causes
from typer.testing import CliRunner

from rungbench.chess.transcripts.census import census_path
from rungbench.chess.transcripts.eligibility import EXCLUSION_REASONS, check_code
from rungbench.chess.transcripts.llmchess import RunReport, read_run
from rungbench.chess.transcripts.llmchess_checks import Check
from rungbench.cli.chess_census import register
from rungbench.errors import Refusal
from rungbench.evidence.paths import shared_data_dir

DATA = shared_data_dir() / "llm_chess"
AUG = DATA / "gpt-oss-20b-low_2025-08-12-15-06-46"
JAN = DATA / "gpt-35-turbo-0301_2025-01-22"
CEREBRAS = DATA / "gpt-oss-120b-low_2025-08-08-19-10-17"
DRAGON = DATA / "grok-3-mini-beta-only-make-move-vs-dragon_2025-05-06-08-41-40"
GAME1_JSON = "2025.08.12_15-06.json"
"""The August run's game 1 (1. c3; black lost on three invalid actions)."""



def _only(report: RunReport, game: str, code: str) -> None:
    """Exactly ``game`` is excluded, for ``code``; every other game stays eligible."""
    assert excluded_causes(report) == {game: code}, report.exclusions


def test_engine_crash_on_the_real_cerebras_run() -> None:
    """gpt-oss-120b on Cerebras: three games end 'Execution was halted due to error' and are
    excluded as engine_crash, naming the line; the fourth (cut off, no reply) stays."""
    report = read_run(CEREBRAS)
    assert excluded_causes(report) == {"g01": "engine_crash", "g02": "engine_crash",
                               "g03": "engine_crash"}
    lines = [cause.line for _, cause in report.excluded()]
    text = (CEREBRAS / "output.txt").read_text(encoding="utf-8").split("\n")
    assert all(text[line - 1] == "Execution was halted due to error." for line in lines)
    assert report.corpus.attempts == tuple(
        a for a in report.corpus.attempts if a.game.endswith("g04"))


def test_opponent_failure_on_the_real_dragon_run() -> None:
    """The May 2025 ablation whose Dragon binary was missing: its one game is excluded as
    opponent_failure (the engine never answered), not as a generic mismatch."""
    report = read_run(DRAGON)
    _only(report, "g01", "opponent_failure")
    assert {e.code for e in report.exclusions[report.games[0].game]} >= {"structure_mismatch"}


def test_capture_starting_mid_message_excludes_only_the_first_game(tmp_path: Path) -> None:
    """A capture that begins inside black's first prompt: game 1 is excluded as
    capture_starts_mid_game and the other nine games stay eligible."""
    run = copy_run(tmp_path, AUG)
    data = (run / "output.txt").read_bytes()
    (run / "output.txt").write_bytes(data[data.index(b"play as black. Now is your turn"):])
    _only(read_run(run), "g01", "capture_starts_mid_game")


def test_capture_starting_at_the_second_move_is_mid_game(tmp_path: Path) -> None:
    """A capture that begins with black's first dialogue (white's first move missing) is
    excluded as capture_starts_mid_game: its first MADE MOVE is 2, not 1."""
    run = copy_run(tmp_path, AUG)
    data = (run / "output.txt").read_bytes()
    (run / "output.txt").write_bytes(data[data.index(b"Proxy (to Player_Black):"):])
    report = read_run(run)
    _only(report, "g01", "capture_starts_mid_game")
    assert "MADE MOVE 2" in report.exclusions[report.games[0].game][0].detail


@pytest.mark.parametrize(("old", "new", "code"), [
    (b'1. c3  1-0"', b'1. c4  1-0"', "pgn_mismatch"),
    (b'"wrong_actions": 3', b'"wrong_actions": 2', "counter_mismatch"),
    (b'"reason": "Too many wrong actions"', b'"reason": "Checkmate"', "outcome_mismatch"),
])
def test_edited_game_json_excludes_that_game(tmp_path: Path, old: bytes, new: bytes,
                                             code: str) -> None:
    """One value edited in game 1's JSON excludes game 1 alone with the matching reason; the
    census then counts the nine other games (41 - game 1's 3 attempts = 38)."""
    run = copy_run(tmp_path, AUG)
    edit(run / GAME1_JSON, old, new)
    _only(read_run(run), "g01", code)
    doc = census_path(run)
    assert doc["counts"]["eligible_attempts"] == 41 - 3
    assert doc["counts"]["source_games"] == 9
    assert [(e["game"].rsplit("/", 1)[1], e["reason"]) for e in doc["exclusions"]] == [
        ("g01", code)]


def test_json_missing_when_the_run_stores_one_per_game(tmp_path: Path) -> None:
    """_run.json says store_individual_logs: deleting game 1's JSON excludes game 1 as
    json_missing (the January run, which stores none reliably, is not affected)."""
    run = copy_run(tmp_path, AUG)
    (run / GAME1_JSON).unlink()
    _only(read_run(run), "g01", "json_missing")
    assert excluded_causes(read_run(JAN)) == {}


def test_json_ambiguous_when_two_files_carry_the_same_tokens(tmp_path: Path) -> None:
    """A second copy of game 1's JSON under another name: the token match is ambiguous and
    game 1 is excluded as json_ambiguous."""
    run = copy_run(tmp_path, AUG)
    shutil.copy(run / GAME1_JSON, run / "2025.08.12_15-06_copy.json")
    _only(read_run(run), "g01", "json_ambiguous")


def test_reply_mismatch_on_one_edited_board_display(tmp_path: Path) -> None:
    """One square of one board display changed: only that game is excluded, as
    reply_mismatch naming the reply's line."""
    run = copy_run(tmp_path, AUG)
    data = (run / "output.txt").read_bytes()
    start = data.index("Proxy (to Player_Black):\n\n♜".encode())
    at = data.index("⭘".encode(), start)
    (run / "output.txt").write_bytes(data[:at] + "♟".encode() + data[at + len("⭘".encode()):])
    report = read_run(run)
    assert list(excluded_causes(report).values()) == ["reply_mismatch"]
    [(_, cause)] = report.excluded()
    assert cause.line == data[:start].count(b"\n") + 3  # the reply's first body line


def test_structure_mismatch_when_a_proxy_reply_is_deleted(tmp_path: Path) -> None:
    """Deleting one invalid-action reply breaks its dialogue's alternation: that game alone is
    excluded as structure_mismatch."""
    run = copy_run(tmp_path, AUG)
    block = (b"Proxy (to Player_Black):\n\nInvalid action. Pick one, reply exactly with the "
             b"name and space delimitted argument: get_current_board, get_legal_moves, make_move "
             b"<UCI formatted move>\n\n" + b"-" * 80 + b"\n")
    edit(run / "output.txt", block, b"")
    report = read_run(run)
    assert list(excluded_causes(report).values()) == ["structure_mismatch"]


def test_aggregate_mismatch_excludes_every_game_of_the_run(tmp_path: Path) -> None:
    """_aggregate_results.json edited (total_moves 68 → 69): the run's own summary no longer
    reconciles, so none of its 30 games is trusted."""
    run = copy_run(tmp_path, JAN)
    edit(run / "_aggregate_results.json", b'"total_moves": 68', b'"total_moves": 69')
    report = read_run(run)
    assert set(excluded_causes(report).values()) == {"aggregate_mismatch"}
    assert len(report.excluded()) == 30 and report.corpus.attempts == ()


def test_check_names_map_to_registered_codes() -> None:
    """Every failed check maps to a registered reason code."""
    for name in ("reply@output.txt:9", "breaking@x:1", "message@x:2", "unanswered@x:3",
                 "dialogue@x:4", "made_move_number", "pgn", "player_black.wrong_moves",
                 "player_white.get_board_count", "winner", "material_count"):
        assert check_code(Check(name, "console", 1, 2)) in EXCLUSION_REASONS


def test_strict_refuses_everything_naming_each_exclusion() -> None:
    """--strict keeps all-or-nothing: the Cerebras run is refused, one engine_crash reason per
    crashed game, each naming output.txt and its line."""
    with pytest.raises(Refusal) as info:
        census_path(CEREBRAS, strict=True)
    crashes = [r for r in info.value.reasons if r.code == "engine_crash"]
    assert len(crashes) >= 3
    assert all(str(r.subject).startswith(f"{CEREBRAS}/output.txt:") for r in crashes)
    census_path(AUG, strict=True)  # a clean run passes strict


def test_cli_strict_exits_3_and_lenient_lists_the_exclusions() -> None:
    """`chess census` lists excluded games by reason; with --strict the same run exits 3."""
    app = typer.Typer()
    register(app)
    runner = CliRunner()
    lenient = runner.invoke(app, ["census", str(CEREBRAS)])
    assert lenient.exit_code == 0 and "engine_crash" in lenient.stdout
    strict = runner.invoke(app, ["census", str(CEREBRAS), "--strict"])
    assert strict.exit_code == 3 and "engine_crash" in strict.output


def test_every_registered_reason_has_a_test() -> None:
    """Each code of EXCLUSION_REASONS is asserted by a test of this module (a new code
    without a test fails here)."""
    source = Path(__file__).read_text(encoding="utf-8")
    untested = [code for code in EXCLUSION_REASONS if f'"{code}"' not in source]
    assert untested == []


def test_registry_reasons_are_documented() -> None:
    """Every reason code is snake_case with a sentence saying what did not match."""
    for code, meaning in EXCLUSION_REASONS.items():
        assert re.fullmatch(r"[a-z_]+", code) and len(meaning) > 30


def test_crash_path_outcome_is_reproduced_on_the_december_2025_run() -> None:
    """gpt-5.1-codex (Dec 2025): game 1 ends in the crash path after three API time-outs;
    its console winner NONE, reason ERROR OCCURED, move count, counters (black's 6 wrong
    actions over the game) and PGN with result 1/2-1/2 are all reproduced, so engine_crash
    is its cause; game 2 (cut off by a later time-out) stays eligible. Its JSON (whose
    tokens include the failed request's) is paired by moves and PGN; it records the random
    player as the winner, the one disagreement, listed beside the crash."""
    run = DATA / "gpt-5.1-codex-low_2025-12-02-10-56-26"
    report = read_run(run)
    _only(report, "g01", "engine_crash")
    crashed = report.games[0]
    assert crashed.complete and crashed.json_file == "2025.12.02_10-56.json"
    assert [(c.name, c.expected, c.observed) for c in crashed.disagreements] == [
        ("winner", "Random_Player", "NONE")]
    compared = {c.name: c.observed for c in crashed.checks if c.source == "console"}
    assert compared["winner"] == "NONE" and compared["reason"] == "ERROR OCCURED"
    assert compared["player_black.wrong_actions"] == 6 and compared["number_of_moves"] == 21
    assert str(compared["pgn"]).endswith("11. Kg3  1/2-1/2")
    assert {e.code for e in report.exclusions[crashed.game]} == {"engine_crash",
                                                                 "outcome_mismatch"}


def test_edited_previous_moves_line_is_a_reply_mismatch(tmp_path: Path) -> None:
    """The May 2025 previous-moves ablation: the moves-so-far line of black's second
    prompt regenerated from the replayed moves; one move of it edited (d2d3 → d2d4)
    excludes the game as reply_mismatch."""
    run = copy_run(tmp_path, DATA / "o4-mini-previous-moves_2025-05-03-20-15-00")
    assert not read_run(run).exclusions
    edit(run / "output.txt", b"Previous moves (UCI): 1. d2d3 d7d5, 2. c2c3",
          b"Previous moves (UCI): 1. d2d4 d7d5, 2. c2c3")
    _only(read_run(run), "g01", "reply_mismatch")


def test_an_engine_opponents_first_prompt_is_an_opening() -> None:
    """The May 2025 Dragon runs address the engine with AutoGen's default 'You are a helpful
    AI Assistant.'; a capture that starts there does not start mid-game."""
    from rungbench.chess.transcripts.console import Block
    from rungbench.chess.transcripts.eligibility import is_opening

    engine = Block("Proxy", "Chess_Engine_Dragon_White", "You are a helpful AI Assistant.",
                   1, 3, (0, 0))
    assert is_opening(engine)
    assert not is_opening(Block("Proxy", "Player_Black", "Move made, switching player",
                                1, 3, (0, 0)))
