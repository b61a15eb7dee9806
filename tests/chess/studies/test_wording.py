"""Tests of the claim wording: the narrow sentence, the MDE-bounded null, the named block."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from rungbench.chess.studies.analysis import Settings
from rungbench.chess.studies.analysis_report import PROXY_LABEL, analyze_table, markdown
from rungbench.chess.studies.cells import CellTable, PromptAudit, build_table
from rungbench.chess.studies.planted_tables import PlantedA105, a105_table
from rungbench.chess.studies.wording import DOES_NOT_PROVE, NARROW_SENTENCE
from rungbench.design.presets import factorial_design
from rungbench.errors import InputError, Refusal
from rungbench.evidence.canonical import digest

SETTINGS = Settings(n_boot=600, seed=5)
AUDIT = PromptAudit(digest=digest({"audit": 1}), blocks=6, stray_offsets=0,
                    length_mismatches=0, masked_token_leaks=0)
BOARD_CELLS = ("board_only", "board_plus_legal_list")


def build(agents: dict[str, PlantedA105], *, extra: list[dict[str, Any]] | None = None,
          design_digest: str | None = None, **kw: Any) -> CellTable:
    """A planted table, optionally with extra (bad) rows appended."""
    header, rows = a105_table(agents, positions=60, games=30, seed=9,
                              design_digest=design_digest or factorial_design().digest,
                              prompt_audit=AUDIT, **kw)
    return build_table(header, list(enumerate([*rows, *(extra or [])], start=2)))


@cache
def board_doc() -> dict[str, Any]:
    """Luna board-limited, DeepSeek null."""
    return analyze_table(build({"luna": PlantedA105("board_limited"),
                                "deepseek-v4-flash": PlantedA105("null")}), SETTINGS)


def claim(doc: dict[str, Any], model: str, factor: str) -> dict[str, Any]:
    """One claim entry."""
    return next(c for c in doc["a105"]["claims"] if c["model"] == model and c["factor"] == factor)


def test_a_passing_effect_prints_only_the_seed_sentence_and_its_limits() -> None:
    """The board claim is the seed's sentence, the names, and the five things it does not prove."""
    c = claim(board_doc(), "luna", "board")
    assert c["verdict"] == "claim" and c["text"].startswith(NARROW_SENTENCE)
    assert "Named model snapshot: luna." in c["text"]
    assert c["does_not_prove"] == list(DOES_NOT_PROVE) and len(DOES_NOT_PROVE) == 5
    md = markdown(board_doc())
    assert NARROW_SENTENCE in md and DOES_NOT_PROVE[2] in md


def test_a_null_prints_its_mde_envelope_with_the_seed_figures() -> None:
    """The null agent's effects are protocol nulls bounded by 0.0273–0.1091 / 0.0386–0.1542."""
    doc = analyze_table(build({"luna": PlantedA105("null"),
                               "deepseek-v4-flash": PlantedA105("null")}), SETTINGS)
    for c in doc["a105"]["claims"]:
        assert c["verdict"] == "null" and 1 in c["blocking_gates"]
        assert "0.0273–0.1091" in c["text"] and "0.0386–0.1542" in c["text"]
        assert "protocol-specific null" in c["text"]
        observed = c["mde_envelope"]["observed"]
        assert observed["n"] == 60 and observed["clusters"] == 30 and observed["mde"] > 0


def test_panel_order_reversal_blocks_the_headline_naming_gate_three() -> None:
    """A reversal between panel orders blocks the board headline at gate 3, by name."""
    shift = {"board_first": dict.fromkeys(BOARD_CELLS, -0.2),
             "legal_list_first": dict.fromkeys(BOARD_CELLS, 0.2)}
    doc = analyze_table(build({"luna": PlantedA105("board_limited", order_shift=shift),
                               "deepseek-v4-flash": PlantedA105("null")}), SETTINGS)
    c = claim(doc, "luna", "board")
    assert c["verdict"] == "blocked" and c["blocked_by"] == 3
    assert c["text"].startswith("Headline blocked at gate 3")


def test_differential_attrition_blocks_the_headline_at_gate_three() -> None:
    """Network errors only in board cells block the board headline at gate 3."""
    doc = analyze_table(build({"luna": PlantedA105("board_limited", network_hazard=dict.fromkeys(
        BOARD_CELLS, 0.35)), "deepseek-v4-flash": PlantedA105("null")}), SETTINGS)
    c = claim(doc, "luna", "board")
    assert c["verdict"] == "blocked" and c["blocked_by"] == 3


def test_pooled_headline_is_blocked_at_gate_seven_for_the_other_model() -> None:
    """The pooled board effect is never a claim; it names gate 7 and the model it fails for."""
    pooled = board_doc()["a105"]["pooled_headline"]["board"]
    assert pooled["verdict"] == "blocked" and pooled["gate7_fails_for"] == ["deepseek-v4-flash"]
    assert "at gate 7 for deepseek-v4-flash" in markdown(board_doc())


def test_same_family_evaluation_is_refused_unless_the_proxy_is_named() -> None:
    """A Stockfish evaluation of Stockfish labels refuses; --proxy stockfish labels it proxy."""
    t = build({"luna": PlantedA105("board_limited")}, evaluator_family="stockfish")
    with pytest.raises(Refusal) as info:
        analyze_table(t, SETTINGS)
    assert info.value.codes == ("evaluator_same_family",)
    doc = analyze_table(t, SETTINGS, proxy="stockfish")
    assert doc["role"] == PROXY_LABEL
    assert all("internal proxy" in c["text"] for c in doc["a105"]["claims"])
    with pytest.raises(InputError, match="proxy"):
        analyze_table(build({"luna": PlantedA105("null")}), SETTINGS, proxy="stockfish")


def test_bad_input_rows_are_counted_and_block_every_headline() -> None:
    """An unknown cell is reported verbatim and the board claim becomes blocked by bad input."""
    header, rows = a105_table({"luna": PlantedA105("board_limited")}, positions=60, games=30,
                              seed=9, design_digest=factorial_design().digest,
                              prompt_audit=AUDIT)
    stray = {**rows[0], "cell": "luna|elsewhere|board_only|board_first"}
    t = build_table(header, list(enumerate([*rows, stray], start=2)))
    doc = analyze_table(t, SETTINGS)
    assert doc["bad_input"]["unknown_cell"] == 1 and doc["bad_input"]["rows"][0]["line"]
    c = claim(doc, "luna", "board")
    assert c["verdict"] == "blocked" and c["blocked_by"] == 0 and "bad input" in c["text"]


def test_a_table_of_another_design_preset_is_refused() -> None:
    """A header whose A105 digest is not the registered preset's is manifest_mismatch."""
    t = build({"luna": PlantedA105("null")}, design_digest="sha256:" + "e" * 64)
    with pytest.raises(Refusal) as info:
        analyze_table(t, SETTINGS)
    assert info.value.codes == ("manifest_mismatch",)


def test_a_significant_harm_is_blocked_at_gate_one_not_called_a_null() -> None:
    """A board panel that raises regret by 0.15 is blocked at gate 1, never worded a null."""
    harm = {o: dict.fromkeys(BOARD_CELLS, 0.15) for o in ("board_first", "legal_list_first")}
    doc = analyze_table(build({"luna": PlantedA105("null", order_shift=harm),
                               "deepseek-v4-flash": PlantedA105("null")}), SETTINGS)
    c = claim(doc, "luna", "board")
    assert c["verdict"] == "blocked" and c["blocked_by"] == 1
    assert "harmful direction" in c["text"] and c["mde_envelope"] is None
