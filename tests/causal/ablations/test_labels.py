"""Routing bypass and oracle leakage per ablation cell: the rules on hand-made rows, the
graph-held-answer check on hand-made stores, and planted agents through the real runner."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import networkx as nx
import pytest

from rungbench.agents.protocol import Agent
from rungbench.agents.providers import serve_on_loopback
from rungbench.causal.ablations.arms import load_matrix
from rungbench.causal.ablations.contamination import Needles, needles
from rungbench.causal.ablations.facts import ASSOCIATION, CAUSAL, world_edges
from rungbench.causal.ablations.labels import (
    DEFAULT_DETECTOR,
    case_queries,
    cell_labels,
    default_opportunity,
    gate_opportunity,
    graph_held_answer,
    graph_tool_calls,
    is_routing_bypass,
    leaked_needles,
)
from rungbench.causal.ablations.planted import WorldIdEcho, planted_agent
from rungbench.causal.ablations.runs import ArmRun, run_arms
from rungbench.causal.bench.verified import bench_cases, open_bench
from rungbench.causal.instrument.detector import load_detector

BYPASS = "routing_bypass"
LEAK = "oracle_leakage"


def _row(**kw: Any) -> dict[str, Any]:
    """A failed cell showing all three bypass conditions and no leak."""
    base = {"outcome": "false_non_id", "opportunity": {"flagged": True},
            "graph_tool_calls": 0, "graph_held_answer": True, "leaks": []}
    return {**base, **kw}


# ------------------------------------------------ rules on hand-made rows

def test_bypass_needs_failure_flag_no_graph_call_and_held_answer() -> None:
    """All three conditions on a failed cell give exactly routing_bypass (replacing
    unexplained); each condition failing alone, or a right answer, leaves the verdict's
    labels as they were."""
    assert is_routing_bypass(_row())
    assert cell_labels(_row(), ["unexplained"]) == [BYPASS]
    assert cell_labels(_row(outcome="wrong"), ["unsupported_certainty"]) == [
        "unsupported_certainty", BYPASS]
    for broken in (_row(opportunity={"flagged": False}), _row(graph_tool_calls=1),
                   _row(graph_held_answer=False)):
        assert not is_routing_bypass(broken)
        assert cell_labels(broken, ["unexplained"]) == ["unexplained"]
    for fine in ("correct", "correct_non_id", "abstain", "invalid", "missing"):
        assert not is_routing_bypass(_row(outcome=fine))
        assert cell_labels(_row(outcome=fine), []) == []


def test_leakage_is_licensed_whatever_the_verdict() -> None:
    """A cell whose writing named a leaked needle gets oracle_leakage on a right answer, an
    abstention and a failure (dropping unexplained), and alongside routing bypass."""
    assert cell_labels(_row(outcome="correct", leaks=["w_1"]), []) == [LEAK]
    assert cell_labels(_row(outcome="abstain", leaks=["w_1"]), []) == [LEAK]
    assert cell_labels(_row(graph_held_answer=False, leaks=["w_1"]), ["unexplained"]) == [LEAK]
    assert cell_labels(_row(leaks=["w_1"]), ["unexplained"]) == [BYPASS, LEAK]


def test_graph_tool_calls_count_only_graph_tools() -> None:
    """causal, counterfactual and identify are graph tools; calc and submit_answer are not."""
    assert graph_tool_calls(["calc", "causal", "identify", "counterfactual", "calc"]) == 3
    assert graph_tool_calls(["calc", "submit_answer"]) == 0


def test_leaked_needles_are_whole_words_of_ids_and_cohort_names() -> None:
    """World ids and cohort-unique names count as whole words in any text; a longer word
    containing one does not; found needles are sorted and unique."""
    n = Needles(frozenset({"w_0a1b", "w_9f"}), frozenset({"sprocket_heat"}), (0.1234,))
    found = leaked_needles([("t1", '{"claim_text": "as in w_9f and w_0a1b"}'),
                            ("t2", "sprocket_heat rose; w_9fx is not an id; 0.1234"),
                            ("t3", "again w_9f")], n)
    assert found == ["sprocket_heat", "w_0a1b", "w_9f"]
    assert leaked_needles([("t", "w_0a1bc")], n) == []


def test_opportunity_records_its_source() -> None:
    """A gated arm's row copies the gate's frozen verdict; an ungated arm's row is the
    registered default detector's verdict on the question, named as such."""
    gated = gate_opportunity({"detector": "regex1+logreg1", "opportunity": True, "kind": "x"})
    assert gated == {"source": "arm_gate", "detector": "regex1+logreg1", "flagged": True}
    det = load_detector(f"{DEFAULT_DETECTOR}.json")
    flagged = default_opportunity(
        det, "Suppose an operator sets yard_backlog=1. What is the probability of "
             "route_change=1?")
    assert flagged == {"source": "default:detector_classifier_v1", "detector": det.version,
                       "flagged": True}
    plain = default_opportunity(det, "Given that we see tmp_cleanup=1, what is the "
                                     "probability of oom_kill=0?")
    assert plain["flagged"] is False


