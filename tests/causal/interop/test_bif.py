"""Tests for rungbench.causal.interop.bif: all-binary BIF networks at full precision."""

from __future__ import annotations

import hashlib
import logging
import warnings
from pathlib import Path

import numpy as np
import pytest

from rungbench.causal.interop.bif import parse_bif, read_bif
from rungbench.causal.scm import oracle
from rungbench.causal.scm.cpts import world_from_cpts
from rungbench.causal.scm.world import Query, World
from rungbench.errors import InputError

DATA = Path(__file__).resolve().parents[3] / "data" / "bnlearn"

SHA256 = {  # data/SOURCES.md
    "asia": "9f770c96940dc4d860b581602120790ac538983b30b28d38631b8184dc7b5f89",
    "cancer": "05d4ea00a758450eed6fe68ea6de4da05ce0e3e919bd3e8ff7f0bc80a1db4b48",
    "earthquake": "74dd131e2c6437a39de17f2963d2d16fadd91e70450d1fc20501df05e8dc4f2e",
    "win95pts": "14d2195e0c4613e0beb1f06e9199c8cd39a1154171a215c38b47c0fd773d0b36",
}
SIZES = {"asia": 8, "cancer": 5, "earthquake": 5, "win95pts": 76}


def _world(name: str) -> tuple[World, dict[str, tuple[str, str]]]:
    net = read_bif(DATA / f"{name}.bif")
    return world_from_cpts(name, net.cpts), dict(net.states)


def _queries(world: World, rng: np.random.Generator, n: int) -> list[Query]:
    names = world.names
    out = []
    for _ in range(n):
        y, x, z = (str(s) for s in rng.choice(names, 3, replace=False))
        a, b, c = (int(v) for v in rng.integers(0, 2, 3))
        out.append(Query(1, {y: a}, {}, {x: b, z: c}))
        out.append(Query(2, {y: a}, {x: b}, {}))
    return out


@pytest.mark.parametrize("name", sorted(SIZES))
def test_the_copies_are_the_recorded_files(name: str) -> None:
    """Each data/bnlearn file hashes to its SOURCES.md sha256 and parses to its size."""
    path = DATA / f"{name}.bif"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == SHA256[name]
    world, states = _world(name)
    assert len(world.variables) == SIZES[name] == len(states)


@pytest.mark.parametrize("name", sorted(SIZES))
def test_rung1_and_rung2_equal_pgmpy(name: str) -> None:
    """Rung-1 (VE) and rung-2 (do) answers equal pgmpy's on each network to 1e-9."""
    warnings.simplefilter("ignore")
    logging.getLogger("pgmpy").setLevel(logging.ERROR)
    from pgmpy.inference import CausalInference, VariableElimination
    from pgmpy.readwrite import BIFReader

    world, states = _world(name)
    model = BIFReader(str(DATA / f"{name}.bif")).get_model()
    ve, ci = VariableElimination(model), CausalInference(model)
    rng = np.random.default_rng(len(name))
    compared = 0
    for q in _queries(world, rng, 12 if name == "win95pts" else 20):
        ((y, a),) = q.target.items()
        try:
            ours = oracle.probability(world, q)
        except InputError:
            continue
        if q.rung == 1:
            ev = {k: states[k][v] for k, v in q.evidence.items()}
            ref = ve.query([y], evidence=ev, show_progress=False)
        else:
            ((x, b),) = q.do.items()
            if y in world.descendants([x]) and x not in world.var(y).parents:
                ref = ci.query([y], do={x: states[x][b]}, show_progress=False)
            else:  # pgmpy's CausalInference refuses these: VE on its mutilated network
                ref = VariableElimination(model.do([x])).query(
                    [y], evidence={x: states[x][b]}, show_progress=False)
        refv = float(ref.values[ref.state_names[y].index(states[y][a])])
        assert ours == pytest.approx(refv, abs=1e-9), q
        compared += 1
    assert compared >= 15


