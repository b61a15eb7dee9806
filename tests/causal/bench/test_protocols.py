"""Seed 003 P2 end to end: premature commitment vs the two-causes-one-check protocol."""

from __future__ import annotations

from rungbench.causal.bench.protocols import p2_comparison


def test_p2_paired_difference_on_200_incidents() -> None:
    """On 200 incidents the protocol's regret is lower with an interval excluding 0."""
    r = p2_comparison(200, seed=20261003, n_boot=500)
    d = r["paired_difference"]
    assert r["n"] == 200 and d["n_clusters"] == 200
    assert d["low"] > 0 and r["mean_regret_p2"] < r["mean_regret_premature"]
    assert r["relative_reduction"] >= 0.15
    assert 0 < r["lucky_rate"]["premature"] < 1
    assert r["justified_correct_rate"]["p2"] > r["justified_correct_rate"]["premature"]
