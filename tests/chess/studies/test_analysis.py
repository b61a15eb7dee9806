"""Tests of the chess analysis estimands on seeded planted cell tables (known inputs)."""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
import pytest

from rungbench.chess.studies.analysis import Settings, analyze_a105
from rungbench.chess.studies.analysis_report import analyze_table
from rungbench.chess.studies.cells import CellTable, PromptAudit, build_table
from rungbench.chess.studies.planted_tables import (
    PlantedA105,
    a105_table,
)
from rungbench.design.presets import factorial_design
from rungbench.design.registry import load_design
from rungbench.evidence.canonical import digest

SETTINGS = Settings(n_boot=600, seed=7)
E020 = load_design("e020_e021").digest
AUDIT = PromptAudit(digest=digest({"audit": "clean"}), blocks=8, stray_offsets=0,
                    length_mismatches=0, masked_token_leaks=0)


def planted(agents: dict[str, PlantedA105], seed: int = 11, **kw: Any) -> CellTable:
    """A planted A105 table built and verified in memory."""
    header, rows = a105_table(agents, positions=60, games=30, seed=seed,
                              design_digest=factorial_design().digest, prompt_audit=AUDIT, **kw)
    return build_table(header, list(enumerate(rows, start=2)))


@cache
def doc(kind: str) -> dict[str, Any]:
    """The analysis document of one planted scenario (cached across tests)."""
    other = PlantedA105("null")
    agents = {"board": {"luna": PlantedA105("board_limited"), "deepseek-v4-flash": other},
              "complementary": {"luna": PlantedA105("complementary"), "deepseek-v4-flash": other},
              "substitutable": {"luna": PlantedA105("substitutable"), "deepseek-v4-flash": other},
              "null": {"luna": other, "deepseek-v4-flash": other}}[kind]
    return analyze_table(planted(agents), SETTINGS)


def result(d: dict[str, Any], model: str, split: str = "held_out") -> dict[str, Any]:
    """The A105 result of one model and split."""
    return next(r for r in d["a105"]["results"] if r["model"] == model and r["split"] == split)


def test_board_limited_recovers_the_main_effect_and_no_legal_effect() -> None:
    """A planted board drop of 0.15 is recovered within its interval; the list effect is 0."""
    r = result(doc("board"), "luna")["primary"]
    assert r["main_b"]["low"] < 0.15 < r["main_b"]["high"]
    assert r["main_b"]["low"] > 0.08
    assert r["main_l"]["low"] < 0 < r["main_l"]["high"]


def test_interaction_sign_separates_complementary_from_substitutable() -> None:
    """Only-the-package help gives a positive interaction; either-helps gives a negative one."""
    comp = result(doc("complementary"), "luna")["primary"]["interaction"]
    subs = result(doc("substitutable"), "luna")["primary"]["interaction"]
    assert comp["low"] > 0 and comp["mean"] == pytest.approx(0.2, abs=0.06)
    assert subs["high"] < 0 and subs["mean"] == pytest.approx(-0.15, abs=0.06)


def test_estimands_match_hand_computation_on_complete_positions() -> None:
    """The main effect equals 0.5·([R00−R10]+[R01−R11]) over position means computed here."""
    table = planted({"luna": PlantedA105("board_limited")})
    rows = [r for r in table.rows if r.split == "held_out"]
    by: dict[str, dict[str, list[float]]] = {}
    for r in rows:
        by.setdefault(r.position, {}).setdefault(r.condition, []).append(
            np.nan if r.regret is None else r.regret)
    means = {p: {c: float(np.mean(v)) for c, v in cs.items()} for p, cs in by.items()}
    complete = [m for m in means.values() if not any(np.isnan(list(m.values())))]
    hand = np.mean([0.5 * ((m["no_information"] - m["board_only"])
                           + (m["legal_list_only"] - m["board_plus_legal_list"]))
                    for m in complete])
    got = analyze_a105(table, SETTINGS, models=["luna"]).results[("luna", "held_out")]
    assert got.primary["main_b"].mean == pytest.approx(hand, abs=1e-12)
    assert got.primary["main_b"].test.n == len(complete)


