"""Scorers of the control matrix: ``strict`` and the seed's ``lenient`` (a known defect).

A case's gold answer (:class:`Gold`) is either a *path* — the exact chain of typed causal
edges that answers the query — or *none* — nothing causal connects the query's cause to
its effect. A scorer reads the parsed tool response and says hit or miss:

- :func:`strict` — for a path gold, a hit needs a returned path whose edges equal the gold
  edges one for one after alias normalization: same direction, same polarity, same
  condition, relation kind ``causal_claim``, same length (so an invented direct edge for a
  two-hop path is a miss). For a none gold, a hit needs a non-error response in which no
  returned path starts at the gold cause and ends at the gold effect. An error response is
  never a hit.
- :func:`lenient` — the seed's scorer: a hit when both gold endpoints appear anywhere in a
  returned path (exact names, direction, polarity and conditions ignored); for a none gold,
  a hit when no returned path holds both.

User scorers (``module:function``) receive ``(gold_json, response_json, aliases)`` as plain
JSON-ready objects (:meth:`Gold.to_json`, :meth:`ToolResponse.to_json`) and return a bool.
The independent second strict scorer is :mod:`strict_check` (no shared code).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rungbench.causal.instrument.graph_store import normalize
from rungbench.causal.instrument.query import ToolResponse, entry_point
from rungbench.errors import InputError


@dataclass(frozen=True)
class GoldEdge:
    """One edge of a gold path."""

    cause: str
    """Canonical cause."""
    effect: str
    """Canonical effect."""
    polarity: str = "+"
    """``+`` or ``-``."""
    condition: str | None = None
    """Condition, or None."""


@dataclass(frozen=True)
class Gold:
    """What a correct answer to a case's query must state."""

    kind: str
    """``path`` (the answer is this chain of edges) or ``none`` (nothing causal connects)."""
    cause: str
    """Canonical cause the query asks about."""
    effect: str
    """Canonical effect the query asks about."""
    edges: tuple[GoldEdge, ...] = ()
    """The gold chain (empty for ``none``)."""

    def to_json(self) -> dict[str, Any]:
        """JSON object handed to user scorers and to :mod:`strict_check`."""
        return {"kind": self.kind, "cause": self.cause, "effect": self.effect,
                "edges": [{"cause": e.cause, "effect": e.effect, "polarity": e.polarity,
                           "condition": e.condition} for e in self.edges]}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Gold:
        """Inverse of :meth:`to_json`; InputError naming the field on bad input."""
        try:
            edges = tuple(GoldEdge(str(e["cause"]), str(e["effect"]), str(e["polarity"]),
                                   None if e["condition"] is None else str(e["condition"]))
                          for e in doc["edges"])
            gold = cls(str(doc["kind"]), str(doc["cause"]), str(doc["effect"]), edges)
        except (KeyError, TypeError) as exc:
            raise InputError(f"bad gold answer: {exc}", field="gold") from exc
        if gold.kind not in ("path", "none") or (gold.kind == "path") != bool(edges):
            raise InputError(f"gold kind {gold.kind!r} does not match its edges", field="gold")
        return gold


Scorer = Callable[[Gold, ToolResponse, Mapping[str, str]], bool]
"""A scorer: ``(gold, parsed response, alias table) -> hit``."""


def _canon(name: str, aliases: Mapping[str, str]) -> str:
    key = normalize(name)
    return normalize(aliases.get(key, key))


def _cond(condition: str | None) -> str | None:
    return None if condition is None or not condition.strip() else normalize(condition)


def strict(gold: Gold, answer: ToolResponse, aliases: Mapping[str, str]) -> bool:
    """Exact typed path match (path gold) or no connecting path (none gold)."""
    if answer.status == "error":
        return False
    start, end = _canon(gold.cause, aliases), _canon(gold.effect, aliases)
    if gold.kind == "none":
        return not any(_canon(p[0].cause, aliases) == start and
                       _canon(p[-1].effect, aliases) == end for p in answer.paths)
    want = [(_canon(e.cause, aliases), _canon(e.effect, aliases), e.polarity, _cond(e.condition))
            for e in gold.edges]
    for path in answer.paths:
        got = [(_canon(e.cause, aliases), _canon(e.effect, aliases), e.polarity,
                _cond(e.condition)) for e in path]
        if got == want and all(e.relation_kind == "causal_claim" for e in path):
            return True
    return False


def lenient(gold: Gold, answer: ToolResponse, aliases: Mapping[str, str]) -> bool:
    """The seed's lenient scorer: both endpoints anywhere in one returned path."""
    del aliases  # the lenient scorer never normalized names
    ends = {normalize(gold.cause), normalize(gold.effect)}
    both = any(ends <= {normalize(n) for e in p for n in (e.cause, e.effect)}
               for p in answer.paths)
    return not both if gold.kind == "none" else both


BUILTIN: dict[str, Scorer] = {"strict": strict, "lenient": lenient}


def load_scorer(spec: str) -> Scorer:
    """``strict`` · ``lenient`` · ``module:function`` taking JSON objects."""
    if spec in BUILTIN:
        return BUILTIN[spec]
    user = entry_point(spec, "scorer")

    def adapted(gold: Gold, answer: ToolResponse, aliases: Mapping[str, str]) -> bool:
        return bool(user(gold.to_json(), answer.to_json(), dict(aliases)))

    adapted.__wrapped__ = user  # type: ignore[attr-defined]  # hashed in the manifest
    return adapted
