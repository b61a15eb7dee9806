"""Build a split: worlds → items → skinned public cases + private oracle records on disk.

Layout written by :func:`build_split` (seed 003 "Splits and contamination")::

    OUT/public/cases.jsonl       public_case records (what agents may read)
    OUT/public/manifest.json     split, counts and file digests; no seed
    OUT/public/schemas/*.json    JSON Schema of every record
    OUT/private/   (mode 0700)   oracle.jsonl, worlds.jsonl, manifest.json (seeds)
    OUT/SEAL.json                every file above with its sha256 (evidence.sealed)

With ``families`` (``--families``), the episode families are added as records/2
files beside these (``episode_build``); without it the directory is byte for byte what
it always was.

Every item is rendered twice over the same structure: under a domain skin and
under the nonsense skin, with the same template and listing order, linked by
``cf_link`` (the nonsense-skin invariance control). Building twice with the
same arguments gives byte-identical directories. The build ends with the leak
scan and refuses (exit 3) if any public file holds a private value. The bench is
built in a temporary sibling and becomes visible at OUT only complete, scanned and
sealed; every reader verifies the seal (``causal.bench.verified``).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import pathlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from rungbench.causal.bench.items import (
    LOSS_PER_EVENT,
    Action,
    RawItem,
    WorldDraw,
    discovery_cpdag,
    draw_world,
    public_family,
    world_items,
)
from rungbench.causal.bench.leaks import scan_bench
from rungbench.causal.bench.paraphrases import (
    MAX_PARAPHRASES,
    PARAPHRASE_TABLE,
    PARAPHRASES,
    render_paraphrase,
)
from rungbench.causal.bench.records import (
    BENCH_VERSION,
    RUNG_NAMES,
    Confusions,
    Cpdag,
    Evidence,
    Intervention,
    Mutation,
    MutationKind,
    PrivateOracle,
    PublicCase,
    Variant,
    write_schemas,
)
from rungbench.causal.bench.skins import (
    DOMAIN_SKINS,
    TEMPLATES,
    Skin,
    draw_skin,
    renamed_skin,
    render_event,
    render_question,
    swapped_skin,
)
from rungbench.causal.bench.splits import STRUCTURES, split_seed, world_plan
from rungbench.causal.bench.variants import ITEM, Pair, Twin, diagnostic_pairs
from rungbench.causal.bench.verified import BENCH_KIND, hide_seal
from rungbench.causal.scm.joint import observed_joint
from rungbench.causal.scm.world import World
from rungbench.errors import IntegrityError, Reason, Refusal
from rungbench.evidence.canonical import bytes_digest, canonical_bytes, digest
from rungbench.evidence.sealed import ensure_absent, publish_dir

BENCH_SCHEMA = "rungbench.causal.bench/1"
"""Schema tag of the public and private bench manifests."""

N_SAMPLES = 200
"""Rows of numeric samples shown with a discovery item."""

ASSUMPTIONS: dict[str, list[str]] = {
    "exact": [
        "The mechanism shown is complete and correct.",
        "Each variable's exogenous noise is independent of every other variable's.",
    ],
    "identification": [
        "The graph shown is correct; variables with observed=false are never measured.",
        "The joint table is the exact distribution of the observed variables.",
    ],
    "discovery": [
        "Causal sufficiency: no unmeasured common causes.",
        "Faithfulness and acyclicity.",
        "The joint table is exact; the samples are an illustrative draw from it.",
    ],
    "cf_no_mechanism": [
        "Only the graph and the observed joint are known; mechanisms are not given.",
        "The joint table is the exact distribution of the observed variables.",
    ],
}
"""Stated assumptions per item type."""

ANSWER_FORMAT: dict[str, str] = {
    "exact": "status|value|confidence",
    "identification": "status|value|confidence",
    "discovery": "status|edges|confidence",
    "cf_no_mechanism": "status|value|bounds|confidence",
}
"""Which response fields each item type reads."""


@dataclass(frozen=True)
class BuiltWorld:
    """One world with everything rendered from it."""

    world_id: str
    """Opaque world id."""
    seed: int
    """Private world seed."""
    draw: WorldDraw
    """The world and its roles."""
    cases: tuple[PublicCase, ...]
    """Public cases (domain and nonsense skins)."""
    oracles: tuple[PrivateOracle, ...]
    """Private oracle records, aligned with ``cases``."""
    witnesses: tuple[tuple[str, World], ...]
    """(case key, witness world) of the non-identifiable items."""
    forward_excess: int
    """Forward-listed minus backward-listed edges in the public listings (twins included)."""
    twins: tuple[BuiltTwin, ...] = ()
    """The matched diagnostic variants of its items (``variants``), each its own public world."""
    network: Mapping[str, Any] | None = None
    """An imported network's private record (``network_build``); None for generated worlds."""
    mutated: tuple[tuple[PublicCase, PrivateOracle], ...] = ()
    """Its items' mutated variants (paraphrase, skin swap, renaming): each a public case with
    an opaque world id and its private record (parent world, a mutation record naming the
    original case)."""


