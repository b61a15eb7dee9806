"""Tool-call and tool-result messages: digests of plain requests unchanged, wire round trip."""

from __future__ import annotations

import json
import os

from rungbench.agents.loopback import LoopbackServer
from rungbench.agents.openai_provider import OpenAIProvider
from rungbench.agents.protocol import Message, Request, Response, ToolCall

TOOL = {"type": "function", "function": {"name": "lookup", "parameters": {
    "type": "object", "properties": {"q": {"type": "string"}}}}}


def test_plain_message_json_has_no_tool_fields() -> None:
    """A message without tool fields serialises exactly as before (role and content only)."""
    assert Message("user", "hi").to_json() == {"role": "user", "content": "hi"}


def test_tool_fields_round_trip_through_request_json() -> None:
    """Assistant tool calls and a tool message's call id survive to_json / from_json."""
    call = {"id": "call_0_0", "type": "function",
            "function": {"name": "lookup", "arguments": "{\"q\": \"a\"}"}}
    req = Request("c", (Message("user", "q"), Message("assistant", "", tool_calls=(call,)),
                        Message("tool", "{\"r\": 1}", tool_call_id="call_0_0")), tools=(TOOL,))
    back = Request.from_json(req.to_json())
    assert back == req and back.digest() == req.digest()


class Echo:
    """Answers with the tool message it was sent (or asks the tool when there is none)."""

    name = "echo"

    def respond(self, request: Request) -> Response:
        tool = [m for m in request.messages if m.role == "tool"]
        if not tool:
            return Response(None, (ToolCall("lookup", json.dumps({"q": "a"})),))
        return Response(json.dumps({"id": tool[0].tool_call_id, "content": tool[0].content,
                                    "calls": [dict(c) for c in request.messages[1].tool_calls]}))


def test_real_client_sends_tool_turns_to_loopback() -> None:
    """The openai client carries tool_calls and tool_call_id; the server rebuilds them."""
    key = os.urandom(8).hex()
    with LoopbackServer(Echo(), api_key=key) as server:
        provider = OpenAIProvider("m", base_url=server.base_url, api_key_env="K",
                                  environ={"K": key})
        call = {"id": "call_0_0", "type": "function",
                "function": {"name": "lookup", "arguments": "{\"q\": \"a\"}"}}
        req = Request("c", (Message("user", "q"), Message("assistant", "", tool_calls=(call,)),
                            Message("tool", "{\"r\": 1}", tool_call_id="call_0_0")),
                      tools=(TOOL,))
        reply = provider.respond(req)
        provider.close()
        sent = server.last_body
    assert sent is not None and sent["messages"][2]["tool_call_id"] == "call_0_0"
    got = json.loads(reply.text or "")
    assert got == {"id": "call_0_0", "content": "{\"r\": 1}", "calls": [call]}
