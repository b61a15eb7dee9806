"""The OpenAI-compatible provider, through the real ``openai`` client and a loopback server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import chess
from rungbench.agents.loopback import Fault, LoopbackServer
from rungbench.agents.openai_provider import (
    OpenAIProvider,
    Pricing,
    async_client,
    parse_completion,
    retry_after_seconds,
    timed_out,
)
from rungbench.agents.outcomes import CallFailure, Outcome, classify
from rungbench.agents.protocol import Request, Response, ToolCall
from rungbench.chess.reference_agents import (
    RandomMover,
    move_choice_request,
    validate_move,
)
from rungbench.errors import InputError

KEY = "sk-test-9f3c2b71d0a4"
FEN = "r5k1/pp3p1p/2b2qp1/3pr3/8/4P2P/R1PN1PP1/Q3K2R w K - 0 19"
REQUEST = move_choice_request("cell-1", FEN)


def _provider(server: LoopbackServer, timeout_s: float = 5.0) -> OpenAIProvider:
    return OpenAIProvider(
        "loopback",
        base_url=server.base_url,
        api_key_env="TEST_KEY",
        timeout_s=timeout_s,
        environ={"TEST_KEY": KEY},
        pricing=Pricing(1.0, 2.0),
    )


@pytest.fixture
def faulty() -> Iterator[LoopbackServer]:
    """A server whose first seven replies to REQUEST are the seven injectable faults."""
    plan = [
        Fault.RATE_LIMIT,
        Fault.SERVER_ERROR,
        Fault.STALL,
        Fault.NOT_JSON,
        Fault.GARBAGE_ARGUMENTS,
        Fault.REFUSAL,
        Fault.DROP,
    ]
    server = LoopbackServer(
        RandomMover(seed=3),
        api_key=KEY,
        requests=[REQUEST],
        faults={REQUEST.payload_digest(): plan},
        stall_s=1.0,
    )
    with server:
        yield server


def _outcome(provider: OpenAIProvider) -> tuple[Outcome, CallFailure | None]:
    try:
        response = provider.respond(REQUEST)
    except CallFailure as failure:
        return failure.outcome, failure
    return classify(REQUEST, response, validate_move).outcome, None


def test_each_fault_is_classified_as_registered(faulty: LoopbackServer) -> None:
    """429, 500, stall, non-JSON, garbage arguments, refusal, drop, then a normal answer."""
    provider = _provider(faulty, timeout_s=0.4)
    got = [_outcome(provider) for _ in range(8)]
    assert [o for o, _ in got] == [
        Outcome.PROVIDER_ERROR,
        Outcome.PROVIDER_ERROR,
        Outcome.TIMEOUT,
        Outcome.PROVIDER_ERROR,
        Outcome.MALFORMED,
        Outcome.REFUSAL,
        Outcome.NETWORK_ERROR,
        Outcome.ANSWERED,
    ]
    rate, server_error = got[0][1], got[1][1]
    assert rate is not None and (rate.status, rate.retry_after) == (429, 0.3)
    assert server_error is not None and server_error.status == 500
    assert "not JSON" in str(got[3][1])
    assert faulty.counts[REQUEST.payload_digest()] == 8  # SDK retries are off: one send each


def test_answer_is_a_legal_move_with_usage_and_cost(faulty: LoopbackServer) -> None:
    """A normal reply parses into a legal submit_move call with tokens and priced cost."""
    request = _fresh_request(faulty)
    response = _provider(faulty).respond(request)
    assert response.usage.tokens_in > 0 and response.usage.tokens_out > 0
    expected = (response.usage.tokens_in * 1.0 + response.usage.tokens_out * 2.0) / 1e6
    assert response.usage.cost_usd == pytest.approx(expected)
    move = json.loads(response.tool_calls[0].arguments)["move"]
    assert chess.Move.from_uci(move) in chess.Board(request.metadata["fen"]).legal_moves


def _fresh_request(server: LoopbackServer) -> Request:
    request = move_choice_request("cell-2", "8/8/8/4k3/8/8/4P3/4K3 w - - 0 1")
    server.register(request)
    return request


class _IllegalAgent:
    name = "illegal"

    def respond(self, request: Request) -> Response:
        return Response(text=None, tool_calls=(ToolCall("submit_move", '{"move": "e1e8"}'),))


def test_illegal_move_is_illegal_not_malformed() -> None:
    """A well-formed UCI move that is not legal in the position is classified illegal."""
    with LoopbackServer(_IllegalAgent(), api_key=KEY, requests=[REQUEST]) as server:
        response = _provider(server).respond(REQUEST)
    got = classify(REQUEST, response, validate_move)
    assert got.outcome is Outcome.ILLEGAL and "e1e8" in got.detail


def test_wrong_key_is_a_provider_error_that_never_shows_the_key() -> None:
    """A 401 is a provider error; neither the key sent nor the server's key is in it."""
    server = LoopbackServer(RandomMover(), api_key="sk-other-key", requests=[REQUEST])
    with server, pytest.raises(CallFailure) as caught:
        _provider(server).respond(REQUEST)
    assert caught.value.outcome is Outcome.PROVIDER_ERROR and caught.value.status == 401
    assert KEY not in str(caught.value)


