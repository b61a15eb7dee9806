"""Corpus format: records, manifest digests, tool-call displays."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rungbench.chess.transcripts.corpus import (
    ToolCallDisplay,
    format_tool_calls,
    line_chunks,
    load_corpus,
    split_tool_calls,
)
from rungbench.chess.transcripts.dispatch import version
from rungbench.chess.transcripts.harness import (
    HarnessConfig,
    RandomOpponent,
    ScriptedAgent,
    play_corpus,
)
from rungbench.errors import InputError, Refusal
from rungbench.evidence.canonical import canonical_bytes, file_digest, is_canonical


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
    from rungbench.chess.transcripts.corpus import Attempt

    with pytest.raises(InputError, match=r"attempts.jsonl:2"):
        Attempt.from_json({"schema": "rungbench.chess.attempt/1"},
                          path=str(tmp_path / "attempts.jsonl"), line=2)


def _small_corpus(folder: Path) -> None:
    cfg = HarnessConfig(dispatcher=version("llmchess-2025-08"), max_plies=6)
    play_corpus(folder, ScriptedAgent([["board", "move"]], seed=0), RandomOpponent(0), cfg,
                games=1)


def test_record_of_another_schema_version_names_field_and_line(tmp_path: Path) -> None:
    """An attempt record of another schema version is refused naming schema, file and line."""
    from rungbench.chess.transcripts.corpus import Attempt

    _small_corpus(tmp_path)
    record = load_corpus(tmp_path).attempts[0].to_json()
    record["schema"] = "rungbench.chess.attempt/2"
    with pytest.raises(InputError) as info:
        Attempt.from_json(record, path="attempts.jsonl", line=7)
    assert info.value.field == "schema" and "attempts.jsonl:7" in str(info.value)


@pytest.mark.parametrize(("mutate", "field"), [
    (lambda m: m.pop("files"), "files"),
    (lambda m: m["files"][1].pop("digest"), "files[1].digest"),
    (lambda m: m["files"].pop(0), "files"),
    (lambda m: m.__setitem__("dispatchers", []), "dispatchers"),
    (lambda m: m.__setitem__("schema", "rungbench.chess.corpus/0"), "schema")])
def test_malformed_manifest_names_the_field(tmp_path: Path, mutate: Any, field: str) -> None:
    """A manifest of the wrong version or shape is an InputError naming manifest.json and the
    field, never a KeyError."""
    _small_corpus(tmp_path)
    path = tmp_path / "manifest.json"
    manifest = json.loads(path.read_bytes())
    mutate(manifest)
    path.write_bytes(canonical_bytes(manifest))
    with pytest.raises(InputError) as info:
        load_corpus(tmp_path)
    assert info.value.field == field and str(path) in str(info.value)


def test_appended_lines_are_located_at_the_first_new_line(tmp_path: Path) -> None:
    """Records appended after freezing are a digest mismatch at the first appended line."""
    _small_corpus(tmp_path)
    path = tmp_path / "attempts.jsonl"
    data = path.read_bytes()
    lines = data.count(b"\n")
    path.write_bytes(data + data.split(b"\n")[0] + b"\n" + data.split(b"\n")[1] + b"\n")
    with pytest.raises(Refusal) as info:
        load_corpus(tmp_path)
    assert info.value.codes == ("digest_mismatch",)
    assert info.value.reasons[0].subject == f"{path}:{lines + 1}"


@pytest.mark.parametrize(("key", "value"), [("ply", True), ("response_range", [0, 5, 9])])
def test_bool_integer_and_three_part_range_are_malformed(tmp_path: Path, key: str,
                                                         value: Any) -> None:
    """A boolean ply or a byte range of three numbers is an InputError naming the line."""
    from rungbench.chess.transcripts.corpus import Attempt

    _small_corpus(tmp_path)
    record = load_corpus(tmp_path).attempts[0].to_json()
    record[key] = value
    with pytest.raises(InputError, match=r"attempts.jsonl:3"):
        Attempt.from_json(record, path="attempts.jsonl", line=3)


def test_a_file_listed_twice_in_the_manifest_is_refused(tmp_path: Path) -> None:
    """A manifest naming transcript.txt twice is an InputError on field 'files'."""
    _small_corpus(tmp_path)
    path = tmp_path / "manifest.json"
    manifest = json.loads(path.read_bytes())
    manifest["files"].append(manifest["files"][0])
    path.write_bytes(canonical_bytes(manifest))
    with pytest.raises(InputError) as info:
        load_corpus(tmp_path)
    assert info.value.field == "files"


def test_partial_last_line_is_truncation(tmp_path: Path) -> None:
    """Bytes appended without a closing newline (a torn write) are flagged truncated too."""
    _small_corpus(tmp_path)
    path = tmp_path / "attempts.jsonl"
    path.write_bytes(path.read_bytes() + b'{"schema":')
    with pytest.raises(Refusal) as info:
        load_corpus(tmp_path)
    assert info.value.codes == ("truncated", "digest_mismatch")
