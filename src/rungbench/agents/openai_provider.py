"""An :class:`~rungbench.agents.protocol.Agent` for any OpenAI-compatible endpoint.

Talks through the official ``openai`` SDK (DeepSeek, vLLM, llama.cpp server,
Ollama, OpenAI). The SDK's own retries are off (``max_retries=0``): the runner
owns the registered retry sequence, so every attempt is visible and counted.

The blocking :meth:`OpenAIProvider.respond` is served by the SDK's asynchronous client
(``openai.AsyncOpenAI``) on a private event loop thread (:mod:`.loop_thread`), over
aiohttp when it is installed (``openai.DefaultAioHttpClient``; the SDK's httpx transport
otherwise) with one connection per call in flight, kept alive and reused: the runner's
many threads then share one client and one pool, and the HTTP work of every call in
flight runs in one thread instead of competing for the interpreter lock. With
``client_processes=N`` the calls are sent by ``N`` helper processes running this same
provider (:mod:`.client_process`), so the SDK's work leaves the caller's interpreter lock.

The API key is read from an environment variable whose *name* is configured;
the key itself is held only by the SDK client and is scrubbed from every
detail string this module produces. It never appears in ``repr``, in
:meth:`OpenAIProvider.describe`, or in a :class:`CallFailure` — which is raised
without an exception chain, so no traceback quotes the SDK's exceptions either.
"""

from __future__ import annotations

import base64
import concurrent.futures
import email.utils
import json
import os
import re
import socket
import time
import weakref
from collections.abc import Callable, Coroutine, Mapping
from functools import partial
from typing import Any, TypeVar

import openai

try:  # the HTTP library of the installed SDK: httpx2 from openai 3, httpx before
    from httpx2 import Limits
    from httpx2 import Response as RAW_RESPONSE
except ImportError:  # pragma: no cover - depends on the installed openai major version
    from httpx import Limits  # type: ignore[assignment]
    from httpx import Response as RAW_RESPONSE  # type: ignore[assignment]

from rungbench.agents.client_process import ClientPool, ClientSpec
from rungbench.agents.loop_thread import LoopThread
from rungbench.agents.outcomes import CallFailure, Outcome
from rungbench.agents.protocol import (
    Request,
    Response,
    ToolCall,
    Usage,
    base_url_problem,
    owned_key_problem,
)
from rungbench.agents.spec import NO_KEY, Pricing
from rungbench.errors import InputError

T = TypeVar("T")

DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
BODY_LIMIT = 200
"""Characters of a provider's error body kept in a detail string (after scrubbing)."""
REDACTED = "[redacted]"
MIN_PIECE = 8
"""Any run of this many characters of the key (or of its base64) is scrubbed."""
MAX_CLIENT_PROCESSES = 16
"""The most helper processes a provider may send through."""


