"""Seed 001's aliasing example end to end: runner → evaluator → ladder estimands."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.chess.studies import study_fixtures as fx  # one label stage per process

from rungbench.chess.labels.idle import IdleGate
from rungbench.chess.studies import budget as bud
from rungbench.chess.studies import study as st
from rungbench.chess.studies.bindings import load_binding
from rungbench.chess.studies.evaluation import StageOptions, evaluate_run, verify_evaluation
from rungbench.chess.studies.evaluator import EvaluatorConfig
from rungbench.chess.studies.ladder import (
    SCHEMA_DIGEST,
    ladder_estimands,
    paired_contrasts,
    schedule_for,
    shown_moves,
    wilson,
)
from rungbench.chess.studies.manifest import load_manifest
from rungbench.chess.studies.planted import TWO_STAGE, loopback_provider, planted_agent

REPS = 10
"""Seeded replicate runs of each planted agent (24 positions each)."""
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
    runs: dict[str, dict[str, list[Path]]] = {k: {"move": [], "probe": []} for k in TWO_STAGE}
    for model in MODELS:
        kind, rep = model.split("-r")
        for probe in (False, True):
            schedule = schedule_for(binding, manifest, model, "loop-a", probe=probe)
            with loopback_provider(planted_agent(f"e020:{kind}", seed=int(rep)),
                                   [c.request for c in schedule], model=model) as provider:
                result = st.run_study(root, stage, bound["binding"], model=model,
                                      route="loop-a", agent=provider, authorization=auth,
                                      concurrency=4, probe=probe)
            assert result["complete"]
            runs[kind]["probe" if probe else "move"].append(Path(result["run"]))
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
