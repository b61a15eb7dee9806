"""Tests for rungbench.agents.models_check and ``rungbench models check``: one tiny request per
endpoint, and one clear problem for each way an endpoint can be misconfigured."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rungbench.agents.loopback import LoopbackServer
from rungbench.agents.models_check import check_spec
from rungbench.agents.protocol import Request, Response, ToolCall
from rungbench.agents.spec import Pricing, parse_agent
from rungbench.cli import app

KEY = "sk-check-key-0123456789"


class Caller:
    """Calls the one tool it is offered."""

    name = "reference:caller"

    def respond(self, request: Request) -> Response:
        tool = request.tools[0]["function"]["name"]
        return Response(text=None, tool_calls=(ToolCall(tool, '{"word": "ready"}'),))


class Talker:
    """Answers in prose, never with a tool call (an endpoint without tool support)."""

    name = "reference:talker"

    def respond(self, request: Request) -> Response:
        return Response(text="Ready.\nAnything else?")


def _closed_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


def test_a_working_endpoint_reports_latency_tokens_and_cost() -> None:
    """The check is one request answered with the tool call; tokens and cost come back."""
    with LoopbackServer(Caller(), api_key=KEY, serves={"m-1"}) as server:
        spec = parse_agent("openai:m-1", base_url=server.base_url, api_key_env="K",
                           label="mine", pricing=Pricing(1.0, 2.0))
        row = check_spec(spec, environ={"K": KEY})
    assert row["ok"] and row["status"] == "ok" and row["label"] == "mine"
    assert row["model"] == "m-1" and row["tokens_in"] > 0 and row["cost_usd"] > 0
    assert len(server.served) == 1


@pytest.mark.parametrize(("case", "status"), [
    ("nothing listening", "nothing listening there, or an unknown host"),
    ("wrong key", "key refused (HTTP 401)"),
    ("unknown model", "unknown model or route (HTTP 404)"),
    ("no tool calls", "no tool call"),
    ("unset key variable", "not_ready"),
])
def test_each_misconfiguration_is_named(case: str, status: str) -> None:
    """A dead URL, a refused key, an unknown model, an endpoint that cannot call tools and a
    key variable that is unset each come back as one named problem, not an exception."""
    agent = Talker() if case == "no tool calls" else Caller()
    with LoopbackServer(agent, api_key=KEY, serves={"m-1"}) as server:
        url = _closed_url() if case == "nothing listening" else server.base_url
        model = "other" if case == "unknown model" else "m-1"
        spec = parse_agent(f"openai:{model}", base_url=url, api_key_env="RB_CHECK_K",
                           timeout_s=5)
        environ = {} if case == "unset key variable" else {
            "RB_CHECK_K": "sk-wrong-wrong-wrong" if case == "wrong key" else KEY}
        row = check_spec(spec, environ=environ)
    assert not row["ok"] and row["status"] == status, row
    assert row["detail"] and "\n" not in row["detail"]


def test_the_command_prints_every_agent_and_fails_when_one_fails(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch,
                                                                  ) -> None:
    """`rungbench models check FILE --json`: one row per agent in file order (a planted agent
    is local), exit 1 because one endpoint is down; the key appears nowhere in the output."""
    monkeypatch.setenv("RB_MODELS_KEY", KEY)
    with LoopbackServer(Caller(), api_key=KEY) as server:
        models = tmp_path / "models.toml"
        models.write_text(f"""
[models.good]
model = "m"
base_url = "{server.base_url}"
api_key_env = "RB_MODELS_KEY"

[models.down]
model = "m"
base_url = "{_closed_url()}"
api_key_env = "RB_MODELS_KEY"
timeout_s = 5

[models.planted-sharp]
kind = "planted"
model = "e023:sharp"
""", encoding="utf-8")
        result = CliRunner().invoke(app, ["models", "check", str(models), "--json"])
        plain = CliRunner().invoke(app, ["models", "check", str(models)],
                                   env={"COLUMNS": "200"})
    doc = json.loads(result.stdout)
    assert result.exit_code == 1 and not doc["ok"]
    assert [(r["label"], r["status"]) for r in doc["agents"]] == [
        ("good", "ok"), ("down", "nothing listening there, or an unknown host"),
        ("planted-sharp", "local")]
    assert plain.exit_code == 1 and "good" in plain.stdout and "down" in plain.stdout
    assert KEY not in result.output + plain.output


def test_a_broken_models_file_is_one_error_line(tmp_path: Path) -> None:
    """A models file with a misspelt key: exit 1, one line naming the file and the field."""
    models = tmp_path / "models.toml"
    models.write_text('[models.x]\nmodel = "m"\nbase_url = "http://h/v1"\ntemprature = 0\n',
                      encoding="utf-8")
    result = CliRunner().invoke(app, ["models", "check", str(models)])
    assert result.exit_code == 1
    assert str(models) in result.stderr and "models.x.temprature" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
