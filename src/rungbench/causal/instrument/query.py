"""``causal(query) -> ToolResponse``: one protocol, the two reference queries, adapters.

Every tool is called the same way: ``tool(ToolRequest(store, query))`` where ``store`` is
the path of a typed graph store (:mod:`graph_store`) and ``query`` is the harness's
exact wording in one of three forms (:func:`parse_query`):

- ``does X cause Y?`` — closed: the paths from X to Y;
- ``what does X cause?`` — open: every effect of X with its path;
- ``what causes Y?`` — open: every cause of Y with its path.

A tool returns a :class:`ToolResponse` (or its JSON, :meth:`ToolResponse.to_json`):
``status`` is ``found`` (``paths`` non-empty), ``none`` (the nodes exist, nothing
connects them) or ``error`` with a defined ``error_code``: ``empty_query``,
``malformed_query`` or ``missing_node``. Each path lists its edges with polarity,
condition and relation kind, so a reader can check direction, sign and conditions.

:func:`naive` reproduces the seed's broken production query (exact strings, one hop,
direction ignored, the answer phrased in the query's orientation, no polarity or
condition, a silent empty result for an unknown node). :func:`fixed` is proposal P1:
alias normalization, direction-aware breadth-first search up to ``MAX_HOPS``, the real
path (never an invented direct edge), each edge's polarity and condition, and defined
errors. :func:`load_tool` resolves ``naive``, ``fixed``, ``module:function`` or an
``http://127.0.0.1:PORT`` endpoint (see :mod:`http_contract`).
"""

from __future__ import annotations

import importlib
import ipaddress
import re
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from rungbench.causal.instrument.graph_store import Edge, GraphStore, normalize
from rungbench.errors import InputError

MAX_HOPS = 4
"""Hop limit of :func:`fixed` (the cases go up to four hops)."""

ERROR_CODES = ("empty_query", "malformed_query", "missing_node")
STATUSES = ("found", "none", "error")

_DOES = re.compile(r"^does (?P<cause>.+?) cause (?P<effect>.+?)\??$", re.IGNORECASE)
_EFFECTS = re.compile(r"^what does (?P<cause>.+?) cause\??$", re.IGNORECASE)
_CAUSES = re.compile(r"^what causes (?P<effect>.+?)\??$", re.IGNORECASE)


@dataclass(frozen=True)
class ToolRequest:
    """One call of ``causal()``."""

    store: str
    """Path of the typed graph store the tool must answer from."""
    query: str
    """The harness's exact wording (one of the three forms)."""


@dataclass(frozen=True)
class ResponseEdge:
    """One edge of a returned path."""

    cause: str
    """Cause node as the tool names it."""
    effect: str
    """Effect node as the tool names it."""
    polarity: str = "+"
    """``+`` or ``-``."""
    condition: str | None = None
    """Condition under which the edge holds, None if unconditional."""
    relation_kind: str = "causal_claim"
    """Relation kind of the stored edge."""


@dataclass(frozen=True)
class ToolResponse:
    """What ``causal()`` returns (the JSON contract of :mod:`http_contract`)."""

    status: str
    """``found`` · ``none`` · ``error``."""
    paths: tuple[tuple[ResponseEdge, ...], ...] = ()
    """Returned paths, each a chain of edges from the query's cause toward its effect."""
    error_code: str | None = None
    """One of :data:`ERROR_CODES` when ``status`` is ``error``."""
    message: str = ""
    """Human-readable detail (names the missing node, the malformed text)."""
    notes: tuple[str, ...] = field(default=())
    """Extra information that is not an answer (a reverse edge, a non-causal relation)."""

    def to_json(self) -> dict[str, Any]:
        """The response as the contract's JSON object."""
        return {
            "status": self.status,
            "paths": [{"edges": [{"cause": e.cause, "effect": e.effect, "polarity": e.polarity,
                                  "condition": e.condition, "relation_kind": e.relation_kind}
                                 for e in p]} for p in self.paths],
            "error": None if self.error_code is None else {"code": self.error_code,
                                                            "message": self.message},
            "notes": list(self.notes),
        }


class QueryError(Exception):
    """A query that :func:`parse_query` cannot read; ``code`` is an error code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class ParsedQuery:
    """A query's form and the node names it mentions."""

    form: str
    """``does`` · ``effects`` · ``causes``."""
    cause: str | None
    """Cause text (None for ``causes``)."""
    effect: str | None
    """Effect text (None for ``effects``)."""


