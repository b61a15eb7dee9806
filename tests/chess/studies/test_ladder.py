"""Seed 001's aliasing example end to end: runner → evaluator → ladder estimands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.chess.studies import study_fixtures as fx  # one label stage per process

from rungbench.agents.protocol import Request, Response, ToolCall
from rungbench.agents.providers import serve_on_loopback
from rungbench.chess.labels.idle import IdleGate
from rungbench.chess.reference_agents import legal_moves
from rungbench.chess.studies import budget as bud
from rungbench.chess.studies import study as st
from rungbench.chess.studies.bindings import load_binding
from rungbench.chess.studies.evaluation import StageOptions, evaluate_run, verify_evaluation
from rungbench.chess.studies.evaluator import EvaluatorConfig
from rungbench.chess.studies.ladder import (
    CHOICE,
    SCHEMA_DIGEST,
    ladder_estimands,
    own_shortlist,
    paired_contrasts,
    schedule_for,
    shown_moves,
    wilson,
)
from rungbench.chess.studies.ladder_audit import registered_cells
from rungbench.chess.studies.manifest import load_manifest
from rungbench.chess.studies.planted import TWO_STAGE, planted_agent
from rungbench.errors import Refusal

pytestmark = pytest.mark.xdist_group("ladder")
"""One worker runs the module, so the costly ``ladder`` fixture is built once, not once per
worker (with ``--dist loadgroup`` it was built twice, ~5 minutes each, in parallel)."""

REPS = 10
"""Seeded replicate runs of each planted agent (24 positions each)."""
CHOICE_REPS = 5
"""Replicates that also run the self-shortlist choice stage (two calls per position)."""
MODELS = [f"{kind}-r{i}" for kind in TWO_STAGE for i in range(REPS)]


def test_wilson_interval_matches_the_closed_form() -> None:
    """Wilson 95% for 3/10 is the textbook (0.1078, 0.6032)."""
    low, high = wilson(3, 10)
    assert low == pytest.approx(0.1078, abs=1e-4) and high == pytest.approx(0.6032, abs=1e-4)


@pytest.fixture(scope="module")
def ladder(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """Every replicate of both planted agents run on the bound ladder, probes included."""
    stage = fx.small_stage()
    root = tmp_path_factory.mktemp("ladder") / "study"
    st.freeze(root, stage, fx.small_preset())
    bound = st.bind(root, fx.ladder_replicates(MODELS), stage)
    auth = bud.freeze_authorization(root, bud.Authorization(
        100_000, 10**9, 100.0, tuple(MODELS), ("loop-a",), "test"))
    manifest = load_manifest(root / "manifest")
    binding = load_binding(root, bound["binding"], manifest)
    runs: dict[str, dict[str, list[Path]]] = {k: {"move": [], "probe": [], "choice": []}
                                              for k in TWO_STAGE}
    for model in MODELS:
        kind, rep = model.split("-r")
        for part in ("move", "probe", "choice")[:3 if int(rep) < CHOICE_REPS else 2]:
            probe_run = runs[kind]["probe"][-1] if part == "choice" else None
            schedule = schedule_for(binding, manifest, model, "loop-a", probe=part == "probe",
                                    shortlist_from=probe_run)
            with serve_on_loopback(planted_agent(f"e020:{kind}", seed=int(rep)), label=model,
                                   requests=[c.request for c in schedule]) as provider:
                result = st.run_study(root, stage, bound["binding"], model=model,
                                      route="loop-a", agent=provider, authorization=auth,
                                      concurrency=4, probe=part == "probe",
                                      shortlist_from=None if probe_run is None
                                      else probe_run.name)
            assert result["complete"]
            runs[kind][part].append(Path(result["run"]))
    return {"root": root, "stage": stage, "runs": runs, "manifest": manifest,
            "binding": binding}


@pytest.mark.parametrize("kind", list(TWO_STAGE))
def test_ladder_recovers_coverage_and_selection(ladder: dict[str, object], kind: str) -> None:
    """Both agents find the best move ~31.5% unaided; C and S fall in their intervals."""
    runs = ladder["runs"][kind]  # type: ignore[index]
    est = ladder_estimands(runs["move"], runs["probe"])
    coverage, selection = TWO_STAGE[kind]
    unaided = est["best_move_rate"]["unaided"]
    assert unaided["trials"] == REPS * 24
    assert unaided["interval"][0] <= coverage * selection <= unaided["interval"][1]
    assert est["coverage"]["interval"][0] <= coverage <= est["coverage"]["interval"][1]
    assert est["selection"]["interval"][0] <= selection <= est["selection"]["interval"][1]
    lo, hi = est["coverage_x_selection"]["interval"]
    assert lo <= 0.315 <= hi
    assert est["best_move_rate"]["oracle_top2"]["estimate"] == pytest.approx(selection, abs=0.12)


def test_arms_share_one_interface_and_nest(ladder: dict[str, object]) -> None:
    """Every arm sends the one submit_move schema; oracle lists nest; omission drops ties."""
    manifest, binding = ladder["manifest"], ladder["binding"]
    schedule = schedule_for(binding, manifest, MODELS[0], "loop-a")  # type: ignore[arg-type]
    assert {c.request.metadata["schema_digest"] for c in schedule} == {SCHEMA_DIGEST}
    by_pos: dict[str, dict[str, list[str]]] = {}
    for cell in schedule:
        meta = cell.request.metadata
        by_pos.setdefault(meta["key"], {})[meta["condition"]] = meta.get("candidates", [])
        text = cell.request.messages[-1].content
        assert "rank" not in text.lower() and "score" not in text.lower()
    for arms in by_pos.values():
        assert set(arms["oracle_top2"]) <= set(arms["oracle_top5"]) <= set(arms["oracle_top10"])
        assert arms["unaided"] == []
        assert not set(arms["best_omitted"]) & set(arms["oracle_top2"][:0])
    lst = manifest.lists[next(iter(by_pos))]  # type: ignore[attr-defined]
    omitted = shown_moves({"kind": "omitted", "width": 10}, lst, list(range(10)))
    assert lst.candidates[0].uci not in omitted and len(omitted) <= 9


def test_evaluator_scores_the_ladder_and_contrasts_pair(ladder: dict[str, object]) -> None:
    """The different-family evaluator scores a run; top-2 lowers regret vs unaided (ideas)."""
    root = ladder["root"]
    run = ladder["runs"]["ideas_limited"]["move"][0]  # type: ignore[index]
    out = root / "evaluations" / "ideas-r0"  # type: ignore[operator]
    summary = evaluate_run(run, ladder["stage"], EvaluatorConfig(depth=4),  # type: ignore[arg-type]
                           StageOptions(cache=root / "evaluation-cache", out=out),  # type: ignore[operator]
                           IdleGate(max_load=1e9))
    assert summary["role"] == "different-family evaluator"
    verify_evaluation(out)
    contrasts = paired_contrasts(out, [("oracle_top2", "unaided"),
                                       ("best_omitted", "oracle_top10")])
    top2 = contrasts["oracle_top2 - unaided"]
    assert top2["n"] == 24 and top2["mean"] < 0
    assert contrasts["best_omitted - oracle_top10"]["n"] == 24


@pytest.mark.parametrize("kind", list(TWO_STAGE))
def test_self_shortlist_choice_recovers_coverage_and_selection(ladder: dict[str, object],
                                                               kind: str) -> None:
    """Probe → choice through loopback: the arm's own C ≈ C, S ≈ S, C × S ≈ the product,
    each planted value inside its 99.9% Wilson interval (six checks per agent pair: at 95%
    one in four checkouts would fail by chance alone, since the binding-seeded display
    order changes the draws; a 95% check once failed at 52/109 for S = 0.35)."""
    runs = ladder["runs"][kind]  # type: ignore[index]
    own = ladder_estimands(runs["choice"], [])["self_shortlist"]
    coverage, selection = TWO_STAGE[kind]
    assert own["coverage"]["trials"] == CHOICE_REPS * 24
    for key, truth in (("coverage", coverage), ("selection", selection),
                       ("coverage_x_selection", coverage * selection)):
        low, high = wilson(own[key]["successes"], own[key]["trials"], confidence=0.999)
        assert low <= truth <= high, (key, own[key])
    probe_c = ladder_estimands([], runs["probe"][:CHOICE_REPS])["coverage"]
    assert probe_c["successes"] == own["coverage"]["successes"]  # one coverage rule


def test_choice_cells_show_the_own_shortlist_in_a_binding_order(
        ladder: dict[str, object]) -> None:
    """Choice cells: own legal moves as UCI (SAN), one schema, same probe → same digest."""
    manifest, binding = ladder["manifest"], ladder["binding"]
    probe_run = ladder["runs"]["ideas_limited"]["probe"][0]  # type: ignore[index]
    model = MODELS[0]
    first = schedule_for(binding, manifest, model, "loop-a",  # type: ignore[arg-type]
                         shortlist_from=probe_run)
    again = schedule_for(binding, manifest, model, "loop-a",  # type: ignore[arg-type]
                         shortlist_from=probe_run)
    assert first.digest() == again.digest() and len(first) == 24
    listed = {m["condition"]: m for m in (c.request.metadata for c in first)}
    assert set(listed) == {CHOICE}
    unaided = {c.request.metadata["key"]: c.request.messages[-1].content
               for c in schedule_for(binding, manifest, model, "loop-a")  # type: ignore[arg-type]
               if c.request.metadata["condition"] == "unaided"}
    moved = 0
    for cell in first:
        meta, text = cell.request.metadata, cell.request.messages[-1].content
        assert meta["schema_digest"] == SCHEMA_DIGEST and cell.request.tools[0]["function"][
            "name"] == "submit_move"
        assert meta["shortlist_status"] == "listed" and len(meta["candidates"]) == 5
        assert set(meta["candidates"]) <= set(legal_moves(meta["fen"]))
        lines = [line for line in text.splitlines() if line[:4] in meta["candidates"]]
        assert [line.split(" ")[0] for line in lines] == meta["candidates"]
        assert all(line.endswith(")") and " (" in line for line in lines)
        assert "rank" not in text.lower() and "score" not in text.lower()
        head = unaided[meta["key"]].rsplit("\n", 1)[0]
        assert text.startswith(head)
        assert meta["shortlist_run"].startswith("sha256:")
        moved += meta["candidates"] != sorted(meta["candidates"])
    assert moved >= 12  # the shown order is permuted, not the sorted (or listed) order


class _ScriptedProbe:
    """Answers the probe of position p by p mod 3: no legal move, a refusal, duplicates."""

    name = "test:scripted-probe"

    def describe(self) -> dict[str, str]:
        """Manifest description."""
        return {"kind": "test", "name": self.name}

    def respond(self, request: Request) -> Response:
        """Scripted answer for the request's position index."""
        p = int(request.case_id.split(":")[2])
        if p % 3 == 0:
            moves = ["zz9", "a1a1", "e9e4"]
        elif p % 3 == 1:
            return Response(text=None, refusal="no")
        else:
            legal = legal_moves(str(request.metadata["fen"]))
            moves = [legal[0], legal[0], " " + legal[1], *legal[2:9]]
        return Response(text=None, tool_calls=(ToolCall("submit_shortlist",
                                                        json.dumps({"moves": moves})),))


