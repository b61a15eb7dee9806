"""A bound study's runs + evaluations → the verified cell table (real runner, Ethereal)."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from tests.chess.studies import planted_study as ps

import chess
from rungbench.chess.studies import study as st
from rungbench.chess.studies.analysis_report import analyze_table
from rungbench.chess.studies.bindings import Binding, load_binding
from rungbench.chess.studies.cells import read_cell_table, write_cell_table
from rungbench.chess.studies.manifest import load_manifest
from rungbench.chess.studies.planted import PanelAgent
from rungbench.chess.studies.study_table import StudyTable, bound_preset, study_table
from rungbench.errors import Refusal
from rungbench.evidence.canonical import bytes_digest, digest

# one process builds the shared planted study (runs + evaluations) once
pytestmark = pytest.mark.xdist_group("planted_study")


@pytest.fixture(scope="module")
def built() -> ps.PlantedStudy:
    """The planted study (built once per process)."""
    return ps.planted_study()


def _table(root: Path, stage: Path, binding: str) -> StudyTable:
    manifest = st.current_manifest(root, stage)
    return study_table(root, load_binding(root, binding, manifest), manifest,
                       bytes_digest((stage / "stage.json").read_bytes()))


def _copy(built: ps.PlantedStudy, tmp_path: Path) -> Path:
    root = tmp_path / "study"
    shutil.copytree(built.root, root, ignore=shutil.ignore_patterns("analyses",
                                                                    "evaluation-cache"))
    return root


def _evaluation(root: Path, run_id: str, name: str) -> Any:
    return json.loads((root / "evaluations" / run_id / name).read_text())


def test_rows_join_metadata_with_the_evaluators_cells(built: ps.PlantedStudy) -> None:
    """Every A105 cell of both runs is one row: metadata, evaluator class, regret, digest."""
    built_table = _table(built.root, built.stage, built.bindings["main"])
    table = built_table.table
    assert len(table.rows) == 2 * 24 * 8 and not table.anomalies
    assert table.header.study_digest == built.bindings["main"]
    assert table.header.prompt_audit is not None
    assert (table.header.prompt_audit.blocks, table.header.prompt_audit.stray_offsets) == (48, 0)
    run_id = built.runs[("main", "luna")]
    cells = {c["cell"]: c for c in _evaluation(built.root, run_id, "cells.json")["cells"]}
    best = {p["key"]: set(p["best_moves"])
            for p in _evaluation(built.root, run_id, "positions.json")["positions"]}
    luna = [r for r in table.rows if r.model == "luna"]
    assert len(luna) == 192
    for row in luna:
        scored = cells[row.cell.split("/", 1)[1]]
        assert (row.outcome, row.regret) == (scored["class"], scored["regret"])
        assert row.evaluation_digest == digest(scored)
        assert row.chose_best == (scored["move"] in best[row.position])
        assert row.route == ps.ROUTE and row.split == "held_out"
        assert (row.board, row.legal_list) == {"no_information": (0, 0), "board_only": (1, 0),
                                               "legal_list_only": (0, 1),
                                               "board_plus_legal_list": (1, 1)}[row.condition]
    inputs = built_table.inputs()
    assert [i["run_id"] for i in inputs] == sorted(i["run_id"] for i in inputs)
    assert all(i["evaluation"] for i in inputs)


def test_best_is_the_evaluators_not_pass_a(built: ps.PlantedStudy) -> None:
    """chose_best and best_in_candidates use the evaluator's best set; probes carry no regret."""
    table = _table(built.root, built.stage, built.bindings["ladder"]).table
    run_id = built.runs[("ladder", "ideas")]
    best = {p["key"]: set(p["best_moves"])
            for p in _evaluation(built.root, run_id, "positions.json")["positions"]}
    probes = [r for r in table.rows if r.condition == "self_shortlist"]
    assert len(probes) == 48 and all(r.regret is None for r in probes)
    assert all(r.evaluation_digest for r in probes if not r.is_reliability)
    listed = [r for r in table.rows if r.condition == "oracle_top10"]
    assert listed and all(r.selected_rank is not None for r in listed if r.outcome == "legal")
    manifest = load_manifest(built.root / "manifest")
    disagree = [k for k in best if manifest.lists[k].candidates[0].uci not in best[k]]
    assert disagree  # pass A's rank 1 is not always the evaluator's best
    for r in table.rows:
        if r.condition == "unaided" and r.outcome == "legal":
            assert r.chose_best == (r.selected_move in best[r.position])


