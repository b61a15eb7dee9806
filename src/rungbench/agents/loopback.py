"""An OpenAI-compatible chat-completions server on loopback, backed by any Agent.

Tests, the runner benchmark and the demo point the real ``openai`` client at it,
so the whole path (HTTP, SDK parsing, error mapping, retries) is exercised
without a network. Faults can be injected per request payload, in arrival order:
``429`` with Retry-After, ``500``, a stalled reply (client timeout), a body that
is not JSON, a tool call with garbage arguments, a refusal, and a dropped
connection. The server counts requests per payload digest, so a test can prove
that a completed cell is never sent again.

The server checks the bearer key it was given, as a real endpoint would.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from enum import StrEnum
from types import TracebackType
from typing import Any

from rungbench.agents.http_serve import HttpReply, HttpRequest, HttpServer
from rungbench.agents.protocol import Agent, Message, Request, Response
from rungbench.evidence.canonical import canonical_bytes, digest


class Fault(StrEnum):
    """A failure the loopback server can inject instead of a normal reply."""

    RATE_LIMIT = "429"
    SERVER_ERROR = "500"
    STALL = "stall"
    NOT_JSON = "not_json"
    GARBAGE_ARGUMENTS = "garbage_arguments"
    REFUSAL = "refusal"
    DROP = "drop"


FaultPlan = Callable[[str, int], Fault | None]
"""``(payload digest, 0-based arrival index for that payload) -> fault or None``."""

MetadataFn = Callable[[dict[str, Any]], dict[str, Any]]
"""Recovers an unknown request's metadata from its payload (e.g. a FEN in the prompt)."""

REFUSAL_TEXT = "I can't help with that request."
GARBAGE_ARGUMENTS = '{"move": e2e4,,'


AGENT_THREADS = 64
"""Threads that run the backing agent's ``respond`` (so a slow agent, an engine say, does
not hold up the event loop that serves every other connection)."""


