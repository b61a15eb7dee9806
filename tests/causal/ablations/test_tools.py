"""The arm tools: causal() over a scratch graph store, calc, identify."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rungbench.agents.protocol import Message, Request
from rungbench.causal.ablations.tools import CausalToolbox, calc, identify, tool_schemas


def _request(tools: list[str], query: str = "fixed") -> Request:
    env = {"tools": tools, "query": query, "edges": [["a", "b"], ["b", "c"]], "latent": []}
    return Request("c", (Message("user", "x"),), metadata={"tool_env": env})


def test_calc_is_exact_and_refuses_non_arithmetic() -> None:
    """calc evaluates + - * / ** exactly and answers names, calls and huge powers with an error."""
    assert calc("(0.2*0.3)+0.1") == {"value": pytest.approx(0.16, abs=1e-15)}
    assert calc("-2**3") == {"value": -8.0}
    for bad in ("__import__('os')", "a+1", "2**1000", "1/0", "True+1"):
        assert "error" in calc(bad), bad


def test_identify_back_door_front_door_and_non_identifiable() -> None:
    """Confounded by observed Z: back-door {Z}; latent U with mediator M: front-door {M};
    latent U and no mediator: not identifiable."""
    assert identify([["z", "x"], ["z", "y"], ["x", "y"]], [], "x", "y") == {
        "status": "identifiable", "criterion": "back_door", "set": ["z"]}
    fd = identify([["u", "x"], ["u", "y"], ["x", "m"], ["m", "y"]], ["u"], "x", "y")
    assert fd == {"status": "identifiable", "criterion": "front_door", "set": ["m"]}
    bow = identify([["u", "x"], ["u", "y"], ["x", "y"]], ["u"], "x", "y")
    assert bow["status"] == "not_identifiable"
    assert "error" in identify([["x", "y"]], [], "x", "nope")


def test_causal_tool_answers_from_a_scratch_store_and_cleans_up() -> None:
    """causal('what does a cause?') finds a→b and a→b→c; close() deletes the scratch store."""
    box = CausalToolbox(_request(["causal"]))
    folder = Path(str(box._store)).parent
    result = box.call("causal", json.dumps({"query": "what does a cause?"}))
    edges = {(e["cause"], e["effect"]) for p in result["paths"] for e in p["edges"]}
    assert result["status"] == "found" and edges == {("a", "b"), ("b", "c")}
    assert box.call("causal", "not json") == {"error": "arguments are not JSON"}
    assert box.offers("causal") and not box.offers("submit_answer") and not box.offers("calc")
    box.close()
    assert not folder.exists()


def test_naive_query_path_ignores_direction() -> None:
    """The naive path answers 'what does b cause?' with b's neighbours in both directions."""
    box = CausalToolbox(_request(["causal"], query="naive"))
    result = box.call("causal", json.dumps({"query": "what does b cause?"}))
    box.close()
    effects = {e["effect"] for p in result["paths"] for e in p["edges"]}
    assert "a" in effects


def test_schemas_in_canonical_order() -> None:
    """Tool schemas come in the order causal, calc, identify whatever the arm lists."""
    names = [t["function"]["name"] for t in tool_schemas(["identify", "causal"])]
    assert names == ["causal", "identify"]


def test_counterfactual_severs_incoming_edges_and_declines_a_value() -> None:
    """do(x) cuts z -> x, never x's outgoing edges: y downstream of x is not identifiable
    (no mechanisms stored); z, upstream of x, keeps its factual value; unknown node errors."""
    edges = [["z", "x"], ["x", "y"], ["z", "y"]]
    from rungbench.causal.ablations.tools import counterfactual

    down = counterfactual(edges, "x", "y")
    assert down["status"] == "not_identifiable" and down["severed"] == [["z", "x"]]
    assert down["outcome_downstream"] is True
    up = counterfactual(edges, "x", "z")
    assert up["status"] == "identifiable" and up["criterion"] == "no_directed_path"
    assert counterfactual(edges, "x", "q") == {"error": "unknown node 'q'"}


def test_typed_store_hides_association_rows_from_the_graph_tools() -> None:
    """A row typed 'correlation' is no causal path for causal() or counterfactual(); the same
    row untyped (a causal claim, as the legacy table holds it) is one."""
    def box(kind: str) -> CausalToolbox:
        env = {"tools": ["causal", "counterfactual"], "query": "fixed",
               "edges": [["a", "b", "causal_claim"], ["b", "c", kind]], "latent": []}
        return CausalToolbox(Request("c", (Message("user", "x"),), metadata={"tool_env": env}))

    typed, untyped = box("correlation"), box("causal_claim")
    try:
        q = json.dumps({"query": "does a cause c?"})
        assert typed.call("causal", q)["status"] == "none"
        assert untyped.call("causal", q)["status"] == "found"
        args = json.dumps({"treatment": "a", "outcome": "c"})
        assert typed.call("counterfactual", args)["status"] == "identifiable"
        assert untyped.call("counterfactual", args)["status"] == "not_identifiable"
    finally:
        typed.close()
        untyped.close()


def test_counterfactual_schema_is_offered_in_canonical_order() -> None:
    """tool_schemas orders causal, counterfactual, calc, identify whatever the arm lists."""
    names = [s["function"]["name"] for s in tool_schemas(["identify", "counterfactual",
                                                          "causal"])]
    assert names == ["causal", "counterfactual", "identify"]