@dataclass(frozen=True)
class BuiltTwin:
    """One matched diagnostic variant rendered as its own public world."""

    world_id: str
    """Its public world id (opaque; nothing public links it to its parent)."""
    seed: int
    """Its seed, derived from the parent world's seed and its kind."""
    kind: str
    """Twin kind (``variants.TWIN_KINDS``)."""
    world: World
    """The twin world."""
    cases: tuple[PublicCase, ...]
    """Its public cases (domain and nonsense skins)."""
    oracles: tuple[PrivateOracle, ...]
    """Their private records: the parent's world id (one bootstrap cluster), a variant record."""
    forward_excess: int
    """Forward-listed minus backward-listed edges in its listing."""


def world_id_of(split: str, world_seed: int) -> str:
    """Opaque world id: a hash of split and world seed (the seed is not recoverable)."""
    h = hashlib.sha256(f"rungbench.causal.world/1|{split}|{world_seed}".encode()).hexdigest()
    return f"w{h[:10]}"


def _rename_world_json(doc: Mapping[str, Any], skin: Skin) -> dict[str, Any]:
    return {
        "schema": doc["schema"],
        "world_id": doc["world_id"],
        "variables": [
            {**v, "name": skin.rename(v["name"]), "parents": [skin.rename(p) for p in v["parents"]]}
            for v in doc["variables"]
        ],
    }


def _graph_json(world: World, skin: Skin, shuffle: int) -> list[dict[str, Any]]:
    doc = world.to_json(seed=shuffle)
    return [
        {"name": skin.rename(v["name"]), "observed": v["observed"],
         "parents": [skin.rename(p) for p in v["parents"]]}
        for v in doc["variables"]
    ]


def _listed_observed(world: World, shuffle: int) -> list[str]:
    doc = world.to_json(seed=shuffle)
    return [v["name"] for v in doc["variables"] if v["observed"]]


def _joint_json(world: World, skin: Skin, shuffle: int) -> dict[str, Any]:
    names = _listed_observed(world, shuffle)
    joint = observed_joint(world)
    rows = []
    for values in itertools.product((0, 1), repeat=len(names)):
        event = dict(zip(names, values, strict=True))
        rows.append({"assignment": skin.rename_event(event), "p": joint.prob(event)})
    return {"names": [skin.rename(n) for n in names], "rows": rows}


def _samples_json(world: World, skin: Skin, shuffle: int, seed: int) -> dict[str, Any]:
    names = _listed_observed(world, shuffle)
    joint = observed_joint(world)
    cells = list(itertools.product((0, 1), repeat=len(names)))
    probs = np.array([joint.prob(dict(zip(names, c, strict=True))) for c in cells])
    rng = np.random.default_rng(seed)
    picks = rng.choice(len(cells), size=N_SAMPLES, p=probs / probs.sum())
    return {"names": [skin.rename(n) for n in names], "rows": [list(cells[int(i)]) for i in picks]}


def _evidence(raw: RawItem, world: World, skin: Skin, shuffle: int, seed: int) -> Evidence:
    if raw.evidence_kind == "mechanism":
        return Evidence(kind="mechanism",
                        payload=_rename_world_json(world.to_json(seed=shuffle), skin))
    if raw.evidence_kind == "graph_joint":
        return Evidence(kind="graph_joint", payload={
            "graph": _graph_json(world, skin, shuffle), "joint": _joint_json(world, skin, shuffle)})
    return Evidence(kind="joint", payload={
        "joint": _joint_json(world, skin, shuffle),
        "samples": _samples_json(world, skin, shuffle, seed),
    })


def _question(
    raw: RawItem, skin: Skin, template_seed: int, order: Sequence[str]
) -> tuple[str, dict[str, Any] | None]:
    rng = np.random.default_rng(template_seed)
    q = raw.query
    if raw.template == "decision":
        return _decision_question(raw, skin, order)
    if q is None:
        return render_question(raw.template, rng), None
    target, do, evidence = (skin.rename_event(e) for e in (q.target, q.do, q.evidence))
    query = {"rung": q.rung, "target": target, "evidence": evidence}
    if q.rung != 1:
        query["do"] = do
    if raw.template == "mediation":
        mediators = [skin.rename(m) for m in raw.mediators]
        inner = skin.rename_event(raw.inner)
        query["nested"] = {"mediators": mediators, "inner_do": inner}
        return TEMPLATES["mediation"][0].format(**question_slots(raw, skin, order)), query
    text = render_question(raw.template, rng, target=target, do=do, evidence=evidence,
                           order=order)
    return text, query


