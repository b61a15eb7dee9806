"""`rungbench chess play`: reference agents and a real model (loopback) play recorded games."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from rungbench.agents.loopback import Fault, LoopbackServer
from rungbench.agents.protocol import Message, Request, Response
from rungbench.chess.transcripts.census import census_path
from rungbench.chess.transcripts.dispatch import LEGAL_ACTION, turn_prompt, version
from rungbench.cli.chess_census import register

KEY = "sk-play-test-5e1d07c3a9"
KEY_ENV = "RUNGBENCH_PLAY_TEST_KEY"
_UCI_LIST = re.compile(r"[a-h][1-8][a-h][1-8][qrbn]?(,[a-h][1-8][a-h][1-8][qrbn]?)*")


def _app() -> typer.Typer:
    app = typer.Typer()
    register(app)
    return app


def _invoke(args: list[str]) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(_app(), [*args, "--json"])
    return result.exit_code, json.loads(result.stdout)


class _ListReader:
    """A stand-in model that sees only the wire payload, as a real endpoint does.

    It asks for the legal moves, then plays one from the comma-separated list it was sent
    (chosen by the payload digest, so the game is reproducible).
    """

    name = "list-reader"

    def respond(self, request: Request) -> Response:
        last = request.messages[-1].content.strip()
        if not _UCI_LIST.fullmatch(last):
            return Response(text=LEGAL_ACTION)
        moves = last.split(",")
        pick = int(request.payload_digest()[7:15], 16) % len(moves)
        return Response(text=f"make_move {moves[pick]}")


def _turns(corpus: Path) -> int:
    games = [json.loads(line) for line in (corpus / "games.jsonl").read_text().splitlines()]
    return sum(len(g["moves"][1::2]) for g in games)


def _first_prompt_digest() -> str:
    """Payload digest of every turn's first request (the same prompt opens each turn)."""
    prompt = turn_prompt("black", enable_reflection=version("llmchess-2025-08").enable_reflection)
    return Request("any", (Message("user", prompt),)).payload_digest()


