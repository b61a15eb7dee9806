"""A second strict scorer, written from the contract text alone (seed 003, "Validate the
oracle and scorer"): it shares no code with :mod:`scorers` and imports only the stdlib.

It reads the gold answer and the tool's response as raw JSON (the response contract of
:mod:`http_contract` and the gold object of ``Gold.to_json``), not the parsed objects, and
decides the same question by a different route: every edge is turned into a signature
string ``cause → effect | sign | condition`` after its own name folding (case-folded,
whitespace runs collapsed, then looked up in the alias table), and a path gold is a hit
when the sequence of signatures of some returned path equals the gold sequence and every
edge there is a causal claim. A none gold is a hit when the response is not an error and
no returned path begins at the gold cause and ends at the gold effect. Anything that is
not a well-formed response is a miss.

The control matrix also uses it as the stage-2 reference: whether the *raw* tool output
(before the harness parser) states the gold answer.
"""

from __future__ import annotations

import json
import re
from typing import Any

_SPACE = re.compile(r"\s+")


def _fold(text: str) -> str:
    return _SPACE.sub(" ", text.casefold()).strip()


def _name(text: Any, alias_table: dict[str, str]) -> str:
    folded = _fold(str(text))
    return _fold(alias_table.get(folded, folded))


def _signature(edge: dict[str, Any], alias_table: dict[str, str]) -> str:
    condition = edge.get("condition")
    cond = "" if condition is None else _fold(str(condition))
    sign = edge.get("polarity", "+")
    return f"{_name(edge['cause'], alias_table)} → {_name(edge['effect'], alias_table)} " \
           f"| {sign} | {cond}"


def _load(response: bytes | str | dict[str, Any]) -> dict[str, Any] | None:
    if isinstance(response, dict):
        return response
    try:
        doc = json.loads(response)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def strict_check(gold: dict[str, Any], response: bytes | str | dict[str, Any],
                 aliases: dict[str, str]) -> bool:
    """Hit or miss for one raw response, per the strict rule above."""
    doc = _load(response)
    if doc is None or doc.get("status") not in ("found", "none"):
        return False
    table = {_fold(k): v for k, v in aliases.items()}
    paths = doc.get("paths") or []
    try:
        chains = [list(p["edges"]) for p in paths]
        head = _name(gold["cause"], table)
        tail = _name(gold["effect"], table)
        if gold["kind"] == "none":
            for chain in chains:
                if chain and _name(chain[0]["cause"], table) == head \
                        and _name(chain[-1]["effect"], table) == tail:
                    return False
            return True
        wanted = " ; ".join(_signature(e, table) for e in gold["edges"])
        for chain in chains:
            if any(e.get("relation_kind", "causal_claim") != "causal_claim" for e in chain):
                continue
            if " ; ".join(_signature(e, table) for e in chain) == wanted:
                return True
    except (KeyError, TypeError, AttributeError):
        return False
    return False