def question_kind(raw: RawItem) -> str:
    """The template kind of an item's question (``rung1_marginal``: rung 1 without evidence)."""
    if raw.template == "rung1" and raw.query is not None and not raw.query.evidence:
        return "rung1_marginal"
    return raw.template


def question_slots(raw: RawItem, skin: Skin, order: Sequence[str]) -> dict[str, str]:
    """The filled slots of an item's question, as its original wording fills them."""
    if raw.template == "decision":
        return {"bad": render_event(skin.rename_event(raw.bad_outcome), order),
                "loss": f"{LOSS_PER_EVENT:g}",
                "options": ", ".join(f"{action_id(a, skin)} (cost {a.cost:g})"
                                     for a in raw.actions)}
    q = raw.query
    if q is None:
        return {}
    target, do, evidence = (skin.rename_event(e) for e in (q.target, q.do, q.evidence))
    if raw.template == "mediation":
        def joined(event: Mapping[str, int]) -> str:
            return ", ".join(f"{k}={v}" for k, v in event.items())
        return {"do": joined(do), "mediators": ", ".join(skin.rename(m) for m in raw.mediators),
                "inner": joined(skin.rename_event(raw.inner)), "target": joined(target)}
    given = (f", among cases with {render_event(evidence, order)}"
             if evidence and raw.template == "rung2" else "")
    return {"target": render_event(target, order), "do": render_event(do, order),
            "evidence": render_event(evidence, order), "given": given}


def paraphrase_templates(raw: RawItem, world_seed: int, slot: int, n: int) -> list[int]:
    """The ``n`` paraphrase templates an item's variants are worded by: distinct, drawn at
    random (seeded by world and slot) from the paraphrase table of its question kind."""
    rng = np.random.default_rng(_derived(world_seed, f"paraphrase{slot}"))
    return [int(i) for i in rng.permutation(len(PARAPHRASES[question_kind(raw)]))[:n]]


def action_id(action: Action, skin: Skin) -> str:
    """Public id of a decision action: ``leave_alone`` or ``do(<name>=<value>)``."""
    if action.variable is None:
        return "leave_alone"
    return f"do({skin.rename(action.variable)}={action.value})"


def _decision_question(
    raw: RawItem, skin: Skin, order: Sequence[str]
) -> tuple[str, dict[str, Any]]:
    bad = skin.rename_event(raw.bad_outcome)
    text = TEMPLATES["decision"][0].format(**question_slots(raw, skin, order))
    return text, {"decision": {"bad_outcome": bad, "loss_per_event": LOSS_PER_EVENT}}


def render_case(
    raw: RawItem,
    d: WorldDraw,
    skin: Skin,
    *,
    case_id: str,
    world_seed: int,
    slot: int,
    twin: str,
    shuffle: int,
) -> tuple[PublicCase, PrivateOracle]:
    """Render one raw item under ``skin`` into its public case and private oracle record.

    ``shuffle`` seeds the listing order of the world's variables (:func:`listing_seed`).
    """
    w = d.world
    evidence = _evidence(raw, w, skin, shuffle, _derived(world_seed, "samples"))
    order = [skin.rename(v["name"]) for v in w.to_json(seed=shuffle)["variables"]]
    question, query = _question(raw, skin, _derived(world_seed, f"template{slot}"), order)
    case = PublicCase(
        case_id=case_id, world_id=w.world_id, family=public_family(raw, d.structure),
        item_type=raw.item_type,
        rung=RUNG_NAMES[raw.rung], skin=skin.name, question=question, query=query,
        evidence=evidence, assumptions=ASSUMPTIONS[raw.item_type], allowed_tools=["calc"],
        permitted_interventions=[Intervention(id=action_id(a, skin), cost=a.cost)
                                 for a in raw.actions],
        answer_format="status|action|confidence" if raw.actions else
        ANSWER_FORMAT[raw.item_type],
    )
    cp = discovery_cpdag(raw) if raw.true_edges is not None else None
    oracle = PrivateOracle(
        case_id=case_id, world_id=w.world_id, family=raw.family, structure=d.structure,
        skin=skin.name, item_type=raw.item_type, rung=raw.rung, estimand=raw.estimand,
        scm_hash=scm_hash(w, world_seed), seed=world_seed, identifiable=raw.identifiable,
        value=raw.value, bounds=raw.bounds,
        witness_hash=digest(raw.witness.to_json(seed=0)) if raw.witness is not None else None,
        witness_gap=raw.witness_gap,
        factual_episode=skin.rename_event(raw.query.evidence)
        if raw.query is not None and raw.rung == 3 else None,
        cf_link=twin,
        expected_loss={action_id(a, skin): a.expected_loss for a in raw.actions} or None,
        confusions=Confusions(**dict(raw.confusions)),
        true_edges=skin.rename_edges(raw.true_edges) if raw.true_edges is not None else None,
        cpdag=Cpdag(
            directed=[(skin.rename(a), skin.rename(b)) for a, b in cp["directed"]],
            undirected=[_link(skin.rename(a), skin.rename(b)) for a, b in cp["undirected"]],
        ) if cp is not None else None,
    )
    return case, oracle


