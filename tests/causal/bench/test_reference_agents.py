"""Tests for causal.bench.reference_agents on paraphrase variants: the same answer for the
same question however it is worded, except for the agent planted to read the wording."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest

from rungbench.causal.bench.build import build_split
from rungbench.causal.bench.evaluate import evaluate
from rungbench.causal.bench.reference_agents import CASE_POLICIES, POLICIES, wrong_answer
from rungbench.causal.bench.scorer import score
from rungbench.causal.bench.verified import VERDICTS, bench_oracles, open_bench, open_run
from rungbench.causal.checks.second_scorer import score_file

AGENTS = [*POLICIES, *(n for n in CASE_POLICIES if n != "original_wording")]
"""Every reference agent whose answer does not read the question's wording."""


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """A five-world dev bench with two paraphrases, a skin swap and a renaming of every item."""
    out = tmp_path_factory.mktemp("agents") / "bench"
    build_split("dev", 5, 8, out, paraphrases=2, skin_swap=True, renaming=True)
    return out


def _rows(run: pathlib.Path) -> dict[str, dict[str, Any]]:
    sealed = open_run(run)
    return {r["verdict"]["case_id"]: r for r in sealed.jsonl(VERDICTS)}


def _parents(bench: pathlib.Path, kind: str | None = None) -> dict[str, str]:
    oracles = bench_oracles(open_bench(bench))
    return {cid: o.mutation.parent for cid, o in oracles.items()
            if o.mutation is not None and kind in (None, o.mutation.kind)}


@pytest.mark.parametrize("agent", AGENTS)
def test_a_reference_agent_scores_the_same_on_a_mutated_case_as_on_its_original(
        bench: pathlib.Path, tmp_path: pathlib.Path, agent: str) -> None:
    """Each paraphrase, skin swap and renaming gets the verdict (outcome, error, regrets) and
    the failure labels its original gets, under the first scorer; the second scorer, reading
    only the private records, gives every case the first scorer's outcome."""
    run = tmp_path / "run"
    evaluate(bench, f"reference:{agent}", run)
    rows = _rows(run)
    parents = _parents(bench)
    items = len(_parents(bench, "renaming"))
    assert {k: len(_parents(bench, k)) for k in ("paraphrase", "skin_swap", "renaming")} == \
        {"paraphrase": 2 * items, "skin_swap": items, "renaming": items}
    for cid, parent in parents.items():
        mine, theirs = rows[cid], rows[parent]
        assert {k: v for k, v in mine["verdict"].items() if k != "case_id"} == \
            {k: v for k, v in theirs["verdict"].items() if k != "case_id"}, (agent, cid)
        assert mine["labels"] == theirs["labels"]
    second = score_file(bench / "private" / "oracle.jsonl", run / "responses.jsonl")
    assert {v["case_id"]: v["outcome"] for v in second} == \
        {cid: r["verdict"]["outcome"] for cid, r in rows.items()}


def test_the_original_wording_agent_is_right_on_originals_only(
        bench: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """The planted agent reads the wording: every originally worded case (domain and
    nonsense skin, skin swap, renaming) is right, every paraphrase wrong or a false answer;
    both scorers agree."""
    run = tmp_path / "run"
    evaluate(bench, "reference:original_wording", run)
    rows = _rows(run)
    parents = _parents(bench, "paraphrase")
    for cid, r in rows.items():
        outcome = r["verdict"]["outcome"]
        if cid in parents:
            assert outcome in ("wrong", "false_answer_on_non_id"), cid
        else:
            assert outcome in ("correct", "correct_non_id"), cid
    second = score_file(bench / "private" / "oracle.jsonl", run / "responses.jsonl")
    assert {v["case_id"]: v["outcome"] for v in second} == \
        {cid: r["verdict"]["outcome"] for cid, r in rows.items()}


def test_wrong_answer_is_scored_wrong_on_every_item_type(bench: pathlib.Path) -> None:
    """``wrong_answer`` is never right: on each oracle record of the bench the first scorer
    gives it ``wrong`` (identifiable) or ``false_answer_on_non_id`` (not identifiable)."""
    from rungbench.causal.bench.records import AgentResponse

    oracles = bench_oracles(open_bench(bench))
    kinds = set()
    for o in oracles.values():
        response = AgentResponse(case_id=o.case_id, arm="t", **wrong_answer(o))
        outcome = score(o, response).outcome
        assert outcome == ("wrong" if o.identifiable else "false_answer_on_non_id"), o.case_id
        kinds.add((o.item_type, o.identifiable, o.bounds is not None,
                   o.expected_loss is not None))
    assert len(kinds) >= 5