def test_missing_evaluation_refuses(built: ps.PlantedStudy, tmp_path: Path) -> None:
    """A move-choice run without its published evaluation refuses (evaluation_missing)."""
    root = _copy(built, tmp_path)
    shutil.rmtree(root / "evaluations" / built.runs[("main", "luna")])
    with pytest.raises(Refusal) as err:
        _table(root, built.stage, built.bindings["main"])
    assert err.value.reasons[0].code == "evaluation_missing"


def test_evaluation_of_another_run_refuses(built: ps.PlantedStudy, tmp_path: Path) -> None:
    """Another run's evaluation under this run's name refuses (manifest_mismatch)."""
    root = _copy(built, tmp_path)
    mine, other = built.runs[("main", "luna")], built.runs[("main", "deepseek-v4-flash")]
    shutil.rmtree(root / "evaluations" / mine)
    shutil.copytree(root / "evaluations" / other, root / "evaluations" / mine)
    with pytest.raises(Refusal) as err:
        _table(root, built.stage, built.bindings["main"])
    reason = err.value.reasons[0]
    assert reason.code == "manifest_mismatch" and {"run_id", "manifest"} <= set(reason.data)


def test_evaluation_older_than_a_resume_is_stale(built: ps.PlantedStudy, tmp_path: Path) -> None:
    """Resuming the attrition run after its evaluation makes the evaluation stale."""
    root = _copy(built, tmp_path)
    shutil.copytree(built.root / "evaluation-cache", root / "evaluation-cache")
    agent = PanelAgent("board_limited", base=ps.BASE, lift=ps.LIFT, seed=6)
    result = ps.run_planted(root, built.stage, built.bindings["blocked"], "attrition", agent,
                            ps.authorization(root, "attrition"))
    assert result["complete"]
    with pytest.raises(Refusal) as err:
        _table(root, built.stage, built.bindings["blocked"])
    assert err.value.reasons[0].code == "manifest_mismatch"
    assert "stale" in err.value.reasons[0].detail
    ps.evaluate(root, built.stage, built.runs[("blocked", "attrition")], force=True)
    rows = _table(root, built.stage, built.bindings["blocked"]).table.rows
    assert not any(r.is_reliability for r in rows)


def test_an_unrun_model_is_reported_and_a_missing_probe_refuses(built: ps.PlantedStudy,
                                                                 tmp_path: Path) -> None:
    """A registered model with no run: the table holds the models that ran and names the
    one that did not (the analysis says the design is not complete); a model that ran
    without its probe run still refuses (cells_missing)."""
    root = _copy(built, tmp_path)
    shutil.rmtree(root / "runs" / built.runs[("main", "deepseek-v4-flash")])
    table = _table(root, built.stage, built.bindings["main"])
    assert table.not_run == ("deepseek-v4-flash",)
    assert {r["model"] for r in table.rows} == {"luna"}
    doc = st.analyze(root, built.stage, binding=built.bindings["main"])
    assert doc["models_not_run"] == ["deepseek-v4-flash"]
    assert "Design not complete: no run of deepseek-v4-flash" in (
        Path(doc["out"]) / "analysis.md").read_text(encoding="utf-8")
    shutil.rmtree(root / "runs" / built.runs[("ladder", "vision:probe")])
    with pytest.raises(Refusal) as err:
        _table(root, built.stage, built.bindings["ladder"])
    assert [(r.code, r.subject, r.data) for r in err.value.reasons] == [
        ("cells_missing", f"vision@{ps.ROUTE}", {"part": "probe"})]


def test_stale_manifest_refuses(built: ps.PlantedStudy, tmp_path: Path) -> None:
    """A manifest re-frozen under another quota leaves every binding stale."""
    from tests.chess.studies import study_fixtures as fx

    root = _copy(built, tmp_path)
    st.freeze(root, built.stage, fx.small_preset({"training": 0, "development": 1,
                                                   "held_out": 3}), force=True)
    with pytest.raises(Refusal) as err:
        st.analyze(root, built.stage, binding=built.bindings["main"])
    assert err.value.reasons[0].code == "binding_stale"


def test_duplicate_and_unknown_rows_are_counted_and_block(built: ps.PlantedStudy,
                                                          tmp_path: Path) -> None:
    """A duplicated and an unknown cell are counted anomalies that block every headline."""
    built_table = _table(built.root, built.stage, built.bindings["main"])
    rows = [dict(r) for r in built_table.rows]
    unknown = {**rows[0], "cell": f"{ps.ROUTE}/A105:luna:9999:board_only:board_first"}
    path = tmp_path / "cells.jsonl"
    write_cell_table(path, built_table.table.header, [*rows, rows[3], unknown])
    table = read_cell_table(path)
    assert table.anomaly_counts() == {"unknown_cell": 1, "duplicate_cell": 1}
    manifest = load_manifest(built.root / "manifest")
    doc = analyze_table(table, preset=bound_preset(load_binding(
        built.root, built.bindings["main"], manifest)))
    assert doc["bad_input"]["unknown_cell"] == 1
    assert {c["verdict"] for c in doc["a105"]["claims"]} == {"blocked"}
    assert all(c["blocking_gates"][0] == 0 for c in doc["a105"]["claims"])