class OpenAIProvider:
    """A chat-completions model behind the Agent protocol.

    Raises :class:`CallFailure` for reliability outcomes (HTTP 4xx/5xx, a body that
    is not a chat completion, connection failures, timeouts); returns a
    :class:`Response` for every answer, which the runner then classifies.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key_env: str | None = DEFAULT_API_KEY_ENV,
        timeout_s: float = 120.0,
        params: dict[str, Any] | None = None,
        pricing: Pricing | None = None,
        environ: Mapping[str, str] | None = None,
        client_processes: int = 0,
        label: str | None = None,
        served: Mapping[str, Any] | None = None,
    ) -> None:
        env = os.environ if environ is None else environ
        key = NO_KEY if api_key_env is None else env.get(api_key_env)
        if not key:
            raise InputError(
                f"environment variable {api_key_env!r} holding the API key is unset or empty",
                field="api_key_env",
            )
        if not timeout_s > 0:  # NaN too
            raise InputError(f"timeout must be positive, got {timeout_s!r}", field="timeout_s")
        problem = base_url_problem(base_url)
        if problem is not None:
            raise InputError(f"base URL {problem}", field="base_url")
        if isinstance(client_processes, bool) or not isinstance(client_processes, int) or not (
                0 <= client_processes <= MAX_CLIENT_PROCESSES):
            raise InputError(f"client processes must be an integer in 0..{MAX_CLIENT_PROCESSES},"
                             f" got {client_processes!r}", field="client_processes")
        for name in params or {}:
            problem = owned_key_problem(name)
            if problem is not None:
                raise InputError(f"extra parameter {problem}", field="params")
        self.name = label if label is not None else f"openai:{model}"
        """What results call the agent: its label, else ``openai:MODEL``."""
        self.label = label
        self.served = None if served is None else dict(served)
        """What answers behind a loopback server this provider points at (its description),
        or None for an endpoint; a served agent's identity is that, not the server's URL,
        which changes from one process to the next."""
        self.model = model
        """The endpoint model id sent with every request."""
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.timeout_s = timeout_s
        self.params = dict(params or {})
        self.pricing = pricing or Pricing()
        self._secret = key if api_key_env is not None else ""  # a keyless bearer is no secret
        self._pieces = secret_pieces(key) if api_key_env is not None else frozenset()
        self.client_processes = client_processes
        """Helper processes sending the calls (0: this process, on its loop thread); an
        execution setting, not part of the provider's identity (:meth:`describe`)."""
        self._rebuild = partial(
            OpenAIProvider, model, base_url=base_url, api_key_env=api_key_env,
            timeout_s=timeout_s, params=self.params, pricing=self.pricing,
            # a key given in a private mapping (a loopback server's) travels with the
            # recipe; a key from the environment is read again where the recipe runs
            environ=None if environ is None else {api_key_env: key} if api_key_env else None,
            client_processes=client_processes, label=label, served=served)
        make: Callable[[], Any] = partial(async_client, key, base_url, timeout_s)
        if client_processes:
            spec = ClientSpec(model, base_url, key, timeout_s, self.params, self.pricing,
                              label, api_key_env is None)
            make = partial(ClientPool, spec, client_processes)
        self._loop = LoopThread(make, _close_resource, name="rungbench-openai")
        weakref.finalize(self, self._loop.close)  # an unclosed provider stops its loop too

    def recipe(self) -> Callable[[], OpenAIProvider]:
        """How another process builds this same provider (a worker of an executor)."""
        return self._rebuild

    def __repr__(self) -> str:
        return (
            f"OpenAIProvider(model={self.model!r}, base_url={self._scrub(self.base_url)!r}, "
            f"api_key_env={self.api_key_env!r})"
        )

    def describe(self) -> dict[str, Any]:
        """Return the provider's identity for a run manifest (never the key)."""
        return {
            "kind": "openai",
            "name": self.name,
            **({"label": self.label} if self.label is not None else {}),
            "model": self.model,
            **({"served": self.served} if self.served is not None
               else {"base_url": self._scrub(self.base_url)}),
            "api_key_env": self.api_key_env,
            "timeout_s": self.timeout_s,
            "params": self.params,
            "pricing": {
                "usd_per_mtok_in": self.pricing.usd_per_mtok_in,
                "usd_per_mtok_out": self.pricing.usd_per_mtok_out,
            },
            "sdk": f"openai {openai.__version__}",
            "sdk_max_retries": 0,
        }

    def close(self) -> None:
        """Close the SDK client and its connection pool, stop the loop thread (a later call
        opens them again)."""
        self._loop.close()

    def client_pids(self) -> list[int]:
        """Process ids of the helper processes sending the calls (empty without any, or
        before the first call starts them)."""
        if not self.client_processes:
            return []
        return self._loop.call(_helper_pids)

    def respond(self, request: Request) -> Response:
        """Send ``request`` once (no SDK retries) and return the parsed answer."""
        try:
            return self._loop.call(partial(self._send, request=request))
        except concurrent.futures.CancelledError:  # close() ended the call's loop
            failure = CallFailure(Outcome.NETWORK_ERROR, "the provider was closed during "
                                  "the call")
        raise failure

    async def respond_async(self, request: Request) -> Response:
        """:meth:`respond` as a coroutine, for code running on the provider's loop (a
        runner driven by :meth:`drive`)."""
        return await self._send(self._loop.resource(), request)

    async def _send(self, resource: openai.AsyncOpenAI | ClientPool, request: Request) -> Response:
        if isinstance(resource, ClientPool):  # a helper process runs _exchange
            return await resource.respond(request)
        return await self._exchange(resource, request)

    def drive(self, main: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """Run ``main()`` on the provider's loop thread (where :meth:`respond_async` may be
        awaited), blocking until it returns."""
        return self._loop.run(main)

    def _body(self, request: Request) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [m.to_json() for m in request.messages],
        }
        if request.tools:
            kwargs["tools"] = list(request.tools)
        if request.tool_choice is not None:
            kwargs["tool_choice"] = request.tool_choice
        return {**kwargs, **self.params}  # params never hold a request-owned key (checked)

    async def _exchange(self, client: openai.AsyncOpenAI, request: Request) -> Response:
        sent = self._body(request)
        # Every CallFailure is raised outside the ``except`` blocks, so it carries no
        # exception chain: the SDK's exceptions quote the response body (which a server
        # may echo the key into) and hold the request with its Authorization header.
        failure: CallFailure | None = None
        try:
            raw = await _post_raw(client, sent)
            text = raw.text
        except openai.APITimeoutError as exc:
            failure = (CallFailure(Outcome.TIMEOUT, f"no reply within {self.timeout_s}s")
                       if timed_out(exc) else
                       CallFailure(Outcome.NETWORK_ERROR, self._scrub(_cause(exc)),
                                   systematic=unreachable(exc)))
        except openai.APIConnectionError as exc:
            failure = CallFailure(Outcome.NETWORK_ERROR, self._scrub(_cause(exc)),
                                  systematic=unreachable(exc))
        except openai.APIStatusError as exc:
            error_body = exc.response.text
            failure = CallFailure(
                Outcome.PROVIDER_ERROR,
                _short_body(self._scrub(f"HTTP {exc.status_code}: {error_body}")),
                status=exc.status_code,
                retry_after=retry_after_seconds(dict(exc.response.headers)),
                systematic=refused_as_configured(exc.status_code, error_body),
            )
        except openai.OpenAIError as exc:  # any other SDK-detected failure of the exchange
            failure = CallFailure(
                Outcome.PROVIDER_ERROR, self._scrub(f"{type(exc).__name__}: {exc}")
            )
        if failure is not None:
            raise failure
        try:
            body = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            body = None
            failure = CallFailure(
                Outcome.PROVIDER_ERROR,
                _short_body(self._scrub(f"HTTP {raw.status_code} body is not JSON: {text}")),
                status=raw.status_code,
            )
        if failure is not None:
            raise failure
        if not isinstance(body, dict):
            raise CallFailure(
                Outcome.PROVIDER_ERROR, "body is not a JSON object", status=raw.status_code
            )
        return self._scrubbed(parse_completion(body, self.pricing))

    def _scrub(self, text: str) -> str:
        return scrub_secret(text, self._secret, self._pieces)

    def _scrubbed(self, response: Response) -> Response:
        shown = json.dumps(
            [
                response.text,
                response.refusal,
                [c.arguments for c in response.tool_calls],
                response.raw,
            ]
        )
        if self._scrub(shown) == shown:
            return response
        return Response(
            text=self._scrub(response.text) if response.text is not None else None,
            tool_calls=tuple(
                ToolCall(c.name, self._scrub(c.arguments)) for c in response.tool_calls
            ),
            usage=response.usage,
            refusal=self._scrub(response.refusal) if response.refusal is not None else None,
            raw=json.loads(self._scrub(json.dumps(response.raw))),
        )


