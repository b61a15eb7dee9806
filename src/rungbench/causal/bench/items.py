"""Benchmark items from a world, in the world's own variable names (seed 003 "Item types").

Every gold value comes from the exact oracle (`rungbench.causal.scm.oracle`). Items:

==================  ========================================  =================================
item type           the agent sees                            reference answer
==================  ========================================  =================================
exact rung 1/2/3    the full mechanism                        exact probability, tol 0.02
mediation (rung 3)  the full mechanism                        E[Y_{x, M_{x'}}] (NDE/NIE parts)
identification      graph (latents marked) + observed joint   P(y | do x), or not_identifiable
discovery           observed joint + samples + assumptions    the CPDAG (Markov equivalence)
cf_no_mechanism     graph + observed joint                    not_identifiable, or Tian–Pearl
                                                              bounds when bounds are asked
==================  ========================================  =================================

Non-identifiability is proved per item by a witness world with the identical
observed joint and a different answer; items whose witness gap does not exceed
the tolerance are dropped, so answering anyway is detectably wrong (seed 003,
"Item types and when 'not identifiable' is correct").
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from rungbench.causal.bench.records import ItemType, Rung
from rungbench.causal.scm import oracle
from rungbench.causal.scm.identify import identify
from rungbench.causal.scm.joint import observed_joint
from rungbench.causal.scm.motifs import build_motif
from rungbench.causal.scm.random_dag import DagSpec, random_world
from rungbench.causal.scm.structure import cpdag_of
from rungbench.causal.scm.world import Query, Response, Variable, World
from rungbench.errors import InputError, IntegrityError

TOL = 0.02
"""Tolerance tau of numeric answers (seed 003 "Endpoints and formulas")."""

MIN_CELL = 0.02
"""Factual events rarer than this are not used as counterfactual evidence."""

STRUCTURE_FAMILY: dict[str, str] = {
    "fork": "association_vs_causation",
    "confounded": "confounding_reverse_causation",
    "latent_confounded": "confounding_reverse_causation",
    "confounded_reversed": "confounding_reverse_causation",
    "latent_confounded_reversed": "confounding_reverse_causation",
    "front_door": "confounding_reverse_causation",
    "m_bias": "confounding_reverse_causation",
    "collider": "collider_selection",
    "selection": "collider_selection",
    "mediation": "mechanisms_mediation",
    "chain": "multi_hop_chains",
    "chain_reversed": "multi_hop_chains",
    "random_dag": "multi_hop_chains",
    "and_interaction": "multiple_causes_interaction",
    "xor": "multiple_causes_interaction",
}
"""Task family of the items a structure feeds (seed 003 "Task families")."""

FAMILIES: tuple[str, ...] = (
    "association_vs_causation",
    "confounding_reverse_causation",
    "collider_selection",
    "mechanisms_mediation",
    "multi_hop_chains",
    "interventions",
    "counterfactuals",
    "multiple_causes_interaction",
    "insufficient_evidence",
)
"""Every family the seed marks "built"."""


@dataclass(frozen=True)
class Action:
    """One permitted action of a decision item."""

    variable: str | None
    """The variable set by the action (None: leave the system alone)."""
    value: int
    """The value it is set to."""
    cost: float
    """Cost of acting, in loss units (two decimals)."""
    expected_loss: float
    """LOSS_PER_EVENT · P(bad outcome | do(action)) + cost (seed 003 "Decision regret")."""


LOSS_PER_EVENT = 10.0
"""Loss units charged each time the bad outcome occurs in a decision item."""

MIN_DECISION_MARGIN = 0.05
"""Decision items whose two best actions are closer than this in expected loss are dropped."""


@dataclass(frozen=True)
class WorldDraw:
    """A drawn world with the roles its items ask about."""

    structure: str
    """Structure family (motif name or ``random_dag``)."""
    world: World
    """The SCM."""
    treatment: str
    """X."""
    outcome: str
    """Y."""
    mediators: tuple[str, ...] = ()
    """Mediators on X -> Y paths."""
    condition: Mapping[str, int] = field(default_factory=dict)
    """Selection event every exact item conditions on."""


@dataclass(frozen=True)
class RawItem:
    """One item in world names, before skinning."""

    key: str
    """Item slot within the world (stable across skins)."""
    family: str
    """Task family."""
    item_type: ItemType
    """Item type."""
    rung: Rung
    """Ladder rung."""
    template: str
    """Question template kind (a key of ``skins.TEMPLATES``)."""
    query: Query | None
    """Structured question (None for discovery)."""
    estimand: str
    """Estimand in world names."""
    evidence_kind: str
    """``mechanism``, ``graph_joint`` or ``joint``."""
    identifiable: bool
    """Whether the reference answer is a value (or bounds, or a class)."""
    value: float | None = None
    """Exact reference value."""
    bounds: tuple[float, float] | None = None
    """Tian–Pearl bounds when asked."""
    confusions: Mapping[str, float | None] = field(default_factory=dict)
    """rung1 / rung2_population / resampled values."""
    witness: World | None = None
    """Witness world proving non-identifiability."""
    witness_gap: float | None = None
    """|value − witness value|."""
    true_edges: tuple[tuple[str, str], ...] | None = None
    """Discovery: the true DAG over observed variables."""
    mediators: tuple[str, ...] = ()
    """Mediation items: the mediators held at their values under ``inner``."""
    inner: Mapping[str, int] = field(default_factory=dict)
    """Mediation items: the intervention that fixes the mediators' values."""
    actions: tuple[Action, ...] = ()
    """Decision items: the permitted actions with their exact expected losses."""
    bad_outcome: Mapping[str, int] = field(default_factory=dict)
    """Decision items: the event that costs ``LOSS_PER_EVENT`` each time it occurs."""


