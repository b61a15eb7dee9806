"""Cells: what the routing gate, typed edges and the protocol change in the frozen request."""

from __future__ import annotations

from pathlib import Path

from rungbench.causal.ablations.arms import load_matrix
from rungbench.causal.ablations.cells import arm_request, routing
from rungbench.causal.ablations.facts import world_edges
from rungbench.causal.bench.verified import bench_cases, open_bench
from rungbench.causal.instrument.detector import load_detector


def _names(request: object) -> list[str]:
    return [t["function"]["name"] for t in request.tools]  # type: ignore[attr-defined]


def test_gate_offers_graph_tools_only_where_the_detector_flags(dev_bench: Path) -> None:
    """A6 offers causal() and counterfactual() exactly on the cases whose question the frozen
    detector flags, and records the verdict; A5 (no gate) offers them everywhere."""
    m = load_matrix()
    cases = bench_cases(open_bench(dev_bench))
    edges = world_edges(cases)
    detector = load_detector()
    flagged = 0
    for case in cases:
        held = edges.get((case.world_id, case.skin), ())
        gated = arm_request(m.arm("A6"), case, 0, held)
        plain = arm_request(m.arm("A5"), case, 0, held)
        hit = detector.detect(case.question).opportunity
        flagged += hit
        assert _names(plain) == ["submit_answer", "causal", "counterfactual"]
        assert _names(gated) == (["submit_answer", "causal", "counterfactual"] if hit
                                 else ["submit_answer"])
        assert gated.metadata["routing"]["opportunity"] is hit
        assert gated.metadata["tool_env"]["tools"] == _names(gated)[1:]
        assert "routing" not in plain.metadata
    assert 0 < flagged < len(cases)


def test_routing_is_none_without_a_gate(dev_bench: Path) -> None:
    """An arm without a gate has no routing verdict."""
    case = bench_cases(open_bench(dev_bench))[0]
    assert routing(load_matrix().arm("A2"), case) is None


def test_typed_edges_change_the_stored_rows_not_the_pairs(dev_bench: Path) -> None:
    """A8's store holds the same (cause, effect) pairs as A5's; some association rows are
    'correlation' in A8 and 'causal_claim' in A5."""
    m = load_matrix()
    cases = bench_cases(open_bench(dev_bench))
    edges = world_edges(cases)
    kinds: set[tuple[str, str]] = set()
    for case in cases:
        held = edges.get((case.world_id, case.skin), ())
        a5 = arm_request(m.arm("A5"), case, 0, held).metadata["tool_env"]["edges"]
        a8 = arm_request(m.arm("A8"), case, 0, held).metadata["tool_env"]["edges"]
        assert [r[:2] for r in a5] == [r[:2] for r in a8]
        kinds |= {(x[2], y[2]) for x, y in zip(a5, a8, strict=True)}
    assert kinds == {("causal_claim", "causal_claim"), ("causal_claim", "correlation")}


def test_protocol_arm_sends_the_p2_protocol(dev_bench: Path) -> None:
    """A7's system message carries the worker protocol; A2's does not; the user message and
    tools are the same."""
    m = load_matrix()
    case = bench_cases(open_bench(dev_bench))[0]
    a7 = arm_request(m.arm("A7"), case, 0, ())
    a2 = arm_request(m.arm("A2"), case, 0, ())
    assert "Worker protocol" in a7.messages[0].content
    assert "Worker protocol" not in a2.messages[0].content
    assert a7.messages[1] == a2.messages[1] and a7.tools == a2.tools


def test_cell_held_answer_needs_the_graph_offered_and_holding_the_path(dev_bench: Path) -> None:
    """On the dev question 'operator sets yard_backlog=1 … route_change=1' (a true path
    yard_backlog → route_change): the oracle-graph arm A10 held the answer; the text arm A9
    holds no graph; A6 held the same production rows as A5 but, its gate withholding causal()
    on an unflagged question, held nothing there."""
    from rungbench.causal.ablations.cells import cell_held_answer

    m = load_matrix()
    cases = bench_cases(open_bench(dev_bench))
    edges = world_edges(cases)
    case = next(c for c in cases if c.question.startswith(
        "Suppose an operator sets yard_backlog=1. What is the probability of route_change=1"))
    held = edges[(case.world_id, case.skin)]
    assert ("yard_backlog", "route_change") in held
    assert cell_held_answer(arm_request(m.arm("A10"), case, 0, held).metadata, case, edges)
    assert not cell_held_answer(arm_request(m.arm("A9"), case, 0, held).metadata, case, edges)
    detector = load_detector()
    unflagged = next(c for c in cases if c.query is not None and c.query.get("do")
                     and not detector.detect(c.question).opportunity
                     and cell_held_answer(arm_request(m.arm("A5"), c, 0, edges.get(
                         (c.world_id, c.skin), ())).metadata, c, edges))
    a6 = arm_request(m.arm("A6"), unflagged, 0, edges[(unflagged.world_id, unflagged.skin)])
    assert a6.metadata["tool_env"]["edges"] and not cell_held_answer(a6.metadata, unflagged,
                                                                      edges)