def async_client(key: str, base_url: str, timeout_s: float) -> openai.AsyncOpenAI:
    """The SDK client a provider sends through (built on its loop thread): no SDK retries,
    aiohttp when installed, an unbounded pool (the caller bounds the calls in flight)."""
    try:
        http: Any = openai.DefaultAioHttpClient(
            limits=Limits(max_connections=0, max_keepalive_connections=None)  # 0: no cap
        )
    except RuntimeError:  # aiohttp is not installed: the SDK's own httpx transport
        http = openai.DefaultAsyncHttpxClient(
            limits=Limits(max_connections=None, max_keepalive_connections=None)
        )
    return openai.AsyncOpenAI(api_key=key, base_url=base_url, max_retries=0, timeout=timeout_s,
                              http_client=http)


def timed_out(exc: BaseException) -> bool:
    """Whether an SDK timeout error is a timeout.

    The SDK's aiohttp transport reports every lost connection (a server that closed the
    connection without answering, say) as a connect timeout; such an error is a network
    failure, told apart by the aiohttp connection error it was raised from.
    """
    try:
        from aiohttp import ClientConnectionError
    except ImportError:  # pragma: no cover - without aiohttp the httpx transport maps it
        return True
    seen: BaseException | None = exc
    for _ in range(8):  # the chain SDK error <- httpx error <- aiohttp error
        if seen is None or isinstance(seen, TimeoutError):
            return True
        if isinstance(seen, ClientConnectionError):
            return False
        seen = seen.__cause__ or seen.__context__
    return True


async def _post_raw(client: openai.AsyncOpenAI, body: dict[str, Any]) -> RAW_RESPONSE:
    # the SDK's own request path (auth, timeout, no retries, error mapping) with the body
    # as built by the provider, returned as the HTTP response it read
    return await client.post("/chat/completions", body=body, cast_to=RAW_RESPONSE)


async def _helper_pids(pool: ClientPool) -> list[int]:
    return pool.pids()


async def _close_resource(resource: openai.AsyncOpenAI | ClientPool) -> None:
    await resource.close()


