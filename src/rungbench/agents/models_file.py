"""A models file: agent specs named by label (docs/ARCHITECTURE.md, "Agents").

``models.toml``::

    [models.my-model]                      # the label results use
    model = "gpt-4o-mini-2024-07-18"       # the endpoint model id sent with each request
    base_url = "http://127.0.0.1:8000/v1"
    api_key_env = "MY_ENDPOINT_KEY"        # the variable holding the key (never the key)
    # no_api_key = true                    # a keyless endpoint instead
    timeout_s = 60
    client_processes = 0
    usd_per_mtok_in = 0.15
    usd_per_mtok_out = 0.60

    [models.my-model.params]               # sent with every request
    temperature = 0
    max_tokens = 512
    seed = 7

    [models.planted-diffuse]               # a domain's planted mechanism, on loopback
    kind = "planted"
    model = "e023:diffuse"
    seed = 3
    # usd_per_mtok_in = 0.15               # prices it stands in for (optional)

Every key is checked; an unknown one is refused naming it (a misspelt ``temprature``
never goes silently unsent). The file's digest is that of its specs' canonical JSON,
so a comment or key order does not change it, and it never holds a key's value.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rungbench.agents.spec import KINDS, AgentSpec, Pricing, check_label
from rungbench.errors import InputError
from rungbench.evidence.canonical import digest

MODELS_VERSION = "rungbench.models/1"
"""Schema name and version of a models file's JSON form (what its digest covers)."""
KEYS: dict[str, type | tuple[type, ...]] = {
    "kind": str, "model": str, "base_url": str, "api_key_env": str, "no_api_key": bool,
    "timeout_s": (int, float), "client_processes": int, "usd_per_mtok_in": (int, float),
    "usd_per_mtok_out": (int, float), "seed": int, "params": dict}
"""Every key an entry may hold, with its TOML type."""
PRICE_KEYS = ("usd_per_mtok_in", "usd_per_mtok_out")
"""Keys of the registered prices (any kind: a planted or reference agent may stand in for a
priced model, and its runs then record the prices)."""


@dataclass(frozen=True)
class ModelsFile:
    """The agents of a models file (or of command-line ``--model`` specs), by label."""

    specs: tuple[AgentSpec, ...]
    """The agents, in file order."""
    source: str = "<command line>"
    """Where they were read from."""

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for spec in self.specs:
            if spec.label in seen:
                raise InputError(f"agent label {spec.label!r} is named twice",
                                 path=self.source, field=f"models.{spec.label}")
            seen.add(spec.label)

    def __iter__(self) -> Iterator[AgentSpec]:
        return iter(self.specs)

    def __len__(self) -> int:
        return len(self.specs)

    @property
    def labels(self) -> tuple[str, ...]:
        """The labels, in order."""
        return tuple(s.label for s in self.specs)

    def get(self, label: str) -> AgentSpec:
        """The spec labelled ``label``; an unknown label is refused listing the known ones."""
        for spec in self.specs:
            if spec.label == label:
                return spec
        known = ", ".join(self.labels) or "none"
        raise InputError(f"no agent labelled {label!r} in {self.source} (labels: {known})",
                         field="model")

    def to_json(self) -> dict[str, Any]:
        """The file's specs as canonical JSON input (what :meth:`digest` covers)."""
        return {"version": MODELS_VERSION,
                "models": {s.label: s.to_json() for s in self.specs}}

    def digest(self) -> str:
        """``sha256:<hex>`` of :meth:`to_json`."""
        return digest(self.to_json())

    def only(self, labels: list[str] | tuple[str, ...]) -> ModelsFile:
        """The file restricted to ``labels`` (each must be there), in that order."""
        return ModelsFile(tuple(self.get(label) for label in labels), self.source)


