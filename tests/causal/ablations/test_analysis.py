"""Paired analysis: world clusters, verdicts, inconclusive is never equivalence."""

from __future__ import annotations

from typing import Any

from rungbench.causal.ablations.analysis import (
    INSUFFICIENT,
    ablation_report,
    arm_endpoints,
    compared_delta,
    paired_delta,
    validity,
    verdict_of,
)
from rungbench.causal.ablations.arms import ValidityFloor, load_matrix


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
    d = paired_delta(a, b, "accuracy", margin=0.03)
    assert d["mean"] == -0.025 and d["ci95"] == [-0.075, 0.0]
    assert d["verdict"] == "inconclusive"
    assert d["n_worlds"] == 10


def test_one_world_gives_no_interval() -> None:
    """All units from one world: no bootstrap interval, verdict inconclusive."""
    d = paired_delta(_rows([True] * 5, worlds=1), _rows([False] * 5, worlds=1), "accuracy",
                     margin=None)
    assert d["ci95"] is None and d["verdict"] == "inconclusive"


def test_endpoint_denominators() -> None:
    """false_non_id counts only identifiable cells; accuracy counts every cell."""
    rows = _rows([True, False, False, True])
    rows[1]["outcome"] = "false_non_id"
    ends = arm_endpoints(rows)
    assert ends["accuracy"] == {"mean": 0.5, "n": 4}
    assert ends["false_non_id"] == {"mean": 0.25, "n": 4}
    assert ends["false_answer_on_non_id"] == {"mean": None, "n": 0}


def test_without_a_committed_margin_a_zero_interval_is_inconclusive() -> None:
    """Identical arms give the interval [0, 0]: equivalent only inside a committed margin."""
    rows = _rows([i % 3 == 0 for i in range(30)])
    assert paired_delta(rows, rows, "accuracy", margin=None)["verdict"] == "inconclusive"
    assert paired_delta(rows, rows, "accuracy", margin=0.01)["verdict"] == "equivalent"


def test_analysis_module_has_no_default_margin() -> None:
    """No margin is assumed anywhere: the module holds no DEFAULT_MARGIN and the report's
    margin is None unless one is passed."""
    from rungbench.causal.ablations import analysis

    assert not hasattr(analysis, "DEFAULT_MARGIN")
    m = load_matrix()
    report = ablation_report(m, {"A9": _rows([True] * 30), "A10": _rows([True] * 30)})
    assert report["margin"] is None
    row = next(r for r in report["isolation"] if (r["a"], r["b"]) == ("A10", "A9"))
    assert row["ci95"] == [0.0, 0.0] and row["verdict"] == "inconclusive"


def test_validity_counts_invalid_and_missing_not_abstentions() -> None:
    """Invalid and missing cells are not valid answers; an abstention is one."""
    rows = _rows([False] * 4)
    rows[0]["outcome"], rows[1]["outcome"], rows[2]["outcome"] = "invalid", "missing", "abstain"
    v = validity(rows, ValidityFloor(2, 0.5))
    assert (v["valid"], v["total"], v["share"], v["sufficient"]) == (2, 4, 0.5, True)
    assert not validity(rows, ValidityFloor(3, 0.5))["sufficient"]
    assert not validity(rows, ValidityFloor(1, 0.51))["sufficient"]


def test_an_arm_below_the_floor_gives_no_verdict() -> None:
    """All-invalid arm B against a clearly worse-or-better arm A: no delta, no interval,
    verdict insufficient_valid_answers with both arms' counts."""
    a = _rows([True] * 40)
    b = _rows([False] * 40)
    for r in b:
        r["outcome"] = "invalid"
    d = compared_delta({"A": a, "B": b}, "A", "B", "accuracy", ValidityFloor(20, 0.5),
                       margin=0.5)
    assert d["verdict"] == INSUFFICIENT and d["mean"] is None and d["ci95"] is None
    assert d["valid"] == {"A": {"valid": 40, "total": 40}, "B": {"valid": 0, "total": 40}}
    ok = compared_delta({"A": a, "B": a}, "A", "B", "accuracy", ValidityFloor(20, 0.5),
                        margin=None)
    assert ok["verdict"] == "inconclusive"


def test_report_counts_every_failure_label_per_arm_with_zeros() -> None:
    """Each arm's report lists every label of ALL_LABELS in order, zeros included, counting
    cells that carry it; the Markdown has a 'Failure labels' table with one row per label and
    one column per arm."""
    from rungbench.causal.ablations.analysis import to_markdown
    from rungbench.causal.bench.taxonomy import ALL_LABELS

    a9 = _rows([False] * 4)
    a9[0]["labels"] = ["routing_bypass"]
    a9[1]["labels"] = ["routing_bypass", "oracle_leakage"]
    a9[2]["labels"] = ["unexplained"]
    a10 = _rows([True] * 4)
    report = ablation_report(load_matrix(), {"A9": a9, "A10": a10})
    counts = report["arms"]["A9"]["failure_labels"]
    assert list(counts) == list(ALL_LABELS)
    assert (counts["routing_bypass"], counts["oracle_leakage"], counts["unexplained"]) == (2, 1, 1)
    assert sum(counts.values()) == 4
    assert set(report["arms"]["A10"]["failure_labels"].values()) == {0}
    table = to_markdown(report).split("## Failure labels")[1]
    rows = [ln for ln in table.splitlines() if ln.startswith("| ") and "---" not in ln]
    assert rows[0] == "| label | evidence | A9 | A10 |"
    assert len(rows) == 1 + len(ALL_LABELS) == 25
    bypass = next(r for r in rows if r.startswith("| routing_bypass |"))
    assert bypass.endswith("| 2 | 0 |")
    assert "| correlation_as_causation |" in table and rows[1].endswith("| 0 | 0 |")