LISTING_CANDIDATES = 16
"""Random listing orders drawn per world; the most direction-neutral one is used."""


def forward_excess(world: World, shuffle: int) -> int:
    """Edges listed parent-first minus edges listed child-first under ``shuffle``."""
    pos = {v["name"]: i for i, v in enumerate(world.to_json(seed=shuffle)["variables"])}
    return sum(1 if pos[a] < pos[b] else -1 for a, b in world.edges())


def listing_seed(world: World, world_seed: int, lean: int) -> int:
    """The shuffle seed of a world's public listing (seed 003 "World model": listing order).

    Of ``LISTING_CANDIDATES`` uniformly random listings, the one whose forward-edge
    share is closest to one half; a tie between a share above and below one half
    (odd edge counts) goes to the side ``lean`` (+1 above, -1 below), which the
    build sets against the running excess of forward edges. A plain shuffle leaves
    sampling noise of about ±0.06 on a 26-world split, enough to cross the 0.55
    gate by chance; this keeps the bench-wide share at one half within one edge.
    """
    seeds = [_derived(world_seed, f"listing{k}") for k in range(LISTING_CANDIDATES)]

    def key(s: int) -> tuple[int, int]:
        excess = forward_excess(world, s)
        return abs(excess), 0 if excess * lean >= 0 else 1

    return min(seeds, key=key)


def _link(a: str, b: str) -> tuple[str, str]:
    """An undirected link stored once, ends in name order."""
    return (a, b) if a <= b else (b, a)


def scm_hash(world: World, world_seed: int) -> str:
    """Private digest of a world: its mechanism (canonical order) together with its seed."""
    return digest({"world": world.to_json(seed=0), "seed": world_seed})


def _derived(world_seed: int, purpose: str) -> int:
    h = hashlib.sha256(f"{world_seed}|{purpose}".encode()).digest()
    return int.from_bytes(h[:8], "big")


def build_world(split: str, structure: str, world_seed: int, lean: int = 1, *,
                excess: int = 0, twins: bool = False, paraphrases: int = 0,
                skin_swap: bool = False, renaming: bool = False) -> BuiltWorld:
    """Draw one world and render all its items under a domain skin and the nonsense skin.

    With ``paraphrases`` = N, each item's domain-skin case gets N paraphrase variants
    (:func:`paraphrase_case`); with ``skin_swap`` one under another domain skin
    (:func:`skins.swapped_skin`), with ``renaming`` one under fresh names of the same skin
    (:func:`skins.renamed_skin`), each drawn from a seed derived from the world's.

    With ``twins``, the matched diagnostic variants of its items
    (:func:`variants.diagnostic_pairs`) are rendered too, each as its own public world
    (:func:`build_twin`); ``excess`` is the running forward-listing excess before this world,
    which their listings lean against. Without, the world is what it always was.
    """
    world_id = world_id_of(split, world_seed)
    rng = np.random.default_rng(world_seed)
    d = draw_world(structure, rng, world_id)
    shuffle = listing_seed(d.world, world_seed, lean)
    raws = world_items(d, rng)
    domain = DOMAIN_SKINS[int(rng.integers(len(DOMAIN_SKINS)))]
    names = list(d.world.names)
    skins = (draw_skin(domain, names, rng), draw_skin("nonsense", names, rng))
    pairs = {p.item_key: p for p in diagnostic_pairs(d, raws)} if twins else {}
    agrees = forward_excess(d.world, shuffle) == len(d.world.edges())
    cases, oracles, witnesses = [], [], []
    for slot, raw in enumerate(raws):
        ids = (f"{world_id}-q{slot:02d}d", f"{world_id}-q{slot:02d}n")
        for skin, cid, twin in ((skins[0], ids[0], ids[1]), (skins[1], ids[1], ids[0])):
            case, orc = render_case(raw, d, skin, case_id=cid, world_seed=world_seed,
                                    slot=slot, twin=twin, shuffle=shuffle)
            pair = pairs.get(raw.key)
            if pair is not None:
                orc = orc.model_copy(update={"variant": Variant(
                    label=pair.label, kind=ITEM, parent=cid, seed=world_seed,
                    confused=[*pair.confused], order_agrees=agrees)})
            cases.append(case)
            oracles.append(orc)
        if raw.witness is not None:
            witnesses.append((raw.key, raw.witness))
    built_twins: list[BuiltTwin] = []
    running = excess + forward_excess(d.world, shuffle)
    slots = {raw.key: slot for slot, raw in enumerate(raws)}
    for pair in pairs.values():
        slot = slots[pair.item_key]
        parents = (f"{world_id}-q{slot:02d}d", f"{world_id}-q{slot:02d}n")
        for t in pair.twins:
            built_twins.append(build_twin(split, world_seed, pair, t, parents,
                                          lean=-1 if running > 0 else 1))
            running += built_twins[-1].forward_excess
    mutated = [
        paraphrase_case(split, raw, d, skins[0], world_seed=world_seed, slot=slot,
                        shuffle=shuffle, template=t, k=k)
        for slot, raw in enumerate(raws)
        for k, t in enumerate(paraphrase_templates(raw, world_seed, slot, paraphrases))]
    respelled: list[tuple[MutationKind, Skin]] = []
    if skin_swap:
        respelled.append(("skin_swap", swapped_skin(
            skins[0], names, np.random.default_rng(_derived(world_seed, "skin_swap")))))
    if renaming:
        respelled.append(("renaming", renamed_skin(
            skins[0], names, np.random.default_rng(_derived(world_seed, "renaming")))))
    mutated += [mutated_case(split, raw, d, skin, kind=kind, world_seed=world_seed, slot=slot,
                             shuffle=shuffle)
                for kind, skin in respelled for slot, raw in enumerate(raws)]
    return BuiltWorld(world_id, world_seed, d, tuple(cases), tuple(oracles), tuple(witnesses),
                      running - excess, tuple(built_twins), mutated=tuple(mutated))