def test_failed_probes_keep_one_unaided_style_choice_cell(ladder: dict[str, object]) -> None:
    """No legal move or a refusal: an empty list, the unaided prompt; lists dedup to k."""
    root, stage, binding = ladder["root"], ladder["stage"], ladder["binding"]
    manifest = ladder["manifest"]
    model = MODELS[1]
    auth = bud.freeze_authorization(root, bud.Authorization(  # type: ignore[arg-type]
        1_000, 10**9, 100.0, (model,), ("scripted",), "test"))
    probe = st.run_study(root, stage, binding.digest, model=model,  # type: ignore[arg-type,attr-defined]
                         route="scripted", agent=_ScriptedProbe(), authorization=auth,
                         probe=True)
    assert probe["complete"]
    choice = schedule_for(binding, manifest, model, "scripted",  # type: ignore[arg-type]
                          shortlist_from=Path(probe["run"]))
    unaided = {c.request.metadata["key"]: c.request.messages
               for c in schedule_for(binding, manifest, model, "scripted")  # type: ignore[arg-type]
               if c.request.metadata["condition"] == "unaided"}
    assert len(choice) == 24
    for p, cell in enumerate(choice):
        meta = cell.request.metadata
        status = ("no_legal_move", "refusal", "listed")[p % 3]
        assert meta["shortlist_status"] == status
        if status == "listed":
            legal = legal_moves(meta["fen"])
            assert sorted(meta["candidates"]) == sorted(legal[:5])
        else:
            assert meta["candidates"] == []
            assert cell.request.messages == unaided[meta["key"]]


