"""pyAgrum as a cross-check of imported networks, shared by tests/causal/interop/test_bif.py
and tests/causal/bench/test_networks.py: a BIF copy pyAgrum's parser accepts, our CPT numbers
set into its network, and its LazyPropagation answer to a rung-1 or rung-2 query."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rungbench.causal.scm.world import World

_PYAGRUM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")


def pyagrum_copy(source: Path, tmp: Path, states: Mapping[str, tuple[str, ...]]) -> Path:
    """The BIF file ``source`` with every state name pyAgrum's parser rejects renamed (for
    pyAgrum only; rungbench reads the original), written under ``tmp``."""
    text = source.read_text(encoding="utf-8")
    bad = sorted({s for names in states.values() for s in names
                  if not _PYAGRUM_NAME.fullmatch(s)}, key=len, reverse=True)
    if bad:
        rename = {s: f"state_{i}" for i, s in enumerate(bad)}
        pattern = re.compile(r"(?<=[\s{(,])(" + "|".join(map(re.escape, bad)) + r")(?=[\s,;)}])")
        text = pattern.sub(lambda m: rename[m.group(1)], text)
    path = tmp / source.name
    path.write_text(text, encoding="utf-8")
    return path


def with_our_numbers(bn: Any, world: World) -> float:
    """Set pyAgrum's CPTs (read by its own parser) to our world's P(V | parents), checking
    each variable's states and parents agree; return the largest change to pyAgrum's parse."""
    worst = 0.0
    for v in world.variables:
        pot, cpd = bn.cpt(v.name), v.cpd()
        assert bn.variable(v.name).domainSize() == v.card
        assert sorted(bn.variable(p).name() for p in bn.parents(v.name)) == sorted(v.parents)
        for row in range(v.rows):
            inst = {p: (row // s) % k for p, s, k in zip(v.parents, v.strides, v.parent_cards,
                                                         strict=True)}
            for s in range(v.card):
                at = {**inst, v.name: s}
                worst = max(worst, abs(pot[at] - float(cpd[s, row])))
                pot[at] = float(cpd[s, row])
    return worst


def lazy_answer(gum: Any, bn: Any, target: Mapping[str, int], do: Mapping[str, int],
                evidence: Mapping[str, int]) -> float:
    """P(target | do, evidence) by pyAgrum LazyPropagation on the mutilated network."""
    ((y, a),) = target.items()
    net, given = bn, dict(evidence)
    if do:
        ((x, b),) = do.items()
        net = gum.BayesNet(bn)
        for p in list(net.parents(x)):
            net.eraseArc(p, net.idFromName(x))
        net.cpt(x).fillWith([1.0 if s == b else 0.0 for s in range(net.variable(x).domainSize())])
        given[x] = b
    ie = gum.LazyPropagation(net)
    ie.setEvidence(given)
    ie.addTarget(y)
    ie.makeInference()
    return float(ie.posterior(y)[{y: a}])
