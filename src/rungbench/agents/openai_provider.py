"""An :class:`~rungbench.agents.protocol.Agent` for any OpenAI-compatible endpoint.

Talks through the official ``openai`` SDK (DeepSeek, vLLM, llama.cpp server,
Ollama, OpenAI). The SDK's own retries are off (``max_retries=0``): the runner
owns the registered retry sequence, so every attempt is visible and counted.

The API key is read from an environment variable whose *name* is configured;
the key itself is held only by the SDK client and is scrubbed from every
detail string this module produces. It never appears in ``repr``, in
:meth:`OpenAIProvider.describe`, or in a :class:`CallFailure` — which is raised
without an exception chain, so no traceback quotes the SDK's exceptions either.
"""

from __future__ import annotations

import email.utils
import json
import os
import time
from dataclasses import dataclass
from typing import Any, cast

import openai

from rungbench.agents.outcomes import CallFailure, Outcome
from rungbench.agents.protocol import Request, Response, ToolCall, Usage
from rungbench.errors import InputError

DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"


@dataclass(frozen=True)
class Pricing:
    """Token prices used to compute ``Usage.cost_usd``."""

    usd_per_mtok_in: float = 0.0
    """US dollars per million prompt tokens."""
    usd_per_mtok_out: float = 0.0
    """US dollars per million completion tokens."""

    def cost(self, tokens_in: int, tokens_out: int) -> float:
        """Return the cost in US dollars of one call."""
        return (tokens_in * self.usd_per_mtok_in + tokens_out * self.usd_per_mtok_out) / 1e6


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
        api_key_env: str = DEFAULT_API_KEY_ENV,
        timeout_s: float = 120.0,
        params: dict[str, Any] | None = None,
        pricing: Pricing | None = None,
        environ: dict[str, str] | None = None,
    ) -> None:
        env = os.environ if environ is None else environ
        key = env.get(api_key_env)
        if not key:
            raise InputError(
                f"environment variable {api_key_env!r} holding the API key is unset or empty",
                field="api_key_env",
            )
        if timeout_s <= 0:
            raise InputError(f"timeout must be positive, got {timeout_s!r}", field="timeout_s")
        self.name = f"openai:{model}"
        self.model = model
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.timeout_s = timeout_s
        self.params = dict(params or {})
        self.pricing = pricing or Pricing()
        self._secret = key
        self._client = openai.OpenAI(
            api_key=key, base_url=base_url, max_retries=0, timeout=timeout_s
        )

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
            "model": self.model,
            "base_url": self._scrub(self.base_url),
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
        """Close the SDK's HTTP connection pool."""
        self._client.close()

    def respond(self, request: Request) -> Response:
        """Send ``request`` once (no SDK retries) and return the parsed answer."""
        body = self._post(request)
        return self._scrubbed(parse_completion(body, self.pricing))

    def _post(self, request: Request) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [m.to_json() for m in request.messages],
        }
        if request.tools:
            kwargs["tools"] = list(request.tools)
        if request.tool_choice is not None:
            kwargs["tool_choice"] = request.tool_choice
        if self.params:
            kwargs["extra_body"] = dict(self.params)
        completions = cast(Any, self._client.chat.completions)
        # Every CallFailure is raised outside the ``except`` blocks, so it carries no
        # exception chain: the SDK's exceptions quote the response body (which a server
        # may echo the key into) and hold the request with its Authorization header.
        failure: CallFailure | None = None
        try:
            raw = completions.with_raw_response.create(**kwargs)
            text = raw.text
        except openai.APITimeoutError:
            failure = CallFailure(Outcome.TIMEOUT, f"no reply within {self.timeout_s}s")
        except openai.APIConnectionError as exc:
            failure = CallFailure(Outcome.NETWORK_ERROR, self._scrub(_cause(exc)))
        except openai.APIStatusError as exc:
            failure = CallFailure(
                Outcome.PROVIDER_ERROR,
                self._scrub(f"HTTP {exc.status_code}: {_short_body(exc.response.text)}"),
                status=exc.status_code,
                retry_after=retry_after_seconds(dict(exc.response.headers)),
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
                self._scrub(f"HTTP {raw.status_code} body is not JSON: {_short_body(text)}"),
                status=raw.status_code,
            )
        if failure is not None:
            raise failure
        if not isinstance(body, dict):
            raise CallFailure(
                Outcome.PROVIDER_ERROR, "body is not a JSON object", status=raw.status_code
            )
        return body

    def _scrub(self, text: str) -> str:
        return text.replace(self._secret, "[redacted]")

    def _scrubbed(self, response: Response) -> Response:
        if self._secret not in json.dumps(
            [
                response.text,
                response.refusal,
                [c.arguments for c in response.tool_calls],
                response.raw,
            ]
        ):
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
    flat = " ".join(text.split())
    return flat[:200] + ("…" if len(flat) > 200 else "")


def _cause(exc: BaseException) -> str:
    cause = exc.__cause__ or exc.__context__
    return f"{exc}" + (f" ({type(cause).__name__}: {cause})" if cause is not None else "")