def test_same_seed_same_intervals_and_development_reported_separately() -> None:
    """The bootstrap is seeded (identical documents) and development is its own result."""
    table = planted({"luna": PlantedA105("null"), "deepseek-v4-flash": PlantedA105("null")})
    a, b = analyze_table(table, SETTINGS), analyze_table(table, SETTINGS)
    assert a == b
    splits = {(r["model"], r["split"]) for r in a["a105"]["results"]}
    assert ("luna", "development") in splits and ("luna", "held_out") in splits
    assert all(k.endswith(("board", "legal_list")) for k in a["a105"]["primary_family"])
    assert len(a["a105"]["primary_family"]) == 4


def test_holm_adjusts_across_the_four_primary_tests() -> None:
    """Each primary test's Holm p is at least its raw p, over a family of four."""
    fam = doc("board")["a105"]["primary_family"]
    assert {e["family_size"] for e in fam.values()} == {4}
    assert all(e["adjusted_p"] >= e["p"] for e in fam.values())
    assert fam["luna:board"]["rejected"] and not fam["deepseek-v4-flash:board"]["rejected"]


def test_attrition_bounds_bracket_the_intention_to_run_estimate() -> None:
    """With network losses the best bound ≥ every estimate ≥ the worst bound, counts shown."""
    table = planted({"luna": PlantedA105("board_limited",
                                         network_hazard={c: 0.1 for c in (
                                             "no_information", "board_only",
                                             "legal_list_only", "board_plus_legal_list")}),
                     "deepseek-v4-flash": PlantedA105("null")})
    r = analyze_a105(table, SETTINGS).results[("luna", "held_out")]
    best = r.sensitivities["attrition_best"]["main_b"].mean
    worst = r.sensitivities["attrition_worst"]["main_b"].mean
    itt = r.sensitivities["intention_to_run_max_regret"]["main_b"].mean
    assert worst <= itt <= best and worst < r.primary["main_b"].mean < best
    support = r.attrition["support"]
    assert support["complete_positions"] < support["positions"] == 60
    att = r.attrition
    assert att["differential"] == (att["spread"] > 0.02 and att["homogeneity_p"] < 0.05)
    assert {h["route"] for h in r.attrition["hazards"]} == {"route-a", "route-b"}


def test_every_number_names_the_rows_it_came_from() -> None:
    """Primary estimates and cell means carry a sha256 source digest of their rows."""
    r = result(doc("board"), "luna")
    assert r["primary"]["main_b"]["source"].startswith("sha256:")
    assert r["cell_means"]["board_only"]["source"] != r["cell_means"]["no_information"]["source"]


def test_a_missing_registered_model_keeps_the_holm_family_at_four() -> None:
    """A one-model table still corrects over the four registered tests (missing at p = 1)."""
    table = planted({"luna": PlantedA105("board_limited")})
    fam = analyze_a105(table, SETTINGS).family
    assert len(fam) == 4 and fam["deepseek-v4-flash:board"]["missing"]
    assert fam["deepseek-v4-flash:board"]["p"] == 1.0
    assert not fam["deepseek-v4-flash:board"]["rejected"]
    assert fam["luna:board"]["adjusted_p"] >= 2 * fam["luna:board"]["p"]



def test_two_routes_of_one_model_are_averaged_per_cell_not_overwritten() -> None:
    """A model sent through two routes has two cells per (position, condition, order); the
    position's R(B, L) is their mean, so neither route's cells are silently dropped."""
    from rungbench.chess.studies.analysis import _units

    table = planted({"luna": PlantedA105("board_limited")})
    rows = [r for r in table.rows if r.model == "luna" and r.split == "held_out"]
    other = [r.model_copy(update={"cell": f"b/{r.cell}", "route": "route-b",
                                  "regret": None if r.regret is None else 0.0})
             for r in rows]
    orders = ("board_first", "legal_list_first")
    one = _units(rows, orders)
    both = _units(rows + other, orders)
    assert both.positions == one.positions
    expected = np.where(np.isnan(one.cells), np.nan, one.cells / 2)
    assert np.allclose(both.cells, expected, equal_nan=True)