# ------------------------------------------------ condition (c) on hand-made stores

CHAIN = (("a", "b"), ("b", "c"))


def _rows(*edges: tuple[str, str], kind: str = CAUSAL) -> tuple[tuple[str, str, str], ...]:
    return tuple(sorted((x, y, kind) for x, y in edges))


def test_graph_holds_the_answer_only_when_it_returns_the_true_paths() -> None:
    """On the chain a → b → c, 'does a cause c?' is held by the full store through the
    repaired query; not by a store missing b → c, nor by one where an untyped association row
    a → c adds a path the true graph lacks, nor by an empty store, nor through the naive
    one-hop query; a query whose true answer is empty is never held."""
    q = ("does a cause c?",)
    assert graph_held_answer(_rows(*CHAIN), CHAIN, q, "fixed")
    assert not graph_held_answer(_rows(("a", "b")), CHAIN, q, "fixed")
    assert not graph_held_answer(_rows(*CHAIN, ("a", "c")), CHAIN, q, "fixed")
    typed = tuple(sorted((*_rows(*CHAIN), ("a", "c", ASSOCIATION))))
    assert graph_held_answer(typed, CHAIN, q, "fixed")
    assert not graph_held_answer((), CHAIN, q, "fixed")
    assert not graph_held_answer(_rows(*CHAIN), CHAIN, q, "naive")
    assert graph_held_answer(_rows(*CHAIN), CHAIN, ("does a cause b?",), "naive")
    assert not graph_held_answer(_rows(*CHAIN), CHAIN, ("does c cause a?",), "fixed")


def test_case_queries_read_the_question(dev_bench: Path) -> None:
    """An interventional question asks whether its do-variable causes its target; a rung-1
    question asks it of each conditioning variable; a discovery question asks what each
    variable of the joint table causes."""
    by_q = {c.question: c for c in bench_cases(open_bench(dev_bench))}
    do = by_q["Suppose an operator sets yard_backlog=1. What is the probability of "
              "route_change=1?"]
    assert case_queries(do) == ("does yard_backlog cause route_change?",)
    seen = by_q["Among observed cases with gps_jitter=1, relay_trip=1, what is "
                "P(firmware_old=1)?"]
    assert case_queries(seen) == ("does gps_jitter cause firmware_old?",
                                  "does relay_trip cause firmware_old?")
    discovery = next(c for c in by_q.values() if c.item_type == "discovery")
    names = discovery.evidence.payload["joint"]["names"]
    assert case_queries(discovery) == tuple(f"what does {n} cause?" for n in names)
    assert len(names) >= 2


# ------------------------------------------------ planted agents through the real runner

def _run(agent: Agent, bench: Path, out: Path, arms: list[str],
         cohort: Needles | None = None) -> dict[str, ArmRun]:
    with serve_on_loopback(agent) as provider:
        runs = run_arms(load_matrix(), arms, bench, out, provider, samples=1, per_world=3,
                        concurrency=8, cohort=cohort)
    return {r.arm: r for r in runs}


@pytest.fixture(scope="module")
def bypass_runs(dev_bench: Path, tmp_path_factory: pytest.TempPathFactory
                ) -> dict[str, ArmRun]:
    """The bypassing planted agent on the oracle-graph arm, the gated arm and the public arm."""
    return _run(planted_agent("bypass"), dev_bench, tmp_path_factory.mktemp("bypass"),
                ["A10", "A6", "A3"])


