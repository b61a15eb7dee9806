"""Ablation arms as registered presets (seed 003, "Baseline and ablation matrix").

An arm fixes what differs between conditions: the system prompt, which causal facts the
agent can reach (public case only · the world's edges as sentences · the same edges in a
graph store behind ``causal()``), whose edges those are (a thinned production copy or the
true mechanism), the ``causal()`` query path, the other tools, the worker protocol text and
the budgets. Everything else — model, worlds, evidence, initial state — is held equal by
construction: one agent serves every arm of a comparison.

Arms live in TOML (``rungbench/designs/causal_arms.toml`` or a user's file of the same
shape); :func:`load_matrix` parses and checks them, and every run records the preset's digest
and the digest of the arm it ran.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rungbench.design.registry import RegisteredDesign, load_design, load_design_file, require
from rungbench.errors import InputError
from rungbench.evidence.canonical import digest

FACTS = ("public", "text", "graph")
"""Causal facts an arm makes available."""
CONTENTS = ("production", "oracle")
"""Whose edges the text or graph holds."""
QUERIES = ("naive", "fixed")
"""The ``causal()`` query path (seed's production query or proposal P1)."""
TOOLS = ("causal", "calc", "identify")
"""Tools an arm may offer besides ``submit_answer``."""
DEFAULT_PRESET = "causal_arms"


@dataclass(frozen=True)
class Arm:
    """One registered arm."""

    name: str
    """Arm id (``A0`` … ``A11-protocol``); unique within a matrix."""
    label: str
    """Human label."""
    model: str
    """Model role; one agent serves every arm, so this is recorded, never switched on."""
    system_prompt: str
    """The exact system prompt text (the preset's prompt plus the worker protocol, if any)."""
    facts: str
    """One of :data:`FACTS`."""
    content: str | None
    """One of :data:`CONTENTS` when facts are text or graph; None for public."""
    query: str | None
    """One of :data:`QUERIES` when the arm offers ``causal``; None otherwise."""
    tools: tuple[str, ...]
    """Tools offered besides ``submit_answer`` (a subset of :data:`TOOLS`)."""
    protocol: str | None
    """Name of the worker protocol included in the prompt, or None."""
    max_tool_calls: int
    """Tool-call budget per cell."""
    max_tokens: int
    """Token budget (prompt + completion over all turns) per cell."""
    production_keep: float
    """Share of the world's edges a production copy keeps (deterministic per edge)."""
    memory: str | None = None
    """Directory the agent side keeps state in across items (scanned for contamination after
    every validation run); None when the arm declares none."""

    def to_json(self) -> dict[str, Any]:
        """Return the arm as a JSON-ready mapping."""
        out = asdict(self)
        out["tools"] = list(self.tools)
        return out

    def digest(self) -> str:
        """``sha256:<hex>`` of the arm's canonical JSON (recorded in every run)."""
        return digest(self.to_json())


@dataclass(frozen=True)
class Comparison:
    """One row of the seed's "what each comparison isolates" table."""

    a: str
    """The arm whose mean is first in a − b."""
    b: str
    """The arm subtracted."""
    isolates: str
    """What the difference isolates."""


@dataclass(frozen=True)
class Question:
    """One of the seed's three questions and the comparison that answers it."""

    id: str
    """``Q1``, ``Q2``, ``Q3``."""
    text: str
    """The question."""
    a: str
    """Arm first in the delta."""
    b: str
    """Arm subtracted."""
    endpoint: str
    """Endpoint the delta is taken on."""


@dataclass(frozen=True)
class Matrix:
    """A parsed arm preset."""

    name: str
    """Preset name."""
    digest: str
    """Digest of the preset document."""
    arms: dict[str, Arm]
    """Arms by name, in file order."""
    comparisons: tuple[Comparison, ...]
    """The isolation table."""
    questions: tuple[Question, ...]
    """The three questions."""
    samples: int
    """Default repeated samples per case."""
    items_per_world: int
    """Default cases per world."""

    def arm(self, name: str) -> Arm:
        """Return arm ``name``; InputError naming the known arms otherwise."""
        if name not in self.arms:
            raise InputError(f"unknown arm {name!r}; known: {', '.join(self.arms)}",
                             field="arm")
        return self.arms[name]


def load_matrix(source: str | Path = DEFAULT_PRESET) -> Matrix:
    """Load a registered preset by name, or a TOML file by path, and check every arm."""
    reg = (load_design_file(Path(source)) if isinstance(source, Path) or str(source).endswith(
        ".toml") else load_design(str(source)))
    return parse_matrix(reg)


def parse_matrix(reg: RegisteredDesign) -> Matrix:
    """Check a parsed preset; InputError naming the file and field on any bad value."""
    defaults = reg.section("defaults")
    prompts = reg.section("prompts")
    protocols = reg.document.get("protocols", {})
    src = reg.source
    arms: dict[str, Arm] = {}
    for i, table in enumerate(reg.table_list("arms")):
        arm = _arm(table, defaults, prompts, protocols, src, f"arms[{i}]")
        if arm.name in arms:
            raise InputError(f"duplicate arm {arm.name!r}", path=src, field=f"arms[{i}].name")
        arms[arm.name] = arm
    comparisons = tuple(
        Comparison(_known(t, "a", arms, src, f"comparisons[{i}]"),
                   _known(t, "b", arms, src, f"comparisons[{i}]"),
                   require(t, "isolates", str, source=src, prefix=f"comparisons[{i}]"))
        for i, t in enumerate(reg.document.get("comparisons", [])))
    questions = tuple(
        Question(require(t, "id", str, source=src, prefix=f"questions[{i}]"),
                 require(t, "text", str, source=src, prefix=f"questions[{i}]"),
                 _known(t, "a", arms, src, f"questions[{i}]"),
                 _known(t, "b", arms, src, f"questions[{i}]"),
                 require(t, "endpoint", str, source=src, prefix=f"questions[{i}]"))
        for i, t in enumerate(reg.document.get("questions", [])))
    return Matrix(reg.name, reg.digest, arms, comparisons, questions,
                  _positive(defaults, "samples", src), _positive(defaults, "items_per_world", src))


def _known(table: dict[str, Any], key: str, arms: dict[str, Arm], src: str, prefix: str) -> str:
    name = require(table, key, str, source=src, prefix=prefix)
    if name not in arms:
        raise InputError(f"names unknown arm {name!r}", path=src, field=f"{prefix}.{key}")
    return str(name)


def _positive(table: dict[str, Any], key: str, src: str) -> int:
    value = require(table, key, int, source=src, prefix="defaults")
    if value < 1:
        raise InputError(f"must be >= 1, got {value}", path=src, field=f"defaults.{key}")
    return int(value)


def _choice(table: dict[str, Any], key: str, allowed: tuple[str, ...], src: str,
            prefix: str) -> str:
    value = require(table, key, str, source=src, prefix=prefix)
    if value not in allowed:
        raise InputError(f"{value!r} is not one of {', '.join(allowed)}", path=src,
                         field=f"{prefix}.{key}")
    return str(value)


def _arm(table: dict[str, Any], defaults: dict[str, Any], prompts: dict[str, Any],
         protocols: dict[str, Any], src: str, prefix: str) -> Arm:
    merged = {**{k: v for k, v in defaults.items() if k in (
        "model", "max_tool_calls", "max_tokens", "production_keep")}, **table}
    name = require(merged, "name", str, source=src, prefix=prefix)
    prompt_name = _choice(merged, "prompt", tuple(prompts), src, prefix)
    facts = _choice(merged, "facts", FACTS, src, prefix)
    tools = require(merged, "tools", list, source=src, prefix=prefix)
    for tool in tools:
        if tool not in TOOLS:
            raise InputError(f"unknown tool {tool!r}; known: {', '.join(TOOLS)}", path=src,
                             field=f"{prefix}.tools")
    if len(set(tools)) != len(tools):
        raise InputError("a tool is listed twice", path=src, field=f"{prefix}.tools")
    content = _choice(merged, "content", CONTENTS, src, prefix) if facts != "public" else None
    if facts == "graph" and "causal" not in tools:
        raise InputError("facts = 'graph' needs the causal tool (the graph is reached only "
                         "through it)", path=src, field=f"{prefix}.tools")
    if facts != "graph" and "causal" in tools:
        raise InputError("the causal tool needs facts = 'graph'", path=src,
                         field=f"{prefix}.tools")
    query = _choice(merged, "query", QUERIES, src, prefix) if "causal" in tools else None
    protocol = merged.get("protocol")
    text = str(prompts[prompt_name])
    if protocol is not None:
        if not isinstance(protocol, str) or protocol not in protocols:
            raise InputError(f"unknown protocol {protocol!r}", path=src,
                             field=f"{prefix}.protocol")
        text = f"{text}\n\n{protocols[protocol]}"
    keep = require(merged, "production_keep", (int, float), source=src, prefix=prefix)
    if not 0.0 <= float(keep) <= 1.0:
        raise InputError(f"must be in [0, 1], got {keep}", path=src,
                         field=f"{prefix}.production_keep")
    calls = require(merged, "max_tool_calls", int, source=src, prefix=prefix)
    tokens = require(merged, "max_tokens", int, source=src, prefix=prefix)
    if calls < 0 or tokens < 1:
        raise InputError("budgets must be max_tool_calls >= 0 and max_tokens >= 1", path=src,
                         field=f"{prefix}.max_tokens")
    return Arm(
        name=str(name), label=str(merged.get("label", name)),
        model=str(require(merged, "model", str, source=src, prefix=prefix)),
        system_prompt=text, facts=facts, content=content, query=query, tools=tuple(tools),
        protocol=protocol, max_tool_calls=int(calls), max_tokens=int(tokens),
        production_keep=float(keep),
        memory=_optional_str(merged, "memory", src, prefix),
    )


def _optional_str(table: dict[str, Any], key: str, src: str, prefix: str) -> str | None:
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise InputError(f"expected a non-empty string, got {value!r}", path=src,
                         field=f"{prefix}.{key}")
    return value
