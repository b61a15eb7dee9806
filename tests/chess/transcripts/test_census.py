"""A104 census: counts on the bundled logs, refusals on corpora that fail verification."""

from __future__ import annotations

import dataclasses
import gc
import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from rungbench.chess.transcripts.census import (
    CLAIM_BOUNDARY,
    Row,
    census,
    census_path,
    chains,
    cyclic_gc_paused,
    load_any,
    transitions,
)
from rungbench.chess.transcripts.corpus import load_corpus, write_corpus
from rungbench.chess.transcripts.dispatch import version
from rungbench.chess.transcripts.harness import (
    HarnessConfig,
    RandomOpponent,
    ScriptedAgent,
    play_corpus,
)
from rungbench.cli.chess_census import register
from rungbench.errors import Refusal
from rungbench.evidence.paths import shared_data_dir
from rungbench.stats import clopper_pearson

DATA = shared_data_dir() / "llm_chess"
AUG = DATA / "gpt-oss-20b-low_2025-08-12-15-06-46"
JAN = DATA / "gpt-35-turbo-0301_2025-01-22"
SCRIPT = (("board", "move"), ("list", "move"), ("junk", "move"), ("board", "list", "move"))


def _rows(doc: dict[str, Any]) -> dict[str, tuple[int, int]]:
    return {r["prior"]: (r["transitions"], r["accepted"]) for r in doc["transition_table"]}


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


REAL_RUNS = {
    # run folder: (games, eligible games, excluded by reason, eligible attempts, transitions)
    "gpt-35-turbo-0301_2025-01-22": (30, 30, {}, 165, 131),
    "gpt-35-turbo-0613_2025-01-22": (30, 30, {}, 340, 278),
    "gpt-35-turbo-1106_2025-01-22": (30, 30, {}, 202, 148),
    "o3-mini-2025-01-31-high_2025-03-01_1": (5, 3, {"engine_crash": 2}, 167, 89),
    "o3-mini-2025-01-31-high_2025-03-01_3": (5, 2, {"engine_crash": 3}, 123, 67),
    "ensemble-phi-4-at-q4ks-with-think-t08-mini41-t10-mini41-t03_2025-05-01-16-04":
        (2, 2, {}, 151, 95),
    "o4-mini-previous-moves_2025-05-03-20-15-00": (1, 1, {}, 2, 1),
    "o1-low-vs-dragon-lvl-1_2025-05-05-17-30": (3, 1, {"engine_crash": 2}, 8, 5),
    "grok-3-mini-beta-only-make-move-vs-dragon_2025-05-06-08-41-40":
        (1, 0, {"opponent_failure": 1}, 0, 0),
    "grok-3-mini-beta-only-make-move-vs-dragon_2025-05-06-08-46-29": (1, 1, {}, 35, 0),
    "o4-mini-ensemble-vs-dragon-lvl-1_2025-05-15-19-34": (2, 2, {}, 438, 300),
    "gpt-oss-120b-low_2025-08-08-19-10-17": (4, 1, {"engine_crash": 3}, 0, 0),
    "gpt-oss-20b-low_2025-08-12-15-06-46": (10, 10, {}, 41, 28),
    "gpt-5-low_2025-08-16-14-08-50": (20, 3, {"engine_crash": 17}, 111, 68),
    "gpt-5-low_2025-08-20-15-35-09": (5, 5, {}, 226, 140),
    "gpt-5-low_2025-08-20-23-49-46": (5, 2, {"engine_crash": 3}, 83, 52),
    "gpt-5-codex-low_2025-11-15-09-24-45": (1, 1, {}, 38, 27),
    "gpt-5-codex-medium_2025-11-15-09-25-09": (1, 1, {}, 12, 7),
    "gpt-5.1-codex-low_2025-12-02-10-56-26": (2, 1, {"engine_crash": 1}, 33, 24),
    "gpt-5.2-low_2025-12-17-14-50-34": (5, 5, {}, 399, 231),
    "gpt-5.4-medium_2026-03-08-17-55-00": (1, 1, {}, 3, 1),
    "gpt-5.4-high_2026-04-18-22-51-22": (5, 4, {"engine_crash": 1}, 220, 127),
    "kimi-k2.6_2026-05-18-09-31-55": (1, 1, {}, 29, 18),
    "kimi-k2.6_2026-05-19-12-09-53": (5, 5, {}, 210, 136),
    "gemini-3.8-flash-high_2026-09-05-08-59-26": (4, 4, {}, 201, 140),
}
"""The real corpus (data/llm_chess), run by run, as the census of the frozen folder gives it."""