def test_an_incomplete_or_foreign_probe_run_refuses(ladder: dict[str, object]) -> None:
    """A probe run stopped by its budget refuses probe_incomplete; a move run probe_mismatch."""
    root, stage, binding = ladder["root"], ladder["stage"], ladder["binding"]
    manifest = ladder["manifest"]
    model = MODELS[2]
    auth = bud.freeze_authorization(root, bud.Authorization(  # type: ignore[arg-type]
        3, 10**9, 100.0, (model,), ("partial",), "test"))
    probe = st.run_study(root, stage, binding.digest, model=model,  # type: ignore[arg-type,attr-defined]
                         route="partial", agent=_ScriptedProbe(), authorization=auth,
                         probe=True)
    assert not probe["complete"] and probe["stopped"] == "budget_ceiling"
    with pytest.raises(Refusal) as incomplete:
        schedule_for(binding, manifest, model, "partial",  # type: ignore[arg-type]
                     shortlist_from=Path(probe["run"]))
    assert incomplete.value.reasons[0].code == "probe_incomplete"
    move_run = ladder["runs"]["ideas_limited"]["move"][0]  # type: ignore[index]
    with pytest.raises(Refusal) as foreign:
        schedule_for(binding, manifest, MODELS[0], "loop-a",  # type: ignore[arg-type]
                     shortlist_from=move_run)
    assert foreign.value.reasons[0].code == "probe_mismatch"
    with pytest.raises(Refusal) as other_model:
        schedule_for(binding, manifest, MODELS[1], "loop-a",  # type: ignore[arg-type]
                     shortlist_from=ladder["runs"]["ideas_limited"]["probe"][0])  # type: ignore[index]
    assert other_model.value.reasons[0].code == "probe_mismatch"


