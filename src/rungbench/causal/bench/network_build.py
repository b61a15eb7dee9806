"""Render imported networks into bench cases: ``causal build --networks`` (``networks``).

Each network is one bench world (one bootstrap cluster) with an opaque id derived from the
split's seed and the network name. Its items are rendered twice, as the generated worlds'
are: under the ``network`` skin (the network's own variable and state names, CLadder-style
wording: "If we set LVEDVOLUME to HIGH, what is the probability that CVP is LOW?") and under
the nonsense skin (variables renamed to nonsense words with a number, states kept), with the
same template and listing order, linked by ``cf_link``, so the skin audit checks them as it
checks every other pair. Evidence is the network's CPTs (``rungbench.bn/1``) in a shuffled
listing order chosen as :func:`build.listing_seed` chooses it; the private oracle record
holds the value, the confusions and, in its estimand, the coupling or the back-door set.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rungbench.causal.bench.build import (
    ANSWER_FORMAT,
    BuiltWorld,
    forward_excess,
    listing_seed,
    scm_hash,
    world_id_of,
)
from rungbench.causal.bench.items import WorldDraw
from rungbench.causal.bench.networks import (
    COUPLING_TEXT,
    NETWORK_FAMILY,
    NETWORK_STRUCTURE,
    Network,
    NetworkItem,
    load_network,
    network_items,
    network_name,
    state_of,
)
from rungbench.causal.bench.records import (
    RUNG_NAMES,
    Confusions,
    Evidence,
    PrivateOracle,
    PublicCase,
)
from rungbench.causal.bench.skins import SKINS, Skin
from rungbench.causal.bench.splits import split_seed
from rungbench.causal.scm.cpts import distribution

NETWORK_DRAWS = 3
"""Slots per network; each slot draws one item of every kind (``networks.ITEM_KINDS``)."""

BN_SCHEMA = "rungbench.bn/1"
"""Schema tag of the CPT evidence of a network case."""

ROW_ORDER = ("row r of a CPT is the parent setting with value(parent_i) = (r // stride_i) % "
             "k_i, the first parent varying fastest; each row lists P(V = s | parents) in the "
             "order of V's states")
"""How a CPT's rows are indexed (as everywhere in rungbench, ``scm.cpts``)."""

MECHANISM_ASSUMPTIONS = [
    "The CPTs shown are the network's complete and correct mechanism.",
    "Each variable's exogenous noise is independent of every other variable's.",
]
"""Stated assumptions of an exact network item."""

IDENTIFICATION_ASSUMPTIONS = [
    "The graph shown is correct and every variable is observed.",
    "The CPTs shown are the exact observational distribution (the joint is their product).",
]
"""Stated assumptions of a network identification item."""

TEMPLATES: dict[str, tuple[str, ...]] = {
    "r1": (
        "Among cases where {evidence}, what is the probability that {target}?",
        "Given that {evidence}, how likely is it that {target}?",
    ),
    "r2": (
        "If we set {do}, what is the probability that {target}?",
        "Suppose we intervene to set {do}. How likely is it that {target}?",
    ),
    "ident": (
        "Only the causal graph and the observational distribution are known, and every "
        "variable is observed. Is the effect of setting {do} on {outcome} identifiable from "
        "observational data? If it is, what is the probability that {target} when we set "
        "{do}?",
    ),
    "r3": (
        "Assume {coupling}. In one case {evidence}. Had we set {do}, what is the probability "
        "that {target} in that same case?",
        "Assume {coupling}. We observed a case where {evidence}. If {do_past} instead, how "
        "likely is it that {target}?",
    ),
}
"""CLadder-style question templates per item kind (the structured query travels with them)."""


def _derived(seed: int, purpose: str) -> int:
    h = hashlib.sha256(f"{seed}|{purpose}".encode()).digest()
    return int.from_bytes(h[:8], "big")