def test_frozen_corpus_of_all_bundled_runs_and_digest_is_stable() -> None:
    """The frozen folder of 25 real runs (January 2025 to September 2026) gives one census: each
    run's games eligible / excluded by reason, attempts and transitions as pinned; the two
    original runs keep their figures (165/131 and 41/28); the pooled table is the sum of the
    run tables; every chronology reconciles; the digest is reproducible."""
    doc = census_path(DATA)
    runs = {r["run_group"]: r for r in doc["runs"]}
    assert {name: (r["games"], r["eligible_games"], r["excluded_games"],
                   r["eligible_attempts"], r["same_position_transitions"])
            for name, r in runs.items()} == REAL_RUNS
    assert (runs[JAN.name]["eligible_attempts"], runs[JAN.name]["same_position_transitions"]) \
        == (165, 131)
    assert (runs[AUG.name]["eligible_attempts"], runs[AUG.name]["same_position_transitions"]) \
        == (41, 28)
    counts = doc["counts"]
    assert (counts["eligible_attempts"], counts["same_position_transitions"],
            counts["position_chains"], counts["source_games"], counts["run_groups"]) \
        == (3237, 2113, 1124, 144, 23)
    assert counts["excluded_attempts"] == {"opponent": 2084}
    assert counts["verdicts"] == {"board_query": 933, "invalid_action": 481,
                                  "legal_query": 751, "move_accepted": 1013,
                                  "move_rejected": 59}
    assert _rows(doc) == {"board_query": (931, 383), "legal_list_query": (745, 499),
                          "non_tool_unresolved": (437, 92), "reflection": (0, 0)}
    assert doc["board_to_list_escalations"] == {"llmchess/unaided/UNICODE_ONLY/no-reflection": 439}
    assert doc["exclusions_by_reason"] == {"engine_crash": 32, "opponent_failure": 1}
    assert sum(r["eligible_games"] for r in runs.values()) == counts["eligible_games"] == 146
    assert all(r["chronology"]["reconciled"] for r in runs.values())
    assert doc["chronology"]["board_queries"] == 933 and doc["chronology"]["list_queries"] == 751
    pooled = {row["prior"]: row for row in doc["transition_table"]}
    for prior, row in pooled.items():
        assert row["transitions"] == sum(
            next(x for x in r["transition_table"] if x["prior"] == prior)["transitions"]
            for r in runs.values())
    assert {r["dispatcher"] for r in runs.values()} == {
        "llmchess-2025-01", "llmchess-2025-05-pgn-headers", "llmchess-2025-05",
        "llmchess-2025-05-previous-moves", "llmchess-2025-05-only-make-move",
        "llmchess-2025-08", "llmchess-2025-08+fdc6b771"}
    assert census_path(DATA)["digest"] == doc["digest"]


def test_every_board_and_list_reply_of_every_eligible_game_is_regenerated() -> None:
    """Per run, the board and legal-list replies regenerated byte for byte equal the number
    of board and list queries the census counts (nothing was skipped), and every eligible
    game that ended with a summary had its counters compared."""
    doc = census_path(DATA)
    for run in doc["runs"]:
        if run["eligible_attempts"] == 0:
            continue
        verdicts = {r["prior"]: r for r in run["transition_table"]}
        assert run["replies_regenerated"]["board"] == run["chronology"]["board_queries"], run
        assert verdicts  # the table is there for every run
    by_run = {r["run_group"]: r for r in doc["runs"]}
    assert by_run[JAN.name]["counters_reproduced"] == 30
    assert by_run[AUG.name]["counters_reproduced"] == 9  # game 10 is cut off mid-game


