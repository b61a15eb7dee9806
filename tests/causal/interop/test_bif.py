"""Tests for rungbench.causal.interop.bif: BIF networks (binary and categorical) at full
precision."""

from __future__ import annotations

import hashlib
import logging
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.pyagrum_bridge import lazy_answer, pyagrum_copy, with_our_numbers

from rungbench.causal.interop.bif import parse_bif, read_bif
from rungbench.causal.scm import cpts, oracle
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




def test_a_cyclic_parent_relation_is_refused_naming_the_file() -> None:
    """A → B → A is refused by the parser, naming the file and the cycle (the world
    builder's later error named neither the file nor the line)."""
    text = ("network c { }\nvariable A { type discrete [ 2 ] { y, n }; }\n"
            "variable B { type discrete [ 2 ] { y, n }; }\n"
            "probability ( A | B ) { (y) 0.5, 0.5; (n) 0.5, 0.5; }\n"
            "probability ( B | A ) { (y) 0.5, 0.5; (n) 0.5, 0.5; }\n")
    with pytest.raises(InputError, match=r"cyc\.bif: the parent relation has a cycle"):
        parse_bif(text, path="cyc.bif")


def test_bad_state_lists_and_undeclared_variables_are_refused() -> None:
    """A state count that disagrees with its list, one or 65 states, a repeated state or a
    block naming an undeclared variable is refused naming the variable."""
    for decl, message in (("[ 3 ] { x, y }", "declares"), ("[ 1 ] { x }", "has 1 states"),
                          ("[ 3 ] { x, y, x }", "twice"),
                          (f"[ 65 ] {{ {', '.join(f's{i}' for i in range(65))} }}", "65")):
        with pytest.raises(InputError, match=message) as info:
            parse_bif(f"variable A {{ type discrete {decl}; }}")
        assert info.value.field == "A"
    with pytest.raises(InputError, match="undeclared"):
        parse_bif("variable A { type discrete [ 2 ] { x, y }; }\n"
                  "probability ( A | Q ) { (x) 0.5, 0.5; (y) 0.5, 0.5; }")
    with pytest.raises(InputError, match="no probability block"):
        parse_bif("variable A { type discrete [ 2 ] { x, y }; }")


# --- categorical networks ---------------------------------------------------------------

_THREE = """network three {{ }}
variable A {{ type discrete [ 3 ] {{ lo, mid, hi }}; }}
variable B {{ type discrete [ 2 ] {{ off, on }}; }}
variable C {{ type discrete [ 3 ] {{ c/1, <2, 3+ }}; }}
probability ( A ) {{ table 0.2, 0.3, 0.5; }}
probability ( B ) {{ table 0.4, 0.6; }}
probability ( C | A, B ) {{ {c} }}
"""

_C_ROWS = ("(lo, off) 0.1, 0.2, 0.7; (mid, off) 0.3, 0.3, 0.4; (hi, off) 0.5, 0.25, 0.25; "
           "(lo, on) 0.0, 0.5, 0.5; (mid, on) 0.9, 0.1, 0.0; (hi, on) 1.0, 0.0, 0.0;")


def test_categorical_rows_are_mixed_radix_and_names_are_kept() -> None:
    """A 3-state child of a 3-state and a binary parent: row (a, b) is a + 3b, every
    state's probability is the literal's float, and odd state names are kept."""
    net = parse_bif(_THREE.format(c=_C_ROWS))
    a, b, c = net.cpts
    assert not net.is_binary and a.states == ("lo", "mid", "hi") and b.states == ("off", "on")
    assert c.states == ("c/1", "<2", "3+") and c.p_one == () and b.p_one == (0.6,)
    assert c.table[1 + 3 * 1] == (0.9, 0.1, 0.0) and c.table[2] == (0.5, 0.25, 0.25)
    world = world_from_cpts("three", net.cpts)
    assert world.to_json(seed=0)["schema"] == "rungbench.world/2"
    q = oracle.probability(world, Query(1, {"C": 2}, {}, {"A": 0, "B": 1}))
    assert q == pytest.approx(0.5, abs=1e-15)


def test_categorical_table_form_equals_row_form() -> None:
    """``table`` (child's state slowest, last parent fastest) equals the explicit rows."""
    rows = parse_bif(_THREE.format(c=_C_ROWS))
    dist = {(a, b): rows.cpts[2].table[a + 3 * b] for a in range(3) for b in range(2)}
    numbers = [dist[(a, b)][s] for s in range(3) for a in range(3) for b in range(2)]
    table = parse_bif(_THREE.format(c="table " + ", ".join(map(repr, numbers)) + ";"))
    assert table.cpts == rows.cpts


