"""Program versions and game checks that the real runs of issue 15 need, each pinned on a
real game of data/llm_chess (verbatim upstream) or a minimally edited copy."""

from __future__ import annotations

from pathlib import Path

from tests.chess.transcripts.edits import copy_run, edit, excluded_causes

from rungbench.chess.transcripts.dispatch import is_llm_player
from rungbench.chess.transcripts.llmchess import read_run
from rungbench.chess.transcripts.llmchess_checks import pgn_date
from rungbench.chess.transcripts.versions import run_dates
from rungbench.evidence.paths import shared_data_dir

DATA = shared_data_dir() / "llm_chess"
KIMI = DATA / "kimi-k2.6_2026-05-19-12-09-53"
GROK = DATA / "grok-3-mini-beta-only-make-move-vs-dragon_2025-05-06-08-46-29"
ENSEMBLE = DATA / "ensemble-phi-4-at-q4ks-with-think-t08-mini41-t10-mini41-t03_2025-05-01-16-04"
O4_ENSEMBLE = DATA / "o4-mini-ensemble-vs-dragon-lvl-1_2025-05-15-19-34"
O1_LOW = DATA / "o1-low-vs-dragon-lvl-1_2025-05-05-17-30"
O3_MARCH = DATA / "o3-mini-2025-01-31-high_2025-03-01_1"
TURBO_0613 = DATA / "gpt-35-turbo-0613_2025-01-22"
GPT54 = DATA / "gpt-5.4-high_2026-04-18-22-51-22"
GPT5_MIDNIGHT = DATA / "gpt-5-low_2025-08-20-23-49-46"
GEMINI = DATA / "gemini-3.8-flash-high_2026-09-05-08-59-26"




def test_pgn_date_is_the_day_the_game_ended_within_its_bounds() -> None:
    """A PGN dated between the game's start day and the next game's start day is taken; one
    dated before the start, or after the next game began, is not (the start day is)."""
    data = {"time_started": "2026.05.19_21:56", "pgn": '[Date "2026.05.21"]\n'}
    assert pgn_date(data, "2026.05.21_01:14") == "2026.05.21"
    assert pgn_date(data, None) == "2026.05.21"
    assert pgn_date(data, "2026.05.20_09:00") == "2026.05.19"
    assert pgn_date({**data, "pgn": '[Date "2026.05.18"]\n'}, None) == "2026.05.19"


def test_games_that_ran_past_midnight_keep_their_end_date() -> None:
    """kimi-k2.6 game 2 (started 05.19, PGN 05.21, next game 05.21) and game 4 (the last,
    started 05.21, PGN 05.22), gpt-5-low game 1 (23:49, PGN the next day) and gpt-5.4-high
    game 1 (ran past midnight) are eligible, their PGNs checked byte for byte."""
    kimi = read_run(KIMI)
    assert excluded_causes(kimi) == {}
    assert kimi.games[1].json_file == "2026.05.19_21-56.json"
    for run in (GPT5_MIDNIGHT, GPT54):
        report = read_run(run)
        first = report.games[0]
        assert first.game not in report.exclusions
        assert any(c.name == "pgn" and c.source == first.json_file and c.ok
                   for c in first.checks)


def test_pgn_dated_after_the_next_game_began_is_a_pgn_mismatch(tmp_path: Path) -> None:
    """kimi-k2.6 game 2's PGN moved to 2026.05.22, after game 3 started (05.21), excludes it
    as pgn_mismatch."""
    run = copy_run(tmp_path, KIMI)
    edit(run / "2026.05.19_21-56.json", b'[Date \\"2026.05.21\\"]', b'[Date \\"2026.05.22\\"]')
    assert excluded_causes(read_run(run)) == {"g02": "pgn_mismatch"}


def test_only_make_move_ablation_writes_its_pgn_in_uci(tmp_path: Path) -> None:
    """grok-3-mini only-make-move (May 2025): the console PGN '1. h2h3 e7e5 2. a2a3 g8f6 …'
    is the replay's moves in UCI, so the game is eligible; one move edited is a
    pgn_mismatch."""
    report = read_run(GROK)
    assert report.dispatcher.pgn_moves == "uci" and excluded_causes(report) == {}
    pgn = next(c for c in report.games[0].checks if c.name == "pgn")
    assert "\n\n1. h2h3 e7e5 2. a2a3 g8f6 " in pgn.observed
    run = copy_run(tmp_path, GROK)
    edit(run / "output.txt", b"1. h2h3 e7e5 2. a2a3", b"1. h2h3 e7e5 2. a2a4")
    assert excluded_causes(read_run(run)) == {"g01": "pgn_mismatch"}


def test_may_2025_counters_run_for_the_whole_game() -> None:
    """o4-mini-ensemble (2025.05.15) is llmchess-2025-05: game 1's 15 wrong actions and the
    JSON's board/list/make_move counters are the game's totals; the ensemble of 2025.05.01
    is llmchess-2025-05-pgn-headers (15 wrong moves, PGN without move text); the March
    2025 o3-mini run stays llmchess-2025-01 (per-move counters)."""
    o4 = read_run(O4_ENSEMBLE)
    assert o4.dispatcher.name == "llmchess-2025-05" and excluded_causes(o4) == {}
    checks = {(c.name, c.source): c for c in o4.games[0].checks}
    assert checks[("player_black.wrong_actions", "console")].observed == 15
    assert checks[("player_black.get_board_count", "2025.05.15_19-34.json")].expected == 47
    ensemble = read_run(ENSEMBLE)
    assert ensemble.dispatcher.name == "llmchess-2025-05-pgn-headers"
    assert excluded_causes(ensemble) == {}
    wrong = next(c for c in ensemble.games[0].checks
                 if c.name == "player_black.wrong_moves" and c.source == "console")
    assert wrong.expected == wrong.observed == 15
    assert read_run(O3_MARCH).dispatcher.name == "llmchess-2025-01"