def draw_world(structure: str, rng: np.random.Generator, world_id: str) -> WorldDraw:
    """Draw one world of ``structure`` with its roles."""
    if structure == "random_dag":
        spec = DagSpec(n_nodes=5, edge_density=0.5, latent_fraction=0.2 * int(rng.integers(2)))
        world = random_world(spec, rng, world_id)
        x, y = _random_roles(world, rng)
        return WorldDraw(structure, world, x, y)
    m = build_motif(structure, rng, world_id)
    return WorldDraw(structure, m.world, m.treatment, m.outcome, m.mediators, m.condition)


def _random_roles(world: World, rng: np.random.Generator) -> tuple[str, str]:
    """Pick an observed (X, Y) with X an ancestor of Y, else any observed ordered pair."""
    obs = world.observed_names
    pairs = [(a, b) for a in obs for b in obs if a != b and a in world.ancestors([b])]
    if not pairs:
        pairs = [(a, b) for i, a in enumerate(obs) for b in obs[i + 1 :]]
    return pairs[int(rng.integers(len(pairs)))]


def confounded_pair(d: WorldDraw, rng: np.random.Generator) -> tuple[str, str] | None:
    """In a random world with latents: an (X, Y), X an ancestor of Y, sharing a latent parent.

    Such pairs are where identification from observation typically fails; the
    item's verdict still comes from ``identify`` and its witness, never from this choice.
    """
    w = d.world
    if d.structure != "random_dag" or not w.latent_names:
        return None
    pairs = [
        (a, b) for a in w.observed_names for b in w.observed_names
        if a != b and a in w.ancestors([b]) and (a, b) != (d.treatment, d.outcome)
        and set(w.var(a).parents) & set(w.var(b).parents) & set(w.latent_names)
    ]
    return pairs[int(rng.integers(len(pairs)))] if pairs else None


def _safe_probability(world: World, query: Query) -> float | None:
    try:
        return oracle.probability(world, query)
    except InputError:
        return None


