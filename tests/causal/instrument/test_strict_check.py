"""The independent second strict scorer: no shared code, and agreement with the first."""

from __future__ import annotations

import ast
import itertools
import json
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from rungbench.causal.instrument import strict_check as second
from rungbench.causal.instrument.http_contract import parse_response
from rungbench.causal.instrument.scorers import Gold, strict


def hand_cases() -> dict[str, Any]:
    text = resources.files("rungbench.causal.instrument").joinpath(
        "data/scorer_hand_cases.json").read_text(encoding="utf-8")
    doc: dict[str, Any] = json.loads(text)
    return doc


NAMES = ("disk full", "oom kill", "cache stall", "queue backlog", "log loss")


def test_second_scorer_imports_only_the_stdlib() -> None:
    """strict_check.py imports no rungbench module (so it shares no code with scorers.py)."""
    tree = ast.parse(Path(second.__file__).read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            found.add((node.module or "").split(".")[0] if node.level == 0 else ".")
    assert found <= {"__future__", "json", "re", "typing"}


def test_agreement_on_every_hand_case() -> None:
    """Both strict scorers agree with the hand key on 100% of the hand cases."""
    doc = hand_cases()
    for case in doc["cases"]:
        raw = json.dumps(case["response"]).encode()
        assert second.strict_check(case["gold"], raw, doc["aliases"]) is case["strict"], case["id"]


def _generated(rng: np.random.Generator) -> tuple[dict[str, Any], dict[str, Any]]:
    hops = int(rng.integers(1, 4))
    nodes = [str(x) for x in rng.choice(NAMES, size=hops + 1, replace=False)]
    edges = [{"cause": a, "effect": b, "polarity": str(rng.choice(["+", "-"])),
              "condition": None if rng.random() < 0.7 else "when pool saturation"}
             for a, b in itertools.pairwise(nodes)]
    kind = "none" if rng.random() < 0.2 else "path"
    gold = {"kind": kind, "cause": nodes[0], "effect": nodes[-1],
            "edges": [] if kind == "none" else edges}
    path = [dict(e, relation_kind="causal_claim") for e in edges]
    mutation = int(rng.integers(0, 8))
    if mutation == 1:
        path[0]["polarity"] = "-" if path[0]["polarity"] == "+" else "+"
    elif mutation == 2:
        path[-1]["cause"], path[-1]["effect"] = path[-1]["effect"], path[-1]["cause"]
    elif mutation == 3:
        path[0]["condition"] = None if path[0]["condition"] else "when x"
    elif mutation == 4:
        path[0]["cause"] = str(path[0]["cause"]).upper() if rng.random() < 0.5 \
            else "disk space exhausted"
    elif mutation == 5:
        path[0]["relation_kind"] = "correlation"
    elif mutation == 6:
        path = path[:1]
    status = "found"
    if mutation == 7:
        return gold, {"status": str(rng.choice(["none", "error"])), "paths": [],
                      "error": {"code": "missing_node", "message": ""}, "notes": []}
    return gold, {"status": status, "paths": [{"edges": path}], "error": None, "notes": []}


def test_agreement_on_1000_generated_cases_lists_every_disagreement() -> None:
    """On 1,000 generated gold/response pairs the scorers agree on at least 99%."""
    rng = np.random.default_rng(1000)
    aliases = {"disk space exhausted": "disk full"}
    disagreements = []
    for i in range(1000):
        gold, response = _generated(rng)
        raw = json.dumps(response).encode()
        one = strict(Gold.from_json(gold), parse_response(raw), aliases)
        two = second.strict_check(gold, raw, aliases)
        if one != two:
            disagreements.append((i, gold, response, one, two))
    assert len(disagreements) <= 10, disagreements
    assert disagreements == [], disagreements  # examined: none found at this seed