class LoopbackServer:
    """An HTTP server on 127.0.0.1 (port chosen by the OS) serving one Agent.

    One event loop thread (:mod:`rungbench.agents.http_serve`) parses every request and
    waits out the configured latency and stalls; the agent itself answers on a pool of
    :data:`AGENT_THREADS` threads, or with ``inline_agent`` on the loop thread itself: for
    an agent that answers in well under a millisecond (the reference movers) that saves a
    thread handoff per request (about a quarter of the server's CPU per request), but a
    slow agent (an engine) would hold up every other connection while it thinks.
    """

    def __init__(
        self,
        agent: Agent,
        *,
        api_key: str,
        requests: Iterable[Request] = (),
        metadata_fn: MetadataFn | None = None,
        faults: Mapping[str, Sequence[Fault]] | None = None,
        fault_plan: FaultPlan | None = None,
        delay_s: float = 0.0,
        retry_after_s: float = 0.3,
        stall_s: float = 2.0,
        model: str = "loopback",
        inline_agent: bool = False,
        serves: Iterable[str] | None = None,
        keep_log: bool = False,
    ) -> None:
        self.agent = agent
        self.inline_agent = inline_agent
        self.model = model
        self.delay_s = delay_s
        self.retry_after_s = retry_after_s
        self.stall_s = stall_s
        self.metadata_fn = metadata_fn
        self.faults = {k: tuple(v) for k, v in (faults or {}).items()}
        self.fault_plan = fault_plan
        self.counts: Counter[str] = Counter()
        """Requests received per payload digest (authorised ones only)."""
        self.last_body: dict[str, Any] | None = None
        """The most recent authorised request body, as received."""
        self.serves = None if serves is None else frozenset(serves)
        """The model ids this server answers for (None: any); another is a 404, as an
        endpoint answers an unknown model."""
        self.keep_log = keep_log
        self.log: list[dict[str, Any]] = []
        """With ``keep_log``, every request that reached the completions route: its
        ``authorization`` header's scheme (``Bearer``, or None when absent), the ``model``
        sent, and every other body field but the conversation (``messages``, ``tools``)."""
        self.served: list[tuple[str, str]] = []
        """``(payload digest, fault value or "ok")`` in arrival order."""
        self.in_flight = 0
        """Authorised requests being served right now."""
        self.max_in_flight = 0
        """The most authorised requests ever served at once (proves a concurrency limit)."""
        self._known = {r.payload_digest(): r for r in requests}
        self._api_key = api_key
        self._lock = threading.Lock()
        self._shapes: dict[str, tuple[str, int]] = {}
        """Payload digest -> (completion id, prompt-token estimate) of a known request."""
        self._http = HttpServer(self.handle)
        self._pool: ThreadPoolExecutor | None = None

    @property
    def base_url(self) -> str:
        """The ``/v1`` base URL to give the OpenAI client."""
        host, port = self._http.address
        return f"http://{host}:{port}/v1"

    def start(self) -> LoopbackServer:
        """Serve from an event loop thread; return self once connections are accepted."""
        if not self.inline_agent:
            self._pool = ThreadPoolExecutor(AGENT_THREADS, thread_name_prefix="rungbench-agent")
        self._http.start()
        return self

    def stop(self) -> None:
        """Stop serving (connections and pending replies are dropped), close the socket."""
        self._http.stop()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def register(self, request: Request) -> None:
        """Make ``request`` (with its metadata) known, so its payload resolves to it."""
        key = request.payload_digest()
        with self._lock:
            self._known[key] = request
            self._shapes.pop(key, None)

    def authorised(self, header: str | None) -> bool:
        """Return whether an ``Authorization`` header carries this server's key."""
        return header == f"Bearer {self._api_key}"

    def admit(self, payload: dict[str, Any]) -> tuple[str, Fault | None]:
        """Count one arrival of ``payload``; return its digest and the fault to inject."""
        key = digest(payload)
        with self._lock:
            index = self.counts[key]
            self.counts[key] += 1
            planned = self.faults.get(key, ())
            fault = planned[index] if index < len(planned) else None
            if fault is None and self.fault_plan is not None:
                fault = self.fault_plan(key, index)
            self.served.append((key, fault.value if fault is not None else "ok"))
        return key, fault

    def enter(self) -> None:
        """Count one request as in flight (served until :meth:`leave`)."""
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def leave(self) -> None:
        """Count one in-flight request as answered."""
        with self._lock:
            self.in_flight -= 1

    def resolve(self, key: str, payload: dict[str, Any]) -> Request:
        """Return the frozen request for ``payload``: a known one, or one rebuilt from it."""
        with self._lock:
            known = self._known.get(key)
        if known is not None:
            return known
        messages = tuple(Message.from_json(m) for m in payload["messages"])
        return Request(
            case_id=f"loopback:{key[7:23]}",
            messages=messages,
            tools=tuple(payload.get("tools", ())),
            tool_choice=payload.get("tool_choice"),
            metadata=self.metadata_fn(payload) if self.metadata_fn is not None else {},
        )

    def completion(
        self, request: Request, fault: Fault | None, key: str | None = None
    ) -> dict[str, Any]:
        """Return the chat-completion body for ``request`` (normal, garbage or refusal).

        ``key`` (the request's payload digest, when the caller has it) lets the completion
        id and the prompt-token estimate of a request be computed once, not per call.
        """
        if fault is Fault.REFUSAL:
            response = Response(text=REFUSAL_TEXT, refusal=REFUSAL_TEXT)
        else:
            response = self.agent.respond(request)
        calls = [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {
                    "name": c.name,
                    "arguments": GARBAGE_ARGUMENTS
                    if fault is Fault.GARBAGE_ARGUMENTS
                    else c.arguments,
                },
            }
            for i, c in enumerate(response.tool_calls)
        ]
        message: dict[str, Any] = {
            "role": "assistant",
            "content": response.text,
            "refusal": response.refusal,
        }
        if calls:
            message["tool_calls"] = calls
        ident, estimate = self._shape(request, key)
        tokens_in = response.usage.tokens_in or estimate
        tokens_out = response.usage.tokens_out or max(1, len(json.dumps(message)) // 4)
        return {
            "id": ident,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model,
            "choices": [
                {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
            ],
            "usage": {
                "prompt_tokens": tokens_in,
                "completion_tokens": tokens_out,
                "total_tokens": tokens_in + tokens_out,
            },
        }


    def _shape(self, request: Request, key: str | None) -> tuple[str, int]:
        shape = self._shapes.get(key) if key is not None else None
        if shape is None:
            shape = (f"chatcmpl-{request.digest()[7:23]}",
                     len(canonical_bytes(request.payload())) // 4)
            if key is not None and self._known.get(key) is request:
                self._shapes[key] = shape
        return shape

    async def handle(self, request: HttpRequest) -> HttpReply | None:
        """Answer one HTTP request (None drops the connection: :attr:`Fault.DROP`)."""
        if request.method != "POST":
            return _json(501, {"error": {"message": f"unsupported method {request.method}"}})
        if not request.target.rstrip("/").endswith("/chat/completions"):
            return _json(404, {"error": {"message": f"no route {request.target}"}})
        if self.keep_log:
            self.log.append(_logged(request))
        if not self.authorised(request.header("Authorization")):
            return _json(401, {"error": {"message": "invalid api key", "type": "auth"}})
        try:
            body = json.loads(request.body)
            payload = wire_payload(body)
        except (ValueError, KeyError, TypeError) as exc:
            return _json(400, {"error": {"message": f"bad request body: {exc}"}})
        if self.serves is not None and body.get("model") not in self.serves:
            return _json(404, {"error": {"message": f"The model {body.get('model')!r} does "
                                         "not exist", "code": "model_not_found"}})
        self.last_body = body
        key, fault = self.admit(payload)
        self.enter()
        try:  # the reply is composed while counted in flight, written after
            return await self._reply(key, payload, fault)
        finally:
            self.leave()

    async def _reply(
        self, key: str, payload: dict[str, Any], fault: Fault | None
    ) -> HttpReply | None:
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if fault is Fault.DROP:
            return None
        if fault is Fault.RATE_LIMIT:
            return _json(429, {"error": {"message": "rate limited", "type": "rate_limit"}},
                         {"Retry-After": f"{self.retry_after_s:g}"})
        if fault is Fault.SERVER_ERROR:
            return _json(500, {"error": {"message": "upstream failure", "type": "server"}})
        if fault is Fault.STALL:
            await asyncio.sleep(self.stall_s)
        if fault is Fault.NOT_JSON:
            return HttpReply(200, b"<html><body>502 gateway hiccup</body></html>")
        try:
            if self._pool is None:
                body = self._answer(key, payload, fault)
            else:
                body = await asyncio.get_running_loop().run_in_executor(
                    self._pool, self._answer, key, payload, fault
                )
        except Exception as exc:  # the backing agent failed: a 500, as a real server would
            return _json(500, {"error": {"message": f"agent failed: {type(exc).__name__}: {exc}"}})
        return HttpReply(200, body)

    def _answer(self, key: str, payload: dict[str, Any], fault: Fault | None) -> bytes:
        """The completion's bytes (run on the agent pool)."""
        request = self.resolve(key, payload)
        return json.dumps(self.completion(request, fault, key)).encode("utf-8")


def _logged(request: HttpRequest) -> dict[str, Any]:
    """What :attr:`LoopbackServer.log` keeps of a request (never the key itself)."""
    header = request.header("Authorization")
    try:
        body = json.loads(request.body)
    except ValueError:
        body = {}
    fields = {k: v for k, v in body.items() if k not in ("messages", "tools")} \
        if isinstance(body, dict) else {}
    return {"authorization": header.split(" ", 1)[0] if header else None, **fields}


def wire_payload(body: dict[str, Any]) -> dict[str, Any]:
    """Return the part of a chat-completions body that :meth:`Request.payload` describes."""
    out: dict[str, Any] = {"messages": body["messages"], "tools": body.get("tools", [])}
    if body.get("tool_choice") is not None:
        out["tool_choice"] = body["tool_choice"]
    return out


def _json(
    status: int, body: dict[str, Any], headers: dict[str, str] | None = None
) -> HttpReply:
    return HttpReply(status, json.dumps(body).encode("utf-8"), dict(headers or {}))