def test_hand_recount_of_the_november_2025_gpt5_codex_medium_run() -> None:
    """gpt-5-codex medium (one game, cut off by an API time-out at move 10), recounted by
    hand from output.txt: black's five dialogues are [board, move], [board, move],
    [invalid, board, list, move], [board (the substring inside 'Please call
    `get_current_board`'), move], [invalid, board]: 12 attempts, 7 transitions; board
    query 3 of 4 followed by a move, the one list query 1 of 1, non-tool 0 of 2, one
    board→list escalation."""
    doc = census_path(DATA / "gpt-5-codex-medium_2025-11-15-09-25-09")
    hand = [["board_query", "move_accepted"], ["board_query", "move_accepted"],
            ["invalid_action", "board_query", "legal_query", "move_accepted"],
            ["board_query", "move_accepted"], ["invalid_action", "board_query"]]
    corpus, _ = load_any(DATA / "gpt-5-codex-medium_2025-11-15-09-25-09")
    dialogues: dict[int, list[str]] = {}
    for a in corpus.attempts:
        if a.role == "agent":
            dialogues.setdefault(a.ply, []).append(str(a.verdict))
    assert list(dialogues.values()) == hand
    pairs = [(x, y) for d in hand for x, y in itertools.pairwise(d)]
    assert doc["counts"]["eligible_attempts"] == sum(map(len, hand)) == 12
    assert doc["counts"]["same_position_transitions"] == len(pairs) == 7
    assert _rows(doc) == {"board_query": (4, 3), "legal_list_query": (1, 1),
                          "non_tool_unresolved": (2, 0), "reflection": (0, 0)}
    assert sum(doc["board_to_list_escalations"].values()) == 1


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
    assert not any("counts" in (r.data or {}) for r in info.value.reasons)


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


@pytest.mark.parametrize(("prior", "n", "k", "printed"), [
    ("board_query", 13034, 12379, 0.9497), ("legal_list_query", 623, 621, 0.9968),
    ("non_tool_unresolved", 58, 28, 0.4828)])
def test_seed_000_a104_rates_from_the_counts(prior: str, n: int, k: int, printed: float) -> None:
    """Seed 000's A104 table: 12,379/13,034 = 94.97%, 621/623 = 99.68%, 28/58 = 48.28%,
    each reported with its Clopper–Pearson interval at the census alpha."""
    row = Row(prior, n, k).to_json(0.05)
    assert round(row["rate"], 4) == printed
    assert row["ci"] == list(clopper_pearson(k, n, 0.05))
    assert row["ci"][0] < row["rate"] < row["ci"][1]
    assert Row(prior, n, k).to_json(0.01)["ci"][0] < row["ci"][0]


def test_empty_row_has_no_rate() -> None:
    """A class with no transitions reports rate and interval as None, never 0/0."""
    assert Row("reflection", 0, 0).to_json(0.05) == {
        "prior": "reflection", "transitions": 0, "accepted": 0, "rate": None, "ci": None}


def test_recorded_position_that_the_moves_do_not_give_refuses(tmp_path: Path) -> None:
    """A record whose FEN differs from the position rebuilt from the game's moves is refused."""
    _harness(tmp_path)
    attempts = load_corpus(tmp_path).attempts
    index = next(i for i, a in enumerate(attempts) if a.ply > 2 and a.role == "agent")
    other = next(a.fen_before for a in attempts if a.fen_before != attempts[index].fen_before)
    line = _refreeze(tmp_path, index, fen_before=other)
    refusal = _refusal(tmp_path)
    reason = next(r for r in refusal.reasons if r.code == "state_mismatch")
    assert str(reason.subject).startswith(f"{tmp_path / 'attempts.jsonl'}:{line} ")


def test_list_query_followed_by_something_else_refuses(tmp_path: Path) -> None:
    """A legal-list query whose next prompt is not the comma-separated UCI list is refused."""
    _harness(tmp_path)
    corpus = load_corpus(tmp_path)
    i = next(i for i, a in enumerate(corpus.attempts)
             if a.verdict == "legal_query" and i + 1 < len(corpus.attempts)
             and corpus.attempts[i + 1].attempt == a.attempt + 1)
    nxt = corpus.attempts[i + 1]
    _refreeze(tmp_path, i, reply="e2e4 and some prose")
    refusal = _refusal(tmp_path)
    assert "chronology_mismatch" in refusal.codes
    assert any(r.code == "chronology_mismatch"
               and str(r.subject).startswith(f"{tmp_path / 'attempts.jsonl'}:{i + 2} ")
               for r in refusal.reasons), (nxt, refusal.reasons)


def test_claim_boundary_says_rates_are_not_effects() -> None:
    """The census states, in its own words, that tool-conditioned rates are not effects."""
    text = " ".join(CLAIM_BOUNDARY.split())
    for phrase in ("agent chose when to ask", "conditioned on that choice", "not effects",
                   "not a control group", "randomized, byte-matched"):
        assert phrase in text


def test_cli_census_of_a_missing_folder_is_one_line_exit_1(tmp_path: Path) -> None:
    """`chess census` on a path that is not a folder exits 1 with one line naming it."""
    app = typer.Typer()
    register(app)
    result = CliRunner().invoke(app, ["census", str(tmp_path / "nowhere")])
    assert result.exit_code == 1 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "nowhere" in lines[0]


