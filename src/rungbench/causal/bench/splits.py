"""Splits dev / validation / test (seed 003 "Splits and contamination").

"Procedural generation with private seeds; held-out *structure* families (e.g.
front-door, M-bias) in final test that never appear in dev." Each split draws its
worlds from its own seed stream, derived from the build seed and the split name,
so the same build seed never gives two splits the same worlds.
"""

from __future__ import annotations

import hashlib
from typing import Literal

import numpy as np

Split = Literal["dev", "validation", "test"]

HELD_OUT: tuple[str, ...] = ("front_door", "m_bias")
"""Structure families that appear only in the test split."""

SHARED: tuple[str, ...] = (
    "fork",
    "confounded",
    "latent_confounded",
    "confounded_reversed",
    "latent_confounded_reversed",
    "collider",
    "selection",
    "mediation",
    "chain",
    "chain_reversed",
    "and_interaction",
    "xor",
    "random_dag",
)
"""Structure families every split draws from."""

STRUCTURES: dict[str, tuple[str, ...]] = {
    "dev": SHARED,
    "validation": SHARED,
    "test": SHARED + HELD_OUT,
}
"""Structure families per split; test alone holds the held-out families."""


HELD_OUT_EPISODE: tuple[str, ...] = ("interaction_incident",)
"""Episode-family (records/2) structures only the test split's sealed benches hold: the
interaction incident world (two jointly necessary faults, the omitted-joint-cause items)."""


def episode_structures_excluded(split: str) -> frozenset[str]:
    """The records/2 structures a sealed bench of ``split`` leaves out (held out for test)."""
    return frozenset() if split == "test" else frozenset(HELD_OUT_EPISODE)


def split_seed(split: str, seed: int) -> int:
    """Derive the split's private seed from the build seed and the split name."""
    if split not in STRUCTURES:
        raise ValueError(f"unknown split {split!r}; known: {sorted(STRUCTURES)}")
    h = hashlib.sha256(f"rungbench.causal.split/1|{split}|{seed}".encode()).digest()
    return int.from_bytes(h[:8], "big") >> 1


def world_plan(split: str, n_worlds: int, seed: int) -> list[tuple[str, int]]:
    """Return (structure, world seed) per world: structures cycle in a shuffled order."""
    rng = np.random.default_rng(split_seed(split, seed))
    structures = list(STRUCTURES[split])
    plan = []
    order: list[str] = []
    for _ in range(n_worlds):
        if not order:
            order = [structures[int(i)] for i in rng.permutation(len(structures))]
        plan.append((order.pop(), int(rng.integers(1 << 62, 1 << 63))))
    return plan
