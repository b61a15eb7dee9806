"""Paired analysis: world clusters, verdicts, inconclusive is never equivalence."""

from __future__ import annotations

from typing import Any

from rungbench.causal.ablations.analysis import arm_endpoints, paired_delta, verdict_of


def _rows(rights: list[bool], worlds: int = 10) -> list[dict[str, Any]]:
    return [{"case_id": f"c{i}", "sample": 0, "world_id": f"w{i % worlds}", "right": r,
             "outcome": "correct" if r else "wrong", "item_type": "exact",
             "identifiable": True, "decision": False, "brier": None, "tokens": 10,
             "tool_calls": 0, "cost_usd": 0.0, "edges_obtained": 0}
            for i, r in enumerate(rights)]


def test_verdicts() -> None:
    """Interval above 0: a_better; inside the margin: equivalent; straddling wide: inconclusive."""
    assert verdict_of(0.01, 0.2, 0.03) == "a_better"
    assert verdict_of(-0.2, -0.01, 0.03) == "b_better"
    assert verdict_of(-0.02, 0.02, 0.03) == "equivalent"
    assert verdict_of(-0.1, 0.1, 0.03) == "inconclusive"
    assert verdict_of(-0.02, 0.02, None) == "inconclusive"


def test_small_noisy_difference_is_inconclusive() -> None:
    """A 1-in-40 difference spread over 10 worlds is inconclusive, not equivalent."""
    a = _rows([i % 2 == 0 for i in range(40)])
    b = _rows([i % 2 == 0 or i == 1 for i in range(40)])
    d = paired_delta(a, b, "accuracy")
    assert d["mean"] == -0.025 and d["ci95"] == [-0.075, 0.0]
    assert d["verdict"] == "inconclusive"
    assert d["n_worlds"] == 10


def test_one_world_gives_no_interval() -> None:
    """All units from one world: no bootstrap interval, verdict inconclusive."""
    d = paired_delta(_rows([True] * 5, worlds=1), _rows([False] * 5, worlds=1), "accuracy")
    assert d["ci95"] is None and d["verdict"] == "inconclusive"


def test_endpoint_denominators() -> None:
    """false_non_id counts only identifiable cells; accuracy counts every cell."""
    rows = _rows([True, False, False, True])
    rows[1]["outcome"] = "false_non_id"
    ends = arm_endpoints(rows)
    assert ends["accuracy"] == {"mean": 0.5, "n": 4}
    assert ends["false_non_id"] == {"mean": 0.25, "n": 4}
    assert ends["false_answer_on_non_id"] == {"mean": None, "n": 0}