def _pick_factual(
    world: World, x: str, y: str, rng: np.random.Generator, cond: Mapping[str, int]
) -> tuple[int, int] | None:
    """Pick factual (x, y) values with P(X=x, Y=y, cond) ≥ MIN_CELL, at random."""
    cells = [(a, b) for a in (0, 1) for b in (0, 1)]
    order = [cells[int(i)] for i in rng.permutation(4)]
    for a, b in order:
        p = _safe_probability(world, Query(1, {x: a, y: b, **cond}, {}, {}))
        if p is not None and p >= MIN_CELL:
            return a, b
    return None


def exact_items(d: WorldDraw, rng: np.random.Generator) -> list[RawItem]:
    """Exact rung-1, rung-2 and rung-3 items on the full mechanism."""
    w, x, y, cond = d.world, d.treatment, d.outcome, dict(d.condition)
    fam = STRUCTURE_FAMILY[d.structure]
    xv, yv = int(rng.integers(2)), int(rng.integers(2))
    out = []
    q1 = Query(1, {y: yv}, {}, {x: xv, **cond})
    v1 = _safe_probability(w, q1)
    if v1 is not None:
        out.append(RawItem("exact_r1", fam, "exact", 1, "rung1", q1,
                           f"P({y}={yv}|{x}={xv}{_cond(cond)})", "mechanism", True, v1))
    q2 = Query(2, {y: yv}, {x: xv}, cond)
    v2 = _safe_probability(w, q2)
    if v2 is not None:
        out.append(RawItem("exact_r2", "interventions", "exact", 2, "rung2", q2,
                           f"P({y}={yv}|do({x}={xv}){_cond(cond)})", "mechanism", True, v2,
                           confusions={"rung1": v1}))
    fact = _pick_factual(w, x, y, rng, cond)
    if fact is not None:
        fx, fy = fact
        q3 = Query(3, {y: yv}, {x: 1 - fx}, {x: fx, y: fy, **cond})
        ans = oracle.answer(w, q3)
        conf = ans.confusions.to_json() if ans.confusions is not None else {}
        out.append(RawItem("exact_r3", "counterfactuals", "exact", 3, "rung3", q3,
                           f"P({y}_{{{x}={1 - fx}}}={yv}|{x}={fx},{y}={fy}{_cond(cond)})",
                           "mechanism", True, ans.value, confusions=conf))
    return out


def _cond(cond: Mapping[str, int]) -> str:
    return "".join(f",{k}={v}" for k, v in sorted(cond.items()))


def mediation_items(d: WorldDraw) -> list[RawItem]:
    """Nested counterfactuals E[Y_{x1, M_{x0}}] and E[Y_{x0, M_{x1}}] (NDE/NIE, Pearl 2001)."""
    if d.structure != "mediation" or not d.mediators:
        return []
    w, x, y, ms = d.world, d.treatment, d.outcome, d.mediators
    en = oracle.enumerator(w)
    out = []
    for key, outer, inner in (("nde_part", 1, 0), ("nie_part", 0, 1)):
        value = en.expectation_nested({x: outer}, {x: inner}, ms, y)
        conf = {
            "rung1": _safe_probability(w, Query(1, {y: 1}, {}, {x: outer})),
            "rung2_population": oracle.probability(w, Query(2, {y: 1}, {x: outer}, {})),
            "resampled": None,
        }
        q = Query(3, {y: 1}, {x: outer}, {})
        out.append(RawItem(
            key, "mechanisms_mediation", "exact", 3, "mediation", q,
            f"P({y}_{{{x}={outer},{','.join(ms)}={','.join(ms)}_{{{x}={inner}}}}}=1)",
            "mechanism", True, value, confusions=conf,
            mediators=ms, inner={x: inner},
        ))
    return out