def test_bypass_agent_gets_exactly_routing_bypass_where_the_graph_held_the_answer(
        bypass_runs: dict[str, ArmRun], dev_bench: Path) -> None:
    """A10 (oracle graph, no gate): the cells labelled routing_bypass are exactly the failed
    cells whose question the default detector flags and whose treatment reaches the target
    in the world's true graph (networkx, computed here), each with exactly that label; every
    other failure stays unexplained; the agent called no tool."""
    cases = {c.case_id: c for c in bench_cases(open_bench(dev_bench))}
    truth = world_edges(cases.values())
    detector = load_detector()
    expected = set()
    for row in bypass_runs["A10"].rows:
        assert row["tool_calls"] == 0 and row["graph_tool_calls"] == 0
        assert row["opportunity"]["source"] == "default:detector_classifier_v1"
        case = cases[row["case_id"]]
        if row["outcome"] not in ("wrong", "false_non_id", "false_answer_on_non_id") \
                or case.query is None or not detector.detect(case.question).opportunity:
            continue
        g = nx.DiGraph(truth[(case.world_id, case.skin)])
        if all(g.has_node(t) and g.has_node(y) and nx.has_path(g, t, y)
               for t in case.query.get("do") or case.query["evidence"]
               for y in case.query["target"]):
            expected.add(row["cell"])
    labelled = {r["cell"] for r in bypass_runs["A10"].rows if BYPASS in r["labels"]}
    assert labelled == expected and len(expected) >= 2
    for row in bypass_runs["A10"].rows:
        if row["cell"] in expected:
            assert row["labels"] == [BYPASS]
        elif row["outcome"] in ("wrong", "false_non_id", "false_answer_on_non_id"):
            assert row["labels"] == ["unexplained"]
        else:
            assert row["labels"] == []


def test_gated_and_graphless_arms(bypass_runs: dict[str, ArmRun]) -> None:
    """A6's bypass cells are flagged by its own gate (recorded as such); A3 holds no graph,
    so none of its failures is a bypass."""
    a6 = bypass_runs["A6"].rows
    assert all(r["opportunity"]["source"] == "arm_gate" for r in a6)
    assert all(r["opportunity"]["flagged"] and r["graph_held_answer"]
               for r in a6 if BYPASS in r["labels"])
    a3 = bypass_runs["A3"].rows
    assert any(r["labels"] == ["unexplained"] for r in a3)
    assert not any(r["graph_held_answer"] or BYPASS in r["labels"] for r in a3)


def test_world_id_echo_gets_exactly_oracle_leakage(validation_bench: Path,
                                                   tmp_path: Path) -> None:
    """An agent echoing a validation world id in its rationale gets exactly oracle_leakage on
    every cell it abstained on, with that id recorded as the leak."""
    world = sorted(c.world_id for c in bench_cases(open_bench(validation_bench)))[0]
    runs = _run(WorldIdEcho(world), validation_bench, tmp_path, ["A10", "A3"])
    for run in runs.values():
        assert run.rows and all(r["outcome"] == "abstain" for r in run.rows)
        assert all(r["labels"] == [LEAK] and r["leaks"] == [world] for r in run.rows)


def test_leak_across_splits_needs_the_cohort(dev_bench: Path, validation_bench: Path,
                                             tmp_path: Path) -> None:
    """On a dev run a validation world id is found only when the validation cohort's needles
    are passed in."""
    world = sorted(c.world_id for c in bench_cases(open_bench(validation_bench)))[0]
    cohort = needles(validation_bench, dev_bench)
    bare = _run(WorldIdEcho(world), dev_bench, tmp_path / "bare", ["A3"])["A3"].rows
    scanned = _run(WorldIdEcho(world), dev_bench, tmp_path / "cohort", ["A3"],
                   cohort)["A3"].rows
    assert all(r["labels"] == [] and r["leaks"] == [] for r in bare)
    assert all(r["labels"] == [LEAK] and r["leaks"] == [world] for r in scanned)


def test_honest_agent_gets_neither(dev_bench: Path, tmp_path: Path) -> None:
    """The fact reader (calls causal() where offered, never echoes an id) gets neither label
    on the oracle-graph and gated arms."""
    runs = _run(planted_agent("reader"), dev_bench, tmp_path, ["A10", "A6"])
    rows = [r for run in runs.values() for r in run.rows]
    assert rows and any(r["graph_tool_calls"] for r in rows)
    assert not any(BYPASS in r["labels"] or LEAK in r["labels"] or r["leaks"] for r in rows)