def parse_completion(body: dict[str, Any], pricing: Pricing | None = None) -> Response:
    """Turn a chat-completion JSON body into a :class:`Response`.

    Raises :class:`CallFailure` (``provider_error``) when the body is not shaped like a
    chat completion: that is the provider failing, not the model answering.
    """
    problem: str | None = None
    try:
        choice = body["choices"][0]
        message = choice["message"]
        calls = tuple(
            ToolCall(str(c["function"]["name"]), _arguments_text(c["function"].get("arguments")))
            for c in (message.get("tool_calls") or [])
        )
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        problem = f"body is not a chat completion ({type(exc).__name__}: {exc})"
    if problem is not None:  # raised outside the handler: no chain back into the body
        raise CallFailure(Outcome.PROVIDER_ERROR, problem)
    usage = body.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    tokens_in = _int(usage.get("prompt_tokens"))
    tokens_out = _int(usage.get("completion_tokens"))
    content = message.get("content")
    refusal = message.get("refusal")
    return Response(
        text=content if isinstance(content, str) else None,
        tool_calls=calls,
        usage=Usage(tokens_in, tokens_out, (pricing or Pricing()).cost(tokens_in, tokens_out)),
        refusal=refusal if isinstance(refusal, str) and refusal else None,
        raw={"finish_reason": choice.get("finish_reason"), "model": body.get("model")},
    )


def retry_after_seconds(headers: dict[str, str], *, now: float | None = None) -> float | None:
    """Return the server's requested wait in seconds, or None.

    Reads ``retry-after-ms`` (milliseconds), then ``retry-after`` as seconds
    (integer or decimal) or an HTTP date (RFC 9110 §10.2.3).
    """
    lowered = {k.lower(): v for k, v in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _arguments_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _short_body(text: str) -> str:
    """Collapse whitespace and cut to :data:`BODY_LIMIT` characters (call after scrubbing)."""
    flat = " ".join(text.split())
    return flat[:BODY_LIMIT] + ("…" if len(flat) > BODY_LIMIT else "")


def secret_forms(secret: str) -> tuple[str, ...]:
    """The spellings of ``secret`` a server may echo: itself and its base64 at each alignment.

    Base64 of the key inside a longer string (``Basic user:key``, ``Bearer key``) depends on
    the key's byte offset modulo 3; for offsets 1 and 2 the first group, which mixes in the
    preceding bytes, is dropped.
    """
    raw = secret.encode("utf-8")
    forms = [secret]
    for offset in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            text = encode(b"\0" * offset + raw).decode("ascii").rstrip("=")
            forms.append(text[4:] if offset else text)
    return tuple(forms)


def secret_pieces(secret: str) -> frozenset[str]:
    """Every :data:`MIN_PIECE`-character run (lower-cased) of every form of ``secret``."""
    return frozenset(
        form.lower()[i : i + MIN_PIECE]
        for form in secret_forms(secret)
        for i in range(len(form) - MIN_PIECE + 1)
    )


def scrub_secret(text: str, secret: str, pieces: frozenset[str] | None = None) -> str:
    """Replace ``secret`` in ``text`` — any case, base64, or any run of 8+ characters of
    either — with ``[redacted]``.

    A key shorter than :data:`MIN_PIECE` is replaced whole (any case).
    """
    if len(secret) < MIN_PIECE:
        return re.sub(re.escape(secret), REDACTED, text, flags=re.IGNORECASE) if secret else text
    pieces = secret_pieces(secret) if pieces is None else pieces
    if text.isascii():  # the common case: the same fold, done in one call
        folded = text.lower()
    else:  # per character (no context-dependent forms), keeping indices
        folded = "".join(c.lower() if len(c.lower()) == 1 else c for c in text)
    covered = [False] * len(text)
    for i in range(len(text) - MIN_PIECE + 1):
        if folded[i : i + MIN_PIECE] in pieces:
            covered[i : i + MIN_PIECE] = [True] * MIN_PIECE
    if not any(covered):
        return text
    out: list[str] = []
    for i, char in enumerate(text):
        if not covered[i]:
            out.append(char)
        elif i == 0 or not covered[i - 1]:
            out.append(REDACTED)
    return "".join(out)


SYSTEMATIC_STATUS = (401, 403, 404)
"""HTTP statuses that answer every request alike (bad key, no access, no such route or
model): :attr:`CallFailure.systematic`."""
UNKNOWN_MODEL = re.compile(r"model.{0,80}(not found|does not exist|not exist|unknown|"
                           r"invalid|not supported)|(unknown|invalid) model", re.I | re.S)
"""A 400 body saying the model id is not served (servers differ in the status they use)."""


def refused_as_configured(status: int, body: str) -> bool:
    """Whether an HTTP error answers every request alike: 401, 403, 404, or a 400 naming an
    unknown model."""
    return status in SYSTEMATIC_STATUS or (status == 400 and bool(UNKNOWN_MODEL.search(body)))


def unreachable(exc: BaseException) -> bool:
    """Whether a connection error means nothing can be reached: the connection was refused
    or the host name does not resolve (the standard library's errors at the root of the
    SDK's chain, whatever its transport)."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, ConnectionRefusedError | socket.gaierror):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _cause(exc: BaseException) -> str:
    cause = exc.__cause__ or exc.__context__
    return f"{exc}" + (f" ({type(cause).__name__}: {cause})" if cause is not None else "")
