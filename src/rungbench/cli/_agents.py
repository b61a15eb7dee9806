"""The one option group for naming an agent, shared by every command that talks to one.

``--model`` (alias ``--agent``) is always an agent: a label from ``--models FILE``, or a
spec ``openai:MODEL`` (with ``--base-url``), ``planted:NAME``, ``reference:NAME``. The
endpoint options (``--base-url``, ``--api-key-env`` / ``--no-api-key``, ``--param``,
``--client-processes``, ``--timeout``, the prices) and ``--label`` shape a one-off spec
given on the command line; a models file carries them per label instead. Library errors
name spec fields (``field="base_url"``); :data:`FLAGS` maps them to these options.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import typer

from rungbench.errors import InputError

# ---------------------------------------------------------------- option checks (exit 2)


def check_params(items: list[str] | None) -> list[str] | None:
    """``--param`` callback: KEY=VALUE items whose keys the frozen request does not own."""
    from rungbench.jobs.runs import parse_params

    try:
        parse_params(list(items or []))
    except InputError as exc:
        raise typer.BadParameter(str(exc).removesuffix(" (field 'params')")) from None
    return items


def check_base_url(value: str | None) -> str | None:
    """``--base-url`` callback: only http:// and https:// URLs with a host."""
    from rungbench.agents.protocol import base_url_problem

    problem = base_url_problem(value) if value is not None else None
    if problem is not None:
        raise typer.BadParameter(problem)
    return value


def check_backoff(value: str) -> str:
    """``--backoff`` callback: comma-separated non-negative, finite seconds."""
    from rungbench.jobs.runs import seconds

    try:
        waits = seconds(value)
    except InputError as exc:
        raise typer.BadParameter(str(exc)) from None
    if any(not (math.isfinite(w) and w >= 0) for w in waits):
        raise typer.BadParameter(f"waits must be finite and non-negative, got {value!r}")
    return value


def positive_seconds(value: float) -> float:
    """``--timeout`` callback: a finite number of seconds above zero."""
    if not (math.isfinite(value) and value > 0):
        raise typer.BadParameter(f"must be a finite number of seconds above 0, got {value!r}")
    return value


def price(value: float) -> float:
    """Price callback: a finite, non-negative number of US dollars."""
    if not (math.isfinite(value) and value >= 0):
        raise typer.BadParameter(f"must be a finite price of at least 0, got {value!r}")
    return value


# ---------------------------------------------------------------- the options

ModelOpt = Annotated[list[str] | None, typer.Option(
    "--model", "--agent",
    help="The agent: a label from --models, or openai:MODEL (with --base-url), planted:NAME, "
    "reference:NAME (given once).")]
ModelsOpt = Annotated[Path | None, typer.Option(
    "--models", help="Models file (TOML): agents by label with endpoint, key variable, "
    "parameters and prices.")]
BaseUrlOpt = Annotated[str | None, typer.Option(
    "--base-url", callback=check_base_url,
    help="OpenAI-compatible base URL (http:// or https://) of an openai:MODEL agent.")]
KeyEnvOpt = Annotated[str | None, typer.Option(
    "--api-key-env", help="Environment variable holding the key (default OPENAI_API_KEY).")]
NoKeyOpt = Annotated[bool, typer.Option(
    "--no-api-key", help="The endpoint takes no key (none is read).")]
ParamOpt = Annotated[list[str] | None, typer.Option(
    "--param", callback=check_params,
    help="Request field KEY=JSON (temperature=0, max_tokens=512, seed=7, "
    "reasoning_effort=low); repeatable. Keys the frozen request owns (messages, tools, "
    "tool_choice, model) are refused.")]
ProcessesOpt = Annotated[int, typer.Option(
    "--client-processes", min=0, max=16,
    help="Helper processes that send the HTTP calls (0: this process). For a fast endpoint "
    "at high concurrency: the SDK's work leaves the runner's interpreter lock.")]
TimeoutOpt = Annotated[float, typer.Option("--timeout", callback=positive_seconds,
                                           help="Seconds per request.")]
PriceInOpt = Annotated[float, typer.Option("--usd-per-mtok-in", callback=price,
                                           help="Prompt price (USD per million tokens).")]
PriceOutOpt = Annotated[float, typer.Option("--usd-per-mtok-out", callback=price,
                                            help="Completion price (USD per million tokens).")]
LabelOpt = Annotated[str | None, typer.Option(
    "--label", help="What results call a --model spec (default: from its name).")]
MaxAttemptsOpt = Annotated[int, typer.Option(
    "--max-attempts", min=1,
    help="Attempts per cell in each session (fixed when the run is created); a cell still "
    "failing has no final outcome and is retried by a resume.")]
BackoffOpt = Annotated[str, typer.Option(
    "--backoff", callback=check_backoff,
    help="Waits before attempt 2, 3, … in seconds (last repeats; fixed at creation).")]
StopAfterOpt = Annotated[int | None, typer.Option(
    "--stop-after", min=0, max=1000,
    help="Stop the run after this many cells in a row fail systematically (nothing "
    "listening, unknown host, HTTP 401/403/404, unknown model); 0: never. Default: the "
    "retry policy's (3).")]

def retry_policy(*, max_attempts: int | None = None, backoff: str | None = None,
                 stop_after: int | None = None) -> Any:
    """The :class:`~rungbench.execute.policy.RetryPolicy` the options give (an option left
    out keeps the policy's default)."""
    from rungbench.execute.policy import RetryPolicy
    from rungbench.jobs.runs import seconds

    settings: dict[str, Any] = {}
    if max_attempts is not None:
        settings["max_attempts"] = max_attempts
    if backoff is not None:
        settings["backoff_s"] = seconds(backoff)
    if stop_after is not None:
        settings["stop_after_systematic"] = stop_after
    return RetryPolicy(**settings)


