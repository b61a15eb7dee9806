"""Records/2 cases of the episode families from one world seed (seed 003 "Task families and
generator coverage", the rows marked "next stage").

Per world seed: one incident world gives a diagnosis item (name the cause, choose
a repair), an experiment item (choose a probe) and a three-stage revision
episode; a provenance world and a negative-evidence world give one posterior item
each; an interaction incident world (two jointly necessary faults) gives one more
diagnosis item. Every item is rendered under a domain skin and under the nonsense
skin with the same listing order, linked by ``cf_link`` (the nonsense-skin twin),
exactly as the built families; the listing order of each episode is the most
direction-neutral of 16 shuffles, leaning against the running forward-edge excess
(``build.listing_seed``). Gold answers come from ``incidents``, ``revision`` and
``provenance``, which ask the exact oracle.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rungbench.causal.bench.build import forward_excess, listing_seed
from rungbench.causal.bench.incidents import (
    ACT_NOW,
    JOINT_SEP,
    LOSS_PER_OUTAGE,
    OUTAGE,
    Diagnosis,
    IncidentWorld,
    draw_incident,
    draw_incident_world,
    draw_interaction_world,
    tool_outputs,
)
from rungbench.causal.bench.provenance import (
    PosteriorItem,
    draw_negative_evidence,
    draw_provenance,
)
from rungbench.causal.bench.records import (
    EpisodeCase,
    EpisodeEvidence,
    EpisodeOracle,
    Intervention,
)
from rungbench.causal.bench.revision import RevisionStage, draw_revision
from rungbench.causal.bench.skins import DOMAIN_SKINS, Skin, draw_skin
from rungbench.causal.scm import oracle
from rungbench.causal.scm.world import Query, World
from rungbench.evidence.canonical import digest

INCIDENT_ASSUMPTIONS = [
    "Exactly one hypothesis is active (a single fault, or a listed joint fault a+b: both "
    "active); the mechanism shown is complete and correct.",
    "Telemetry not yet delivered can be probed at the listed cost.",
    f"The outage costs {LOSS_PER_OUTAGE:g} units unless the repair removes its cause.",
]
"""Assumptions stated on incident items."""

POSTERIOR_ASSUMPTIONS = [
    "The mechanism shown is complete and correct, including how each report was produced.",
]
"""Assumptions stated on provenance and negative-evidence items."""


@dataclass(frozen=True)
class EpisodeItem:
    """One episode-family item in world names, before skinning."""

    key: str
    """Slot within the world."""
    family: str
    """Task family."""
    item_type: str
    """``diagnosis``, ``experiment`` or ``posterior``."""
    structure: str
    """``incident``, ``provenance`` or ``negative_evidence``."""
    world: World
    """The SCM shown (the stage's mechanism)."""
    episode: str
    """Episode key within the world."""
    stage: int = 1
    """Stage within the episode."""
    diagnosis: Diagnosis | None = None
    """Incident items: oracle quantities given the delivered evidence."""
    iw: IncidentWorld | None = None
    """Incident items: the incident world shown."""
    true_cause: str | None = None
    """Incident items: the episode's fault."""
    stale: Diagnosis | None = None
    """Revision stage 3: the evidence under the superseded mechanism."""
    previous_set: tuple[str, ...] | None = None
    """Revision stages after the first: the previous stage's identified set."""
    revised: str | None = None
    """Revision stage 3: the symptom whose mechanism was corrected."""
    posterior: PosteriorItem | None = None
    """Posterior items."""


def incident_items(rng: np.random.Generator, world_id: str) -> list[EpisodeItem]:
    """Diagnosis, experiment and revision items of one incident world."""
    iw = draw_incident_world(rng, world_id)
    inc = draw_incident(iw, rng)
    d = inc.diagnosis()
    out = [
        EpisodeItem("diagnose", "root_cause_debugging", "diagnosis", "incident", iw.world, "e0",
                    diagnosis=d, iw=iw, true_cause=inc.fault),
        EpisodeItem("experiment", "active_experiments", "experiment", "incident", iw.world, "e0",
                    diagnosis=d, iw=iw, true_cause=inc.fault),
    ]
    stages = draw_revision(iw, rng)
    if stages is not None:
        out += revision_items(stages)
    return out


OMITTED_JOINT_CAUSE = "omitted_joint_cause"
"""Taxonomy label (seed 003): names one of two jointly necessary causes as sufficient."""


def interaction_items(rng: np.random.Generator, world_id: str) -> list[EpisodeItem]:
    """One diagnosis item of an interaction incident world (two jointly necessary faults)."""
    iw = draw_interaction_world(rng, f"{world_id}j")
    inc = draw_incident(iw, rng)
    return [EpisodeItem("interaction", "root_cause_debugging", "diagnosis", "interaction_incident",
                        iw.world, "e4", diagnosis=inc.diagnosis(), iw=iw, true_cause=inc.fault)]


def revision_items(stages: Sequence[RevisionStage]) -> list[EpisodeItem]:
    """One diagnosis item per stage of a revision episode."""
    out = []
    prev: tuple[str, ...] | None = None
    for st in stages:
        iw = st.diagnosis.iw
        out.append(EpisodeItem(f"revise{st.stage}", "sequential_revision", "diagnosis",
                               "incident", iw.world, "e1", stage=st.stage, diagnosis=st.diagnosis,
                               iw=iw, true_cause=st.fault, stale=st.stale, previous_set=prev,
                               revised=st.revised))
        prev = tuple(st.diagnosis.identified_set)
    return out


def posterior_items(rng: np.random.Generator, world_id: str) -> list[EpisodeItem]:
    """One provenance and one negative-evidence posterior item."""
    prov = draw_provenance(rng, f"{world_id}p")
    neg = draw_negative_evidence(rng, f"{world_id}n")
    return [
        EpisodeItem("provenance", "provenance_source_dependence", "posterior", "provenance",
                    prov.world, "e2", posterior=prov),
        EpisodeItem("negative", "negative_evidence", "posterior", "negative_evidence",
                    neg.world, "e3", posterior=neg),
    ]


def episode_world_id(split: str, world_seed: int) -> str:
    """Opaque world id of an episode-family world (hash of split and seed; seed not recoverable)."""
    h = hashlib.sha256(f"rungbench.causal.world/2|{split}|{world_seed}".encode()).hexdigest()
    return f"x{h[:10]}"


def _derived(world_seed: int, purpose: str) -> int:
    h = hashlib.sha256(f"{world_seed}|{purpose}".encode()).digest()
    return int.from_bytes(h[:8], "big")


def world_items(world_seed: int, world_id: str) -> list[EpisodeItem]:
    """Every episode-family item of one world seed, in a fixed slot order."""
    rng = np.random.default_rng(world_seed)
    items = incident_items(rng, world_id) + posterior_items(rng, world_id)
    joint_rng = np.random.default_rng(_derived(world_seed, "interaction"))
    return items + interaction_items(joint_rng, world_id)


def hypothesis_id(h: str, iw: IncidentWorld, skin: Skin) -> str:
    """Public name of hypothesis ``h``: a fault's name, or ``a+b`` for a joint hypothesis."""
    return JOINT_SEP.join(skin.rename(c) for c in iw.components(h))


def _rename_world(world: World, skin: Skin, shuffle: int) -> dict[str, Any]:
    doc = world.to_json(seed=shuffle)
    return {"schema": doc["schema"], "world_id": doc["world_id"], "variables": [
        {**v, "name": skin.rename(v["name"]), "parents": [skin.rename(p) for p in v["parents"]]}
        for v in doc["variables"]]}


def repair_id(action: str, skin: Skin) -> str:
    """Public id of a repair-menu entry (``repair:<fault>``, ``restart_service``, ...)."""
    if action.startswith("repair:"):
        return f"repair:{skin.rename(action.removeprefix('repair:'))}"
    return action


def probe_id(probe: str, skin: Skin) -> str:
    """Public id of an experiment-menu entry (``probe:<node>`` or ``act_now``)."""
    return probe if probe == ACT_NOW else f"probe:{skin.rename(probe)}"


def _incident_case(item: EpisodeItem, skin: Skin, shuffle: int) -> dict[str, Any]:
    d, iw = item.diagnosis, item.iw
    assert d is not None and iw is not None
    tools = tool_outputs(iw, d.evidence)
    payload = {
        "mechanism": _rename_world(item.world, skin, shuffle),
        "hypotheses": [hypothesis_id(h, iw, skin) for h in iw.hypotheses],
        "tools": {t: skin.rename_event(v) for t, v in tools.items()},
        "outage": {skin.rename(OUTAGE): 1},
    }
    if item.revised is not None:
        payload["revision"] = {"corrected": skin.rename(item.revised),
                               "note": "the mechanism of this node was wrong in earlier "
                                       "stages; the mechanism shown is the corrected one"}
    menu = [Intervention(id=repair_id(a, skin), cost=_cost(iw, a)) for a in d.actions]
    menu += [Intervention(id=probe_id(x, skin), cost=iw.probe_cost[x]) for x in d.probes]
    if item.item_type == "experiment":
        question = ("Which one experiment should be run next to learn most about which fault "
                    f"is active? Options: {', '.join(probe_id(x, skin) for x in d.eig_bits)}.")
        fmt = "status|experiment|confidence"
    else:
        question = ("Which fault caused the outage? Name it (label) and choose a repair "
                    "(action), or ask for more evidence (need_info, optionally naming an "
                    "experiment).")
        fmt = "status|label|action|experiment|confidence"
    return {"evidence": EpisodeEvidence(kind="telemetry", payload=payload), "question": question,
            "query": {"hypotheses": payload["hypotheses"]}, "menu": menu, "fmt": fmt,
            "assumptions": INCIDENT_ASSUMPTIONS, "tools": ["logs", "metrics", "calc"]}


def _cost(iw: IncidentWorld, action: str) -> float:
    if action.startswith("repair:"):
        return iw.repair_cost[action.removeprefix("repair:")]
    return iw.restart_cost if action == "restart_service" else 0.0


def _posterior_case(item: EpisodeItem, skin: Skin, shuffle: int) -> dict[str, Any]:
    p = item.posterior
    assert p is not None
    target, evidence = skin.rename_event(p.target), skin.rename_event(p.evidence)
    tgt = ", ".join(f"{k}={v}" for k, v in target.items())
    # Evidence in the public listing order, so the nonsense-skin twin reads the same text
    # (sorting by skinned name would order the twins differently).
    listing = [v["name"] for v in p.world.to_json(seed=shuffle)["variables"]]
    ev = ", ".join(f"{skin.rename(k)}={p.evidence[k]}" for k in listing if k in p.evidence)
    return {"evidence": EpisodeEvidence(kind="mechanism",
                                        payload=_rename_world(p.world, skin, shuffle)),
            "question": f"Given {ev}, what is P({tgt})?",
            "query": {"rung": 1, "target": target, "evidence": evidence}, "menu": [],
            "fmt": "status|value|confidence", "assumptions": POSTERIOR_ASSUMPTIONS,
            "tools": ["calc"]}


def _names(items: Sequence[str], skin: Skin) -> list[str]:
    return [skin.rename(x) for x in items]


def _hyps(items: Sequence[str], iw: IncidentWorld, skin: Skin) -> list[str]:
    return [hypothesis_id(h, iw, skin) for h in items]


def _incident_oracle(item: EpisodeItem, skin: Skin) -> dict[str, Any]:
    d, iw = item.diagnosis, item.iw
    assert d is not None and iw is not None and item.true_cause is not None
    ident = d.identified_set
    parts = iw.components(item.true_cause)
    desc = sorted(item.world.descendants(parts) - {OUTAGE, *parts})
    fields: dict[str, Any] = {
        "identifiable": len(ident) == 1, "identified_set": _hyps(ident, iw, skin),
        "true_cause": hypothesis_id(item.true_cause, iw, skin),
        "hypotheses": _hyps(iw.hypotheses, iw, skin),
        "descendants": _names(desc, skin),
        "eig_bits": {probe_id(x, skin): v for x, v in d.eig_bits.items()},
        "experiment_loss": {probe_id(x, skin): v for x, v in d.experiment_loss.items()},
        "discriminating": [probe_id(x, skin) for x in d.discriminating],
        "estimand": f"identified set of P(h | e) over {list(iw.hypotheses)}",
    }
    alt_causes: dict[str, list[str]] = {}
    # A component of a live joint hypothesis named alone, as if sufficient (it is not:
    # alone it cannot produce the outage, so it is outside the identified set).
    omitted = [c for h in ident if h in iw.joint for c in iw.components(h) if c not in ident]
    if omitted:
        alt_causes[OMITTED_JOINT_CAUSE] = _names(omitted, skin)
    if item.item_type == "diagnosis":
        fields["expected_loss"] = {repair_id(a, skin): v for a, v in d.expected_loss.items()}
    if item.stale is not None:
        alt_causes["stale_mechanism"] = _hyps(item.stale.identified_set, iw, skin)
    if alt_causes:
        fields["alt_causes"] = alt_causes
    if item.previous_set is not None:
        fields["previous_set"] = _hyps(item.previous_set, iw, skin)
    return fields


def _posterior_oracle(item: EpisodeItem, skin: Skin) -> dict[str, Any]:
    p = item.posterior
    assert p is not None
    value = p.value
    if p.structure == "negative_evidence" and p.evidence["cover"] and p.evidence["elapsed"]:
        # Where the sensor covers and the delay has passed, the misreading ignores the
        # absent alarm: the prior P(f=1) (the twin equals the truth here).
        confused = oracle.probability(p.world, Query(1, p.target))
    else:
        confused = p.confused
    return {"identifiable": True, "value": value, "alt_values": {p.label: confused},
            "estimand": f"P({p.target}|{dict(p.evidence)})"}


def render_episode_item(item: EpisodeItem, skin: Skin, *, case_id: str, twin: str, world_id: str,
                        world_seed: int, shuffle: int) -> tuple[EpisodeCase, EpisodeOracle]:
    """Render one episode-family item under ``skin`` into its public case and oracle record."""
    parts = _incident_case(item, skin, shuffle) if item.posterior is None \
        else _posterior_case(item, skin, shuffle)
    episode_id = f"{world_id}-{item.episode}"
    case = EpisodeCase(
        case_id=case_id, world_id=world_id, episode_id=f"{episode_id}{skin.name[0]}",
        family=item.family, item_type=item.item_type,  # type: ignore[arg-type]
        rung="observation", skin=skin.name, stage=item.stage, question=parts["question"],
        query=parts["query"], evidence=parts["evidence"], assumptions=parts["assumptions"],
        allowed_tools=parts["tools"], permitted_interventions=parts["menu"],
        answer_format=parts["fmt"])
    fields = _incident_oracle(item, skin) if item.posterior is None \
        else _posterior_oracle(item, skin)
    orc = EpisodeOracle(
        case_id=case_id, world_id=world_id, episode_id=f"{episode_id}{skin.name[0]}",
        stage=item.stage, family=item.family, structure=item.structure, skin=skin.name,
        item_type=item.item_type, rung=1,  # type: ignore[arg-type]
        scm_hash=digest({"world": item.world.to_json(seed=0), "seed": world_seed}),
        seed=world_seed, cf_link=twin, **fields)
    return case, orc


@dataclass(frozen=True)
class EpisodeWorld:
    """Every rendered episode-family case of one world seed."""

    world_id: str
    """Opaque world id."""
    seed: int
    """Private world seed."""
    cases: tuple[EpisodeCase, ...]
    """Public cases (domain and nonsense skins)."""
    oracles: tuple[EpisodeOracle, ...]
    """Private oracle records, aligned with ``cases``."""
    forward_excess: int
    """Forward-listed minus backward-listed edges over the rendered episodes' listings."""
    worlds: tuple[tuple[str, World], ...]
    """(episode key, world shown at its first stage), for the private world records."""


def render_episode_world(split: str, world_seed: int, running_excess: int = 0,
                         families: frozenset[str] | None = None,
                         exclude: frozenset[str] = frozenset()) -> EpisodeWorld:
    """Render the episode-family items of one world seed (only ``families``, when given).

    Items whose structure is in ``exclude`` are left out (a split's held-out structures).

    ``running_excess`` is the forward-edge excess of the listings rendered before this
    world; each episode's listing leans against it, as the built families' worlds do.

    Case ids keep the slot of the unfiltered item list, so a case's id does not depend
    on which families a build selects.
    """
    world_id = episode_world_id(split, world_seed)
    items = world_items(world_seed, world_id)
    # The "next-…" purposes are hashed into the skin and listing draws: kept as first
    # written, so a world seed renders the same cases.
    rng = np.random.default_rng(_derived(world_seed, "next-skins"))
    domain = DOMAIN_SKINS[int(rng.integers(len(DOMAIN_SKINS)))]
    cases, oracles = [], []
    skins_by_world: dict[int, tuple[Skin, Skin]] = {}
    listings: dict[str, int] = {}
    worlds: list[tuple[str, World]] = []
    excess = 0
    for slot, item in enumerate(items):
        key = id(item.world) if item.iw is None else id(item.iw.faults)
        if key not in skins_by_world:
            names = _all_names(item)
            skins_by_world[key] = (draw_skin(domain, names, rng), draw_skin("nonsense", names, rng))
        if (families is not None and item.family not in families) or item.structure in exclude:
            continue
        pair = skins_by_world[key]
        if item.episode not in listings:
            ep_lean = -1 if running_excess + excess > 0 else 1
            shuffle = listing_seed(item.world, _derived(world_seed, f"next-{item.episode}"),
                                   ep_lean)
            listings[item.episode] = shuffle
            excess += forward_excess(item.world, shuffle)
            worlds.append((item.episode, item.world))
        shuffle = listings[item.episode]
        ids = (f"{world_id}-q{slot:02d}d", f"{world_id}-q{slot:02d}n")
        for skin, cid, twin in ((pair[0], ids[0], ids[1]), (pair[1], ids[1], ids[0])):
            c, o = render_episode_item(item, skin, case_id=cid, twin=twin, world_id=world_id,
                                       world_seed=world_seed, shuffle=shuffle)
            cases.append(c)
            oracles.append(o)
    return EpisodeWorld(world_id, world_seed, tuple(cases), tuple(oracles), excess, tuple(worlds))


def build_episode_world(split: str, world_seed: int
                     ) -> tuple[list[EpisodeCase], list[EpisodeOracle]]:
    """Every episode-family case of one world seed under a domain skin and the nonsense skin."""
    built = render_episode_world(split, world_seed)
    return list(built.cases), list(built.oracles)


def _all_names(item: EpisodeItem) -> list[str]:
    return sorted(item.world.names)


def oracle_lookup(oracles: Sequence[EpisodeOracle]) -> Mapping[str, EpisodeOracle]:
    """Oracle records keyed by case id."""
    return {o.case_id: o for o in oracles}
