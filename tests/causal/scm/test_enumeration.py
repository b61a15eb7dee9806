"""Tests for rungbench.causal.scm.enumeration (probabilities stay in [0, 1] despite float sums)."""

from __future__ import annotations

import numpy as np
import pytest

from rungbench.causal.bench.items import draw_world
from rungbench.causal.scm import oracle
from rungbench.causal.scm.world import Query


def test_resampled_certain_event_is_exactly_one() -> None:
    """A resampled value that is 1 in exact arithmetic is 1.0, not 1.0000000000000002."""
    d = draw_world("fork", np.random.default_rng(0), "w")
    x, y = d.treatment, d.outcome
    q = Query(3, {y: 1}, {x: 1}, {x: 0, y: 1})
    assert oracle.enumerator(d.world).resampled(q.target, q.do, q.evidence) == 1.0
    assert oracle.confusions(d.world, q, method="enumeration").resampled == 1.0


@pytest.mark.parametrize("structure", ["fork", "collider", "confounded_reversed", "random_dag"])
def test_resampled_values_never_leave_the_unit_interval(structure: str) -> None:
    """Over many worlds and factual cells, every resampled value lies in [0, 1]."""
    seen = 0
    for seed in range(20):
        d = draw_world(structure, np.random.default_rng(seed), "w")
        en, x, y = oracle.enumerator(d.world), d.treatment, d.outcome
        for fx in (0, 1):
            for fy in (0, 1):
                if en.rung1({x: fx, y: fy}, {}) <= 0.0:
                    continue
                for yv in (0, 1):
                    v = en.resampled({y: yv}, {x: 1 - fx}, {x: fx, y: fy})
                    assert 0.0 <= v <= 1.0, (structure, seed, fx, fy, yv, v)
                    seen += 1
    assert seen >= 100