FLAGS = {"model": "--model", "models": "--models", "base_url": "--base-url",
         "api_key_env": "--api-key-env", "keyless": "--no-api-key", "params": "--param",
         "client_processes": "--client-processes", "timeout_s": "--timeout",
         "usd_per_mtok_in": "--usd-per-mtok-in", "usd_per_mtok_out": "--usd-per-mtok-out",
         "label": "--label", "seed": "--seed", "agent": "--model"}
"""Spec fields (as library errors name them) → the option that sets them."""


def as_usage(exc: InputError) -> typer.BadParameter:
    """A spec error as a usage error naming the option (exit 2)."""
    field = (exc.field or "").split(".")[0]
    flag = FLAGS.get(field)
    text = str(exc).removesuffix(f" (field {exc.field!r})") if exc.field else str(exc)
    return typer.BadParameter(text, param_hint=flag or exc.field)


def agent_spec(model: str | list[str] | None, models: Path | None = None, *,
               base_url: str | None = None,
               api_key_env: str | None = None, no_api_key: bool = False,
               params: list[str] | None = None, client_processes: int = 0,
               timeout: float = 120.0, usd_in: float = 0.0, usd_out: float = 0.0,
               label: str | None = None, seed: int = 0, default: str | None = None,
               reference_params: dict[str, Any] | None = None, as_json: bool = False) -> Any:
    """The :class:`~rungbench.agents.spec.AgentSpec` the options name (a usage error,
    exit 2, naming the option when they do not name one); ``reference_params`` are added
    to a one-off reference agent's parameters (``nodes`` of ``reference:engine``, say)."""
    from rungbench.agents.models_file import load_models
    from rungbench.agents.spec import Pricing, is_spec_text, parse_agent
    from rungbench.jobs.runs import parse_params

    one_off = {"--base-url": base_url, "--api-key-env": api_key_env,
               "--no-api-key": no_api_key or None, "--param": params or None,
               "--client-processes": client_processes or None, "--label": label}
    try:
        given_models = [model] if isinstance(model, str) else list(model or [])
        if len(given_models) > 1:
            raise InputError(f"give one agent, not {len(given_models)} "
                             f"({', '.join(given_models)})", field="model")
        chosen = given_models[0] if given_models else default
        if chosen is None:
            if models is not None:
                file = load_models(models)
                if len(file) == 1:
                    return file.specs[0]
                raise InputError(f"{models} names {len(file)} agents; pick one with --model "
                                 f"({', '.join(file.labels)})", field="model")
            raise InputError("name the agent: --model LABEL with --models FILE, or "
                             "--model openai:MODEL --base-url URL", field="model")
        if not is_spec_text(chosen):
            given = sorted(flag for flag, value in one_off.items() if value is not None)
            if given:
                raise InputError(f"{given[0]} shapes a --model spec (openai:MODEL); a label's "
                                 "agent is set in its models file", field="model")
            if models is None:
                raise InputError(f"--model {chosen!r} is a label: give the models file that "
                                 "names it (--models FILE), or a spec such as openai:MODEL",
                                 field="models")
            return load_models(models).get(chosen)
        if not (math.isfinite(timeout) and timeout > 0):
            raise InputError(f"must be a positive number of seconds, got {timeout!r}",
                             field="timeout_s")
        if no_api_key and api_key_env is not None:
            raise InputError("give --api-key-env or --no-api-key, not both", field="keyless")
        kind = chosen.partition(":")[0]
        if kind != "openai":
            given = sorted(f for f, v in one_off.items() if v is not None and f != "--label"
                           and f != "--param")
            if given:
                raise InputError(f"{given[0]} is for openai:MODEL agents; {chosen} is served "
                                 "on loopback", field="base_url")
        merged = {**((reference_params or {}) if kind == "reference" else {}),
                  **parse_params(list(params or []))}
        return parse_agent(chosen, label=label, base_url=base_url, api_key_env=api_key_env,
                           keyless=no_api_key, params=merged, timeout_s=timeout,
                           client_processes=client_processes,
                           pricing=Pricing(usd_in, usd_out), seed=seed)
    except InputError as exc:
        if exc.path is not None:  # a models file's error names the file: one line, exit 1
            from rungbench.cli._common import fail

            fail(exc, as_json=as_json)
        raise as_usage(exc) from None


def stopped_message(stopped: dict[str, Any], spec: Any) -> str:
    """Why a run stopped early, naming the endpoint: the failure's HTTP status and the first
    line of its body (or the network error), the endpoint model id and URL."""
    status = stopped.get("status")
    detail = str(stopped.get("detail") or "").strip().splitlines()
    first = detail[0] if detail else ""
    what = f"HTTP {status}" if status is not None else str(stopped.get("outcome"))
    where = (f"model {spec.model!r} at {spec.base_url}" if getattr(spec, "kind", "") == "openai"
             else f"agent {spec}")
    return (f"stopped after {stopped.get('cells')} cells in a row failed the same way ({what}: "
            f"{first[:200]}) from {where}")


def incomplete_message(summary: dict[str, Any], spec: Any, resume: str) -> str:
    """The one line saying how many cells of a run have no final outcome, why, and the
    command that resumes it."""
    missing = int(summary["cells"]) - int(summary["cells_final"])
    why = ", ".join(f"{n} {o}" for o, n in sorted(summary.get("unresolved_outcomes", {}).items()))
    stopped = summary.get("stopped")
    head = f"{stopped_message(stopped, spec)}; " if stopped else ""
    return (f"{head}run {summary['run_id']}: {missing} of {summary['cells']} cells have no "
            f"final outcome" + (f" (last: {why})" if why else "") + f"; resume: {resume}")
