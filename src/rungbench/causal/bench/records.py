"""Benchmark records of seed 003 "Data contracts" (docs/CONTRACTS.md §3, ``rungbench.records/1``).

Five versioned records cross stage boundaries: ``public_case`` (what an agent sees),
``private_oracle`` (what only the scorer sees), ``agent_response``, ``tool_event`` and
``run_manifest``. Each is a frozen pydantic model with a JSON Schema
(:func:`write_schemas`). A scorer verdict (:class:`Verdict`) is the shape the two
independent scorers are compared on.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

RECORDS_VERSION = "rungbench.records/1"
"""Version of every record in this module; bump it with every reader (CONTRACTS §3)."""

BENCH_VERSION = "0.1.0"
"""Version of the benchmark generator written into every public case."""

ItemType = Literal["exact", "identification", "discovery", "cf_no_mechanism"]
Status = Literal["answer", "not_identifiable", "abstain", "need_info"]
Outcome = Literal[
    "correct",
    "wrong",
    "false_non_id",
    "false_answer_on_non_id",
    "correct_non_id",
    "abstain",
    "invalid",
]
OUTCOMES: tuple[str, ...] = get_args(Outcome)
"""Every outcome cell, in report order (CONTRACTS §3 verdict)."""

Rung = Literal[1, 2, 3]
RungName = Literal["observation", "intervention", "counterfactual"]
RUNG_NAMES: dict[int, RungName] = {1: "observation", 2: "intervention", 3: "counterfactual"}
"""Rung number to its public name in ``public_case.rung`` (seed 003 "Operational definition")."""


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Evidence(_Record):
    """The evidence block of a public case, inlined so a case file is self-contained."""

    kind: Literal["mechanism", "joint", "graph_joint", "samples"]
    """What is shown: full mechanism, observed joint, graph plus joint, or samples."""
    payload: dict[str, Any]
    """The evidence itself (public world JSON, joint table, graph, or samples)."""


class Intervention(_Record):
    """One intervention the agent may choose in a decision item."""

    id: str
    """Identifier the agent names in ``agent_response.action``."""
    cost: float
    """Cost of performing it, in loss units."""


class PublicCase(_Record):
    """What an agent sees for one item (seed 003 ``public_case``)."""

    version: str = RECORDS_VERSION
    """Record version."""
    case_id: str
    """Opaque case identifier; joins to private_oracle and agent_response."""
    world_id: str
    """Opaque world identifier (not the world seed)."""
    bench_version: str = BENCH_VERSION
    """Generator version."""
    family: str
    """Task family (seed 003 "Task families")."""
    item_type: ItemType
    """Item type (seed 003 "Item types")."""
    rung: Literal["observation", "intervention", "counterfactual"]
    """Ladder rung of the question."""
    skin: str
    """Domain skin the variable names come from."""
    stage: int = 1
    """Stage within a multi-stage episode (1 for single-stage items)."""
    question: str
    """The question text, from a template."""
    query: dict[str, Any] | None
    """The question as structured data (``rungbench.query/1`` with skinned names), or None."""
    evidence: Evidence
    """The evidence delivered with the question."""
    assumptions: list[str]
    """Assumptions the agent may rely on."""
    allowed_tools: list[str]
    """Tools the agent may call."""
    permitted_interventions: list[Intervention]
    """Actions available in a decision item (empty otherwise)."""
    answer_format: str
    """Which response fields are read."""


class Confusions(_Record):
    """Values that a confused answer gives (seed 003 "Failure taxonomy")."""

    rung1: float | None = None
    """The rung-1 (observational) value of the same target."""
    rung2_population: float | None = None
    """The population rung-2 value P(target | do) without abduction."""
    resampled: float | None = None
    """The rung-3 value computed with fresh exogenous draws for non-intervened variables."""


class Cpdag(_Record):
    """A completed partially directed acyclic graph (skeleton + compelled directions)."""

    directed: list[tuple[str, str]]
    """Compelled directed edges (a, b) meaning a -> b."""
    undirected: list[tuple[str, str]]
    """Reversible edges, each listed once with a < b."""


class Variant(_Record):
    """An item's place in a matched diagnostic pair (seed 003 "Failure taxonomy").

    A twin-licensed label ("correct on the matched item where …") is assigned only from
    the verdicts of an item and its twins; this record, private like the rest of the
    oracle, says which pair a case belongs to. The item and each of its twins carry one.
    """

    label: str
    """The failure label the pair diagnoses (``taxonomy.TWIN_LABELS``)."""
    kind: str
    """``item`` for the diagnostic item itself, else the twin kind (``variants.TWIN_KINDS``)."""
    parent: str
    """Case id of the diagnostic item (its own id on the item; same skin on a twin)."""
    seed: int
    """Seed of the world the case is rendered from (a twin's is derived from its parent's)."""
    confused: list[float] = Field(default_factory=list)
    """Values the confused reading gives on this case (e.g. P(y | x) for confounding neglect)."""
    order_agrees: bool | None = None
    """Listing-order pairs: whether every edge is listed parent first in this case."""


MUTATIONS: tuple[str, ...] = ("original", "skin_swap", "nonsense_skin", "renaming", "paraphrase")
"""The semantic mutations of seed 003 "Research synthesis" (Corr2Cause: renaming,
paraphrase, domain skin swap), with the nonsense skin and the original wording, in report
order. A case is ``original`` (domain skin, original wording) or one of the others."""

MutationKind = Literal["skin_swap", "renaming", "paraphrase"]


class Mutation(_Record):
    """A case's place as a semantic mutation of another case (seed 003 "Research synthesis").

    Private: the mutated case is a public case of its own, with an opaque world id, and only
    this record says which case it mutates. It keeps its parent's world (one bootstrap
    cluster), listing, template and answer; a paraphrase keeps its names too and changes
    the wording, a skin swap or renaming keeps the wording and changes the names.
    """

    kind: MutationKind
    """What changed: ``skin_swap`` (another domain skin's names), ``renaming`` (fresh names
    of the same skin) or ``paraphrase`` (the question's wording, from the paraphrase
    table)."""
    parent: str
    """Case id of the original case it mutates."""
    template: int | None = None
    """Paraphrases: index of its wording in the paraphrase table, under its question's kind."""
    table: str | None = None
    """Paraphrases: version of the paraphrase table (``paraphrases.PARAPHRASE_TABLE``)."""


