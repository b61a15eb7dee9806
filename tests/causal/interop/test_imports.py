"""Tests for rungbench.causal.interop.imports: sealed CPT imports and coupling refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rungbench.causal.interop import imports
from rungbench.causal.scm.world import Query
from rungbench.errors import IntegrityError, Refusal

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
