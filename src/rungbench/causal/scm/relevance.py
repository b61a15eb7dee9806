"""Evidence a query does not need: the parts of the reduced network its target cannot see.

Once the evidence is fixed, the factors of a (multi-world) network fall into connected
components, joined only through unobserved nodes. The joint factorizes over them, so
P(target | evidence) reads only the components that hold a target node; every other
component multiplies numerator and denominator by the same P(its evidence) (d-separated
evidence, as pyAgrum's relevance reasoning drops it). That factor still matters in one way:
when it is zero the query must be refused, as enumeration refuses it. A component is dropped
only when that cannot happen, certified without eliminating it (:func:`has_positive_witness`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from rungbench.causal.scm.world import Variable


def _roots(scopes: Sequence[Sequence[str]]) -> tuple[dict[str, str], Callable[[str], str]]:
    """Union-find over the variables of ``scopes`` (variables of one scope are joined):
    (the parent map, its root function with path halving)."""
    parent: dict[str, str] = {}

    def root(a: str) -> str:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for sc in scopes:
        if not sc:
            continue
        first = root(sc[0]) if sc[0] in parent else parent.setdefault(sc[0], sc[0])
        for a in sc[1:]:
            ra = root(a) if a in parent else parent.setdefault(a, a)
            if ra != first:
                parent[ra] = first
    return parent, root


def components(scopes: Sequence[Sequence[str]]) -> list[int]:
    """Component of each factor (factors sharing a variable share a component; a factor
    with no variable left is a component of its own)."""
    _, root = _roots(scopes)
    ids: dict[str, int] = {}
    out = []
    for i, sc in enumerate(scopes):
        key = root(sc[0]) if sc else f"#{i}"
        out.append(ids.setdefault(key, len(ids)))
    return out


def split(scopes: Sequence[Sequence[str]], query: Sequence[str]
          ) -> tuple[list[int], dict[str, list[int]]]:
    """(factors in a component holding a query node, the other factors by component, in
    order of first appearance)."""
    parent, root = _roots(scopes)
    wanted = {root(q) for q in query if q in parent}
    kept: list[int] = []
    others: dict[str, list[int]] = {}
    for i, sc in enumerate(scopes):
        key = root(sc[0]) if sc else f"#{i}"
        if key in wanted:
            kept.append(i)
        else:
            others.setdefault(key, []).append(i)
    return kept, others


WITNESS_STEPS = 256
"""Assignments :func:`has_positive_witness` may try before giving up (then the component is
eliminated with the rest: the search only ever saves work)."""


def has_positive_witness(copies: Sequence[tuple[Variable, str, Sequence[str | int]]],
                         evidence: Mapping[str, int]) -> bool:
    """True when one assignment of a component has positive probability and agrees with the
    evidence: then P(the component's evidence) > 0, proved without eliminating it.

    ``copies`` are the component's lone copies (node, its variable, its parent nodes or
    intervened constants) in topological order. When every observed value is possible in
    every row of its CPD, any assignment choosing possible values is a witness (no search).
    Otherwise a depth-first search sets the unobserved
    nodes in that order (more probable value first, impossible values never) and backtracks
    when an observed node has probability zero given the values chosen. False is not a
    proof of impossibility (the search stops after :data:`WITNESS_STEPS` steps, or meets a
    parent outside the component): the caller then eliminates the component.
    """
    if all(node not in evidence or _possible_in_every_row(var)[evidence[node]]
           for var, node, _ in copies):
        return True  # any assignment of the unobserved nodes, each value chosen possible
    value: dict[str, int] = dict(evidence)
    untried: list[list[int]] = []  # per depth: the values left to try there
    depth, steps = 0, 0
    while depth < len(copies):
        steps += 1
        options = _options(copies[depth], value, evidence)
        if options is None or steps > WITNESS_STEPS:
            return False
        untried.append(options)
        while untried and not untried[-1]:
            untried.pop()  # dead end: back to the last copy with a value left
        if not untried:
            return False
        depth = len(untried) - 1
        node = copies[depth][1]
        chosen = untried[depth].pop(0)
        if node not in evidence:
            value[node] = chosen  # deeper values go stale but are reset before being read
        depth += 1
    return True


def _options(copy: tuple[Variable, str, Sequence[str | int]], value: Mapping[str, int],
             evidence: Mapping[str, int]) -> list[int] | None:
    """Values the copy may take given its parents' (more probable first; for an observed
    node, its value if possible); None when a parent has no value (outside the component)."""
    var, node, parents = copy
    row = 0
    for p, stride in zip(parents, var.strides, strict=True):
        digit = p if isinstance(p, int) else value.get(p)
        if digit is None:
            return None
        row += digit * stride
    probs = _rows(var)[row]  # exact zeros: every entry is a sum of response probabilities
    if node in evidence:
        return [evidence[node]] if probs[evidence[node]] > 0.0 else []
    # more probable first, ties by value (binary: 1 first only when strictly more probable)
    return [s for s in sorted(range(len(probs)), key=lambda s: -probs[s]) if probs[s] > 0.0]


def _rows(var: Variable) -> tuple[tuple[float, ...], ...]:
    """(P(V=0 | row), ..., P(V=k-1 | row)) per row as Python floats, kept on the variable."""
    rows: tuple[tuple[float, ...], ...] | None = var.__dict__.get("_cpd_rows")
    if rows is None:
        rows = tuple(tuple(float(x) for x in col) for col in var.cpd().T)
        object.__setattr__(var, "_cpd_rows", rows)
    return rows


def _possible_in_every_row(var: Variable) -> tuple[bool, ...]:
    """Per value s, whether P(V=s | row) > 0 in every row, kept on the variable: an observed
    value possible whatever its parents needs no search."""
    possible: tuple[bool, ...] | None = var.__dict__.get("_possible_in_every_row")
    if possible is None:
        rows = _rows(var)
        possible = tuple(all(r[s] > 0.0 for r in rows) for s in range(var.card))
        object.__setattr__(var, "_possible_in_every_row", possible)
    return possible