@pytest.mark.parametrize("name", ["asia", "cancer", "earthquake"])
def test_rung1_and_rung2_equal_pyagrum(name: str) -> None:
    """Rung 1 and 2 equal pyAgrum's LazyPropagation on CPTs filled from our parse (1e-9)."""
    gum = pytest.importorskip("pyagrum", reason="pyAgrum not installed (extra crosscheck)")
    world, _ = _world(name)
    bn = gum.BayesNet(name)
    for v in world.variables:
        bn.add(gum.LabelizedVariable(v.name, v.name, 2))
    for v in world.variables:
        for p in v.parents:
            bn.addArc(p, v.name)
    for v in world.variables:
        p_one = v.cpd()[1]
        for row, q in enumerate(p_one):
            inst = {p: (row >> i) & 1 for i, p in enumerate(v.parents)}
            bn.cpt(v.name)[inst] = [1.0 - float(q), float(q)]
    rng = np.random.default_rng(5)
    for q in _queries(world, rng, 15):
        ((y, a),) = q.target.items()
        try:
            ours = oracle.probability(world, q)
        except InputError:
            continue
        if q.rung == 1:
            ie = gum.LazyPropagation(bn)
            ie.setEvidence(dict(q.evidence))
            ie.makeInference()
            ref = float(ie.posterior(y)[a])
        else:
            ((x, b),) = q.do.items()
            mutilated = gum.BayesNet(bn)
            for p in list(mutilated.parents(x)):
                mutilated.eraseArc(p, mutilated.idFromName(x))
            mutilated.cpt(x).fillWith([1.0 - b, float(b)])
            ie = gum.LazyPropagation(mutilated)
            ie.makeInference()
            ref = float(ie.posterior(y)[a])
        assert ours == pytest.approx(ref, abs=1e-9)


_TINY = """network tiny {{ }}
variable A {{ type discrete [ 2 ] {{ a0, a1 }}; property note; }}
variable B {{ type discrete [ 2 ] {{ b0, b1 }}; }}
probability ( A ) {{ table {a}; }}
probability ( B | A ) {{ {b} }}
"""


def test_numbers_keep_full_double_precision() -> None:
    """A 17-digit probability is read exactly as Python's float of its literal."""
    lit = "0.12345678901234567"
    net = parse_bif(_TINY.format(a=f"{1 - float(lit)!r}, {lit}",
                                 b="(a0) 0.3, 0.7; (a1) 0.9, 0.1;"))
    assert net.cpts[0].p_one == (float(lit),)
    assert net.cpts[1].p_one == (0.7, 0.1)
    assert net.states["A"] == ("a0", "a1")


def test_table_form_with_parents_equals_row_form() -> None:
    """``table`` with parents (child slowest, last parent fastest) equals explicit rows."""
    rows = parse_bif(_TINY.format(a="0.5, 0.5", b="(a0) 0.3, 0.7; (a1) 0.9, 0.1;"))
    table = parse_bif(_TINY.format(a="0.5, 0.5", b="table 0.3, 0.9, 0.7, 0.1;"))
    default = parse_bif(_TINY.format(a="0.5, 0.5", b="(a0) 0.3, 0.7; default 0.9, 0.1;"))
    assert rows.cpts == table.cpts == default.cpts


@pytest.mark.parametrize(("body", "message"), [
    ("(a0) 0.3, 0.7;", "misses parent row 1"),
    ("(a0) 0.3, 0.8; (a1) 0.9, 0.1;", "sums to"),
    ("(a0) 0.3, 0.7; (a0) 0.9, 0.1;", "given twice"),
    ("(a2) 0.3, 0.7; (a1) 0.9, 0.1;", "not a state"),
    ("(a0) 0.3, x; (a1) 0.9, 0.1;", "not a number"),
])
def test_malformed_tables_fail_naming_the_line(body: str, message: str) -> None:
    """Every table defect is an InputError with the file's line number and variable."""
    with pytest.raises(InputError, match=message) as info:
        parse_bif(_TINY.format(a="0.5, 0.5", b=body), path="t.bif")
    assert info.value.line == 5 and info.value.field == "B"


def test_non_binary_and_undeclared_variables_are_refused() -> None:
    """A three-state variable or a block naming an undeclared variable is refused."""
    three = "variable A { type discrete [ 3 ] { x, y, z }; }\nprobability ( A ) { table .2,.3,.5; }"
    with pytest.raises(InputError, match="only binary"):
        parse_bif(three)
    with pytest.raises(InputError, match="undeclared"):
        parse_bif("variable A { type discrete [ 2 ] { x, y }; }\n"
                  "probability ( A | Q ) { (x) 0.5, 0.5; (y) 0.5, 0.5; }")
    with pytest.raises(InputError, match="no probability block"):
        parse_bif("variable A { type discrete [ 2 ] { x, y }; }")
