"""Tests for rungbench.agents.providers: the one provider constructor, the one loopback server
helper, and how an endpoint that cannot answer anything is told apart."""

from __future__ import annotations

import socket

import pytest

from rungbench.agents.loopback import LoopbackServer
from rungbench.agents.outcomes import CallFailure, Outcome
from rungbench.agents.protocol import Message, Request, Response, ToolCall
from rungbench.agents.providers import loopback_key, loopback_spec, open_provider, serve_on_loopback
from rungbench.agents.spec import AgentSpec, parse_agent
from rungbench.errors import InputError

PING = Request("c1", (Message("user", "Your move."),))


class Echo:
    """Answers every request with a submit_word call."""

    name = "reference:echo"

    def respond(self, request: Request) -> Response:
        return Response(text=None, tool_calls=(ToolCall("submit_word", '{"word": "ready"}'),))

    def describe(self) -> dict[str, str]:
        return {"kind": "reference", "name": self.name}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _failure(spec: AgentSpec, environ: dict[str, str]) -> CallFailure:
    provider = open_provider(spec, environ=environ)
    try:
        with pytest.raises(CallFailure) as caught:
            provider.respond(PING)
    finally:
        provider.close()
    return caught.value


def test_the_endpoint_model_id_is_sent_and_the_label_names_the_agent() -> None:
    """A spec's model id goes in every request body, with its parameters; the provider's
    name and description carry the label."""
    key = loopback_key()
    with LoopbackServer(Echo(), api_key=key, keep_log=True) as server:
        spec, env = loopback_spec(server.base_url, key, "my-model", model="vendor/M-7B",
                                  params={"temperature": 0, "seed": 7})
        provider = open_provider(spec, environ=env)
        try:
            provider.respond(PING)
        finally:
            provider.close()
    (logged,) = server.log
    assert logged["model"] == "vendor/M-7B" and logged["temperature"] == 0
    assert logged["seed"] == 7 and logged["authorization"] == "Bearer"
    described = provider.describe()
    assert provider.name == "my-model" and described["label"] == "my-model"
    assert described["model"] == "vendor/M-7B" and described["base_url"] == server.base_url


def test_a_keyless_endpoint_needs_no_key_variable() -> None:
    """A keyless spec reads no environment variable (an empty mapping will do) and its
    description records no key variable."""
    with LoopbackServer(Echo(), api_key="no-key") as server:
        spec = parse_agent("openai:m", base_url=server.base_url, keyless=True)
        provider = open_provider(spec, environ={})
        try:
            assert provider.respond(PING).tool_calls[0].name == "submit_word"
            assert provider.describe()["api_key_env"] is None
        finally:
            provider.close()


def test_an_unset_key_variable_is_named() -> None:
    """A spec whose key variable is unset is refused naming the variable."""
    spec = parse_agent("openai:m", base_url="http://127.0.0.1:9/v1", api_key_env="RB_NOPE")
    with pytest.raises(InputError, match="'RB_NOPE'"):
        open_provider(spec, environ={})


def test_a_served_agent_is_named_by_what_it_serves_not_by_its_port() -> None:
    """Two servings of one agent describe the same provider (the port changes; a resumed run
    is the same agent), and the description names the served agent."""
    descriptions = []
    for _ in range(2):
        with serve_on_loopback(Echo(), label="echo") as provider:
            assert provider.respond(PING).tool_calls
            descriptions.append(provider.describe())
    assert descriptions[0] == descriptions[1]
    assert descriptions[0]["served"] == {"kind": "reference", "name": "reference:echo"}
    assert "base_url" not in descriptions[0]


def test_a_refused_connection_and_an_unknown_host_are_systematic() -> None:
    """Nothing listening, and a host name that does not resolve, fail as systematic network
    errors (the standard library's errors at the root of the SDK's chain)."""
    closed = parse_agent("openai:m", base_url=f"http://127.0.0.1:{_free_port()}/v1",
                         api_key_env="K", timeout_s=5)
    refused = _failure(closed, {"K": "k" * 16})
    assert refused.outcome is Outcome.NETWORK_ERROR and refused.systematic
    unknown = parse_agent("openai:m", base_url="http://no-such-host.invalid/v1",
                          api_key_env="K", timeout_s=5)
    assert _failure(unknown, {"K": "k" * 16}).systematic


@pytest.mark.parametrize(("setup", "status"), [("wrong key", 401), ("unknown model", 404)])
def test_statuses_that_answer_every_request_alike_are_systematic(setup: str, status: int,
                                                                 ) -> None:
    """A 401 (bad key) and a 404 (an unknown model) are systematic."""
    key = loopback_key()
    with LoopbackServer(Echo(), api_key=key, serves={"m"}) as server:
        spec = parse_agent("openai:" + ("other" if setup == "unknown model" else "m"),
                           base_url=server.base_url, api_key_env="K")
        failure = _failure(spec, {"K": key if setup != "wrong key" else "sk-wrong-key-000"})
    assert failure.status == status and failure.systematic
    assert str(status) in failure.detail


def test_a_server_error_is_not_systematic() -> None:
    """HTTP 500 is a reliability failure worth retrying, not a configuration one."""
    from rungbench.agents.loopback import Fault

    key = loopback_key()
    with LoopbackServer(Echo(), api_key=key, fault_plan=lambda _p, _i: Fault.SERVER_ERROR) \
            as server:
        spec, env = loopback_spec(server.base_url, key, "m")
        failure = _failure(spec, env)
    assert failure.status == 500 and not failure.systematic