@pytest.mark.parametrize(("body", "message"), [
    ("(lo, off) 0.1, 0.2, 0.7; default 0.3, 0.3, 0.40001;", "default row of 'C' sums to"),
    (_C_ROWS.replace("0.9, 0.1, 0.0", "0.9, 0.1, 0.0000011"), r"row \['mid', 'on'\] of 'C'"),
    (_C_ROWS.replace("0.9, 0.1, 0.0", "0.9, 0.1"), "needs 3 probabilities"),
    ("table 0.1, 0.9;", "needs 18 numbers"),
])
def test_categorical_rows_that_do_not_sum_to_one_name_the_row_and_line(body: str,
                                                                     message: str) -> None:
    """A row off by more than 1e-6, a short row or a short table fails naming the line, the
    variable and the row."""
    with pytest.raises(InputError, match=message) as info:
        parse_bif(_THREE.format(c=body), path="t.bif")
    assert info.value.line == 7 and info.value.field == "C"


def test_a_row_within_one_millionth_is_kept_as_written() -> None:
    """A row off by 1e-7 is accepted with its literals unchanged; the encoding's first
    possible state absorbs the difference (max CPT error 1e-7)."""
    net = parse_bif(_THREE.format(c=_C_ROWS.replace("0.9, 0.1, 0.0", "0.9, 0.1000001, 0.0")))
    assert net.cpts[2].table[4] == (0.9, 0.1000001, 0.0)
    world = world_from_cpts("three", net.cpts)
    assert cpts.max_cpt_error(world, net.cpts) == pytest.approx(1e-7, rel=1e-6)


NETWORKS = {  # data/SOURCES.md: nodes, largest state count
    "alarm": (37, 4), "andes": (223, 2), "asia": (8, 2), "cancer": (5, 2), "child": (20, 6),
    "earthquake": (5, 2), "hailfinder": (56, 11), "hepar2": (70, 4), "insurance": (27, 5),
    "pigs": (441, 3), "sachs": (11, 3), "survey": (6, 3), "water": (32, 4),
    "win95pts": (76, 2),
}


@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_every_bundled_network_imports(name: str) -> None:
    """Every data/bnlearn network parses, encodes within 1e-6 of its rows, and is
    rungbench.world/1 exactly when it is all-binary."""
    net = read_bif(DATA / f"{name}.bif")
    nodes, most = NETWORKS[name]
    assert len(net.cpts) == nodes and max(len(s) for s in net.states.values()) == most
    world = world_from_cpts(name, net.cpts)
    assert cpts.max_cpt_error(world, net.cpts) <= 1e-6
    assert world.is_binary == (most == 2)
    assert world.to_json(seed=0)["schema"] == ("rungbench.world/1" if most == 2
                                               else "rungbench.world/2")


def test_child_keeps_the_state_names_pyagrum_rejects() -> None:
    """child.bif's ``Asy/Patch`` and ``<5`` states are states, usable by name in a query."""
    net = read_bif(DATA / "child.bif")
    assert "Asy/Patch" in net.states["ChestXray"] and net.states["LowerBodyO2"][0] == "<5"
    world = world_from_cpts("child", net.cpts)
    q = Query.from_json({"rung": 1, "target": {"ChestXray": "Asy/Patch"},
                         "evidence": {"LowerBodyO2": "<5"}}, states=world.state_names())
    assert q.target == {"ChestXray": 4} and q.evidence == {"LowerBodyO2": 0}
    assert 0.0 < oracle.probability(world, q) < 1.0



@pytest.mark.parametrize("name", ["alarm", "child", "insurance", "hailfinder", "pigs"])
def test_categorical_networks_equal_pyagrum_lazy_propagation(name: str, tmp_path: Path) -> None:
    """P(y | e) and P(y | do(x), e) with up to 5 evidence variables (some given by state
    name) equal pyAgrum's LazyPropagation to 1e-9; pyAgrum reads the BIF itself (its numbers
    within 1e-6 of ours, then set to our full-precision ones)."""
    gum = pytest.importorskip("pyagrum", reason="pyAgrum not installed (extra crosscheck)")
    net = read_bif(DATA / f"{name}.bif")
    world = world_from_cpts(name, net.cpts)
    bn = gum.loadBN(str(pyagrum_copy(DATA / f"{name}.bif", tmp_path, net.states)))
    assert with_our_numbers(bn, world) <= 1e-6
    rng = np.random.default_rng(sum(map(ord, name)))
    names = list(world.observed_names)
    compared = 0
    for i in range(16):
        y, x, *ev = (str(s) for s in rng.choice(names, 2 + int(rng.integers(0, 6)), replace=False))
        value = {n: int(rng.integers(0, world.card(n))) for n in (y, x, *ev)}
        evidence: dict[str, Any] = {n: net.states[n][value[n]] if i % 3 == 0 else value[n]
                                    for n in ev}
        doc: dict[str, Any] = {"rung": 1 + i % 2, "target": {y: value[y]}, "evidence": evidence}
        if i % 2:
            doc["do"] = {x: value[x]}
        else:
            evidence[x] = value[x]
        q = Query.from_json(doc, states=world.state_names())
        try:
            ours = oracle.probability(world, q)
        except InputError:  # impossible evidence: pyAgrum cannot answer it either
            continue
        assert ours == pytest.approx(lazy_answer(gum, bn, q.target, q.do, q.evidence), abs=1e-9), q
        compared += 1
    assert compared >= 10