def identification_item(d: WorldDraw, rng: np.random.Generator) -> RawItem | None:
    """P(y | do x) from graph + observed joint: a value, or not_identifiable with a witness."""
    w, x, y = d.world, d.treatment, d.outcome
    xv, yv = int(rng.integers(2)), int(rng.integers(2))
    q = Query(2, {y: yv}, {x: xv}, {})
    truth = oracle.probability(w, q)
    r1 = _safe_probability(w, Query(1, {y: yv}, {}, {x: xv}))
    ident = identify(w, x, y, x_val=xv, y_val=yv)
    estimand = f"P({y}={yv}|do({x}={xv}))"
    fam = STRUCTURE_FAMILY[d.structure]
    if ident.estimate is not None:
        if abs(ident.estimate - truth) > 1e-9:
            raise IntegrityError(f"{w.world_id}: identified estimate {ident.estimate!r} "
                                 f"differs from the oracle {truth!r} for {estimand}")
        return RawItem("ident", fam, "identification", 2, "rung2", q, estimand, "graph_joint",
                       True, truth, confusions={"rung1": r1})
    wit = ident.witness
    if wit is None or wit.gap <= TOL:
        return None
    if wit.joint_max_diff > 1e-9:
        raise IntegrityError(f"{w.world_id}: witness for {estimand} changes the observed joint "
                             f"by {wit.joint_max_diff!r}")
    return RawItem("ident", "insufficient_evidence", "identification", 2, "rung2", q, estimand,
                   "graph_joint", False, None, confusions={"rung1": r1},
                   witness=wit.world, witness_gap=wit.gap)


def discovery_item(d: WorldDraw) -> RawItem | None:
    """Observed joint (+ samples) under causal sufficiency → the CPDAG; needs no latents."""
    w = d.world
    if w.latent_names or len(w.observed_names) < 3 or len(w.edges()) < 2:
        return None
    edges = tuple(sorted(w.edges()))
    return RawItem("discovery", STRUCTURE_FAMILY[d.structure], "discovery", 1, "discovery",
                   None, "MEC of the observed DAG", "joint", True, true_edges=edges)


def couplings(v: Variable, treatment: str | None = None) -> list[tuple[Response, ...]]:
    """Alternative response mixtures of ``v`` with the same P(V=1 | parents) per row.

    The comonotone coupling (one uniform threshold U for every row: V = 1[U < p_row]),
    the coupling antitone in ``treatment`` (rows with the treatment bit set read
    1[U > 1 − p_row]) and the independent coupling (rows drawn independently).
    Each leaves every observational and interventional distribution unchanged,
    since those depend on a variable's mechanism only through P(V=1 | parents);
    counterfactuals depend on the coupling (Pearl 2009, ch. 9: PN is not
    identified in general, and the monotone and antitone couplings reach the
    ends of its range).
    """
    p = [float(t) for t in v.p_one()]
    out = [threshold_coupling(p, frozenset())]
    if treatment is not None and treatment in v.parents:
        bit = v.parents.index(treatment)
        out.append(threshold_coupling(p, frozenset(r for r in range(len(p)) if r >> bit & 1)))
    if len(p) <= 4:
        out.append(_independent(p))
    return out


def threshold_coupling(p: list[float], flipped: frozenset[int]) -> tuple[Response, ...]:
    """One shared uniform U: row r is 1[U < p_r], or 1[U > 1 − p_r] for rows in ``flipped``."""
    cuts = sorted({0.0, 1.0, *(1.0 - pr if r in flipped else pr for r, pr in enumerate(p))})
    out = []
    for lo, hi in itertools.pairwise(cuts):
        if hi - lo > 1e-15:
            mid = (lo + hi) / 2
            table = tuple(int(mid > 1.0 - pr) if r in flipped else int(mid < pr)
                          for r, pr in enumerate(p))
            out.append(Response(hi - lo, table))
    return tuple(out)


def _independent(p: list[float]) -> tuple[Response, ...]:
    out = []
    for mask in range(1 << len(p)):
        bits = tuple(mask >> r & 1 for r in range(len(p)))
        mass = float(np.prod([pr if b else 1.0 - pr for pr, b in zip(p, bits, strict=True)]))
        if mass > 1e-15:
            out.append(Response(mass, bits))
    total = sum(r.p for r in out)
    return tuple(Response(r.p / total, r.table) for r in out)


def _with_mechanism(w: World, name: str, responses: tuple[Response, ...]) -> World:
    vs = tuple(
        Variable(v.name, v.parents, responses, v.observed) if v.name == name else v
        for v in w.variables
    )
    return World(w.world_id, vs)


