"""Program-version detection: _run.json, dated evidence with prompt fingerprints, the
--dispatcher override, and refusals that name what did not match."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

import chess
from rungbench.chess.transcripts.console import tokenize
from rungbench.chess.transcripts.dispatch import VERSIONS, dispatch, version
from rungbench.chess.transcripts.llmchess import read_run, variant_of
from rungbench.chess.transcripts.versions import detect, fingerprint_mismatch, run_dates
from rungbench.cli.chess_census import register
from rungbench.errors import Refusal
from rungbench.evidence.paths import shared_data_dir

DATA = shared_data_dir() / "llm_chess"
AUG = DATA / "gpt-oss-20b-low_2025-08-12-15-06-46"
JAN = DATA / "gpt-35-turbo-0301_2025-01-22"
CEREBRAS = DATA / "gpt-oss-120b-low_2025-08-08-19-10-17"
DRAGON = DATA / "grok-3-mini-beta-only-make-move-vs-dragon_2025-05-06-08-41-40"


def _detect(folder: Path, override: str | None = None) -> tuple[str, str]:
    data = (folder / "output.txt").read_bytes()
    found = detect(folder, data, tokenize(data, path="output.txt"), override=override)
    return found.version.name, found.how


def test_each_bundled_run_is_matched_to_its_program() -> None:
    """August runs by _run.json; January and the May ablation by their dates and prompts."""
    assert _detect(AUG) == ("llmchess-2025-08", "_run.json")
    assert _detect(CEREBRAS) == ("llmchess-2025-08", "_run.json")
    assert _detect(JAN) == ("llmchess-2025-01", "dated evidence")
    assert _detect(DRAGON) == ("llmchess-2025-05-only-make-move", "dated evidence")


def test_run_dates_come_from_jsons_pgn_and_folder_name() -> None:
    """January: game JSON time_started and the folder name; May: the PGN header."""
    assert run_dates(JAN, (JAN / "output.txt").read_bytes()) == ("2025.01.22",)
    assert run_dates(DRAGON, (DRAGON / "output.txt").read_bytes()) == ("2025.05.06",)


def test_a_run_outside_every_window_is_refused_naming_dates(tmp_path: Path) -> None:
    """The May ablation copied under a 2026 folder name spans 2025.05.06..2026.01.01: no
    version's window holds it, and the refusal names the dates and each version's miss."""
    run = tmp_path / "grok_2026-01-01"
    shutil.copytree(DRAGON, run)
    with pytest.raises(Refusal) as info:
        read_run(run)
    assert list(info.value.codes) == ["unknown_program_version"]
    text = str(info.value)
    assert "2025.05.06..2026.01.01" in text and "llmchess-2025-01" in text
    assert "--dispatcher" in text


def test_a_prompt_no_version_prints_is_refused_naming_the_line(tmp_path: Path) -> None:
    """January's invalid-action reply reworded once: the January version no longer matches
    and the run is refused (never assumed to be January's), naming the line."""
    run = tmp_path / JAN.name
    shutil.copytree(JAN, run)
    data = (run / "output.txt").read_bytes()
    old = b"reply exactly with the name and space delimitted argument"
    (run / "output.txt").write_bytes(data.replace(old, b"reply with the name and argument", 1))
    with pytest.raises(Refusal) as info:
        read_run(run)
    assert "llmchess-2025-01: line " in str(info.value)
    assert "invalid-action reply" in str(info.value)


def test_unknown_run_json_key_is_refused_naming_it(tmp_path: Path) -> None:
    """A _run.json configuration key the August program did not have is refused by name."""
    run = tmp_path / AUG.name
    shutil.copytree(AUG, run)
    data = (run / "_run.json").read_bytes()
    (run / "_run.json").write_bytes(data.replace(b'"enable_reflection": false,',
                                                 b'"enable_reflection": false,\n'
                                                 b'        "native_tool_calls": true,', 1))
    with pytest.raises(Refusal) as info:
        read_run(run)
    assert "native_tool_calls" in str(info.value)


def test_override_replays_with_the_named_version() -> None:
    """--dispatcher names the version replayed: the January run under its own version gives
    165 attempts; under the August program (per-game counters) its games disagree with
    their recorded counters and are excluded as counter_mismatch, never silently kept."""
    own = read_run(JAN, dispatcher="llmchess-2025-01")
    assert own.detection is not None and own.detection.how == "override"
    assert sum(a.role == "agent" and a.verdict is not None for a in own.corpus.attempts) == 165
    wrong = read_run(JAN, dispatcher="llmchess-2025-08")
    assert wrong.dispatcher.name == "llmchess-2025-08"
    causes = {cause.code for _, cause in wrong.excluded()}
    assert "counter_mismatch" in causes


def test_cli_dispatcher_option_checks_the_name() -> None:
    """An unknown --dispatcher is a usage error (exit 2) naming the option."""
    app = typer.Typer()
    register(app)
    result = CliRunner().invoke(app, ["census", str(JAN), "--dispatcher", "llmchess-1999"])
    assert result.exit_code == 2 and "--dispatcher" in result.output


def test_only_make_move_version_answers_queries_as_invalid_actions() -> None:
    """The May 2025 ablation offers make_move alone: a board query is an invalid action whose
    reply names make_move only (the reply printed in the real Dragon log)."""
    dv = version("llmchess-2025-05-only-make-move")
    verdict = dispatch(dv, "get_current_board", board=chess.Board(), previous_prompt="")
    assert verdict.kind.value == "invalid_action" and verdict.failed
    text = (DRAGON / "output.txt").read_text(encoding="utf-8")
    assert verdict.reply in text
    assert variant_of(dv) == "llmchess/candidate-assisted/UNICODE_ONLY/no-reflection"
    assert variant_of(version("llmchess-2025-01")) == "llmchess/unaided/UNICODE_ONLY/no-reflection"


def test_every_dated_version_has_a_window_and_fingerprint_check() -> None:
    """Each version matchable by date has an ordered window; the August capture fails the
    only-make-move fingerprint (its turn prompt offers queries)."""
    for dv in VERSIONS.values():
        first, last = dv.evidence_window
        assert (first == last == "") or first <= last
    data = (AUG / "output.txt").read_bytes()
    problem = fingerprint_mismatch(version("llmchess-2025-05-only-make-move"),
                                   tokenize(data, path="x"))
    assert problem is not None and "turn prompt" in problem


PREVIOUS = DATA / "o4-mini-previous-moves_2025-05-03-20-15-00"


def test_previous_moves_ablation_is_its_own_version() -> None:
    """The May 2025 o4-mini run whose prompts start 'Previous moves (UCI): ...' matches the
    previous-moves version by date and prompts; the January version, whose prompts lack that
    line, refuses naming the line; every prefix of the run is regenerated."""
    assert _detect(PREVIOUS) == ("llmchess-2025-05-previous-moves", "dated evidence")
    data = (PREVIOUS / "output.txt").read_bytes()
    problem = fingerprint_mismatch(version("llmchess-2025-01"), tokenize(data, path="x"))
    assert problem is not None and problem.startswith("line 32: turn prompt")
    report = read_run(PREVIOUS)
    prefixes = [c for c in report.games[0].checks
                if isinstance(c.expected, str) and c.expected.startswith("Previous moves")]
    assert [c.observed for c in prefixes] == [
        "Previous moves (UCI): 1. d2d3\n\n", "Previous moves (UCI): 1. d2d3 d7d5\n\n",
        "Previous moves (UCI): 1. d2d3 d7d5, 2. c2c3\n\n"]
    assert all(c.ok for c in prefixes)
    assert variant_of(report.dispatcher) == (
        "llmchess/unaided/UNICODE_ONLY/no-reflection/previous-moves")


def test_late_2025_runs_replay_under_the_run_json_program_with_their_remove_text() -> None:
    """The November and December 2025, March and May 2026 runs (all with _run.json) are the
    August 2025 program configured with their own remove_text (think, ◁/think▷ and
    </reasoning> preambles), one configured version shared by the five runs."""
    names = {_detect(DATA / run) for run in (
        "gpt-5-codex-low_2025-11-15-09-24-45", "gpt-5-codex-medium_2025-11-15-09-25-09",
        "gpt-5.1-codex-low_2025-12-02-10-56-26", "gpt-5.4-medium_2026-03-08-17-55-00",
        "kimi-k2.6_2026-05-18-09-31-55")}
    assert len(names) == 1
    ((name, how),) = names
    assert name.startswith("llmchess-2025-08+") and how == "_run.json"
    dv = read_run(DATA / "kimi-k2.6_2026-05-18-09-31-55").dispatcher
    assert dv.remove_text == "^.*?(?:</think>|\u25c1/think\u25b7|</reasoning>)\\s*"
    board = chess.Board()
    for text in ("I could get_current_board\n</reasoning>\nmake_move e2e4",
                 "\u25c1think\u25b7 get_legal_moves \u25c1/think\u25b7 make_move e2e4"):
        assert dispatch(dv, text, board=board, previous_prompt="").move == "e2e4"


def test_previous_moves_version_needs_the_moves_line_somewhere() -> None:
    """A run whose prompts never carry 'Previous moves (UCI): ' (January 2025) is not the
    previous-moves ablation, so a May 2025 run without the line matches one version only."""
    data = (JAN / "output.txt").read_bytes()
    problem = fingerprint_mismatch(version("llmchess-2025-05-previous-moves"),
                                   tokenize(data, path="x"))
    assert problem is not None and "Previous moves (UCI): " in problem