def test_own_shortlist_keeps_the_first_k_distinct_legal_moves() -> None:
    """Non-strings, non-UCI, illegal and repeated entries drop; at most k remain, in order."""
    fen = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
    got = own_shortlist(fen, ["e2e4", 3, "e2e4", "xx", "e7e5", " d2d4 ", "g1f3", "b1c3"], 3)
    assert got == ["e2e4", "d2d4", "g1f3"]
    assert own_shortlist(fen, "e2e4", 3) == [] and own_shortlist(fen, [], 3) == []


def test_bound_schedules_produce_the_registered_make_up(ladder: dict[str, object]) -> None:
    """Per model: 5 arms + probe + choice over the 24 bound positions; × models = the total."""
    manifest, binding = ladder["manifest"], ladder["binding"]
    cells = registered_cells(fx.ladder_replicates(MODELS))
    probe_run = ladder["runs"]["ideas_limited"]["probe"][0]  # type: ignore[index]
    sizes = [len(schedule_for(binding, manifest, MODELS[0], "loop-a",  # type: ignore[arg-type]
                              probe=probe, shortlist_from=source))
             for probe, source in ((False, None), (True, None), (False, probe_run))]
    assert sizes == [24 * 5, 24, 24]
    assert sum(sizes) * cells["models"] == cells["total"] == 24 * len(MODELS) * 7