def test_cli_play_never_overwrites_a_corpus(tmp_path: Path) -> None:
    """`chess play` into a folder holding a corpus exits 1 naming it and changes no byte;
    --force replaces it."""
    app = typer.Typer()
    register(app)
    runner = CliRunner()
    folder = tmp_path / "corpus"
    args = ["play", str(folder), "--games", "1", "--max-plies", "6"]
    assert runner.invoke(app, [*args, "--seed", "1"]).exit_code == 0
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    again = runner.invoke(app, [*args, "--seed", "2"])
    assert again.exit_code == 1 and again.stdout == ""
    lines = again.stderr.strip().splitlines()
    assert len(lines) == 1 and str(folder) in lines[0] and "--force" in lines[0]
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    forced = runner.invoke(app, [*args, "--seed", "2", "--force", "--json"])
    assert forced.exit_code == 0
    assert {p.name: p.read_bytes() for p in folder.iterdir()} != before


SCRIPT_REJECTED = (("board", "move"), ("list", "move"), ("junk", "illegal", "move"),
                   ("board", "list", "move"))


def test_transition_table_of_a_scripted_corpus_by_hand(tmp_path: Path) -> None:
    """20 scripted turns (5 cycles) give board 10/5, list 10/10, non-tool 10/5, 30 transitions.

    Per cycle: board→move, list→move, junk→illegal (rejected, not accepted), illegal→move,
    board→list, list→move.
    """
    cfg = HarnessConfig(dispatcher=version("llmchess-2025-08"), max_plies=20)
    play_corpus(tmp_path, ScriptedAgent(SCRIPT_REJECTED, seed=2), RandomOpponent(4), cfg,
                games=2)
    doc = census_path(tmp_path)
    assert _rows(doc) == {"board_query": (10, 5), "legal_list_query": (10, 10),
                          "non_tool_unresolved": (10, 5), "reflection": (0, 0)}
    assert doc["counts"]["same_position_transitions"] == 30
    assert doc["counts"]["position_chains"] == 20
    assert doc["board_to_list_escalations"] == {cfg.variant: 5}


def test_chains_never_join_the_same_position_at_different_plies(tmp_path: Path) -> None:
    """A position recurring at another ply (a repetition) starts a new chain."""
    _harness(tmp_path)
    first = next(a for a in load_corpus(tmp_path).attempts if a.role == "agent")
    again = dataclasses.replace(first, ply=first.ply + 4, attempt=1)
    assert [len(c) for c in chains([first, again])] == [1, 1]
    assert transitions(chains([first, again])) == []


def test_skipped_attempt_number_refuses(tmp_path: Path) -> None:
    """A second attempt renumbered 3 (attempt 2 missing) is a chronology mismatch."""
    _harness(tmp_path)
    corpus = load_corpus(tmp_path)
    i = next(i for i, a in enumerate(corpus.attempts) if a.role == "agent" and a.attempt == 2)
    _refreeze(tmp_path, i, attempt=3)
    assert "chronology_mismatch" in _refusal(tmp_path).codes


def test_missing_agent_attempt_refuses_as_truncated(tmp_path: Path) -> None:
    """A corpus holding fewer agent attempts than its game declares is refused as truncated."""
    _harness(tmp_path)
    corpus = load_corpus(tmp_path)
    last = max(i for i, a in enumerate(corpus.attempts) if a.role == "agent")
    attempts = [a for i, a in enumerate(corpus.attempts) if i != last]
    write_corpus(tmp_path, transcript=corpus.sources["transcript.txt"], attempts=attempts,
                 games=corpus.games, dispatchers=list(corpus.dispatchers.values()),
                 description="one attempt dropped")
    assert "truncated" in _refusal(tmp_path).codes


def _hand_recount(text: str, player: str) -> tuple[int, int, int, int]:
    """Recount a capture without the reader: (answered replies, transitions, board-query
    transitions, of those followed by an accepted move), from the raw messages alone."""
    messages = re.findall(r"^(\w+) \(to (\w+)\):\n\n(.*?)\n\n-{80}\n", text, re.M | re.S)
    dialogues: list[list[str]] = []  # per move dialogue: the Proxy's answer to each reply
    previous = ""
    for i, (sender, recipient, _body) in enumerate(messages):
        if sender == "Proxy" and recipient == player and previous != player:
            dialogues.append([])
        if sender == player and i + 1 < len(messages) and messages[i + 1][0] == "Proxy" \
                and messages[i + 1][1] == player:
            dialogues[-1].append(messages[i + 1][2])
        previous = sender
    answered = sum(len(d) for d in dialogues)
    transitions = sum(max(len(d) - 1, 0) for d in dialogues)
    board = [(a, b) for d in dialogues for a, b in itertools.pairwise(d)
             if a.startswith(("♜", "♖", "⭘")) and len(a.split("\n")) == 8]
    moved = sum(b == "Move made, switching player" for _, b in board)
    return answered, transitions, len(board), moved