def network_seed(split: str, seed: int, name: str) -> int:
    """The private seed of network ``name`` in ``split`` (a 62-bit integer)."""
    h = hashlib.sha256(f"rungbench.causal.network/1|{split_seed(split, seed)}|{name}".encode())
    return int.from_bytes(h.digest()[:8], "big") >> 2 | 1 << 61


def nonsense_skin(names: Sequence[str], rng: np.random.Generator) -> Skin:
    """Each variable a distinct nonsense word with a number (``zarn3``): networks outgrow
    the 16-word pool."""
    pool = SKINS["nonsense"]
    rounds = -(-len(names) // len(pool))
    words = [f"{w}{k}" for k in range(1, rounds + 1) for w in pool]
    picks = rng.choice(len(words), size=len(names), replace=False)
    return Skin("nonsense", {v: words[int(i)] for v, i in zip(sorted(names), picks,
                                                               strict=True)})


def own_names(names: Sequence[str]) -> Skin:
    """The ``network`` skin: every variable keeps its own name."""
    return Skin("network", {v: v for v in names})


def bn_variables(net: Network, order: Sequence[str], skin: Skin) -> list[dict[str, Any]]:
    """The CPTs in listing ``order``, names under ``skin``, states kept."""
    cpts = {c.name: c for c in net.cpts}
    return [{"name": skin.rename(v), "parents": [skin.rename(p) for p in cpts[v].parents],
             "states": [state_of(net, v, s) for s in range(cpts[v].card)],
             "cpt": [list(row) for row in distribution(cpts[v])]} for v in order]


def _evidence(item: NetworkItem, net: Network, order: Sequence[str], skin: Skin) -> Evidence:
    variables = bn_variables(net, order, skin)
    bn = {"schema": BN_SCHEMA, "row_order": ROW_ORDER, "variables": variables}
    if item.item_type == "exact":
        return Evidence(kind="mechanism", payload=bn)
    graph = [{"name": v["name"], "observed": True, "parents": v["parents"]} for v in variables]
    return Evidence(kind="graph_joint", payload={"graph": graph, "cpts": bn})


def _phrase(event: Mapping[str, int], net: Network, skin: Skin, rank: Mapping[str, int],
            verb: str) -> str:
    """``HR is HIGH and CO is LOW``, in listing order."""
    keys = sorted(event, key=lambda k: (rank[k], k))
    return " and ".join(f"{skin.rename(k)} {verb} {state_of(net, k, event[k])}" for k in keys)


def question_text(item: NetworkItem, net: Network, skin: Skin, rank: Mapping[str, int],
                  rng: np.random.Generator) -> str:
    """The item's question in the skin's variable names and the network's state names."""
    q = item.query
    kind = item.key.rsplit("_", 1)[0].removeprefix("net_")
    options = TEMPLATES[kind]
    template = options[int(rng.integers(len(options)))]
    do = _phrase(q.do, net, skin, rank, "to")
    ((y, _),) = q.target.items()
    fields = {
        "target": _phrase(q.target, net, skin, rank, "would have been" if q.rung == 3 else "is"),
        "evidence": _phrase(q.evidence, net, skin, rank, "was" if q.rung == 3 else "is"),
        "do": do, "do_past": _phrase(q.do, net, skin, rank, "had been set to"),
        "outcome": skin.rename(y),
        "coupling": COUPLING_TEXT[item.coupling] if item.coupling else "",
    }
    return template.format(**fields)


def _query(item: NetworkItem, net: Network, skin: Skin) -> dict[str, Any]:
    """The structured query with skinned names and state names as values."""
    def named(event: Mapping[str, int]) -> dict[str, str]:
        return {skin.rename(k): state_of(net, k, v) for k, v in event.items()}

    q = item.query
    out: dict[str, Any] = {"rung": q.rung, "target": named(q.target),
                           "evidence": named(q.evidence)}
    if q.rung != 1:
        out["do"] = named(q.do)
    if item.coupling is not None:
        out["coupling"] = item.coupling
    return out


def render_network_case(item: NetworkItem, net: Network, skin: Skin, *, case_id: str,
                        world_seed: int, slot: int, twin: str, order: Sequence[str]
                        ) -> tuple[PublicCase, PrivateOracle]:
    """One network item under ``skin``: its public case and private oracle record."""
    rank = {v: i for i, v in enumerate(order)}
    rng = np.random.default_rng(_derived(world_seed, f"template{slot}"))
    assumptions = (MECHANISM_ASSUMPTIONS if item.item_type == "exact"
                   else IDENTIFICATION_ASSUMPTIONS)
    if item.coupling is not None:
        assumptions = [*assumptions, f"Counterfactuals are read under "
                       f"{COUPLING_TEXT[item.coupling]}."]
    world = net.world
    case = PublicCase(
        case_id=case_id, world_id=world.world_id, family=NETWORK_FAMILY,
        item_type=item.item_type, rung=RUNG_NAMES[item.rung], skin=skin.name,
        question=question_text(item, net, skin, rank, rng), query=_query(item, net, skin),
        evidence=_evidence(item, net, order, skin), assumptions=list(assumptions),
        allowed_tools=["calc"], permitted_interventions=[],
        answer_format=ANSWER_FORMAT[item.item_type],
    )
    oracle = PrivateOracle(
        case_id=case_id, world_id=world.world_id, family=NETWORK_FAMILY,
        structure=NETWORK_STRUCTURE, skin=skin.name, item_type=item.item_type, rung=item.rung,
        estimand=item.estimand, scm_hash=scm_hash(world, world_seed), seed=world_seed,
        identifiable=True, value=item.value,
        factual_episode=skin.rename_event(item.query.evidence) if item.rung == 3 else None,
        cf_link=twin, confusions=Confusions(**dict(item.confusions)),
    )
    return case, oracle


def build_network(split: str, seed: int, spec: str, *, lean: int = 1) -> BuiltWorld:
    """Load network ``spec`` and render its items (``network_items``) under both skins."""
    world_seed = network_seed(split, seed, network_name(spec))
    world_id = world_id_of(split, world_seed)
    net = load_network(spec, world_id)
    rng = np.random.default_rng(world_seed)
    items = network_items(net, rng, split=split, draws=NETWORK_DRAWS)
    world = net.world
    shuffle = listing_seed(world, world_seed, lean)
    order = [v["name"] for v in world.to_json(seed=shuffle)["variables"]]
    names = list(world.names)
    skins = (own_names(names), nonsense_skin(names, rng))
    cases, oracles = [], []
    for slot, item in enumerate(items):
        ids = (f"{world_id}-q{slot:02d}d", f"{world_id}-q{slot:02d}n")
        for skin, cid, twin in ((skins[0], ids[0], ids[1]), (skins[1], ids[1], ids[0])):
            case, orc = render_network_case(item, net, skin, case_id=cid,
                                            world_seed=world_seed, slot=slot, twin=twin,
                                            order=order)
            cases.append(case)
            oracles.append(orc)
    roles = next(((next(iter(i.query.do)), next(iter(i.query.target))) for i in items
                  if i.rung == 2), ("", ""))
    draw = WorldDraw(NETWORK_STRUCTURE, world, roles[0], roles[1])
    record = {"name": net.name, "source": net.source, "sha256": net.sha256,
              "couplings": sorted(net.worlds),
              "items": [{"key": i.key, "estimand": i.estimand, "coupling": i.coupling,
                         "adjustment": list(i.adjustment) if i.adjustment is not None
                         else None} for i in items]}
    return BuiltWorld(world_id, world_seed, draw, tuple(cases), tuple(oracles), (),
                      forward_excess(world, shuffle), network=record)


def build_networks(split: str, seed: int, specs: Sequence[str], *, excess: int = 0
                   ) -> list[BuiltWorld]:
    """Every network of ``specs`` as a bench world, the listing lean set against ``excess``,
    the running forward-listing excess of the worlds before them."""
    out = []
    for spec in specs:
        out.append(build_network(split, seed, spec, lean=-1 if excess > 0 else 1))
        excess += out[-1].forward_excess
    return out