def load_models(path: Path) -> ModelsFile:
    """Read and check the models file at ``path``."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read models file: {exc.strerror}", path=str(path)) from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", path=str(path)) from exc
    return parse_models(text, source=str(path))


def parse_models(text: str, *, source: str) -> ModelsFile:
    """Parse models-file TOML ``text``; every error names ``source`` and the field."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"invalid TOML: {exc}", path=source) from exc
    unknown = sorted(set(document) - {"models"})
    if unknown:
        raise InputError(f"unknown top-level key {unknown[0]!r} (a models file holds "
                         "[models.LABEL] tables)", path=source, field=unknown[0])
    models = document.get("models")
    if not isinstance(models, dict) or not models:
        raise InputError("no [models.LABEL] table", path=source, field="models")
    specs = []
    for label, entry in models.items():
        if not isinstance(entry, dict):
            raise InputError(f"models.{label} must be a table", path=source,
                             field=f"models.{label}")
        try:
            specs.append(spec_of(label, entry))
        except InputError as exc:
            raise InputError(_bare(exc), path=source,
                             field=f"models.{label}" + (f".{exc.field}" if exc.field else ""),
                             ) from None
    return ModelsFile(tuple(specs), source)


def _bare(exc: InputError) -> str:
    """An error's message without the ``(field …)`` suffix (the caller names the field)."""
    text = str(exc)
    suffix = f" (field {exc.field!r})" if exc.field else ""
    return text.removesuffix(suffix)


def spec_of(label: str, entry: Mapping[str, Any]) -> AgentSpec:
    """The spec of one ``[models.LABEL]`` table."""
    check_label(label)
    for key, value in entry.items():
        kind = KEYS.get(key)
        if kind is None:
            raise InputError(f"unknown key {key!r}; a model entry takes "
                             f"{', '.join(sorted(KEYS))}", field=key)
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
            raise InputError(f"{key} has the wrong type: {value!r}", field=key)
    kind = entry.get("kind", "openai")
    if kind not in KINDS:
        raise InputError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}", field="kind")
    if "model" not in entry:
        raise InputError("missing key 'model' (the endpoint model id, or the planted or "
                         "reference agent's name)", field="model")
    if kind != "openai":
        extra = sorted(set(entry) - {"kind", "model", "seed", "params", *PRICE_KEYS})
        if extra:
            raise InputError(f"a {kind} agent is served on loopback: {extra[0]!r} does not "
                             "apply", field=extra[0])
        return AgentSpec(label, kind, entry["model"], params=entry.get("params", {}),
                         seed=entry.get("seed", 0), pricing=_pricing(entry))
    if "seed" in entry:
        raise InputError("seed is for planted and reference agents; an endpoint's sampling "
                         "seed goes in [params]", field="seed")
    keyless = bool(entry.get("no_api_key", False))
    if keyless and "api_key_env" in entry:
        raise InputError("give api_key_env or no_api_key = true, not both", field="no_api_key")
    return AgentSpec(
        label, kind, entry["model"], base_url=entry.get("base_url"),
        api_key_env=entry.get("api_key_env"), keyless=keyless,
        params=entry.get("params", {}), timeout_s=entry.get("timeout_s", 120.0),
        client_processes=entry.get("client_processes", 0),
        pricing=_pricing(entry))


def _pricing(entry: Mapping[str, Any]) -> Pricing:
    return Pricing(entry.get("usd_per_mtok_in", 0.0), entry.get("usd_per_mtok_out", 0.0))


def models_toml(specs: list[AgentSpec] | tuple[AgentSpec, ...]) -> str:
    """A models file holding ``specs`` (what :func:`parse_models` reads back to them)."""
    lines: list[str] = []
    for spec in specs:
        lines.append(f"[models.{_toml_value(spec.label)}]")
        entry: dict[str, Any] = {"kind": spec.kind, "model": spec.model}
        if spec.kind == "openai":
            entry.update(base_url=spec.base_url, timeout_s=float(spec.timeout_s),
                         client_processes=spec.client_processes,
                         usd_per_mtok_in=float(spec.pricing.usd_per_mtok_in),
                         usd_per_mtok_out=float(spec.pricing.usd_per_mtok_out))
            entry.update({"no_api_key": True} if spec.keyless
                         else {"api_key_env": spec.api_key_env})
        else:
            entry["seed"] = spec.seed
            if spec.pricing != Pricing():
                entry.update(spec.pricing.to_json())
        lines += [f"{key} = {_toml_value(value)}" for key, value in entry.items()]
        if spec.params:
            lines.append(f"[models.{_toml_value(spec.label)}.params]")
            lines += [f"{key} = {_toml_value(value)}" for key, value in spec.params.items()]
        lines.append("")
    return "\n".join(lines)


def _toml_value(value: Any) -> str:
    import json

    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(v)}"
                               for k, v in value.items()) + "}"
    raise InputError(f"no TOML form for {value!r}", field="params")
