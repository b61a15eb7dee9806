"""The loopback endpoint's own rules, spoken to over plain HTTP."""

from __future__ import annotations

import http.client
import json
from dataclasses import replace
from typing import Any

from rungbench.agents.loopback import LoopbackServer
from rungbench.chess.reference_agents import RandomMover, move_choice_request

KEY = "sk-loopback-test-5d1e"
FEN = "r5k1/pp3p1p/2b2qp1/3pr3/8/4P2P/R1PN1PP1/Q3K2R w K - 0 19"


def _call(server: LoopbackServer, method: str, path: str,
          body: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
    host, port = server.base_url.split("//")[1].split("/")[0].split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=5)
    try:
        connection.request(method, path, body=json.dumps(body) if body is not None else None,
                           headers={"Authorization": f"Bearer {KEY}"})
        reply = connection.getresponse()
        return reply.status, json.loads(reply.read())
    finally:
        connection.close()


def _body(request: Any) -> dict[str, Any]:
    return {"model": "m", **request.payload()}


def test_routes_methods_and_keys_are_checked_before_anything_is_counted() -> None:
    """A GET is 501, another path 404, a bad body 400, and none of them is counted."""
    request = move_choice_request("cell-1", FEN)
    with LoopbackServer(RandomMover(), api_key=KEY, requests=[request]) as server:
        assert _call(server, "GET", "/v1/chat/completions")[0] == 501
        assert _call(server, "POST", "/v1/other", _body(request))[0] == 404
        assert _call(server, "POST", "/v1/chat/completions", {"no": "messages"})[0] == 400
        status, reply = _call(server, "POST", "/v1/chat/completions", _body(request))
    assert status == 200 and reply["choices"][0]["message"]["tool_calls"]
    assert server.counts == {request.payload_digest(): 1} and len(server.served) == 1


def test_a_re_registered_request_answers_with_its_own_completion_id() -> None:
    """The completion id names the request the payload resolves to, also after that
    request is replaced by a registration with the same payload (the id is cached per
    request, not per payload)."""
    first = move_choice_request("cell-1", FEN)
    second = replace(first, case_id="cell-2")
    assert first.payload_digest() == second.payload_digest()
    with LoopbackServer(RandomMover(), api_key=KEY, requests=[first],
                        inline_agent=True) as server:
        before = _call(server, "POST", "/v1/chat/completions", _body(first))[1]["id"]
        server.register(second)
        after = _call(server, "POST", "/v1/chat/completions", _body(first))[1]["id"]
    assert before == f"chatcmpl-{first.digest()[7:23]}"
    assert after == f"chatcmpl-{second.digest()[7:23]}"