def mutated_case(split: str, raw: RawItem, d: WorldDraw, skin: Skin, *, kind: MutationKind,
                 world_seed: int, slot: int, shuffle: int, k: int = 0,
                 template: int | None = None) -> tuple[PublicCase, PrivateOracle]:
    """An item's domain-skin case mutated as ``kind`` says, as a public case of its own.

    It is rendered under ``skin`` (the world's own for a paraphrase, a swapped or renamed
    one otherwise) with the original's listing and template, over the same world; a
    paraphrase then takes the wording of its ``template`` (:func:`paraphrase_case`). Its
    public world id is opaque (derived from the world seed, kind, item and ``k``); its
    private record keeps the parent's world id (one bootstrap cluster) and a mutation record
    naming the original case.
    """
    parent = f"{d.world.world_id}-q{slot:02d}d"
    public_world = world_id_of(split, _derived(world_seed, f"{kind}:{raw.key}:{k}") >> 1)
    case_id = f"{public_world}-q00d"
    # Rendered from the world under its public id, since a mechanism payload names its world;
    # the private record keeps the world's own.
    public = replace(d, world=World(public_world, d.world.variables))
    case, _ = render_case(raw, public, skin, case_id=case_id, world_seed=world_seed,
                          slot=slot, twin=parent, shuffle=shuffle)
    _, orc = render_case(raw, d, skin, case_id=case_id, world_seed=world_seed, slot=slot,
                         twin=parent, shuffle=shuffle)
    if template is not None:
        order = [skin.rename(v["name"]) for v in d.world.to_json(seed=shuffle)["variables"]]
        text = render_paraphrase(question_kind(raw), template, question_slots(raw, skin, order))
        case = case.model_copy(update={"question": text})
    return case, orc.model_copy(update={"cf_link": None, "mutation": Mutation(
        kind=kind, parent=parent, template=template,
        table=PARAPHRASE_TABLE if template is not None else None)})


def paraphrase_case(split: str, raw: RawItem, d: WorldDraw, skin: Skin, *, world_seed: int,
                    slot: int, shuffle: int, template: int, k: int
                    ) -> tuple[PublicCase, PrivateOracle]:
    """The ``k``-th paraphrase variant of an item's domain-skin case, worded by ``template``.

    Same world, skin, listing, evidence, query and answer as the original case; only the
    question text differs (:func:`mutated_case`).
    """
    return mutated_case(split, raw, d, skin, kind="paraphrase", world_seed=world_seed,
                        slot=slot, shuffle=shuffle, k=k, template=template)


TWIN_LISTINGS = 4096
"""Listing seeds tried for a twin listed wholly in (or against) causal order."""


