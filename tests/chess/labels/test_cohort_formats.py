"""Item 11: a cohort holds games, and the cohort reader takes every format rungbench writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rungbench.chess.labels.cohort import build_cohort, read_games
from rungbench.chess.transcripts.dispatch import version
from rungbench.chess.transcripts.harness import (
    HarnessConfig,
    RandomOpponent,
    ScriptedAgent,
    play_corpus,
)
from rungbench.cli.chess import app
from rungbench.errors import InputError, IntegrityError, Refusal

RUNNER = CliRunner()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A native two-game corpus written by the harness."""
    folder = tmp_path_factory.mktemp("corpus")
    cfg = HarnessConfig(dispatcher=version("llmchess-2025-08"), max_plies=12)
    play_corpus(folder, ScriptedAgent([["board", "move"]], seed=0), RandomOpponent(0), cfg,
                games=2)
    return folder


def truth(folder: Path) -> list[tuple[str, ...]]:
    """The moves of every game, as the corpus's own games.jsonl records them."""
    return [tuple(json.loads(line)["moves"])
            for line in (folder / "games.jsonl").read_text().splitlines()]


def test_empty_file_is_not_a_cohort(tmp_path: Path) -> None:
    """A cohort built from an empty file refuses (cohort_empty) naming the file."""
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(Refusal) as caught:
        build_cohort("pilot", [empty], terminal=True)
    assert "cohort_empty" in caught.value.codes
    assert any(r.subject == str(empty) for r in caught.value.reasons)


def test_cli_refuses_an_empty_terminal_cohort(tmp_path: Path) -> None:
    """`cohort freeze --terminal EMPTY` exits 3 with cohort_empty and writes no cohort."""
    empty = tmp_path / "empty.pgn"
    empty.write_text("")
    result = RUNNER.invoke(app, ["cohort", "freeze", "pilot", str(empty), "--work",
                                 str(tmp_path / "ws"), "--terminal", "--json"])
    assert result.exit_code == 3
    assert "cohort_empty" in [r["code"] for r in json.loads(result.stdout)["reasons"]]
    assert not (tmp_path / "ws" / "cohorts" / "pilot.json").exists()


@pytest.mark.parametrize("name", ["games.jsonl", "transcript.txt", "manifest.json", "."])
def test_native_corpus_files_read_as_their_games(corpus: Path, name: str) -> None:
    """games.jsonl, transcript.txt, manifest.json and the corpus folder each read as the
    corpus's own games, move for move."""
    games = read_games(corpus / name)
    assert [g.moves for g in games] == truth(corpus)
    assert len(games) == 2


def test_native_manifest_pins_its_games_file(corpus: Path, tmp_path: Path) -> None:
    """Through manifest.json, a games.jsonl changed after the corpus froze is an error
    naming games.jsonl; the cohort records both files it read."""
    import shutil

    copy = tmp_path / "c"
    shutil.copytree(corpus, copy)
    doc = build_cohort("c", [copy / "manifest.json"], terminal=True)
    assert [Path(s["path"]).name for s in doc["sources"]] == ["manifest.json", "games.jsonl"]
    games = copy / "games.jsonl"
    games.write_text(games.read_text().replace("c2c4", "c2c3", 1))
    with pytest.raises(IntegrityError, match=r"games\.jsonl"):
        read_games(copy / "manifest.json")


def test_transcript_move_count_is_checked(corpus: Path, tmp_path: Path) -> None:
    """A native transcript whose MADE MOVE count disagrees with the moves read is an
    InputError naming the file and line."""
    text = (corpus / "transcript.txt").read_text()
    bad = tmp_path / "transcript.txt"
    bad.write_text(text.replace("OPPONENT MOVE", "OPPONENT MOVED", 1))
    with pytest.raises(InputError, match=r"transcript.txt:\d+"):
        read_games(bad)
