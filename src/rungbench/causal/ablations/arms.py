"""Ablation arms as registered presets (seed 003, "Baseline and ablation matrix").

An arm fixes what differs between conditions: the system prompt, which causal facts the
agent can reach (public case only · the world's edges as sentences · the same edges in a
graph store behind ``causal()``), whose edges those are (a thinned production copy or the
true mechanism), the ``causal()`` query path, the other tools, the worker protocol text and
the budgets, the counterfactual module (A4 removes it), the routing gate in front of the graph
tools (A6, proposal P6) and whether the store's rows are typed (A8, proposal P5). Everything
else — model, worlds, evidence, initial state — is held equal by
construction: one agent serves every arm of a comparison.

Arms live in TOML (``rungbench/designs/causal_arms.toml`` or a user's file of the same
shape); :func:`load_matrix` parses and checks them, and every run records the preset's digest
and the digest of the arm it ran.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import Field, model_validator

from rungbench.design.registry import RegisteredDesign, load_design, load_design_file
from rungbench.design.schema import (
    KeyRefusal,
    PresetModel,
    key,
    parse_preset,
    require_distinct,
)
from rungbench.errors import InputError
from rungbench.evidence.canonical import digest

FACTS = ("public", "text", "graph")
"""Causal facts an arm makes available."""
CONTENTS = ("production", "oracle")
"""Whose edges the text or graph holds."""
QUERIES = ("naive", "fixed")
"""The ``causal()`` query path (seed's production query or proposal P1)."""
TOOLS = ("causal", "counterfactual", "calc", "identify")
"""Tools an arm may offer besides ``submit_answer``."""
GRAPH_TOOLS = ("causal", "counterfactual", "identify")
"""Tools that read the arm's graph store; a routing gate offers them only on flagged cases."""
EDGE_KINDS = ("untyped", "typed")
"""How the production store holds its rows: untyped (every row a causal claim, as the legacy
table) or typed (proposal P5: each row keeps its relation kind)."""
GATES = ("detector_classifier_v1",)
"""Frozen opportunity detectors a routing gate may use (causal/instrument/detector.py)."""
DEFAULT_PRESET = "causal_arms"
T = TypeVar("T")


@dataclass(frozen=True)
class Arm:
    """One registered arm."""

    name: str
    """Arm id (``A0`` … ``A11-protocol``); unique within a matrix."""
    label: str
    """Human label."""
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
    production_associations: float = 0.0
    """Share of the world's confounded pairs a production copy also holds as association
    rows (deterministic per pair)."""
    edges: str | None = None
    """One of :data:`EDGE_KINDS` when facts are text or graph; None for public."""
    gate: str | None = None
    """The routing gate's detector (one of :data:`GATES`), or None for no gate."""
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
class ValidityFloor:
    """The registered floor below which an arm gives no verdict (``[analysis]``)."""

    min_valid_answers: int
    """Fewest valid answers (cells not ``invalid`` or ``missing``) an arm needs."""
    min_valid_share: float
    """Smallest share of an arm's cells that must be valid answers."""


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
    floor: ValidityFloor
    """Valid answers an arm needs before any comparison using it gives a verdict."""
    id: str = ""
    """The preset's ``[design] id``, recorded in the ablation report."""

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
    """Check a parsed preset against :class:`AblationPreset`; InputError naming the file and
    key on any bad or unknown value."""
    preset = parse_preset(AblationPreset, reg.document, source=reg.source)
    arms = {t.name: _arm(t, preset) for t in preset.arms}
    comparisons = tuple(Comparison(c.a, c.b, c.isolates) for c in preset.comparisons)
    questions = tuple(Question(q.id, q.text, q.a, q.b, q.endpoint) for q in preset.questions)
    floor = ValidityFloor(preset.analysis.min_valid_answers, preset.analysis.min_valid_share)
    return Matrix(reg.name, reg.digest, arms, comparisons, questions,
                  preset.defaults.samples, preset.defaults.items_per_world, floor,
                  preset.design.id)


def _arm(table: ArmTable, preset: AblationPreset) -> Arm:
    d = preset.defaults
    text = preset.prompts[table.prompt]
    if table.protocol is not None:
        text = f"{text}\n\n{preset.protocols[table.protocol]}"
    return Arm(
        name=table.name, label=table.label or table.name, system_prompt=text,
        facts=table.facts, content=table.content if table.facts != "public" else None,
        query=table.query if "causal" in table.tools else None, tools=tuple(table.tools),
        protocol=table.protocol,
        max_tool_calls=_or(table.max_tool_calls, d.max_tool_calls),
        max_tokens=_or(table.max_tokens, d.max_tokens),
        production_keep=float(_or(table.production_keep, d.production_keep)),
        production_associations=float(d.production_associations),
        edges=(table.edges or "untyped") if table.facts != "public" else None,
        gate=table.gate, memory=table.memory)


def _or(value: T | None, default: T) -> T:
    return default if value is None else value


Facts = Literal["public", "text", "graph"]
Tool = Literal["causal", "counterfactual", "calc", "identify"]
Endpoint = Literal["accuracy", "accuracy_exact_nonid", "false_answer_on_non_id",
                   "false_non_id", "decision_accuracy", "brier", "tokens", "tool_calls",
                   "cost_usd", "edges_obtained"]
"""Endpoints a question may be answered on (rungbench.causal.ablations.analysis)."""


class AblationIdentity(PresetModel):
    """``[design]`` of an ablation preset."""

    id: str = key("identity", "Preset ID, recorded in every arm run and analysis.",
                  min_length=1)
    version: Literal[1] = key("identity", "Version of this key schema.")
    seed: Literal["003_dc4fcca8b2a6b04f"] = key("identity", "The seed document (seed 003).")
    kind: Literal["ablation_matrix"] = key("identity", "An ablation matrix of arms.")


class AblationDefaults(PresetModel):
    """``[defaults]``: what every arm uses unless it sets its own."""

    samples: int = key("schedule", "Repeated samples per case (``--samples`` overrides).", ge=1)
    items_per_world: int = key("schedule", "Cases drawn per world (``--per-world`` "
                               "overrides).", ge=1)
    production_keep: Annotated[float, Field(ge=0.0, le=1.0)] = key(
        "request", "Share of the world's edges a production copy keeps (deterministic per "
        "edge).")
    production_associations: Annotated[float, Field(ge=0.0, le=1.0)] = key(
        "request", "Share of the world's confounded pairs (two variables with a common cause "
        "and no edge between them) a production copy also holds as association rows — the "
        "correlation-as-causation rows prose extraction produces; an untyped store holds "
        "them as causal claims, a typed one (edges = 'typed') as correlations.")
    max_tool_calls: int = key("request", "Tool-call budget per cell.", ge=0)
    max_tokens: int = key("request", "Token budget (prompt + completion, all turns) per "
                          "cell.", ge=1)


class AnalysisTable(PresetModel):
    """``[analysis]``: the validity floor every comparison checks before its verdict."""

    min_valid_answers: int = key(
        "analysis", "Fewest valid answers (cells neither invalid nor missing) an arm needs; "
        "below it every comparison and question using the arm says "
        "insufficient_valid_answers.", ge=1)
    min_valid_share: Annotated[float, Field(ge=0.0, le=1.0)] = key(
        "analysis", "Smallest share of an arm's cells that must be valid answers (same "
        "consequence).")


class ArmTable(PresetModel):
    """One ``[[arms]]`` table."""

    name: str = key("schedule", "Arm id, unique (A0 ... A11-protocol).", min_length=1)
    label: str | None = key("wording", "Human label in tables and the report.", default=None)
    prompt: str = key("request", "Name of the [prompts] entry sent as the system prompt.")
    facts: Facts = key("request", "Causal facts reachable: the public case, the edges as "
                       "sentences, or the edges behind the causal() tool.")
    content: Literal["production", "oracle"] | None = key(
        "request", "Whose edges (text and graph facts): a thinned production copy or the "
        "true mechanism.", default=None)
    query: Literal["naive", "fixed"] | None = key(
        "request", "causal() query path: the seed's production query or proposal P1.",
        default=None)
    tools: list[Tool] = key("request", "Tools offered besides submit_answer.")
    protocol: str | None = key("request", "Name of the [protocols] text appended to the "
                               "prompt.", default=None)
    edges: Literal["untyped", "typed"] | None = key(
        "request", "How the store (or the text) holds the rows: untyped, every row a causal "
        "claim as in the legacy table; typed (proposal P5), each row keeps its relation kind, "
        "so association rows are not causal paths. Unset means untyped; refused with facts = "
        "'public'.", default=None)
    gate: Literal["detector_classifier_v1"] | None = key(
        "request", "Routing gate (proposal P6): the graph tools (causal, counterfactual, "
        "identify) are offered only on cases whose question this frozen opportunity "
        "detector flags; needs the causal tool.", default=None)
    memory: str | None = key("gate", "Directory the agent keeps state in; scanned for "
                             "contamination after every validation run.", default=None,
                             min_length=1)
    production_keep: Annotated[float, Field(ge=0.0, le=1.0)] | None = key(
        "request", "Overrides defaults.production_keep.", default=None)
    max_tool_calls: int | None = key("request", "Overrides defaults.max_tool_calls.",
                                     default=None, ge=0)
    max_tokens: int | None = key("request", "Overrides defaults.max_tokens.", default=None,
                                 ge=1)

    @model_validator(mode="after")
    def _consistent(self) -> ArmTable:
        require_distinct(list(self.tools), f"arm {self.name!r} tools")
        if self.facts != "public" and self.content is None:
            raise KeyRefusal("content", f"arm {self.name!r}: facts = {self.facts!r} needs content")
        if self.facts == "public" and self.content is not None:
            raise KeyRefusal("content",
                             f"arm {self.name!r}: content is refused with facts = 'public'")
        if (self.facts == "graph") != ("causal" in self.tools):
            raise KeyRefusal("tools", f"arm {self.name!r}: facts = 'graph' and the causal tool go "
                             "together (the graph is reached only through it)")
        if ("causal" in self.tools) != (self.query is not None):
            raise KeyRefusal("query", f"arm {self.name!r}: query is required with the causal tool "
                             "and refused without it")
        if "counterfactual" in self.tools and self.facts != "graph":
            raise KeyRefusal("tools", f"arm {self.name!r}: the counterfactual module reads the "
                             "graph store (facts = 'graph')")
        if self.facts == "public" and self.edges is not None:
            raise KeyRefusal("edges", f"arm {self.name!r}: edges is refused with facts = "
                             "'public'")
        if self.gate is not None and "causal" not in self.tools:
            raise KeyRefusal("gate", f"arm {self.name!r}: a routing gate stands in front of the "
                             "causal tool; the arm offers none")
        return self


class ComparisonTable(PresetModel):
    """One ``[[comparisons]]`` row: what a − b isolates."""

    a: str = key("analysis", "Arm first in a - b.")
    b: str = key("analysis", "Arm subtracted.")
    isolates: str = key("wording", "What the difference isolates (shown beside it).",
                        min_length=1)


class QuestionTable(PresetModel):
    """One ``[[questions]]`` row: a seed question and the comparison answering it."""

    id: str = key("wording", "Question id (Q1, Q2, Q3).", min_length=1)
    text: str = key("wording", "The question as the report asks it.", min_length=1)
    a: str = key("analysis", "Arm first in the delta.")
    b: str = key("analysis", "Arm subtracted.")
    endpoint: Endpoint = key("analysis", "Endpoint the delta is taken on.")


class AblationPreset(PresetModel):
    """An ablation-matrix preset (``designs/causal_arms.toml``)."""

    design: AblationIdentity
    defaults: AblationDefaults
    analysis: AnalysisTable
    prompts: dict[str, str] = key("request", "Named system prompts.")
    protocols: dict[str, str] = key("request", "Named worker-protocol texts.",
                                    default_factory=dict)
    arms: list[ArmTable] = Field(min_length=1)
    comparisons: list[ComparisonTable] = Field(default_factory=list)
    questions: list[QuestionTable] = Field(default_factory=list)

    @model_validator(mode="after")
    def _names(self) -> AblationPreset:
        names = [a.name for a in self.arms]
        require_distinct(names, "arms")
        for i, arm in enumerate(self.arms):
            if arm.prompt not in self.prompts:
                raise KeyRefusal(f"arms[{i}].prompt",
                                 f"arm {arm.name!r}: unknown prompt {arm.prompt!r}; known: "
                                 f"{', '.join(self.prompts)}")
            if arm.protocol is not None and arm.protocol not in self.protocols:
                raise KeyRefusal(f"arms[{i}].protocol",
                                 f"arm {arm.name!r}: unknown protocol {arm.protocol!r}")
        rows = [("comparisons", j, r.a, r.b) for j, r in enumerate(self.comparisons)] + \
            [("questions", j, r.a, r.b) for j, r in enumerate(self.questions)]
        for table, j, *pair in rows:
            for arm_name in pair:
                if arm_name not in names:
                    raise KeyRefusal(f"{table}[{j}]", f"names unknown arm {arm_name!r}")
        require_distinct([q.id for q in self.questions], "questions")
        return self