def ordered_listing(world: World, seed: int, order: int) -> int | None:
    """A shuffle seed listing every edge parent first (``order`` +1) or child first (-1)."""
    want = order * len(world.edges())
    for k in range(TWIN_LISTINGS):
        s = _derived(seed, f"listing{k}")
        if forward_excess(world, s) == want:
            return s
    return None


def build_twin(split: str, parent_seed: int, pair: Pair, t: Twin, parent_cases: Sequence[str],
               *, lean: int) -> BuiltTwin:
    """Render twin ``t`` of ``pair`` as its own public world with fresh skins.

    Its id, skins and listing come from a seed derived from the parent's; its private
    records keep the parent's world id (the bootstrap cluster) and name the parent case of
    the same skin (``parent_cases``: domain, nonsense) in their variant record.
    """
    seed = _derived(parent_seed, f"twin:{pair.item_key}:{t.kind}") >> 1
    world_id = world_id_of(split, seed)
    world = World(world_id, t.draw.world.variables)
    d = replace(t.draw, world=world)
    rng = np.random.default_rng(seed)
    shuffle = ordered_listing(world, seed, t.order) if t.order else \
        listing_seed(world, seed, lean)
    if shuffle is None:
        raise IntegrityError(f"{world_id}: no listing of {t.kind} found in {TWIN_LISTINGS} "
                             f"tries")
    names = list(world.names)
    domain = DOMAIN_SKINS[int(rng.integers(len(DOMAIN_SKINS)))]
    skins = (draw_skin(domain, names, rng), draw_skin("nonsense", names, rng))
    ids = (f"{world_id}-q00d", f"{world_id}-q00n")
    agrees = forward_excess(world, shuffle) == len(world.edges())
    cases, oracles = [], []
    for skin, cid, other, parent in ((skins[0], ids[0], ids[1], parent_cases[0]),
                                     (skins[1], ids[1], ids[0], parent_cases[1])):
        case, orc = render_case(t.item, d, skin, case_id=cid, world_seed=seed, slot=0,
                                twin=other, shuffle=shuffle)
        cases.append(case)
        oracles.append(orc.model_copy(update={
            "world_id": world_id_of(split, parent_seed), "seed": parent_seed,
            "variant": Variant(label=pair.label, kind=t.kind, parent=parent, seed=seed,
                               confused=[*t.confused], order_agrees=agrees)}))
    return BuiltTwin(world_id, seed, t.kind, world, tuple(cases), tuple(oracles),
                     forward_excess(world, shuffle))


def _jsonl(records: Sequence[Mapping[str, Any]]) -> bytes:
    return b"".join(canonical_bytes(r) + b"\n" for r in records)


def _write(path: pathlib.Path, data: bytes, mode: int = 0o644) -> str:
    path.write_bytes(data)
    os.chmod(path, mode)
    return bytes_digest(data)


def _world_record(b: BuiltWorld) -> dict[str, Any]:
    d = b.draw
    return {
        "world_id": b.world_id, "seed": b.seed, "structure": d.structure,
        "treatment": d.treatment, "outcome": d.outcome, "mediators": list(d.mediators),
        "condition": dict(d.condition), "world": d.world.to_json(seed=0),
        "causal_order": list(d.world.names),
        "witnesses": [{"item": k, "world": w.to_json(seed=0)} for k, w in b.witnesses],
        **({"twins": [{"world_id": t.world_id, "seed": t.seed, "kind": t.kind,
                       "world": t.world.to_json(seed=0)} for t in b.twins]} if b.twins else {}),
        **({"network": dict(b.network)} if b.network is not None else {}),
    }


MAX_WORLDS = 2_000
"""Largest ``--worlds`` a build accepts (the full test split has 200); past it, refused
before anything is drawn or allocated."""


def check_world_count(n_worlds: int) -> int:
    """Return ``n_worlds`` if it is in [1, :data:`MAX_WORLDS`]; refuse (``bad_request``)."""
    if not 1 <= n_worlds <= MAX_WORLDS:
        raise Refusal([Reason("bad_request", f"the number of worlds must be in [1, "
                              f"{MAX_WORLDS}], got {n_worlds}", subject="worlds",
                              data={"max_worlds": MAX_WORLDS})], gate="causal build")
    return n_worlds


def check_paraphrase_count(n: int) -> int:
    """Return ``n`` if it is in [0, :data:`MAX_PARAPHRASES`]; refuse (``bad_request``)."""
    if not 0 <= n <= MAX_PARAPHRASES:
        raise Refusal([Reason("bad_request", f"the number of paraphrases per item must be in "
                              f"[0, {MAX_PARAPHRASES}] (one per template of the paraphrase "
                              f"table), got {n}", subject="paraphrases",
                              data={"max_paraphrases": MAX_PARAPHRASES})], gate="causal build")
    return n