def test_hand_recount_of_the_august_run_matches_the_census() -> None:
    """Counted by hand from output.txt's messages (no tokenizer, no dispatcher): 41 answered
    replies, 28 same-position transitions, 3 after a board display of which 2 moved."""
    text = (AUG / "output.txt").read_text(encoding="utf-8")
    assert _hand_recount(text, "Player_Black") == (41, 28, 3, 2)
    doc = census_path(AUG)
    assert doc["counts"]["eligible_attempts"] == 41
    assert doc["counts"]["same_position_transitions"] == 28
    assert _rows(doc)["board_query"] == (3, 2)


def test_hand_recount_of_the_january_run_matches_the_census() -> None:
    """The same recount on January's capture: 165 replies and 131 transitions."""
    text = (JAN / "output.txt").read_text(encoding="utf-8")
    answered, transitions, board, moved = _hand_recount(text, "Player_Black")
    assert (answered, transitions) == (165, 131)
    assert _rows(census_path(JAN))["board_query"] == (board, moved)


def test_every_reply_of_every_eligible_game_is_regenerated() -> None:
    """Per run of the frozen corpus: the replies regenerated byte for byte equal the
    dispatched replies of its eligible games (both players), and every complete eligible
    game had its counters checked."""
    from rungbench.chess.transcripts.llmchess import read_run

    doc = census_path(DATA)
    for row in doc["runs"]:
        report = read_run(DATA / row["run_group"])
        eligible = [g for g in report.games if g.game not in report.exclusions]
        replies = sum(c.name.startswith("reply@") for g in eligible for c in g.checks)
        assert sum(row["replies_regenerated"].values()) == replies
        assert row["counters_reproduced"] == sum(g.complete for g in eligible)
    assert {r["run_group"]: r["counters_reproduced"] for r in doc["runs"]}[JAN.name] == 30



def test_census_runs_with_the_cyclic_collector_paused_and_restores_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The replay and the census run with the cyclic collector paused; its state (enabled,
    or paused by the caller) is the same after, also when the block raises."""
    import rungbench.chess.transcripts.census as module

    seen: list[bool] = []

    def spy(inner: Any) -> Any:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            seen.append(gc.isenabled())
            return inner(*args, **kwargs)
        return wrapped

    monkeypatch.setattr(module, "load_any", spy(module.load_any))
    monkeypatch.setattr(module, "census", spy(module.census))
    try:
        assert gc.isenabled()
        assert census_path(AUG)["counts"]["eligible_attempts"] == 41
        assert seen == [False, False] and gc.isenabled()
        gc.disable()
        with cyclic_gc_paused():
            pass
        assert not gc.isenabled()
        gc.enable()
        with pytest.raises(ValueError), cyclic_gc_paused():
            raise ValueError("inside")
        assert gc.isenabled()
    finally:
        gc.enable()


def test_illegal_move_accepted_and_played_in_the_game_still_refuses(tmp_path: Path) -> None:
    """An accepted illegal move that the game's move list also plays at that ply is refused
    both as an illegal game move and as an illegal accepted move: the legality the game
    rebuild found is reused only for a move it found legal."""
    _harness(tmp_path)
    corpus = load_corpus(tmp_path)
    index, attempt = next((i, a) for i, a in enumerate(corpus.attempts)
                          if a.verdict == "move_accepted")
    attempts = list(corpus.attempts)
    attempts[index] = dataclasses.replace(attempt, move="a1a8")
    games = [dataclasses.replace(g, moves=(*g.moves[:attempt.ply], "a1a8",
                                           *g.moves[attempt.ply + 1:]))
             if g.game == attempt.game else g for g in corpus.games]
    write_corpus(tmp_path, transcript=corpus.sources["transcript.txt"], attempts=attempts,
                 games=games, dispatchers=list(corpus.dispatchers.values()),
                 description="tampered")
    codes = _refusal(tmp_path).codes
    assert "illegal_game_move" in codes and "illegal_accepted_move" in codes