def _same_joint(a: World, b: World) -> bool:
    return bool(np.allclose(observed_joint(a).table, observed_joint(b).table, atol=1e-12, rtol=0))


def pn_witness(
    w: World, y: str, q: Query, truth: float, treatment: str | None = None
) -> tuple[World, float] | None:
    """The coupling witness with the largest gap in the rung-3 value, if it exceeds tol."""
    best: tuple[World, float] | None = None
    for responses in couplings(w.var(y), treatment):
        alt = _with_mechanism(w, y, responses)
        if alt.n_configurations() > 1 << 20:
            continue
        gap = abs(oracle.probability(alt, q) - truth)
        if best is None or gap > best[1]:
            best = (alt, gap)
    if best is None or best[1] <= TOL:
        return None
    if not _same_joint(w, best[0]):
        raise IntegrityError(f"{w.world_id}: coupling witness changed the observed joint")
    return best


def tian_pearl_pn_bounds(
    p_y: float, p_y_do_xp: float, p_xy: float, p_xp_yp: float
) -> tuple[float, float]:
    """Bounds on PN = P(Y_{x'}=y' | x, y) from P(y), P(y_{x'}), P(x, y), P(x', y').

    Tian & Pearl (2000), Theorem 1 (with experimental and observational data):
    max(0, (P(y) − P(y_{x'})) / P(x,y)) ≤ PN ≤ min(1, (P(y'_{x'}) − P(x',y')) / P(x,y)).
    """
    lo = max(0.0, (p_y - p_y_do_xp) / p_xy)
    hi = min(1.0, ((1.0 - p_y_do_xp) - p_xp_yp) / p_xy)
    return lo, hi


def cf_items(d: WorldDraw, rng: np.random.Generator) -> list[RawItem]:
    """Probability of necessity from graph + joint: a point item and a bounds item.

    The point item is ``not_identifiable`` when a coupling witness moves PN by more
    than tol; it is identifiable (value = PN) when the Tian–Pearl bounds are no
    wider than tol, since then every point in them is within tol of the truth;
    otherwise it is dropped (neither proved). The bounds item needs P(y_{x'})
    identified from graph + joint.
    """
    w, x, y = d.world, d.treatment, d.outcome
    fact = _pick_factual(w, x, y, rng, {})
    if fact is None:
        return []
    fx, fy = fact
    q = Query(3, {y: 1 - fy}, {x: 1 - fx}, {x: fx, y: fy})
    ans = oracle.answer(w, q)
    conf = ans.confusions.to_json() if ans.confusions is not None else {}
    estimand = f"P({y}_{{{x}={1 - fx}}}={1 - fy}|{x}={fx},{y}={fy})"
    bounds = None
    ident = identify(w, x, y, x_val=1 - fx, y_val=fy)
    if ident.estimate is not None:
        p = observed_joint(w)
        bounds = tian_pearl_pn_bounds(p.prob({y: fy}), ident.estimate, p.prob({x: fx, y: fy}),
                                      p.prob({x: 1 - fx, y: 1 - fy}))
        if not bounds[0] - 1e-9 <= ans.value <= bounds[1] + 1e-9:
            raise IntegrityError(f"{w.world_id}: PN {ans.value!r} outside Tian–Pearl bounds "
                                 f"{list(bounds)!r}")
    out = []
    wit = pn_witness(w, y, q, ans.value, x)
    if wit is not None:
        out.append(RawItem("cf_pn", "insufficient_evidence", "cf_no_mechanism", 3, "rung3", q,
                           estimand, "graph_joint", False, None, confusions=conf,
                           witness=wit[0], witness_gap=wit[1]))
    elif bounds is not None and bounds[1] - bounds[0] <= TOL:
        out.append(RawItem("cf_pn", "counterfactuals", "cf_no_mechanism", 3, "rung3", q,
                           estimand, "graph_joint", True, ans.value, confusions=conf))
    if bounds is not None:
        out.append(RawItem("cf_bounds", "counterfactuals", "cf_no_mechanism", 3, "bounds", q,
                           estimand + " bounds", "graph_joint", True, None, bounds=bounds,
                           confusions=conf))
    return out