def parse_query(text: str) -> ParsedQuery:
    """Read one query; :class:`QueryError` for empty or malformed text."""
    body = " ".join(text.split())
    if not body:
        raise QueryError("empty_query", "the query is empty")
    for form, pattern in (("effects", _EFFECTS), ("causes", _CAUSES), ("does", _DOES)):
        match = pattern.match(body)
        if match:
            names = match.groupdict()
            return ParsedQuery(form, names.get("cause"), names.get("effect"))
    raise QueryError("malformed_query", f"not 'does X cause Y?', 'what does X cause?' or "
                                        f"'what causes Y?': {text!r}")


def wording(form: str, cause: str, effect: str) -> str:
    """The harness's exact wording of a query (the inverse of :func:`parse_query`)."""
    if form == "does":
        return f"does {cause} cause {effect}?"
    if form == "effects":
        return f"what does {cause} cause?"
    return f"what causes {effect}?"


def _error(code: str, message: str) -> ToolResponse:
    return ToolResponse("error", error_code=code, message=message)


def _rendered(edges: list[tuple[str, str]]) -> tuple[ResponseEdge, ...]:
    return tuple(ResponseEdge(c, e) for c, e in edges)


_STORES: dict[str, GraphStore] = {}


def open_store(path: str) -> GraphStore:
    """A cached read-only connection to the store at ``path`` (tools answer many queries)."""
    store = _STORES.get(path)
    if store is None:
        store = _STORES[path] = GraphStore.open(path)
    return store


def naive(request: ToolRequest) -> ToolResponse:
    """The broken production query: exact strings, one hop, direction ignored."""
    try:
        q = parse_query(request.query)
    except QueryError as exc:
        return _error(exc.code, str(exc))
    store = open_store(request.store)

    def neighbours(node: str) -> list[str]:
        out = [e.effect if e.cause == node else e.cause for e in store.touching(node)
               if e.relation_kind == "causal_claim"]
        return sorted(set(out))

    if q.form == "does":
        assert q.cause is not None and q.effect is not None
        hit = q.effect in neighbours(q.cause)
        return ToolResponse("found", (_rendered([(q.cause, q.effect)]),)) if hit \
            else ToolResponse("none")
    if q.form == "effects":
        assert q.cause is not None
        found = [_rendered([(q.cause, n)]) for n in neighbours(q.cause)]
    else:
        assert q.effect is not None
        found = [_rendered([(n, q.effect)]) for n in neighbours(q.effect)]
    return ToolResponse("found", tuple(found)) if found else ToolResponse("none")


def resolve(store: GraphStore, name: str) -> str | None:
    """Canonical node for ``name``: exact, then normalized, then the alias table."""
    if store.has_node(name):
        return name
    key = normalize(name)
    node = store.aliases().get(key)
    if node is not None and store.has_node(node):
        return node
    return None


def _as_response(path: tuple[Edge, ...]) -> tuple[ResponseEdge, ...]:
    return tuple(ResponseEdge(e.cause, e.effect, e.polarity, e.condition, e.relation_kind)
                 for e in path)


def _search(store: GraphStore, start: str, forward: bool,
            max_hops: int) -> dict[str, tuple[Edge, ...]]:
    """Shortest causal path (fewest hops, then edge-id order) to every reachable node."""
    best: dict[str, tuple[Edge, ...]] = {start: ()}
    frontier = [start]
    for _ in range(max_hops):
        nxt: list[str] = []
        for node in frontier:
            step = store.out_edges(node) if forward else store.in_edges(node)
            for e in step:
                if e.relation_kind != "causal_claim":
                    continue
                other = e.effect if forward else e.cause
                if other in best:
                    continue
                best[other] = (*best[node], e) if forward else (e, *best[node])
                nxt.append(other)
        frontier = nxt
    del best[start]
    return best


def _all_paths(store: GraphStore, cause: str, effect: str, max_hops: int) -> list[tuple[Edge, ...]]:
    """Every simple directed causal path from cause to effect of at most ``max_hops``."""
    found: list[tuple[Edge, ...]] = []

    def walk(node: str, path: tuple[Edge, ...], seen: frozenset[str]) -> None:
        if len(path) == max_hops:
            return
        for e in store.out_edges(node):
            if e.relation_kind != "causal_claim" or e.effect in seen:
                continue
            if e.effect == effect:
                found.append((*path, e))
            else:
                walk(e.effect, (*path, e), seen | {e.effect})

    walk(cause, (), frozenset({cause}))
    return sorted(found, key=lambda p: (len(p), [e.edge_id for e in p]))


