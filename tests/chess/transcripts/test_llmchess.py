"""LLM Chess reader: every game of the bundled runs replayed against what the run recorded."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

import chess
from rungbench.chess.transcripts.console import Block, tokenize
from rungbench.chess.transcripts.corpus import split_tool_calls
from rungbench.chess.transcripts.llmchess import read_run, refuse_exclusions
from rungbench.errors import Refusal
from rungbench.evidence.paths import shared_data_dir

DATA = shared_data_dir() / "llm_chess"
AUG = DATA / "gpt-oss-20b-low_2025-08-12-15-06-46"
JAN = DATA / "gpt-35-turbo-0301_2025-01-22"
COUNTERS = ("wrong_moves", "wrong_actions", "reflections_used", "get_board_count",
            "get_legal_moves_count", "make_move_count")


def test_august_2025_counters_and_pgn_reproduced() -> None:
    """All 9 finished games match their JSON counters (both players) and PGN; game 10 is cut off."""
    report = read_run(AUG)
    assert report.dispatcher.name == "llmchess-2025-08"
    assert report.dispatcher.remove_text == "<think>.*?</think>"
    assert len(report.games) == 10 and report.unmatched_json == ()
    assert report.disagreements == []
    for game in report.games[:9]:
        assert game.complete and game.json_file is not None
        names = {(c.name, c.source) for c in game.checks}
        for colour in ("white", "black"):
            for key in COUNTERS:
                assert (f"player_{colour}.{key}", game.json_file) in names
        assert ("pgn", game.json_file) in names and ("pgn", "console") in names
    last = report.games[9]
    assert not last.complete and last.json_file is None
    assert any("run aborted" in note for note in last.unavailable)


def test_august_2025_known_counts() -> None:
    """Game 2 (1. e4 e5 2. g3 d5 3. Bg2) replays to black's 7 wrong actions, 2 boards, 2 moves."""
    game = read_run(AUG).games[1]
    assert game.json_file is not None
    source = game.json_file
    by_name = {(c.name, c.source): c.observed for c in game.checks}
    assert by_name[("player_black.wrong_actions", source)] == 7
    assert by_name[("player_black.get_board_count", source)] == 2
    assert by_name[("player_black.make_move_count", source)] == 2
    assert by_name[("player_white.get_legal_moves_count", source)] == 3
    assert game.replies_regenerated["board"] == 2


def test_january_2025_what_each_game_was_checked_against() -> None:
    """30 games: 14 match a surviving JSON by token counts, 16 say it is missing upstream."""
    report = read_run(JAN)
    assert report.dispatcher.name == "llmchess-2025-01"
    assert report.disagreements == []
    with_json = [g for g in report.games if g.json_file]
    assert len(report.games) == 30 and len(with_json) == 14
    assert len({g.json_file for g in with_json}) == 14 and report.unmatched_json == ()
    for game in report.games:
        assert "console" in game.checked_against
        assert any("not recorded by this program version" in u for u in game.unavailable)
        if game.json_file:
            assert any(u.startswith("pgn: absent") for u in game.unavailable)
        else:
            assert any("missing upstream" in u for u in game.unavailable)
    run_checks = {c.name: c for c in report.run_checks}
    assert run_checks["printed_aggregate"].ok and run_checks["player_black.wrong_actions"].ok
    assert run_checks["player_black.wrong_actions"].observed == 90


def test_january_2025_wrong_actions_restart_each_move() -> None:
    """Game 13 had 1 invalid action at move 2 and 3 at move 4; the run recorded 3."""
    game = read_run(JAN).games[12]
    checks = [c for c in game.checks if c.name == "player_black.wrong_actions"]
    assert checks and all(c.ok and c.expected == 3 for c in checks)
    verdicts = [a.verdict for a in read_run(JAN).corpus.attempts
                if a.game == game.game and a.role == "agent"]
    assert verdicts.count("invalid_action") == 4


_PROXY_BOARD = re.compile(r"^Proxy \(to \w+\):\n\n(?:[♜♞♝♛♚♟♖♘♗♕♔♙⭘ ]{15}\n){7}"
                          r"[♜♞♝♛♚♟♖♘♗♕♔♙⭘ ]{15}\n\n-{80}$", re.M)
_PROXY_LIST = re.compile(r"^Proxy \(to \w+\):\n\n[a-h][1-8][a-h][1-8][qrbn]?"
                         r"(?:,[a-h][1-8][a-h][1-8][qrbn]?)*\n\n-{80}$", re.M)


def test_board_and_list_replies_regenerated_byte_for_byte() -> None:
    """Every board and legal-list reply in both logs (counted by a regex) is python-chess output."""
    for folder in (AUG, JAN):
        text = (folder / "output.txt").read_text(encoding="utf-8")
        totals = {"board": 0, "legal": 0}
        for game in read_run(folder).games:
            for kind in totals:
                totals[kind] += game.replies_regenerated[kind]
        assert totals == {"board": len(_PROXY_BOARD.findall(text)),
                          "legal": len(_PROXY_LIST.findall(text))}
        assert totals["board"] > 0 and totals["legal"] > 0