def public_family(item: RawItem, structure: str) -> str:
    """The family shown to agents: never ``insufficient_evidence``, which would give the answer.

    Non-identifiable items are reported under ``insufficient_evidence`` (private
    oracle), but their public case names the family of the question they ask.
    """
    if item.family != "insufficient_evidence":
        return item.family
    return STRUCTURE_FAMILY[structure] if item.item_type == "identification" else "counterfactuals"


def clamp_unit(x: float | None) -> float | None:
    """Clamp a probability computed in floating point into [0, 1] (sums can overshoot by 1 ulp)."""
    if x is None:
        return None
    if not -1e-9 <= x <= 1.0 + 1e-9:
        raise IntegrityError(f"probability {x!r} is outside [0, 1] beyond rounding")
    return min(1.0, max(0.0, x))


def _clamped(item: RawItem) -> RawItem:
    bounds = item.bounds
    return replace(
        item,
        value=clamp_unit(item.value),
        bounds=(clamp_unit(bounds[0]) or 0.0, clamp_unit(bounds[1]) or 0.0) if bounds else None,
        confusions={k: clamp_unit(v) for k, v in item.confusions.items()},
    )


def world_items(d: WorldDraw, rng: np.random.Generator) -> list[RawItem]:
    """Every item a world yields, in a fixed slot order, gold numbers clamped into [0, 1]."""
    return [_clamped(item) for item in _world_items(d, rng)]


def decision_item(d: WorldDraw, rng: np.random.Generator) -> RawItem | None:
    """Pick the action minimizing expected loss: 10·P(Y=1 | do(a)) + cost(a), mechanism shown.

    Actions: leave the system alone (observational P(Y=1), no cost), or set X or
    one other observed ancestor of Y to 0 or 1 at a drawn cost (seed 003
    "Intervention selection": decision regret).
    """
    w, x, y = d.world, d.treatment, d.outcome
    others = [v for v in w.observed_names if v not in (x, y) and y in w.descendants([v])]
    levers = [x] + ([others[int(rng.integers(len(others)))]] if others else [])
    actions = [Action(None, 0, 0.0, LOSS_PER_EVENT * oracle.probability(w, Query(1, {y: 1})))]
    for v in levers:
        for value in (0, 1):
            cost = round(float(rng.uniform(0.2, 3.0)), 2)
            p_bad = oracle.probability(w, Query(2, {y: 1}, {v: value}, {}))
            actions.append(Action(v, value, cost, LOSS_PER_EVENT * p_bad + cost))
    losses = sorted(a.expected_loss for a in actions)
    if losses[1] - losses[0] < MIN_DECISION_MARGIN:
        return None
    return RawItem("decide", "interventions", "exact", 2, "decision", None,
                   f"argmin_a {LOSS_PER_EVENT:g}*P({y}=1|do(a)) + cost(a)", "mechanism", True,
                   actions=tuple(actions), bad_outcome={y: 1})


def _world_items(d: WorldDraw, rng: np.random.Generator) -> list[RawItem]:
    out = exact_items(d, rng)
    out += mediation_items(d)
    ident = identification_item(d, rng)
    if ident is not None:
        out.append(ident)
    pair = confounded_pair(d, rng)
    if pair is not None:
        extra = identification_item(replace(d, treatment=pair[0], outcome=pair[1]), rng)
        if extra is not None:
            out.append(replace(extra, key="ident_latent"))
    disc = discovery_item(d)
    if disc is not None:
        out.append(disc)
    out += cf_items(d, rng)
    decide = decision_item(d, rng)
    if decide is not None:
        out.append(decide)
    return out


def discovery_cpdag(item: RawItem) -> dict[str, list[list[str]]]:
    """The CPDAG of a discovery item's true DAG, as stored in the oracle record."""
    return cpdag_of(item.true_edges or ()).to_json()