class _EchoKeyAgent:
    name = "echo"

    def respond(self, request: Request) -> Response:
        return Response(text=f"your key is {KEY}")


def test_key_echoed_by_the_endpoint_is_redacted() -> None:
    """If a reply carries the key, the provider redacts it before anyone stores it."""
    chat = Request("c", REQUEST.messages)
    with LoopbackServer(_EchoKeyAgent(), api_key=KEY) as server:
        response = _provider(server).respond(chat)
    assert response.text == "your key is [redacted]"


def test_key_is_absent_from_repr_and_description() -> None:
    """The provider's repr and manifest description name the variable, never the key."""
    provider = OpenAIProvider(
        "m", base_url="http://127.0.0.1:9/v1", api_key_env="TEST_KEY", environ={"TEST_KEY": KEY}
    )
    assert KEY not in repr(provider)
    description = json.dumps(provider.describe())
    assert KEY not in description and "TEST_KEY" in description
    assert provider.describe()["sdk_max_retries"] == 0


def test_missing_key_variable_is_an_input_error() -> None:
    """An unset key variable is refused at construction, naming the variable."""
    with pytest.raises(InputError, match="NO_SUCH_VAR"):
        OpenAIProvider("m", base_url="http://127.0.0.1:9/v1", api_key_env="NO_SUCH_VAR", environ={})


def test_generation_params_and_tool_schema_reach_the_wire() -> None:
    """Extra params are sent beside the frozen messages and tools, which arrive unchanged."""
    with LoopbackServer(RandomMover(), api_key=KEY, requests=[REQUEST]) as server:
        provider = OpenAIProvider(
            "m",
            base_url=server.base_url,
            api_key_env="K",
            environ={"K": KEY},
            params={"temperature": 0, "seed": 7},
        )
        provider.respond(REQUEST)
    body = server.last_body
    assert body is not None and (body["temperature"], body["seed"]) == (0, 7)
    assert body["tools"] == list(REQUEST.tools) and body["tool_choice"] == "required"
    assert server.counts == {REQUEST.payload_digest(): 1}


def test_retry_after_forms() -> None:
    """Retry-After is read as milliseconds, seconds, or an HTTP date; garbage is ignored."""
    assert retry_after_seconds({"retry-after-ms": "250"}) == 0.25
    assert retry_after_seconds({"Retry-After": "2"}) == 2.0
    date = "Wed, 21 Oct 2015 07:28:10 GMT"
    assert retry_after_seconds({"Retry-After": date}, now=1445412480.0) == 10.0
    assert retry_after_seconds({"Retry-After": "soon"}) is None
    assert retry_after_seconds({}) is None


def test_body_without_choices_is_a_provider_error() -> None:
    """A JSON body that is not a chat completion is the provider failing."""
    with pytest.raises(CallFailure) as caught:
        parse_completion({"error": "nope"})
    assert caught.value.outcome is Outcome.PROVIDER_ERROR


def test_provider_plays_a_recorded_game_through_the_harness(tmp_path: Path) -> None:
    """The game harness accepts the provider as its Agent; the game lands in a native corpus."""
    from rungbench.chess.transcripts.dispatch import version
    from rungbench.chess.transcripts.harness import HarnessConfig, RandomOpponent, play_corpus

    with LoopbackServer(RandomMover(seed=5), api_key=KEY) as server:
        provider = _provider(server)
        agent = _Registering(provider, server)
        cfg = HarnessConfig(dispatcher=version("llmchess-2025-08"), max_plies=12)
        manifest = play_corpus(tmp_path / "corpus", agent, RandomOpponent(7), cfg, games=1)
    games = [
        json.loads(line) for line in (tmp_path / "corpus" / "games.jsonl").read_text().splitlines()
    ]
    assert len(games) == 1 and len(games[0]["moves"]) == 12
    assert sum(server.counts.values()) == 6  # six agent moves, one HTTP call each
    assert {f["path"] for f in manifest["files"]} >= {"transcript.txt", "games.jsonl"}
    assert KEY.encode() not in b"".join(p.read_bytes() for p in (tmp_path / "corpus").iterdir())


class _Registering:
    """Tells the loopback server each request's metadata (the stand-in model reads the FEN)."""

    def __init__(self, provider: OpenAIProvider, server: LoopbackServer) -> None:
        self.provider, self.server, self.name = provider, server, provider.name

    def respond(self, request: Request) -> Response:
        self.server.register(request)
        return self.provider.respond(request)


class _LeakyBackend:
    """A backend whose failure message quotes the key: the server's 500 body echoes it."""

    name = "leaky"

    def respond(self, request: Request) -> Response:
        raise RuntimeError(f"upstream rejected credentials {KEY}")