def _rates(table: Any) -> dict[str, float]:
    """Best-move rate per move-choice arm (legal cells), and coverage of the probe."""
    out = {}
    for arm in sorted({r.condition for r in table.rows}):
        rows = [r for r in table.rows if r.condition == arm and not r.is_reliability]
        flag = [r.best_in_candidates if arm == "self_shortlist" else r.chose_best
                for r in rows]
        out[arm] = sum(1 for f in flag if f) / len(rows)
    return out


def test_the_registered_best_set_rule_decides_the_best_move_rates(
        built: ps.PlantedStudy) -> None:
    """The same cells under best_set = "pass_a_rank1" (rank 1 alone) instead of the
    evaluator's ties: pass A's rank 1 and the evaluator's best set disagree on this study,
    so chose_best and coverage change and with them every best-move rate; under
    "pass_a_ties_with_rank1" a cell counts its move best exactly when pass A ties it."""
    manifest = st.current_manifest(built.root, built.stage)
    binding = load_binding(built.root, built.bindings["ladder"], manifest)
    stage = bytes_digest((built.stage / "stage.json").read_bytes())

    def under(rule: str) -> Any:
        document = copy.deepcopy(binding.document)
        document["design"]["document"]["analysis"]["best_set"] = rule
        return study_table(built.root, Binding(binding.digest, document), manifest,
                           stage).table

    evaluator, rank1, ties = (under(r) for r in ("evaluator_ties", "pass_a_rank1",
                                                 "pass_a_ties_with_rank1"))
    base, only = _rates(evaluator), _rates(rank1)
    assert base.keys() == only.keys() and "unaided" in base
    assert base["unaided"] != only["unaided"] and base["self_shortlist"] != \
        only["self_shortlist"]
    for r in ties.rows:
        if r.condition == "unaided" and r.outcome == "legal":
            lst = manifest.lists[r.position]
            tied = {c.uci for c in lst.candidates
                    if c.expectation == lst.candidates[0].expectation}
            assert r.chose_best == (r.selected_move in tied)


def test_every_row_carries_strata_recomputed_independently(built: ps.PlantedStudy) -> None:
    """Each row's phase, tacticality, side to move, legal-move count and value gap equal
    what the frozen manifest and python-chess give for its position, and its latency,
    tokens and cost equal its run log's last tool_event for the cell (recomputed here from
    the files, not through the strata module)."""
    manifest = load_manifest(built.root / "manifest")
    rows_of = {p["key"]: p for p in manifest.document["positions"]}
    for name in ("main", "ladder"):
        built_table = _table(built.root, built.stage, built.bindings[name])
        last: dict[str, dict[str, Any]] = {}  # table cell "<route>/<cell id>" -> last event
        for run in built_table.runs:
            mine: dict[str, dict[str, Any]] = {}
            for line in (run.path / "events.jsonl").read_text().splitlines():
                event = json.loads(line)
                if event["kind"] == "tool_event":
                    mine[f"{run.route}/{event['cell']}"] = event
            assert not set(mine) & set(last)
            last |= mine
        checked = 0
        for r in built_table.table.rows:
            position = rows_of[r.position]
            board = chess.Board(position["fen"])
            assert (r.phase, r.tacticality) == (position["phase"], position["label"])
            assert r.side_to_move == ("white" if board.turn else "black")
            assert r.legal_moves == len(list(board.legal_moves))
            top = manifest.lists[r.position].candidates
            assert r.value_gap == pytest.approx(top[0].expectation - top[1].expectation)
            event = last[r.cell]
            assert (r.tokens_in, r.tokens_out, r.cost_usd, r.latency_s) == (
                event["tokens_in"], event["tokens_out"], event["cost_usd"], event["latency_s"])
            checked += 1
        assert checked == len(built_table.table.rows) > 0
    spreads = [r.shown_spread for r in _table(built.root, built.stage,
                                                built.bindings["ladder"]).table.rows
               if r.condition == "oracle_top5"]
    assert spreads and all(s is not None and s >= 0 for s in spreads)
