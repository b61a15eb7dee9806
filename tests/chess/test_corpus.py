"""Corpus format: records, manifest digests, tool-call displays."""

from __future__ import annotations

from pathlib import Path

import pytest

from rungbench.chess.corpus import (
    ToolCallDisplay,
    format_tool_calls,
    line_chunks,
    load_corpus,
    split_tool_calls,
)
from rungbench.chess.dispatch import version
from rungbench.chess.harness import HarnessConfig, RandomOpponent, ScriptedAgent, play_corpus
from rungbench.errors import InputError
from rungbench.evidence.canonical import file_digest, is_canonical


def test_tool_call_display_round_trip() -> None:
    """A displayed reply splits back into its content and tool calls."""
    calls = (ToolCallDisplay("call_1", "make_move", '{"input":"c7c5"}'),
             ToolCallDisplay("call_2", "get_current_board", "{}"))
    body = "thinking" + format_tool_calls(calls)
    assert split_tool_calls(body) == ("thinking", calls)
    assert split_tool_calls("plain reply") == ("plain reply", ())


def test_manifest_digests_are_file_digests(tmp_path: Path) -> None:
    """Every manifest entry is the sha256 of the file; every record line is canonical JSON."""
    cfg = HarnessConfig(dispatcher=version("llmchess-2025-08"), max_plies=10)
    manifest = play_corpus(tmp_path, ScriptedAgent([["board", "move"]], seed=0),
                           RandomOpponent(0), cfg, games=2)
    for entry in manifest["files"]:
        assert file_digest(str(tmp_path / entry["path"])) == entry["digest"]
    for line in (tmp_path / "attempts.jsonl").read_bytes().splitlines():
        assert is_canonical(line)
    corpus = load_corpus(tmp_path)
    assert len(corpus.attempts) == 20 and len(corpus.games) == 2
    first = corpus.attempts[0]
    data = corpus.sources["transcript.txt"]
    assert data[slice(*first.response_range)] == b"get_current_board"
    assert data.decode().split("\n")[first.line - 1] == "get_current_board"


def test_line_chunks_cover_every_line() -> None:
    """Chunks start at line 1 and split only at line ends."""
    data = b"a\nbb\nccc\n"
    assert [line for line, _ in line_chunks(data, 1)] == [1, 2, 3]
    assert [line for line, _ in line_chunks(data, 4)] == [1, 3]


def test_malformed_record_names_file_and_line(tmp_path: Path) -> None:
    """A record missing a field is an InputError naming attempts.jsonl and its line."""
    cfg = HarnessConfig(dispatcher=version("llmchess-2025-08"), max_plies=4)
    play_corpus(tmp_path, ScriptedAgent([["move"]], seed=0), RandomOpponent(0), cfg, games=1)
    from rungbench.chess.corpus import Attempt

    with pytest.raises(InputError, match=r"attempts.jsonl:2"):
        Attempt.from_json({"schema": "rungbench.chess.attempt/1"},
                          path=str(tmp_path / "attempts.jsonl"), line=2)
