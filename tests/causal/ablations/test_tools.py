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