class PrivateOracle(_Record):
    """What only the scorer sees for one item (seed 003 ``private_oracle``, CONTRACTS §3)."""

    version: str = RECORDS_VERSION
    """Record version."""
    case_id: str
    """Joins to public_case and agent_response."""
    world_id: str
    """World the item comes from (cluster for the bootstrap)."""
    family: str
    """Task family."""
    structure: str
    """Structure family of the world (motif name or ``random_dag``)."""
    skin: str
    """Domain skin of the public case."""
    item_type: ItemType
    """Item type."""
    rung: Literal[1, 2, 3]
    """Ladder rung."""
    estimand: str
    """The estimand in the world's true variable names."""
    scm_hash: str
    """Digest of the world's public mechanism JSON."""
    seed: int
    """World seed (private)."""
    identifiable: bool
    """False: the reference answer is ``not_identifiable`` (witness-backed)."""
    value: float | None
    """Exact reference value when identifiable and numeric."""
    tol: float = 0.02
    """Tolerance tau (seed 003 "Deterministic scorer")."""
    bounds: tuple[float, float] | None = None
    """Tian–Pearl bounds when the item asks for bounds."""
    identified_set: list[str] | None = None
    """Identified set for diagnosis items (unused in v0)."""
    witness_hash: str | None = None
    """Digest of the witness world proving non-identifiability."""
    witness_gap: float | None = None
    """|true value − witness value| of the non-ID proof."""
    factual_episode: dict[str, int] | None = None
    """Factual evidence of a rung-3 item."""
    cf_link: str | None = None
    """Case id of the linked case of the same episode, if any."""
    confusions: Confusions = Field(default_factory=Confusions)
    """Values a confused answer gives (taxonomy)."""
    true_edges: list[tuple[str, str]] | None = None
    """Discovery items: the true DAG over observed variables (skinned names)."""
    cpdag: Cpdag | None = None
    """Discovery items: the equivalence class the evidence identifies."""
    expected_loss: dict[str, float] | None = None
    """Decision items: expected loss including cost per action."""
    eig_bits: dict[str, float] | None = None
    """Experiment-choice items: expected information gain per experiment."""
    variant: Variant | None = None
    """Matched diagnostic pair the case belongs to (twins and their items; absent otherwise)."""
    mutation: Mutation | None = None
    """The case it is a semantic mutation of (paraphrases; absent otherwise)."""

    @model_serializer(mode="wrap")
    def _without_absent_variant(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A record outside any diagnostic pair and any mutation serializes as it did before
        either existed."""
        out: dict[str, Any] = handler(self)
        for key in OPTIONAL_ORACLE_FIELDS:
            if out.get(key, 0) is None:
                del out[key]
        return out


OPTIONAL_ORACLE_FIELDS = ("variant", "mutation")
"""Private oracle fields left out of a record that has none."""


class AgentResponse(_Record):
    """One structured answer (seed 003 ``agent_response``, CONTRACTS §3)."""

    version: str = RECORDS_VERSION
    """Record version."""
    case_id: str
    """Case answered."""
    arm: str
    """Arm (agent configuration) that answered."""
    status: Status
    """answer, not_identifiable, abstain or need_info."""
    value: float | None = None
    """Numeric answer."""
    bounds: tuple[float, float] | None = None
    """Bounds answer [lo, hi]."""
    label: str | None = None
    """Categorical answer."""
    confidence: float | None = None
    """Stated probability of being correct, in [0, 1]."""
    experiment: str | None = None
    """Chosen experiment (experiment-choice items)."""
    action: str | None = None
    """Chosen action (decision items)."""
    edges: list[tuple[str, str]] | None = None
    """Directed edges claimed (discovery items)."""
    claim_text: str = ""
    """Free-text justification (never scored)."""
    t: str = ""
    """ISO-8601 timestamp."""


class ToolEvent(_Record):
    """One tool call made while answering (seed 003 ``tool_event``)."""

    version: str = RECORDS_VERSION
    """Record version."""
    case_id: str
    """Case being answered."""
    arm: str
    """Arm that made the call."""
    seq: int
    """Order of the call within the case."""
    tool: str
    """Tool name."""
    args: dict[str, Any]
    """Parsed arguments."""
    result_hash: str
    """Digest of the tool result."""
    tokens_in: int
    """Prompt tokens."""
    tokens_out: int
    """Completion tokens."""
    latency_ms: int
    """Wall-clock latency."""
    cost_usd: float
    """Cost in US dollars."""


class RunManifest(_Record):
    """What one evaluation run executed (seed 003 ``run_manifest``)."""

    version: str = RECORDS_VERSION
    """Record version."""
    run_id: str
    """Run identifier (digest of the manifest inputs)."""
    bench_version: str
    """Benchmark version."""
    generator_commit: str
    """Digest of the public bench directory the run read."""
    scorer_hash: str
    """Digest of the scorer source."""
    harness_hash: str
    """Digest of the harness (evaluation) source."""
    model: str
    """Model or reference agent name."""
    arm: str
    """Arm name."""
    split: Literal["dev", "validation", "test"]
    """Split evaluated."""
    world_ids: list[str]
    """Worlds in the run."""
    budget: dict[str, int]
    """Token and tool-call budget."""
    exclusions: list[str]
    """Excluded case ids with reasons (empty when none)."""


class StructureScore(_Record):
    """Structure metrics of a discovery answer (seed 003 "Endpoints and formulas")."""

    precision: float
    """Directed precision against the true DAG."""
    recall: float
    """Directed recall against the true DAG."""
    f1: float
    """Harmonic mean of precision and recall (0 when both are 0)."""
    reversed: int
    """Number of true edges answered in the opposite direction."""
    same_mec: bool
    """Identical skeleton and v-structures as the identified equivalence class."""


class Verdict(_Record):
    """What a scorer returns per response (CONTRACTS §3)."""

    case_id: str
    """Case scored."""
    outcome: Outcome
    """The outcome cell."""
    abs_error: float | None = None
    """|value − ref| for numeric answers on identifiable items."""
    brier: float | None = None
    """(confidence − 1[correct])² when a confidence was given."""
    decision_regret: float | None = None
    """E[L(a)] − min E[L] for decision items."""
    info_regret: float | None = None
    """max EIG − EIG(x) for experiment-choice items."""
    structure: StructureScore | None = None
    """Structure metrics for discovery items."""
    error: str | None = None
    """Why the response is invalid (invalid outcome only)."""


SCHEMA_MODELS: dict[str, type[BaseModel]] = {
    "public_case": PublicCase,
    "private_oracle": PrivateOracle,
    "agent_response": AgentResponse,
    "tool_event": ToolEvent,
    "run_manifest": RunManifest,
    "verdict": Verdict,
}
"""Record name to model, in the order the schemas are written."""


def _tagged_schemas(models: dict[str, type[BaseModel]], version: str
                    ) -> dict[str, dict[str, Any]]:
    """The JSON Schema of each model, its ``$id`` tagged with ``version``."""
    out: dict[str, dict[str, Any]] = {}
    for name, model in models.items():
        schema = model.model_json_schema()
        schema["$id"] = f"{version}/{name}"
        out[name] = schema
    return out


def _write_schema_files(directory: pathlib.Path, schemas: dict[str, dict[str, Any]],
                        suffix: str) -> list[pathlib.Path]:
    """Write ``<name><suffix>`` for every schema into ``directory``; return the paths."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, schema in schemas.items():
        path = directory / f"{name}{suffix}"
        path.write_text(json.dumps(schema, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def json_schemas(*, mutations: bool = False) -> dict[str, dict[str, Any]]:
    """Return the JSON Schema of every record, each tagged with the records version.

    Without ``mutations`` the private_oracle schema is the one a bench without semantic
    mutations publishes: no ``mutation`` property (such a record is then refused, as its
    ``additionalProperties`` is false), so a bench built without ``--paraphrases`` keeps
    its bytes.
    """
    schemas = _tagged_schemas(SCHEMA_MODELS, RECORDS_VERSION)
    if not mutations:
        oracle = schemas["private_oracle"]
        del oracle["properties"]["mutation"]
        del oracle["$defs"]["Mutation"]
    return schemas


def write_schemas(directory: pathlib.Path, *, mutations: bool = False) -> list[pathlib.Path]:
    """Write ``<name>.schema.json`` for every record into ``directory``; return the paths.

    ``mutations``: the bench holds mutated cases (:func:`json_schemas`).
    """
    return _write_schema_files(directory, json_schemas(mutations=mutations), ".schema.json")


# ---------------------------------------------------------------- records/2
# The episode families, the rows seed 003 "Task families and generator coverage" marks
# "next stage": incident diagnosis, active experiments, sequential revision, provenance,
# negative evidence. Their cases belong to episodes (``episode_id``; a revision episode
# has several stages). Their records are version 2; the built families keep writing
# version 1 byte for byte, so a bench without the episode families is unchanged (the v1
# models and SCHEMA_MODELS above are untouched). What the schema files publish is part of
# the format: a model's class docstring is its JSON Schema ``description``, and its
# ``title`` (``PublicCase2`` …, set in its config) names it there and in validation errors.

EPISODE_RECORDS_VERSION = "rungbench.records/2"
"""Version of the records of the episode families (extends ``rungbench.records/1``)."""

EpisodeItemType = Literal[
    "exact", "identification", "discovery", "cf_no_mechanism",
    "diagnosis", "experiment", "posterior",
]
EpisodeOutcome = Literal[
    "correct",
    "wrong",
    "false_non_id",
    "false_answer_on_non_id",
    "correct_non_id",
    "abstain",
    "invalid",
    "lucky",
    "consistent_unjustified",
    "justified_abstain",
]
EPISODE_OUTCOMES: tuple[str, ...] = get_args(EpisodeOutcome)
"""Every outcome cell of records/2, in report order (v1 cells, then the diagnosis cells)."""

EPISODE_FAMILIES: tuple[str, ...] = (
    "root_cause_debugging",
    "active_experiments",
    "sequential_revision",
    "provenance_source_dependence",
    "negative_evidence",
)
"""The episode families: the rows seed 003 "Task families and generator coverage" marks
"next stage"."""


class EpisodeEvidence(_Record):
    """Evidence block of a records/2 case (adds ``telemetry``: tool outputs + mechanism)."""

    model_config = ConfigDict(title="Evidence2")
    """Published name: JSON Schema ``title`` and the name validation errors give."""

    kind: Literal["mechanism", "joint", "graph_joint", "samples", "telemetry"]
    """What is shown; ``telemetry`` is the mechanism plus the logs/metrics tool outputs."""
    payload: dict[str, Any]
    """The evidence itself."""


class EpisodeCase(_Record):
    """What an agent sees for one next-stage item (``public_case``, records/2)."""

    model_config = ConfigDict(title="PublicCase2")
    """Published name: JSON Schema ``title`` and the name validation errors give."""

    version: str = EPISODE_RECORDS_VERSION
    """Record version."""
    case_id: str
    """Opaque case identifier."""
    world_id: str
    """Opaque world identifier."""
    episode_id: str
    """Episode the case belongs to (stages of one episode share it; state is kept within it)."""
    bench_version: str = BENCH_VERSION
    """Generator version."""
    family: str
    """Task family (one of :data:`EPISODE_FAMILIES`)."""
    item_type: EpisodeItemType
    """Item type."""
    rung: Literal["observation", "intervention", "counterfactual"]
    """Ladder rung of the question."""
    skin: str
    """Domain skin."""
    stage: int = 1
    """Stage within the episode (1-based)."""
    question: str
    """The question text."""
    query: dict[str, Any] | None
    """The question as structured data (skinned names), or None."""
    evidence: EpisodeEvidence
    """The evidence delivered at this stage (cumulative within the episode)."""
    assumptions: list[str]
    """Assumptions the agent may rely on."""
    allowed_tools: list[str]
    """Tools the agent may call."""
    permitted_interventions: list[Intervention]
    """Repairs and experiments with their costs."""
    answer_format: str
    """Which response fields are read."""


class EpisodeOracle(_Record):
    """What only the scorer sees for one next-stage item (``private_oracle``, records/2).

    The v1 fields keep their meaning; ``identified_set`` is now used, and the fields
    after it are new.
    """

    model_config = ConfigDict(title="PrivateOracle2")
    """Published name: JSON Schema ``title`` and the name validation errors give."""

    version: str = EPISODE_RECORDS_VERSION
    """Record version."""
    case_id: str
    """Joins to public_case and agent_response."""
    world_id: str
    """World (cluster for the bootstrap)."""
    episode_id: str
    """Episode (stages of a revision episode share it)."""
    stage: int = 1
    """Stage within the episode."""
    family: str
    """Task family."""
    structure: str
    """``incident``, ``provenance`` or ``negative_evidence``."""
    skin: str
    """Domain skin of the public case."""
    item_type: EpisodeItemType
    """``diagnosis`` (name a cause / repair), ``experiment`` (choose a probe), ``posterior``."""
    rung: Literal[1, 2, 3]
    """Ladder rung."""
    estimand: str
    """Estimand in the world's true variable names."""
    scm_hash: str
    """Digest of the world (mechanism + seed)."""
    seed: int
    """World seed (private)."""
    identifiable: bool
    """Diagnosis: the evidence identifies the cause uniquely; posterior items: True."""
    value: float | None = None
    """Posterior items: the exact posterior probability asked."""
    tol: float = 0.02
    """Tolerance tau."""
    identified_set: list[str] | None = None
    """Diagnosis/experiment items: causes with positive posterior given the delivered evidence."""
    true_cause: str | None = None
    """Diagnosis/experiment items: the episode's true fault."""
    hypotheses: list[str] | None = None
    """Diagnosis/experiment items: the hypothesis set (every candidate fault)."""
    descendants: list[str] | None = None
    """Diagnosis items: telemetry nodes downstream of the true cause (symptom confusion)."""
    expected_loss: dict[str, float] | None = None
    """Repair menu: E[L(a) | evidence] including cost."""
    eig_bits: dict[str, float] | None = None
    """Experiment menu: EIG in bits over the hypothesis set (``act_now`` = 0)."""
    experiment_loss: dict[str, float] | None = None
    """Experiment menu: cost(x) + E_o min_a E[L(a) | evidence, x=o] (decision value)."""
    discriminating: list[str] | None = None
    """Probes with EIG > 0 over the live set (a check that separates live causes)."""
    alt_values: dict[str, float] = Field(default_factory=dict)
    """Taxonomy label -> the value a confused answer gives (e.g. ``source_duplication``)."""
    alt_causes: dict[str, list[str]] = Field(default_factory=dict)
    """Taxonomy label -> the causes a confused diagnosis names (e.g. ``stale_mechanism``)."""
    previous_set: list[str] | None = None
    """Revision stages after the first: the identified set of the previous stage."""
    cf_link: str | None = None
    """Case id of the nonsense-skin twin."""


class EpisodeVerdict(_Record):
    """What a scorer returns per records/2 response (CONTRACTS §3 extended)."""

    model_config = ConfigDict(title="Verdict2")
    """Published name: JSON Schema ``title`` and the name validation errors give."""

    case_id: str
    """Case scored."""
    outcome: EpisodeOutcome
    """The outcome cell."""
    abs_error: float | None = None
    """|value − ref| for posterior items."""
    brier: float | None = None
    """(confidence − 1[right])² when a confidence was given."""
    decision_regret: float | None = None
    """E[L(a) | e] − min E[L | e] for a named repair."""
    info_regret: float | None = None
    """max EIG − EIG(x) for a named experiment."""
    experiment_regret: float | None = None
    """experiment_loss(x) − min experiment_loss for a named experiment (decision value)."""
    structure: StructureScore | None = None
    """Unused by the episode families (kept null for a shared verdict shape)."""
    error: str | None = None
    """Why the response is invalid."""


EPISODE_SCHEMA_MODELS: dict[str, type[BaseModel]] = {
    "public_case": EpisodeCase,
    "private_oracle": EpisodeOracle,
    "agent_response": AgentResponse,
    "verdict": EpisodeVerdict,
}
"""Records/2 models whose schema a bench with episode families writes beside the v1 ones."""

_DEFS_REF = "#/$defs/"


def _defs_named_by_title(node: Any, titles: dict[str, str]) -> Any:
    """``node`` with each ``$defs`` key and ``$ref`` target in ``titles`` renamed to its title.

    pydantic names a nested model's definition after its class; the records/2 schemas name
    it after the record's published title, as they always have (``Evidence2``).
    """
    if isinstance(node, list):
        return [_defs_named_by_title(x, titles) for x in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "$defs":
            value = {titles.get(k, k): _defs_named_by_title(v, titles) for k, v in value.items()}
        elif key == "$ref" and isinstance(value, str) and value.startswith(_DEFS_REF):
            name = value.removeprefix(_DEFS_REF)
            value = _DEFS_REF + titles.get(name, name)
        else:
            value = _defs_named_by_title(value, titles)
        out[key] = value
    return out


def episode_json_schemas() -> dict[str, dict[str, Any]]:
    """Return the JSON Schema of every records/2 model, tagged with the records/2 version."""
    titles = {m.__name__: str(m.model_config["title"])
              for m in (EpisodeEvidence, EpisodeCase, EpisodeOracle, EpisodeVerdict)}
    schemas = _tagged_schemas(EPISODE_SCHEMA_MODELS, EPISODE_RECORDS_VERSION)
    return {name: _defs_named_by_title(s, titles) for name, s in schemas.items()}


def write_episode_schemas(directory: pathlib.Path) -> list[pathlib.Path]:
    """Write ``<name>.v2.schema.json`` for every records/2 model into ``directory``."""
    return _write_schema_files(directory, episode_json_schemas(), ".v2.schema.json")