def test_real_model_through_loopback_plays_a_censusable_corpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--model openai:… plays through the real client (a 429 retried); the census counts every
    list query → accepted move; the key is in no written file."""
    monkeypatch.setenv(KEY_ENV, KEY)
    corpus = tmp_path / "corpus"
    server = LoopbackServer(_ListReader(), api_key=KEY, retry_after_s=0.05,
                            faults={_first_prompt_digest(): [Fault.RATE_LIMIT]})
    with server:
        code, summary = _invoke([
            "play", str(corpus), "--games", "2", "--max-plies", "10", "--seed", "4",
            "--model", "openai:loopback", "--base-url", server.base_url,
            "--api-key-env", KEY_ENV, "--timeout", "10", "--backoff", "0.05"])
    assert code == 0, summary
    assert summary["agent"] == "loopback"
    assert summary["reliability_retries"] == {"provider_error": 1}
    turns = _turns(corpus)
    assert turns == 10  # two games of five black moves
    assert [v for _, v in server.served].count("429") == 1
    assert len(server.served) == 2 * turns + 1  # list query + move per turn, plus the 429
    code, doc = _invoke(["census", str(corpus)])
    assert code == 0, doc
    assert doc["counts"]["eligible_attempts"] == 2 * turns
    assert doc["counts"]["position_chains"] == turns
    rows = {r["prior"]: (r["transitions"], r["accepted"]) for r in doc["transition_table"]}
    assert rows["legal_list_query"] == (turns, turns)
    assert doc == census_path(corpus)
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert written and all(KEY.encode() not in p.read_bytes() for p in written)


@pytest.mark.parametrize("name", ["random", "engine"])
def test_reference_agent_plays_a_censusable_corpus(tmp_path: Path, name: str) -> None:
    """--agent reference:random / reference:engine move at once each turn; census passes."""
    corpus = tmp_path / "corpus"
    code, summary = _invoke(["play", str(corpus), "--games", "1", "--max-plies", "8",
                             "--agent", f"reference:{name}", "--nodes", "200"])
    assert code == 0, summary
    assert summary["agent"].startswith(f"reference:{name}")
    assert summary["reliability_retries"] is None
    code, doc = _invoke(["census", str(corpus)])
    assert code == 0, doc
    assert doc["counts"]["eligible_attempts"] == doc["counts"]["position_chains"] == 4
    assert doc["counts"]["same_position_transitions"] == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--agent", "reference:ideas-limited"], "cannot play a game"),
        (["--agent", "planted:e023:sharp"], "cannot play a game"),
        (["--model", "openai:m", "--base-url", "http://127.0.0.1:9/v1", "--api-key-env",
          "RUNGBENCH_UNSET_KEY_VARIABLE"], "RUNGBENCH_UNSET_KEY_VARIABLE"),
    ],
)
def test_bad_agent_options_exit_one_and_write_nothing(
    tmp_path: Path, args: list[str], message: str
) -> None:
    """Unplayable agents and an unset key variable are one clear input error; no corpus is
    written."""
    code, doc = _invoke(["play", str(tmp_path / "corpus"), "--games", "1", *args])
    assert code == 1 and doc["error"] == "input_error" and message in doc["message"]
    assert not (tmp_path / "corpus").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--agent", "reference:random", "--model", "openai:m", "--base-url", "http://x"],
         "give one agent"),
        (["--model", "openai:m"], "base URL"),
        (["--model", "gpt-4o"], "give the models file"),
    ],
)
def test_options_that_name_no_agent_are_usage_errors(
    tmp_path: Path, args: list[str], message: str
) -> None:
    """Options that name no agent exit 2 with one JSON document naming the problem; no corpus
    is written."""
    from rungbench.cli import app

    result = CliRunner().invoke(app, ["chess", "play", str(tmp_path / "corpus"), "--games",
                                      "1", *args, "--json"])
    doc = json.loads(result.stdout)
    assert result.exit_code == 2 and doc["error"] == "usage_error", doc
    assert message in doc["message"]
    assert not (tmp_path / "corpus").exists()


def test_unreachable_model_fails_after_the_registered_attempts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every call a 500: after --max-attempts identical sends play stops with exit 1, no corpus."""
    monkeypatch.setenv(KEY_ENV, KEY)
    server = LoopbackServer(_ListReader(), api_key=KEY,
                            fault_plan=lambda key, index: Fault.SERVER_ERROR)
    with server:
        code, doc = _invoke([
            "play", str(tmp_path / "corpus"), "--games", "1", "--model", "openai:loopback",
            "--base-url", server.base_url, "--api-key-env", KEY_ENV, "--max-attempts", "3",
            "--backoff", "0"])
    assert code == 1 and "provider_error" in doc["message"] and KEY not in doc["message"]
    assert list(server.counts.values()) == [3]
    assert not (tmp_path / "corpus").exists()


@pytest.mark.parametrize(("args", "option"), [
    (["--base-url", "file:///tmp/x"], "--base-url"),
    (["--dispatcher", "bogus"], "--dispatcher"),
    (["--timeout", "-1"], "--timeout"),
    (["--backoff", "soon"], "--backoff"),
    (["--param", "messages=[]"], "--param"),
])
def test_coerced_play_options_are_usage_errors(tmp_path: Path, args: list[str],
                                               option: str) -> None:
    """`chess play` exits 2 naming a non-HTTP base URL, an unknown dispatcher, a non-positive
    timeout, a bad backoff or a --param the request owns; no corpus is written."""
    result = CliRunner().invoke(_app(), ["play", str(tmp_path / "corpus"), "--model",
                                         "openai:m", "--base-url", "http://127.0.0.1:9/v1",
                                         *args])
    assert result.exit_code == 2, result.output
    assert option in result.stderr
    assert not (tmp_path / "corpus").exists()


def test_play_into_a_file_is_one_line_naming_it(tmp_path: Path) -> None:
    """`chess play FILE` exits 1 with one line saying a file is where the corpus folder
    should be, and leaves the file alone."""
    target = tmp_path / "afile"
    target.write_text("keep")
    result = CliRunner().invoke(_app(), ["play", str(target), "--games", "1",
                                         "--max-plies", "4"])
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{target}: a file is there where the corpus folder" in lines[0]
    assert target.read_text() == "keep"