def build_split(
    split: str,
    n_worlds: int,
    seed: int,
    out: pathlib.Path,
    progress: Callable[[int], None] | None = None,
    *,
    force: bool = False,
    families: str | None = None,
    twins: bool = False,
    networks: str | None = None,
    paraphrases: int = 0,
    skin_swap: bool = False,
    renaming: bool = False,
) -> dict[str, Any]:
    """Build ``split`` with ``n_worlds`` worlds from ``seed`` into ``out``; return a summary.

    ``networks`` (``--networks``, comma-separated bundled names or ``.bif`` paths) adds each
    imported network as one more world of the "network" family (:mod:`network_build`),
    after the generated ones; without it the bench is byte for byte what it was.

    ``families`` (comma-separated ``incident,active,revision,provenance,negative``) adds
    those episode families as records/2 files (:mod:`episode_build`), ``n_worlds`` worlds
    of them drawn from the split's own seed stream. ``twins`` (``--twins``) adds the
    matched diagnostic variants the twin-licensed failure labels need (:mod:`variants`):
    then cases are ordered by case id and ``world_ids`` sorted, so nothing public says
    which case is a twin of which. ``paraphrases`` (``--paraphrases N``) adds N paraphrase
    variants of every item (:func:`paraphrase_case`), ``skin_swap`` (``--skin-swap``) and
    ``renaming`` (``--renaming``) one skin-swapped and one renamed variant of every item
    (:func:`mutated_case`), all ordered the same way.

    The bench is written into a hidden temporary sibling, leak-scanned, sealed and
    renamed into place in one step (:func:`rungbench.evidence.sealed.publish_dir`):
    a killed or failed build leaves nothing at ``out``. An existing ``out`` is refused
    (``exists``) unless ``force``.
    """
    check_world_count(n_worlds)
    check_paraphrase_count(paraphrases)
    if split not in STRUCTURES:
        raise Refusal([Reason("bad_request", f"unknown split {split!r}; known: "
                              f"{', '.join(STRUCTURES)}", subject="split")],
                      gate="causal build")
    episodes = None
    if families is not None:
        # Imported here: episode_build renders through episode_items, which imports this
        # module.
        from rungbench.causal.bench.episode_build import build_episodes, parse_families

        chosen = parse_families(families)
    specs = _network_specs(networks)
    ensure_absent(out, force=force, what="causal bench")
    built = build_worlds(split, n_worlds, seed, progress, twins=twins, paraphrases=paraphrases,
                         skin_swap=skin_swap, renaming=renaming)
    if specs:
        from rungbench.causal.bench.network_build import build_networks

        built += build_networks(split, seed, specs,
                                excess=sum(b.forward_excess for b in built))
    if families is not None:
        episodes = build_episodes(split, n_worlds, seed, chosen)
    with publish_dir(out, kind=BENCH_KIND, force=force) as temp:
        manifest = write_bench(temp, split, seed, built)
        if episodes is not None:
            manifest = episodes.write(temp, manifest)
        report = scan_bench(temp)
        if not report.ok:
            raise Refusal([Reason("leak", f.detail, subject=f.where)
                           for f in report.findings[:20]], gate="leak scan")
    hide_seal(out)
    oracles = [o.model_dump(mode="json") for b in built for o in (*b.oracles, *_twin_oracles(b))]
    return {**manifest, "out": str(out), "leak_scan": _relocated(report.to_json(), temp, out),
            "structures": dict(sorted(Counter(b.draw.structure for b in built).items())),
            "witness_gaps": witness_gap_summary(oracles)}


def _network_specs(networks: str | None) -> list[str]:
    """The checked ``--networks`` specs ([] when none are asked for)."""
    if networks is None:
        return []
    # Imported here: network_build imports this module.
    from rungbench.causal.bench.networks import parse_networks

    return parse_networks(networks)


def _relocated(doc: dict[str, Any], temp: pathlib.Path, out: pathlib.Path) -> dict[str, Any]:
    """The leak-scan summary with the temporary directory's path replaced by ``out``."""
    text = json.dumps(doc).replace(json.dumps(str(temp))[1:-1], json.dumps(str(out))[1:-1])
    relocated: dict[str, Any] = json.loads(text)
    return relocated