def test_tool_call_display_is_not_parser_visible() -> None:
    """A 'Suggested tool call' reply has empty content; the tool name is kept aside."""
    events = tokenize((AUG / "output.txt").read_bytes(), path="output.txt")
    block = next(e for e in events if isinstance(e, Block) and "Suggested tool call" in e.body)
    content, calls = split_tool_calls(block.body)
    assert content == "" and calls[0].name == "repo_browser_get_current_board"


def test_truncated_transcript_refuses_naming_file_and_line(tmp_path: Path) -> None:
    """A capture cut inside a message is refused with the file and the message's line."""
    data = (AUG / "output.txt").read_bytes()
    cut = data.index(b"make_move e7e5")
    (tmp_path / "output.txt").write_bytes(data[:cut + 5])
    with pytest.raises(Refusal) as info:
        read_run(tmp_path)
    assert info.value.codes == ("truncated",)
    line = data[:cut].count(b"\n") - 1
    assert info.value.reasons[0].subject == f"{tmp_path / 'output.txt'}:{line}"


def test_illegal_move_recorded_as_accepted_is_a_disagreement(tmp_path: Path) -> None:
    """Rewriting a move in the log to an illegal one makes the replay disagree and refuse."""
    run = tmp_path / AUG.name
    shutil.copytree(AUG, run)
    data = (run / "output.txt").read_bytes()
    (run / "output.txt").write_bytes(data.replace(b"make_move e7e5", b"make_move e7e4", 1))
    report = read_run(run)
    assert report.disagreements
    with pytest.raises(Refusal) as info:
        refuse_exclusions(report)
    assert "reply_mismatch" in info.value.codes
    assert any("output.txt:" in (r.subject or "") for r in info.value.reasons)


def test_missing_dispatcher_message_is_a_structure_disagreement(tmp_path: Path) -> None:
    """Deleting one Proxy reply from the log breaks the dialogue's alternation and refuses."""
    data = (AUG / "output.txt").read_bytes()
    block = (b"Proxy (to Player_Black):\n\nInvalid action. Pick one, reply exactly with the "
             b"name and space delimitted argument: get_current_board, get_legal_moves, make_move "
             b"<UCI formatted move>\n\n" + b"-" * 80 + b"\n")
    assert block in data
    (tmp_path / "output.txt").write_bytes(data.replace(block, b"", 1))
    report = read_run(tmp_path)
    with pytest.raises(Refusal) as info:
        refuse_exclusions(report)
    assert "structure_mismatch" in info.value.codes


def test_august_2025_replay_equals_the_json_files_read_here() -> None:
    """Independently of the reader's own checks: each finished game's replayed counters and
    PGN equal the values this test reads straight from that game's JSON file."""
    import json

    report = read_run(AUG)
    compared = 0
    for game in report.games[:9]:
        assert game.json_file is not None
        recorded = json.loads((AUG / game.json_file).read_text())
        observed = {c.name: c.observed for c in game.checks if c.source == game.json_file}
        for colour in ("white", "black"):
            for key in COUNTERS:
                assert observed[f"player_{colour}.{key}"] == recorded[f"player_{colour}"][key]
                compared += 1
        assert observed["pgn"] == recorded["pgn"]
    assert compared == 9 * 2 * len(COUNTERS)


_MAX_TURNS_TAIL = """MADE MOVE 2
Material Count - White: 39, Black: 39
Prompt Tokens: 0
Completion Tokens: 0

GAME OVER

Random_Player wins due to Max turns in single dialog.
Number of moves made: 2

Wrong Moves (LLM asked to make illegal/impossible move):
Player White: 0
Player Black: 0

Wrong Actions (LLM responded with non parseable message):
Player White: 0
Player Black: 0

Material Count:
Player White: 39
Player Black: 39

Accumulated Reply Time (seconds):
Player White: 0.000
Player Black: 0.000

Game PGN:
[Event "Chess Game"]
[Date "2025.08.12"]
[White "Player White"]
[Black "Player Black"]
[Result "1-0"]

1. c3  1-0

"""


def test_dialogue_ending_at_exactly_max_turns_loses_on_max_turns(tmp_path: Path) -> None:
    """Ten list queries (max_turns 10) with no move end the game as 'Max turns in single dialog'.

    The capture is the August run's first game up to black's first prompt, then ten
    get_legal_moves replies (the tenth unanswered) and the program's GAME OVER summary.
    """
    data = (AUG / "output.txt").read_text()
    head = data[:data.index("Player_Black (to Proxy):")]
    board = chess.Board()
    board.push_uci("c2c3")
    listing = ",".join(m.uci() for m in board.legal_moves)
    dash = "-" * 80 + "\n"
    turns = ["Player_Black (to Proxy):\n\nget_legal_moves\n\n" + dash] * 10
    answers = ["Proxy (to Player_Black):\n\n" + listing + "\n\n" + dash] * 9 + [""]
    body = "".join(t + a for t, a in zip(turns, answers, strict=True))
    (tmp_path / "output.txt").write_text(head + body + _MAX_TURNS_TAIL)
    report = read_run(tmp_path)
    assert report.disagreements == []
    reason = next(c for c in report.games[0].checks if c.name == "reason")
    assert reason.observed == "Max turns in single dialog"