def fixed(request: ToolRequest, *, max_hops: int = MAX_HOPS) -> ToolResponse:
    """Proposal P1: normalized, direction-aware, multi-hop, polarity- and condition-aware."""
    try:
        q = parse_query(request.query)
    except QueryError as exc:
        return _error(exc.code, str(exc))
    store = open_store(request.store)
    named = [n for n in (q.cause, q.effect) if n is not None]
    nodes = {n: resolve(store, n) for n in named}
    missing = [n for n, node in nodes.items() if node is None]
    if missing:
        return _error("missing_node", "no node or alias named " + ", ".join(map(repr, missing)))
    if q.form == "does":
        cause, effect = nodes[str(q.cause)], nodes[str(q.effect)]
        assert cause is not None and effect is not None
        paths = _all_paths(store, cause, effect, max_hops)
        if paths:
            return ToolResponse("found", tuple(_as_response(p) for p in paths))
        notes = []
        if _all_paths(store, effect, cause, max_hops):
            notes.append(f"a causal path runs the other way: {effect} -> {cause}")
        notes += [f"non-causal relation {e.relation_kind}: {e.cause} / {e.effect}"
                  for e in store.touching(cause) if e.relation_kind != "causal_claim"
                  and {e.cause, e.effect} == {cause, effect}]
        return ToolResponse("none", notes=tuple(notes))
    if q.form == "effects":
        start = nodes[str(q.cause)]
        assert start is not None
        reach = _search(store, start, True, max_hops)
    else:
        start = nodes[str(q.effect)]
        assert start is not None
        reach = _search(store, start, False, max_hops)
    found = tuple(_as_response(reach[n]) for n in sorted(reach))
    return ToolResponse("found", found) if found else ToolResponse("none")


CausalTool = Callable[[ToolRequest], object]
"""Anything the harness can call: ``tool(request)`` returns the raw response.

The raw response is a :class:`ToolResponse`, its JSON object, or JSON text/bytes; the
harness parser (:func:`http_contract.parse_response`) reads every kind the same way.
"""


BUILTIN: dict[str, Callable[[ToolRequest], ToolResponse]] = {"naive": naive, "fixed": fixed}


@dataclass(frozen=True)
class HttpTool:
    """A user's ``causal()`` behind the HTTP contract (:mod:`http_contract`) on loopback."""

    url: str
    """Endpoint URL, e.g. ``http://127.0.0.1:8765/causal``."""
    timeout: float = 5.0
    """Seconds before a call counts as a timeout."""

    def __call__(self, request: ToolRequest) -> bytes:
        """POST the request JSON; return the response body (parsed by the harness)."""
        from rungbench.causal.instrument.http_contract import encode_request

        req = urllib.request.Request(self.url, data=encode_request(request), method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=self.timeout) as reply:
            body: bytes = reply.read()
        return body


def check_loopback(url: str, *, allow_remote: bool) -> str:
    """``url`` if it is http(s) on a loopback host; InputError otherwise (unless allowed)."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError(f"not an http URL: {url!r}", field="query")
    host = parts.hostname
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback and not allow_remote:
        raise InputError(f"{host} is not a loopback address; pass --allow-remote to send "
                         "queries off this machine", field="query")
    return url


def load_tool(spec: str, *, timeout: float = 5.0, allow_remote: bool = False) -> CausalTool:
    """``naive`` · ``fixed`` · ``module:function`` · ``http://127.0.0.1:PORT[/path]``."""
    if spec in BUILTIN:
        return BUILTIN[spec]
    if spec.startswith(("http://", "https://")):
        return HttpTool(check_loopback(spec, allow_remote=allow_remote), timeout)
    return cast(CausalTool, _entry_point(spec, "query"))


def _entry_point(spec: str, option: str) -> Any:
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise InputError(f"expected module:function, got {spec!r}", field=option)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise InputError(f"cannot import {module_name!r}: {exc}", field=option) from exc
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise InputError(f"{module_name!r} has no attribute {attr!r}", field=option)
        target = getattr(target, part)
    if not callable(target):
        raise InputError(f"{spec!r} is not callable", field=option)
    return target


def entry_point(spec: str, option: str) -> Any:
    """Import ``module:function`` (InputError naming ``option`` when it cannot)."""
    return _entry_point(spec, option)
