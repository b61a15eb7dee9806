"""Motif worlds: the small structures of seed 003's task families.

Seed 003, "Task families and generator coverage": chain, fork, collider,
confounded (observed Z), latent-confounded, reversed-query variants, mediation
(direct + indirect), AND-interaction, selection (conditioning on a collider),
front-door and M-bias (and a categorical latent-confounded world, whose variables have
named states, outside the binary catalogue). Every constructor takes a numpy Generator and draws the
mechanism strengths; confounders are drawn strong (seed 003, "Validation of the
reference implementation": the default confounding gave a median witness gap of
0.041, too weak — latent confounder links here fire with probability 0.55–0.95).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from rungbench.causal.scm import mechanisms as mech
from rungbench.causal.scm.random_dag import StateRange, state_names
from rungbench.causal.scm.world import MAX_STATES, Response, Variable, World
from rungbench.errors import InputError


@dataclass(frozen=True)
class Motif:
    """A world with the roles its items ask about."""

    name: str
    """Motif kind, e.g. ``front_door`` or ``confounded_reversed``."""
    world: World
    """The SCM."""
    treatment: str
    """The variable a query intervenes on (X)."""
    outcome: str
    """The variable a query reads (Y)."""
    mediators: tuple[str, ...] = ()
    """Mediators on X → Y paths (mediation, front-door, chain)."""
    condition: Mapping[str, int] = field(default_factory=dict)
    """Selection: the event every item conditions on (e.g. a collider C=1)."""


def _u(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(rng.uniform(lo, hi))


def _var(name: str, parents: tuple[str, ...], responses: tuple[Response, ...],
         observed: bool = True) -> Variable:
    return Variable(name, parents, responses, observed)


def _root(rng: np.random.Generator, name: str, observed: bool = True) -> Variable:
    return _var(name, (), mech.root(_u(rng, 0.25, 0.75)), observed)


def _cause(rng: np.random.Generator, name: str, parents: tuple[str, ...],
           strong: bool = False) -> Variable:
    """Noisy-OR child; ``strong`` links (confounders) fire w.p. 0.55–0.95."""
    lo, hi = (0.55, 0.95) if strong else (0.3, 0.8)
    return _var(name, parents,
                mech.noisy_or([_u(rng, lo, hi) for _ in parents], _u(rng, 0.03, 0.15)))


def _confounded_child(rng: np.random.Generator, name: str, cause: str,
                      confounder: str) -> Variable:
    """Noisy-OR over (cause, confounder) with a strong confounder link."""
    return _var(name, (cause, confounder), mech.noisy_or(
        [_u(rng, 0.2, 0.5), _u(rng, 0.55, 0.95)], _u(rng, 0.02, 0.1)))


def _copy(rng: np.random.Generator, name: str, parent: str) -> Variable:
    """V := parent, flipped with probability 0.03–0.2 (a strong, symmetric link)."""
    return _var(name, (parent,), mech.noisy_function(lambda b: b[0], 1, _u(rng, 0.03, 0.2)))


def chain(rng: np.random.Generator, world_id: str) -> Motif:
    """X → M → Y."""
    vs = (_root(rng, "X"), _cause(rng, "M", ("X",)), _cause(rng, "Y", ("M",)))
    return Motif("chain", World(world_id, vs), "X", "Y", ("M",))


def fork(rng: np.random.Generator, world_id: str) -> Motif:
    """X ← Z → Y: association without causation."""
    vs = (_root(rng, "Z"), _copy(rng, "X", "Z"), _cause(rng, "Y", ("Z",), strong=True))
    return Motif("fork", World(world_id, vs), "X", "Y")


def collider(rng: np.random.Generator, world_id: str) -> Motif:
    """X → C ← Y with independent X and Y."""
    vs = (_root(rng, "X"), _root(rng, "Y"), _cause(rng, "C", ("X", "Y"), strong=True))
    return Motif("collider", World(world_id, vs), "X", "Y")


def selection(rng: np.random.Generator, world_id: str) -> Motif:
    """Collider X → C ← Y, every item conditioned on C = 1 (selection bias)."""
    m = collider(rng, world_id)
    return replace(m, name="selection", condition={"C": 1})


def confounded(rng: np.random.Generator, world_id: str) -> Motif:
    """Z → X, Z → Y, X → Y with Z observed (back-door by Z)."""
    vs = (_root(rng, "Z"), _copy(rng, "X", "Z"), _confounded_child(rng, "Y", "X", "Z"))
    return Motif("confounded", World(world_id, vs), "X", "Y")


def latent_confounded(rng: np.random.Generator, world_id: str) -> Motif:
    """L → X, L → Y, X → Y with L latent: P(y | do x) is not identifiable."""
    vs = (_root(rng, "L", observed=False), _copy(rng, "X", "L"),
          _confounded_child(rng, "Y", "X", "L"))
    return Motif("latent_confounded", World(world_id, vs), "X", "Y")


def mediation(rng: np.random.Generator, world_id: str) -> Motif:
    """X → M → Y and X → Y (direct and indirect paths)."""
    vs = (_root(rng, "X"), _cause(rng, "M", ("X",)),
          _var("Y", ("X", "M"), mech.random_mixture(2, rng, n_tables=4)))
    return Motif("mediation", World(world_id, vs), "X", "Y", ("M",))


def and_interaction(rng: np.random.Generator, world_id: str) -> Motif:
    """X → Y ← W with Y := X AND W, failing w.p. 0.05–0.3 (two necessary causes)."""
    vs = (_root(rng, "X"), _root(rng, "W"),
          _var("Y", ("X", "W"), mech.and_interaction(2, _u(rng, 0.05, 0.3), _u(rng, 0.0, 0.05))))
    return Motif("and_interaction", World(world_id, vs), "X", "Y")


def front_door(rng: np.random.Generator, world_id: str) -> Motif:
    """L → X, L → Y latent; X → M → Y (front-door identifiable)."""
    vs = (_root(rng, "L", observed=False), _copy(rng, "X", "L"), _copy(rng, "M", "X"),
          _confounded_child(rng, "Y", "M", "L"))
    return Motif("front_door", World(world_id, vs), "X", "Y", ("M",))


def m_bias(rng: np.random.Generator, world_id: str) -> Motif:
    """L1 → X, L1 → C ← L2, L2 → Y, X → Y; adjusting for C opens a path."""
    vs = (_root(rng, "L1", observed=False), _root(rng, "L2", observed=False),
          _copy(rng, "X", "L1"), _cause(rng, "C", ("L1", "L2"), strong=True),
          _confounded_child(rng, "Y", "X", "L2"))
    return Motif("m_bias", World(world_id, vs), "X", "Y")


def xor_world(rng: np.random.Generator, world_id: str) -> Motif:
    """Y := X XOR W with fair roots: the counterfactual pyAgrum gets wrong."""
    vs = (_var("X", (), mech.root(0.5)), _var("W", (), mech.root(0.5)),
          _var("Y", ("X", "W"), mech.deterministic(lambda b: b[0] ^ b[1], 2)))
    del rng
    return Motif("xor", World(world_id, vs), "X", "Y")


def _rescale(value: int, k_from: int, k_to: int) -> int:
    """State ``value`` of a ``k_from``-state variable mapped in order onto ``k_to`` states."""
    return round(value * (k_to - 1) / (k_from - 1))


def _categorical_var(name: str, parents: tuple[str, ...], responses: tuple[Response, ...],
                     k: int, observed: bool = True) -> Variable:
    return Variable(name, parents, responses, observed, state_names(k))


def categorical_latent_confounded(rng: np.random.Generator, world_id: str, *,
                                  states: StateRange = (2, 4)) -> Motif:
    """L → X, L → Y, X → Y with L latent and ``states[0]``..``states[1]`` named states each.

    The categorical :func:`latent_confounded`: X copies L (in state order) when its link
    fires (0.55–0.95); Y copies X when its cause link fires (0.2–0.5), else L when the
    strong confounder link fires (0.55–0.95), else a uniform leak state
    (`mechanisms.categorical_links`). P(y | do x) is not identifiable.
    """
    if not 2 <= states[0] <= states[1] <= MAX_STATES:
        raise InputError(f"states must be a range 2 <= lo <= hi <= {MAX_STATES}, got "
                         f"{states!r}", field="states")
    kl, kx, ky = (int(rng.integers(states[0], states[1] + 1)) for _ in range(3))
    x_link = tuple(_rescale(v, kl, kx) for v in range(kl))
    rows = [(x, v) for v in range(kl) for x in range(kx)]  # row index x + kx * l
    y_from_x = tuple(_rescale(x, kx, ky) for x, _ in rows)
    y_from_l = tuple(_rescale(v, kl, ky) for _, v in rows)
    vs = (_categorical_var("L", (), mech.random_categorical_root(kl, rng), kl, observed=False),
          _categorical_var("X", ("L",), mech.categorical_links([(x_link, _u(rng, 0.55, 0.95))],
                                                               kx, kl), kx),
          _categorical_var("Y", ("X", "L"), mech.categorical_links(
              [(y_from_x, _u(rng, 0.2, 0.5)), (y_from_l, _u(rng, 0.55, 0.95))], ky, len(rows)),
              ky))
    return Motif("categorical_latent_confounded", World(world_id, vs), "X", "Y")


def reversed_query(m: Motif) -> Motif:
    """The same world with treatment and outcome swapped (reverse-causation twin)."""
    return replace(m, name=f"{m.name}_reversed", treatment=m.outcome, outcome=m.treatment,
                   mediators=())


MotifBuilder = Callable[[np.random.Generator, str], Motif]
"""A motif constructor: (rng, world_id) -> Motif."""


def _reversed(builder: MotifBuilder) -> MotifBuilder:
    def build(rng: np.random.Generator, world_id: str) -> Motif:
        return reversed_query(builder(rng, world_id))
    return build


MOTIFS: dict[str, MotifBuilder] = {
    "chain": chain,
    "fork": fork,
    "collider": collider,
    "selection": selection,
    "confounded": confounded,
    "latent_confounded": latent_confounded,
    "confounded_reversed": _reversed(confounded),
    "latent_confounded_reversed": _reversed(latent_confounded),
    "chain_reversed": _reversed(chain),
    "mediation": mediation,
    "and_interaction": and_interaction,
    "front_door": front_door,
    "m_bias": m_bias,
    "xor": xor_world,
}
"""Every motif kind by name (14 kinds)."""


def build_motif(kind: str, rng: np.random.Generator, world_id: str) -> Motif:
    """Build one motif of ``kind``; InputError for an unknown kind."""
    if kind not in MOTIFS:
        raise InputError(f"unknown motif {kind!r}; known: {sorted(MOTIFS)}", field="motif")
    return MOTIFS[kind](rng, world_id)


def motif_catalogue(rng: np.random.Generator, *, repeats: int = 1,
                    prefix: str = "m") -> list[Motif]:
    """``repeats`` independently drawn worlds of every motif kind, ids ``{prefix}0000``…"""
    out = []
    for r in range(repeats):
        for i, kind in enumerate(MOTIFS):
            out.append(build_motif(kind, rng, f"{prefix}{r * len(MOTIFS) + i:04d}"))
    return out