def build_worlds(split: str, n_worlds: int, seed: int,
                 progress: Callable[[int], None] | None = None, *,
                 twins: bool = False, paraphrases: int = 0, skin_swap: bool = False,
                 renaming: bool = False) -> list[BuiltWorld]:
    """Draw and render every world of the split's plan (with their diagnostic twins when
    ``twins``, their items' mutated variants when ``paraphrases``, ``skin_swap`` or
    ``renaming``), balancing the listing lean."""
    built: list[BuiltWorld] = []
    excess = 0
    for i, (structure, wseed) in enumerate(world_plan(split, n_worlds, seed)):
        built.append(build_world(split, structure, wseed, lean=-1 if excess > 0 else 1,
                                 excess=excess, twins=twins, paraphrases=paraphrases,
                                 skin_swap=skin_swap, renaming=renaming))
        excess += built[-1].forward_excess
        if progress is not None:
            progress(i + 1)
    return built


def write_bench(root: pathlib.Path, split: str, seed: int,
                built: Sequence[BuiltWorld]) -> dict[str, Any]:
    """Write the public and private files of a bench under ``root``; return the manifest."""
    public, private = root / "public", root / "private"
    public.mkdir(parents=True, exist_ok=True)
    private.mkdir(parents=True, exist_ok=True)
    os.chmod(private, 0o700)
    with_mutations = any(b.mutated for b in built)
    shuffled = with_mutations or any(b.twins for b in built)
    cases = [c.model_dump(mode="json") for c in public_order(built, shuffled=shuffled)]
    by_id = {o.case_id: o for b in built
             for o in (*b.oracles, *_twin_oracles(b), *(o for _, o in b.mutated))}
    oracles = [by_id[c["case_id"]].model_dump(mode="json") for c in cases]
    files = {"cases.jsonl": _write(public / "cases.jsonl", _jsonl(cases))}
    schema_paths = write_schemas(public / "schemas", mutations=with_mutations)
    for p in schema_paths:
        files[f"schemas/{p.name}"] = bytes_digest(p.read_bytes())
    counts = Counter((o["family"], o["item_type"]) for o in oracles)
    manifest = {
        "schema": BENCH_SCHEMA, "split": split, "bench_version": BENCH_VERSION,
        "n_worlds": len(built), "n_cases": len(cases), "files": files,
        "digest": files["cases.jsonl"],
        "world_ids": sorted({c["world_id"] for c in cases}) if shuffled
        else [b.world_id for b in built],
        "counts": {f"{f}/{t}": n for (f, t), n in sorted(counts.items())},
        **({"mutations": mutation_counts(built)} if with_mutations else {}),
    }
    _write(public / "manifest.json", _pretty(manifest))
    pfiles = {
        "oracle.jsonl": _write(private / "oracle.jsonl", _jsonl(oracles), 0o600),
        "worlds.jsonl": _write(private / "worlds.jsonl",
                               _jsonl([_world_record(b) for b in built]), 0o600),
    }
    _write(private / "manifest.json", _pretty({
        "schema": BENCH_SCHEMA, "split": split, "seed": seed,
        "split_seed": split_seed(split, seed), "files": pfiles,
        "public_digest": manifest["digest"],
    }), 0o600)
    return manifest


def mutation_counts(built: Sequence[BuiltWorld]) -> dict[str, Any]:
    """The public manifest's count of mutated cases per kind, and the paraphrase table."""
    counts = Counter(o.mutation.kind for b in built for _, o in b.mutated if o.mutation)
    return {"cases": dict(sorted(counts.items())), "paraphrase_table": PARAPHRASE_TABLE}


def _twin_oracles(b: BuiltWorld) -> list[PrivateOracle]:
    return [o for t in b.twins for o in t.oracles]


def public_order(built: Sequence[BuiltWorld], *, shuffled: bool) -> list[PublicCase]:
    """Every public case, twins and mutated cases included: in build order, or
    (``shuffled``, a bench with either) ordered by case id.

    Case ids begin with opaque world ids, so that order interleaves the worlds at random
    and a twin does not sit beside its parent; within a world, slot then skin.
    """
    cases = [c for b in built for c in (*b.cases, *(c for t in b.twins for c in t.cases),
                                        *(c for c, _ in b.mutated))]
    return sorted(cases, key=lambda c: c.case_id) if shuffled else cases


def witness_gap_summary(oracles: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Witness gaps of the non-identifiable items per item type (seed 003 target: median ≥ 0.10).

    Counted once per item (domain-skin copy only); every kept gap exceeds tol by construction.
    """
    out: dict[str, Any] = {}
    for item_type in ("identification", "cf_no_mechanism"):
        gaps = [o["witness_gap"] for o in oracles if o["item_type"] == item_type
                and o["witness_gap"] is not None and o["skin"] != "nonsense"]
        out[item_type] = {
            "n": len(gaps),
            "median": float(np.median(gaps)) if gaps else None,
            "min": float(min(gaps)) if gaps else None,
        }
    return out


def _pretty(doc: Mapping[str, Any]) -> bytes:
    return (json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()
