"""A104 census: counts on the bundled logs, refusals on corpora that fail verification."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from rungbench.chess.census import CLAIM_BOUNDARY, census, census_path, transition_table
from rungbench.chess.corpus import load_corpus, write_corpus
from rungbench.chess.dispatch import version
from rungbench.chess.harness import HarnessConfig, RandomOpponent, ScriptedAgent, play_corpus
from rungbench.cli.chess_census import register
from rungbench.errors import Refusal

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "llm_chess"
AUG = DATA / "gpt-oss-20b-low_2025-08-12-15-06-46"
JAN = DATA / "gpt-35-turbo-0301_2025-01-22"
SCRIPT = (("board", "move"), ("list", "move"), ("junk", "move"), ("board", "list", "move"))


def _rows(doc: dict[str, object]) -> dict[str, tuple[int, int]]:
    return {r["prior"]: (r["transitions"], r["accepted"])  # type: ignore[index]
            for r in doc["transition_table"]}  # type: ignore[attr-defined]


def test_census_of_august_2025_run() -> None:
    """gpt-oss-20b: 41 eligible replies; the board query was followed by a move 2 times of 3."""
    doc = census_path(AUG)
    assert doc["counts"]["eligible_attempts"] == 41
    assert doc["counts"]["excluded_attempts"] == {"opponent": 26}
    assert doc["counts"]["source_games"] == 10
    assert _rows(doc)["board_query"] == (3, 2)
    assert _rows(doc)["legal_list_query"] == (0, 0)
    assert doc["chronology"]["reconciled"] is True
    assert doc["claim_boundary"] == CLAIM_BOUNDARY


def test_census_of_january_2025_run() -> None:
    """gpt-35-turbo: 36 board and 34 list queries reconciled; 7 board→list escalations."""
    doc = census_path(JAN)
    assert doc["counts"]["eligible_attempts"] == 165
    assert doc["chronology"]["board_queries"] == doc["chronology"]["board_displays"] == 36
    assert doc["chronology"]["list_queries"] == doc["chronology"]["uci_lists"] == 34
    assert sum(doc["board_to_list_escalations"].values()) == 7
    assert _rows(doc)["legal_list_query"] == (34, 3)
    row = next(r for r in doc["transition_table"] if r["prior"] == "legal_list_query")
    assert row["ci"][0] < 3 / 34 < row["ci"][1]


def test_both_runs_together_and_digest_is_stable() -> None:
    """The folder of runs merges both run groups; the census digest is reproducible."""
    doc = census_path(DATA)
    assert doc["counts"]["run_groups"] == 2 and doc["counts"]["source_games"] == 40
    assert census_path(DATA)["digest"] == doc["digest"]
    assert [r["disagreements"] for r in doc["replay"]] == [0, 0]


def test_cli_prints_table_and_json(tmp_path: Path) -> None:
    """`chess census` prints the transition table, and one JSON document under --json."""
    app = typer.Typer()
    register(app)
    runner = CliRunner()
    human = runner.invoke(app, ["census", str(AUG)])
    assert human.exit_code == 0 and "board_query" in human.stdout and "not effects" in human.stdout
    machine = runner.invoke(app, ["census", str(JAN), "--json"])
    assert machine.exit_code == 0
    assert json.loads(machine.stdout)["counts"]["eligible_attempts"] == 165


def _harness(folder: Path) -> None:
    cfg = HarnessConfig(dispatcher=version("llmchess-2025-08"), max_plies=20)
    play_corpus(folder, ScriptedAgent(SCRIPT, seed=2), RandomOpponent(4), cfg, games=2)


def _refreeze(folder: Path, index: int, **changes: object) -> int:
    """Rewrite one attempt record and freeze the corpus again; return its 1-based line."""
    corpus = load_corpus(folder)
    attempts = list(corpus.attempts)
    attempts[index] = dataclasses.replace(attempts[index], **changes)  # type: ignore[arg-type]
    write_corpus(folder, transcript=corpus.sources["transcript.txt"], attempts=attempts,
                 games=corpus.games, dispatchers=list(corpus.dispatchers.values()),
                 description="tampered")
    return index + 1


def _refusal(folder: Path) -> Refusal:
    with pytest.raises(Refusal) as info:
        census_path(folder)
    return info.value


def test_illegal_move_recorded_as_accepted_refuses(tmp_path: Path) -> None:
    """An accepted verdict for an illegal move is refused, naming attempts.jsonl and the line."""
    _harness(tmp_path)
    index = next(i for i, a in enumerate(load_corpus(tmp_path).attempts)
                 if a.verdict == "move_accepted")
    line = _refreeze(tmp_path, index, move="a1a8")
    refusal = _refusal(tmp_path)
    assert "illegal_accepted_move" in refusal.codes
    assert any(r.subject and r.subject.startswith(f"{tmp_path / 'attempts.jsonl'}:{line} ")
               for r in refusal.reasons)


def test_byte_range_outside_file_refuses(tmp_path: Path) -> None:
    """A response byte range past the end of transcript.txt is refused with its record line."""
    _harness(tmp_path)
    size = len((tmp_path / "transcript.txt").read_bytes())
    line = _refreeze(tmp_path, 3, response_range=(size - 2, size + 40))
    refusal = _refusal(tmp_path)
    reason = next(r for r in refusal.reasons if r.code == "range_outside_file")
    assert str(reason.subject).startswith(f"{tmp_path / 'attempts.jsonl'}:{line} ")


def test_digest_mismatch_refuses_naming_file_and_line(tmp_path: Path) -> None:
    """Changing one byte of a frozen file is refused before any record is read."""
    _harness(tmp_path)
    path = tmp_path / "attempts.jsonl"
    lines = path.read_bytes().split(b"\n")
    lines[4] = lines[4].replace(b"get_current_board", b"get_current_boarD", 1)
    path.write_bytes(b"\n".join(lines))
    refusal = _refusal(tmp_path)
    assert refusal.codes == ("digest_mismatch",)
    assert refusal.reasons[0].subject == f"{path}:5"


def test_truncated_corpus_refuses(tmp_path: Path) -> None:
    """A records file cut mid-line is refused as truncated, naming the line where it stops."""
    _harness(tmp_path)
    path = tmp_path / "attempts.jsonl"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    refusal = _refusal(tmp_path)
    assert "truncated" in refusal.codes
    line = data[: len(data) // 2].count(b"\n") + 1
    assert f"{path}:{line}" in {r.subject for r in refusal.reasons}


def test_nothing_is_counted_from_a_failing_corpus(tmp_path: Path) -> None:
    """census() raises before returning any count when one record fails verification."""
    _harness(tmp_path)
    corpus = load_corpus(tmp_path)
    bad = dataclasses.replace(corpus.attempts[0], prompt="a different prompt")
    broken = dataclasses.replace(corpus, attempts=(bad, *corpus.attempts[1:]))
    with pytest.raises(Refusal) as info:
        census(broken)
    assert "prompt_bytes_mismatch" in info.value.codes
    assert transition_table([]) and all(r.transitions == 0 for r in transition_table([]))


def test_chronology_mismatch_refuses(tmp_path: Path) -> None:
    """A board query followed by a prompt that is not the board display is refused."""
    _harness(tmp_path)
    corpus = load_corpus(tmp_path)
    i = next(i for i, a in enumerate(corpus.attempts) if a.verdict == "board_query")
    line = _refreeze(tmp_path, i, reply="not a board")
    refusal = _refusal(tmp_path)
    assert "reply_mismatch" in refusal.codes and "chronology_mismatch" in refusal.codes
    assert any(str(r.subject).startswith(f"{tmp_path / 'attempts.jsonl'}:{line} ")
               for r in refusal.reasons)


def test_play_then_census_from_the_cli(tmp_path: Path) -> None:
    """`chess play` writes a corpus whose census digest does not depend on its location."""
    app = typer.Typer()
    register(app)
    runner = CliRunner()
    digests = []
    for name in ("one", "two"):
        folder = tmp_path / name / "corpus"
        played = runner.invoke(app, ["play", str(folder), "--games", "2", "--max-plies", "12",
                                     "--seed", "3", "--json"])
        assert played.exit_code == 0, played.stdout
        assert set(json.loads(played.stdout)["files"]) == {
            "transcript.txt", "attempts.jsonl", "games.jsonl"}
        result = runner.invoke(app, ["census", str(folder), "--json"])
        digests.append(json.loads(result.stdout)["digest"])
    assert digests[0] == digests[1]


def test_cli_refusal_exits_3(tmp_path: Path) -> None:
    """A truncated transcript makes `chess census --json` exit 3 with the reason code."""
    (tmp_path / "output.txt").write_bytes((AUG / "output.txt").read_bytes()[:1500])
    app = typer.Typer()
    register(app)
    result = CliRunner().invoke(app, ["census", str(tmp_path), "--json"])
    assert result.exit_code == 3
    assert json.loads(result.stdout)["reasons"][0]["code"] == "truncated"


def test_recorded_line_must_match_the_byte_range(tmp_path: Path) -> None:
    """A record whose line number disagrees with where its bytes sit is refused."""
    _harness(tmp_path)
    attempt = load_corpus(tmp_path).attempts[2]
    _refreeze(tmp_path, 2, line=attempt.line + 1)
    assert _refusal(tmp_path).codes == ("line_mismatch",)