def test_per_move_counters_disagree_with_the_may_2025_run() -> None:
    """Replayed as llmchess-2025-01 (counters reset every move), o4-mini-ensemble's games are
    counter_mismatch: the check that picks the version can fail."""
    report = read_run(O4_ENSEMBLE, dispatcher="llmchess-2025-01")
    assert set(excluded_causes(report).values()) == {"counter_mismatch"}


def test_the_agent_is_the_llm_side_whatever_its_name() -> None:
    """The ensemble runs' model player NoN_Synthesizer is the agent; the random player and
    the engine players are not."""
    assert is_llm_player("NoN_Synthesizer") and is_llm_player("Player_Black")
    assert not is_llm_player("Random_Player")
    assert not is_llm_player("Chess_Engine_Dragon_White")
    report = read_run(O4_ENSEMBLE)
    roles = {(a.player, a.role) for a in report.corpus.attempts}
    assert roles == {("NoN_Synthesizer", "agent"), ("Chess_Engine_Dragon_White", "opponent")}
    assert all(g.agent_colour == "black" for g in report.corpus.games)


def test_crashed_game_is_paired_by_moves_with_its_json(tmp_path: Path) -> None:
    """o1-low game 1 crashed: its JSON counts the failed request's tokens (3367/11279 against
    the console's 3256/11073), so it is paired by moves, PGN and start time, the note
    stating the token relation; a JSON whose move count differs is not paired."""
    report = read_run(O1_LOW)
    first = report.games[0]
    assert first.json_file == "2025.05.05_17-30.json"
    assert any("(3367, 11279)" in u and "(3256, 11073)" in u for u in first.unavailable)
    run = copy_run(tmp_path, O1_LOW)
    edit(run / "2025.05.05_17-30.json", b'"number_of_moves": 9', b'"number_of_moves": 8')
    assert read_run(run).games[0].json_file is None


def test_indistinguishable_games_are_checked_against_every_fitting_json(
        tmp_path: Path) -> None:
    """gpt-35-turbo-0613: 8 games share their moves and token counts with two JSONs; each
    agrees with both, so all 8 are eligible and checked against both; one JSON's wrong
    actions edited (3 to 2) makes all 8 json_ambiguous."""
    report = read_run(TURBO_0613)
    assert excluded_causes(report) == {}
    shared = [g for g in report.games if len(g.checked_against) == 4]
    assert len(shared) == 8
    run = copy_run(tmp_path, TURBO_0613)
    edit(run / "2025.01.22_14-58_1737547125316.json", b'"wrong_actions": 3',
          b'"wrong_actions": 2')
    found = excluded_causes(read_run(run))
    assert len(found) == 8 and set(found.values()) == {"json_ambiguous"}


def test_run_date_is_the_folders_trailing_date_not_the_models() -> None:
    """o3-mini-2025-01-31-high_2025-03-01_1 ran on 2025.03.01; 2025.01.31 names the model."""
    assert run_dates(O3_MARCH, (O3_MARCH / "output.txt").read_bytes()) == ("2025.03.01",)


def test_census_files_cover_every_file_the_replay_reads() -> None:
    """A single run's corpus lists output.txt, each result file and _run.json with digests."""
    files = read_run(KIMI).corpus.origin["files"]
    assert sorted(files) == [f"{KIMI.name}/{n}" for n in (
        "2026.05.19_12-09.json", "2026.05.19_21-56.json", "2026.05.21_01-14.json",
        "2026.05.21_07-10.json", "_run.json", "output.txt")]


def test_filter_error_result_file_is_read_and_named() -> None:
    """gpt-5.4-high game 3 hit a content filter; its result, stored as
    2026.04.19_05-10.filter_error, is paired with it and the engine_crash names that file."""
    report = read_run(GPT54)
    third = report.games[2]
    assert third.json_file == "2026.04.19_05-10.filter_error"
    cause = report.exclusions[third.game][0]
    assert cause.code == "engine_crash" and "2026.04.19_05-10.filter_error" in cause.detail
    assert f"{GPT54.name}/2026.04.19_05-10.filter_error" in report.corpus.origin["files"]


def test_tool_only_suggestions_are_dispatched_on_their_text() -> None:
    """gemini-3.8-flash: a reply holding only an AutoGen tool suggestion with an invented
    name (chess_game_get_legal_moves) is an invalid action, as the run's Proxy answered; the
    same suggestion after the text get_current_board is a board query."""
    report = read_run(GEMINI)
    assert excluded_causes(report) == {}
    seen = {(a.tool_calls, a.verdict) for a in report.corpus.attempts
            if any(n.startswith("chess_") for n in a.tool_calls)}
    assert (("chess_game_get_legal_moves",), "invalid_action") in seen
    assert (("chess_game_get_current_board",), "board_query") in seen