def _failure_texts(provider: OpenAIProvider, request: Request) -> tuple[CallFailure, str]:
    import traceback

    with pytest.raises(CallFailure) as caught:
        provider.respond(request)
    return caught.value, "".join(traceback.format_exception(caught.value))


def test_failures_carry_no_key_in_message_chain_or_traceback() -> None:
    """A 500 echoing the key, a non-JSON body, a timeout and a refused connection: the key is
    in no CallFailure message and no traceback, and no SDK exception is chained behind it."""
    seen: list[tuple[CallFailure, str]] = []
    with LoopbackServer(_LeakyBackend(), api_key=KEY, requests=[REQUEST]) as server:
        seen.append(_failure_texts(_provider(server), REQUEST))
    plan = {REQUEST.payload_digest(): [Fault.NOT_JSON, Fault.STALL]}
    with LoopbackServer(RandomMover(), api_key=KEY, requests=[REQUEST], faults=plan,
                        stall_s=0.6) as server:
        seen.append(_failure_texts(_provider(server), REQUEST))
        seen.append(_failure_texts(_provider(server, timeout_s=0.2), REQUEST))
    closed_port = server.base_url  # the server is gone: connection refused
    gone = OpenAIProvider("m", base_url=closed_port, api_key_env="K", environ={"K": KEY})
    seen.append(_failure_texts(gone, REQUEST))
    assert [f.outcome for f, _ in seen] == [
        Outcome.PROVIDER_ERROR, Outcome.PROVIDER_ERROR, Outcome.TIMEOUT, Outcome.NETWORK_ERROR,
    ]
    assert "[redacted]" in seen[0][0].detail  # the echoed key reached the provider, scrubbed
    for failure, text in seen:
        assert KEY not in text and KEY not in repr(failure)
        assert failure.__cause__ is None and failure.__context__ is None


def test_odd_completion_bodies_are_provider_errors_or_zero_usage() -> None:
    """Bodies shaped wrong are provider errors; a non-object usage counts zero tokens."""
    bodies: list[dict[str, Any]] = [
        {"choices": []}, {"choices": ["x"]}, {"choices": [{"message": None}]},
        {"choices": [{"message": {"tool_calls": [{"function": None}]}}]},
    ]
    for body in bodies:
        with pytest.raises(CallFailure) as caught:
            parse_completion(body)
        assert caught.value.outcome is Outcome.PROVIDER_ERROR
        assert caught.value.__context__ is None
    odd = parse_completion({"choices": [{"message": {"content": "hi"}}], "usage": [3, 4]})
    assert (odd.text, odd.usage.tokens_in, odd.usage.tokens_out) == ("hi", 0, 0)


def _sdk_failure(fault: Fault, timeout_s: float) -> Exception:
    """What the real SDK client (as the provider builds it) raises for ``fault`` injected by
    the loopback server on a real socket."""
    import asyncio

    import openai

    async def send(server: LoopbackServer) -> Exception:
        client = async_client(KEY, server.base_url, timeout_s)
        try:
            await client.chat.completions.create(
                model="loopback", messages=[{"role": "user", "content": "Your move."}])
        except openai.OpenAIError as exc:
            return exc
        finally:
            await client.close()
        raise AssertionError(f"{fault} was answered")

    with LoopbackServer(RandomMover(seed=3), api_key=KEY, fault_plan=lambda _k, _i: fault,
                        stall_s=timeout_s * 5) as server:
        return asyncio.run(send(server))


def test_a_lost_connection_reported_as_a_timeout_is_told_apart() -> None:
    """A connection the server closes without answering is not a timeout, whatever SDK error
    carries it (its aiohttp transport reports it as a connect timeout); a reply that never
    comes is one. Both come from the real client against the loopback server."""
    import openai

    dropped = _sdk_failure(Fault.DROP, timeout_s=2.0)
    stalled = _sdk_failure(Fault.STALL, timeout_s=0.3)
    assert isinstance(dropped, openai.APIConnectionError) and not timed_out(dropped)
    assert isinstance(stalled, openai.APITimeoutError) and timed_out(stalled)


def test_one_provider_serves_many_threads_and_reopens_after_close() -> None:
    """Calls from many threads at once all get their answer over one client; a closed
    provider answers again (its loop and pool are opened anew)."""
    from concurrent.futures import ThreadPoolExecutor

    requests = [move_choice_request(f"cell-{i}", FEN) for i in range(12)]
    with LoopbackServer(RandomMover(seed=1), api_key=KEY, requests=requests, delay_s=0.02,
                        inline_agent=True) as server:
        provider = _provider(server)
        with ThreadPoolExecutor(12) as pool:
            answers = list(pool.map(provider.respond, requests))
        provider.close()
        again = provider.respond(requests[0])
        provider.close()
    assert all(classify(r, a, validate_move).outcome is Outcome.ANSWERED
               for r, a in zip(requests, answers, strict=True))
    assert again == answers[0] and server.max_in_flight > 1
    assert sum(server.counts.values()) == 13
