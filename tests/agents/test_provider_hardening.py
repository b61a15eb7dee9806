"""The provider refuses to override the frozen request, rejects non-HTTP endpoints, and
scrubs the key (any case, base64, any 8+ character piece) before it cuts an error body."""

from __future__ import annotations

import base64

import pytest

from rungbench.agents.loopback import LoopbackServer
from rungbench.agents.openai_provider import BODY_LIMIT, OpenAIProvider, scrub_secret
from rungbench.agents.outcomes import CallFailure
from rungbench.agents.protocol import Request, Response
from rungbench.chess.reference_agents import move_choice_request
from rungbench.errors import InputError

KEY = "sk-hardening-" + "a1b2c3d4e5f60718293a4b5c6d7e8f9"  # 44 characters
REQUEST = move_choice_request("cell-1", "8/8/8/4k3/8/8/4P3/4K3 w - - 0 1")
PREFIX = 'HTTP 500: {"error": {"message": "agent failed: RuntimeError: '
"""How the loopback server's 500 body for a failing agent starts, as the detail shows it."""


def _provider(server: LoopbackServer, **kwargs: object) -> OpenAIProvider:
    return OpenAIProvider("loopback", base_url=server.base_url, api_key_env="K",
                          environ={"K": KEY}, timeout_s=5.0, **kwargs)  # type: ignore[arg-type]


class _Echo:
    """Fails every request with a message the loopback server puts in its 500 body."""

    name = "echo"

    def __init__(self, text: str) -> None:
        self.text = text

    def respond(self, request: Request) -> Response:
        raise RuntimeError(self.text)


def _detail(text: str) -> str:
    with LoopbackServer(_Echo(text), api_key=KEY) as server, \
            pytest.raises(CallFailure) as caught:
        _provider(server).respond(REQUEST)
    return caught.value.detail


def _pieces_of_key_in(text: str) -> list[str]:
    lowered = text.lower()
    return [KEY[i:i + 8] for i in range(len(KEY) - 7) if KEY[i:i + 8].lower() in lowered]


assert len(KEY) == 44


def test_key_straddling_the_body_cut_is_scrubbed_before_the_cut() -> None:
    """A key that starts 14 characters before the 200-character cut leaks no piece of it."""
    pad = "x" * (BODY_LIMIT - 14 - len(PREFIX))
    detail = _detail(pad + KEY + " tail")
    assert detail.startswith(PREFIX) and _pieces_of_key_in(detail) == []
    assert "[redacted]" in detail


def test_key_in_upper_case_and_base64_is_scrubbed() -> None:
    """The key echoed upper-cased, in base64, and inside base64 of ``user:KEY`` is redacted."""
    b64 = base64.b64encode(KEY.encode()).decode()
    basic = base64.b64encode(f"user:{KEY}".encode()).decode()
    detail = _detail(f"{KEY.upper()} | {b64} | Basic {basic}")
    assert KEY.upper() not in detail and b64 not in detail and basic[8:] not in detail
    assert _pieces_of_key_in(detail) == [] and detail.count("[redacted]") == 3


def test_any_eight_character_piece_of_the_key_is_scrubbed() -> None:
    """A fragment of the key (a server's own cut) is redacted once it is 8+ characters."""
    assert scrub_secret(f"got {KEY[5:20]}…", KEY) == "got [redacted]…"
    assert scrub_secret(f"got {KEY[:7]}", KEY) == f"got {KEY[:7]}"


@pytest.mark.parametrize("key", ["messages", "tools", "tool_choice", "model", "Messages"])
def test_params_owned_by_the_frozen_request_are_refused(key: str) -> None:
    """An extra body parameter that would replace the frozen prompt, tools or model is refused
    when the provider is built (library users are protected, not only the CLI)."""
    with pytest.raises(InputError, match=f"{key!r}") as caught:
        OpenAIProvider("m", base_url="http://127.0.0.1:9/v1", api_key_env="K",
                       environ={"K": KEY}, params={key: [{"role": "user", "content": "hi"}]})
    assert caught.value.field == "params"


@pytest.mark.parametrize("url", ["file:///tmp/x", "ftp://host/v1", "http://", "127.0.0.1:8000",
                                 "http://host:port/v1"])
def test_base_url_must_be_http_or_https_with_a_host(url: str) -> None:
    """A base URL that is not http(s):// with a host is an input error, never a network error."""
    with pytest.raises(InputError) as caught:
        OpenAIProvider("m", base_url=url, api_key_env="K", environ={"K": KEY})
    assert caught.value.field == "base_url"
