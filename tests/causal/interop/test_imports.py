"""Tests for rungbench.causal.interop.imports: sealed CPT imports and coupling refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rungbench.causal.interop import imports
from rungbench.causal.scm.world import Query
from rungbench.errors import InputError, IntegrityError, Refusal

DATA = Path(__file__).resolve().parents[3] / "data" / "bnlearn"


@pytest.fixture
def asia(tmp_path: Path) -> imports.Imported:
    imports.import_bif(DATA / "asia.bif", tmp_path / "asia")
    return imports.load_import(tmp_path / "asia")


def test_import_states_encoding_and_coupling_caveat(tmp_path: Path) -> None:
    """The summary names the encoding, an unspecified coupling and what it leaves unchanged."""
    s = imports.import_bif(DATA / "win95pts.bif", tmp_path / "w")
    assert s["n_variables"] == 76 and s["coupling"] is None
    assert s["max_cpt_error"] <= 1e-15
    assert s["max_response_tables"] <= 2**7 + 1
    assert "1[U_V < P(V=1 | parents)]" in s["encoding"]
    for phrase in ("rung-1 and rung-2", "ATE", "ETT", "NDE", "NIE", "PN", "refused"):
        assert phrase in s["coupling_note"]
    assert s["source"]["sha256"].startswith("sha256:")


def test_rung2_and_named_estimands_answer_without_a_coupling(asia: imports.Imported) -> None:
    """Rung 2 and NDE are coupling-invariant, so they answer with the coupling unspecified."""
    r = imports.answer(asia, Query(2, {"dysp": 0}, {"smoke": 1}))
    assert r["coupling_invariant"] and r["coupling"] is None
    assert r["value"] == pytest.approx(0.3191332, abs=1e-12)
    e = imports.answer_estimand(asia, "nde", "smoke", "dysp")
    assert e["mediators"] == ["bronc", "lung", "either"] and e["coupling_invariant"]


def test_coupling_dependent_queries_need_a_named_coupling(asia: imports.Imported) -> None:
    """A PN-type query is refused (coupling_dependent) until a coupling is named."""
    q = Query(3, {"dysp": 0}, {"smoke": 1}, {"smoke": 0, "dysp": 1})
    with pytest.raises(Refusal) as info:
        imports.answer(asia, q)
    assert info.value.codes == ("coupling_dependent",)
    co = imports.answer(asia, q, coupling="comonotone")
    ind = imports.answer(asia, q, coupling="independent")
    assert co["coupling"] == "comonotone" and not co["coupling_invariant"]
    assert abs(co["value"] - ind["value"]) > 0.01  # the coupling really matters here


def test_an_import_made_with_a_named_coupling_answers_it(tmp_path: Path) -> None:
    """Importing with --coupling independent answers rung-3 queries under that coupling."""
    imports.import_bif(DATA / "cancer.bif", tmp_path / "c", coupling="independent")
    imp = imports.load_import(tmp_path / "c")
    q = Query(3, {"Xray": 1}, {"Cancer": 1}, {"Cancer": 0, "Xray": 0})
    assert imports.answer(imp, q)["coupling"] == "independent"


def test_tampered_or_existing_imports_fail_closed(tmp_path: Path) -> None:
    """A changed world.json fails the seal; an existing output is refused without force."""
    imports.import_bif(DATA / "cancer.bif", tmp_path / "c")
    with pytest.raises(Refusal) as info:
        imports.import_bif(DATA / "cancer.bif", tmp_path / "c")
    assert info.value.codes == ("exists",)
    imports.import_bif(DATA / "cancer.bif", tmp_path / "c", force=True)
    doc = json.loads((tmp_path / "c" / "world.json").read_text())
    doc["variables"][0]["responses"][0]["p"] += 0.0
    (tmp_path / "c" / "world.json").write_text(json.dumps(doc) + " ")
    with pytest.raises(IntegrityError, match="changed"):
        imports.load_import(tmp_path / "c")


def test_binary_imports_are_byte_for_byte_as_before(tmp_path: Path) -> None:
    """An all-binary network's import.json and world.json keep their digests (computed
    before categorical imports existed)."""
    from rungbench.evidence.canonical import bytes_digest

    imports.import_bif(DATA / "asia.bif", tmp_path / "a")
    assert bytes_digest((tmp_path / "a" / "import.json").read_bytes()) == (
        "sha256:6577d6fa9b550d22798e156631e9d7f347b40cb0a8f758bbfb62bfe08a7a4fdc")
    assert bytes_digest((tmp_path / "a" / "world.json").read_bytes()) == (
        "sha256:e16cdbb052f959eb5a0b1536f883b5f5dba334bfbbb6ccebb8b1442815df70ea")


def test_a_categorical_import_round_trips_and_answers_by_state_name(tmp_path: Path) -> None:
    """alarm imports as a rungbench.world/2 world whose CPT tables and state names survive
    the sealed round trip; a query naming states equals the same query by index."""
    s = imports.import_bif(DATA / "alarm.bif", tmp_path / "alarm")
    assert s["n_variables"] == 37 and s["max_cpt_error"] <= 1e-6
    assert "inverse CDF" in s["encoding"]
    doc = json.loads((tmp_path / "alarm" / "world.json").read_text())
    assert doc["schema"] == "rungbench.world/2"
    imp = imports.load_import(tmp_path / "alarm")
    assert imp.states["BP"] == ("LOW", "NORMAL", "HIGH")
    named = imports.parse_query(imp, {"rung": 2, "target": {"BP": "HIGH"},
                                      "do": {"HR": "LOW"}, "evidence": {"CO": "NORMAL"}})
    assert named == Query(2, {"BP": 2}, {"HR": 0}, {"CO": 1})
    r = imports.answer(imp, named)
    assert r["query_states"] == {"target": {"BP": "HIGH"}, "do": {"HR": "LOW"},
                                 "evidence": {"CO": "NORMAL"}}
    assert r["value"] == imports.answer(imp, Query(2, {"BP": 2}, {"HR": 0}, {"CO": 1}))["value"]
    assert 0.0 < r["value"] < 1.0 and r["coupling_invariant"]
    with pytest.raises(InputError) as info:
        imports.parse_query(imp, {"rung": 1, "target": {"BP": "VERY HIGH"}})
    assert info.value.field == "target.BP"


def test_categorical_counterfactuals_need_a_named_coupling(tmp_path: Path) -> None:
    """On alarm (CPT-only), a rung-3 query reading CVP at two settings of its parent is refused
    (coupling_dependent) until a coupling is named; named, the twin network answers it."""
    imports.import_bif(DATA / "alarm.bif", tmp_path / "alarm")
    imp = imports.load_import(tmp_path / "alarm")
    q = imports.parse_query(imp, {"rung": 3, "target": {"CVP": "NORMAL"},
                                  "do": {"LVEDVOLUME": "NORMAL"},
                                  "evidence": {"LVEDVOLUME": "HIGH", "CVP": "HIGH"}})
    with pytest.raises(Refusal) as info:
        imports.answer(imp, q)
    assert info.value.codes == ("coupling_dependent",)
    assert "CVP" in info.value.reasons[0].data["variables"]
    r = imports.answer(imp, q, coupling="comonotone")
    assert r["coupling"] == "comonotone" and r["method"] == "elimination"
    # by hand: CVP = s on U in [P(CVP >= s+1 | row), P(CVP >= s | row)); LVEDVOLUME is set,
    # so the answer is |NORMAL interval of row NORMAL ∩ HIGH interval of row HIGH| / |the
    # latter| = |[0.01, 0.96) ∩ [0, 0.70)| / 0.70
    (cvp,) = [c for c in imp.cpts if c.name == "CVP"]
    normal, high = (imp.states["LVEDVOLUME"].index(s) for s in ("NORMAL", "HIGH"))

    def interval(row: tuple[float, ...], s: int) -> tuple[float, float]:
        return sum(row[s + 1:]), sum(row[s:])

    a, b = interval(cvp.table[normal], 1)
    c, d = interval(cvp.table[high], 2)
    assert r["value"] == pytest.approx(max(0.0, min(b, d) - max(a, c)) / (d - c), abs=1e-12)
    assert r["value"] == pytest.approx(0.69 / 0.70, abs=1e-12)
