"""Tests for rungbench.causal.bench.subcapabilities (seed 003's sub-capability table)."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest

from rungbench.causal.bench.build import build_split
from rungbench.causal.bench.evaluate import evaluate
from rungbench.causal.bench.report import build_report, load_rows, to_markdown
from rungbench.causal.bench.subcapabilities import (
    NO_VALUE,
    NOT_EXERCISED,
    SEED_SUBCAPABILITIES,
    SeedSubcapability,
    subcapability_table,
)
from rungbench.causal.bench.taxonomy import INT_CF, NOISE_REUSE, UNEXPLAINED
from rungbench.stats import cluster_tests

SEED_TABLE = pathlib.Path(__file__).parent / "data" / "seed003_subcapabilities.md"
ALL_FAMILIES = "incident,active,revision,provenance,negative"
EPISODE_METRICS = ("recall_at_1", "info_regret", "revision_accuracy", "collateral_retraction")


def parse_seed_table(text: str) -> tuple[SeedSubcapability, ...]:
    """The (sub-capability, behaviour, metric) rows of the seed's one-line Markdown table."""
    body = "\n".join(line for line in text.splitlines() if not line.startswith("# "))
    rows = body.split("| --- | --- | --- |", 1)[1]
    cells = [c.strip() for c in rows.split("|") if c.strip()]
    assert len(cells) % 3 == 0
    return tuple(SeedSubcapability(*cells[i:i + 3]) for i in range(0, len(cells), 3))


def _row(outcome: str = "correct", *, world: str = "w1", family: str = "interventions",
         rung: int = 1, item_type: str = "exact", asks: list[str] | None = None,
         identifiable: bool = True, missing: bool = False, labels: list[str] | None = None,
         **verdict: Any) -> dict[str, Any]:
    """A hand-made verdict row in ``evaluate.verdict_row``'s shape."""
    return {"missing": missing, "verdict": {"case_id": "c", "outcome": outcome, **verdict},
            "labels": labels or [], "world_id": world, "family": family, "rung": rung,
            "item_type": item_type, "identifiable": identifiable, "skin": "linux",
            "asks": asks or ["value"], "confidence": None}


def _episode_row(outcome: str, *, world: str = "w1", family: str = "root_cause_debugging",
                 item_type: str = "diagnosis", episode: str = "e0", stage: int = 1,
                 identified: list[str] | None = None, named: str | None = None,
                 missing: bool = False, **verdict: Any) -> dict[str, Any]:
    """A hand-made records/2 verdict row (version, episode, stage, identified set, named)."""
    asks = {"diagnosis": ["label", "action"], "experiment": ["experiment"]}.get(
        item_type, ["value"])
    return {**_row(outcome, world=world, family=family, item_type=item_type, asks=asks,
                   missing=missing, **verdict),
            "version": "rungbench.records/2", "episode_id": episode, "stage": stage,
            "identified_set": identified or [], "named": named}


def _metric(rows: list[dict[str, Any]], key: str) -> dict[str, Any]:
    for row in subcapability_table(rows):
        for block in row["metrics"]:
            if block["metric"] == key:
                return block
    raise AssertionError(key)


# ------------------------------------------------------------------ the seed's list


def test_constant_matches_the_seed_table_row_for_row() -> None:
    """SEED_SUBCAPABILITIES is the seed's "Observable sub-capabilities" table, parsed from
    the verbatim copy beside this test: 8 rows, same words, same order."""
    parsed = parse_seed_table(SEED_TABLE.read_text(encoding="utf-8"))
    assert len(parsed) == 8
    assert parsed == SEED_SUBCAPABILITIES


def test_table_has_one_row_per_seed_subcapability_in_order() -> None:
    """The table holds exactly one row per seed sub-capability, in the seed's order, each
    with the seed's primary metric, whatever the rows (here none)."""
    table = subcapability_table([])
    assert [(r["subcapability"], r["primary_metric"]) for r in table] == [
        (s.name, s.primary_metric) for s in SEED_SUBCAPABILITIES]
    assert not any(r["exercised"] for r in table)


# ------------------------------------------------------------------ each metric by hand


def test_recall_at_1_counts_correct_and_lucky_over_every_root_cause_diagnosis() -> None:
    """Recall@1 = named the true cause (correct or lucky) / every root-cause diagnosis case:
    abstentions, wrong answers and missing cases count as misses; other families do not
    count. Here 2 of 5 → 0.4 over 3 worlds."""
    rows = [_episode_row("correct", world="w1"), _episode_row("lucky", world="w1"),
            _episode_row("justified_abstain", world="w2"), _episode_row("wrong", world="w3"),
            _episode_row("invalid", world="w3", missing=True),
            _episode_row("correct", family="sequential_revision", episode="e1")]
    m = _metric(rows, "recall_at_1")
    assert (m["k"], m["n"], m["cases"], m["n_worlds"]) == (2, 5, 5, 3)
    assert m["value"] == pytest.approx(0.4)
    assert m["families"] == ["root_cause_debugging"]


def test_association_causation_accuracy_over_its_two_families_only() -> None:
    """Accuracy on association-vs-causation items: right (correct, correct_non_id) over the
    association and confounding families' cases; a collider case is not counted. 2/4."""
    rows = [_row("correct", family="association_vs_causation"),
            _row("wrong", family="association_vs_causation", world="w2"),
            _row("correct_non_id", family="confounding_reverse_causation", world="w2"),
            _row("abstain", family="confounding_reverse_causation", world="w3"),
            _row("correct", family="collider_selection")]
    m = _metric(rows, "association_causation_accuracy")
    assert (m["k"], m["n"], m["value"]) == (2, 4, 0.5)
    assert m["families"] == ["association_vs_causation", "confounding_reverse_causation"]


def test_edge_f1_is_the_mean_over_discovery_cases_with_no_edges_scoring_zero() -> None:
    """Edge F1 = mean structure F1 over every case asking for edges; a case answered
    without edges has F1 0 (CONTRACTS §3). (0.8 + 0.4 + 0) / 3 = 0.4. Sign and condition
    F1 are 'not exercised' (no item asks for them), with value None, not 0."""
    def disc(outcome: str, f1: float | None, world: str) -> dict[str, Any]:
        structure = None if f1 is None else {"precision": 1.0, "recall": 1.0, "f1": f1,
                                             "reversed": 0, "same_mec": False}
        return _row(outcome, world=world, family="multi_hop_chains", item_type="discovery",
                    asks=["edges"], structure=structure)
    rows = [disc("correct", 0.8, "w1"), disc("wrong", 0.4, "w2"), disc("abstain", None, "w3")]
    m = _metric(rows, "edge_f1")
    assert m["value"] == pytest.approx(0.4) and (m["n"], m["cases"]) == (3, 3)
    for key in ("sign_f1", "condition_f1"):
        never = _metric(rows, key)
        assert never["status"] == NOT_EXERCISED and never["value"] is None


def test_information_regret_mean_over_the_experiment_cases_that_named_one() -> None:
    """Information regret: mean over experiment cases whose response named an experiment
    ((0.3 + 0.0) / 2 = 0.15); the abstaining case is asked but carries no regret."""
    rows = [_episode_row("wrong", family="active_experiments", item_type="experiment",
                         info_regret=0.3),
            _episode_row("correct", world="w2", family="active_experiments",
                         item_type="experiment", info_regret=0.0),
            _episode_row("abstain", world="w3", family="active_experiments",
                         item_type="experiment")]
    m = _metric(rows, "info_regret")
    assert m["value"] == pytest.approx(0.15) and (m["n"], m["cases"]) == (2, 3)


def test_effect_error_is_over_identifiable_rung2_value_cases_only() -> None:
    """Absolute error vs the oracle, rung 2: mean |v̂ − v| over identifiable rung-2 cases
    asking for a value ((0.01 + 0.05) / 2 = 0.03); non-identifiable, decision and rung-3
    cases are not in it."""
    rows = [_row("correct", rung=2, abs_error=0.01),
            _row("wrong", rung=2, world="w2", abs_error=0.05),
            _row("correct_non_id", rung=2, identifiable=False, item_type="identification"),
            _row("correct", rung=2, asks=["action"], decision_regret=0.0),
            _row("wrong", rung=3, family="counterfactuals", abs_error=0.5)]
    m = _metric(rows, "effect_abs_error")
    assert m["value"] == pytest.approx(0.03) and (m["n"], m["cases"]) == (2, 2)


def test_decision_regret_pools_decision_items_and_repair_choices() -> None:
    """Decision regret: mean over every case asking for an action that named one — a
    records/1 decision item (1.5) and a diagnosis repair (0.5) → 1.0; the diagnosis case
    that named no repair is asked but not averaged."""
    rows = [_row("wrong", rung=2, asks=["action"], decision_regret=1.5),
            _episode_row("correct", world="w2", decision_regret=0.5),
            _episode_row("justified_abstain", world="w3")]
    m = _metric(rows, "decision_regret")
    assert m["value"] == pytest.approx(1.0) and (m["n"], m["cases"]) == (2, 3)
    assert m["families"] == ["interventions", "root_cause_debugging"]


def test_counterfactual_error_and_consistency_violations_by_hand() -> None:
    """Rung 3: absolute error (0.02 + 0.10) / 2 = 0.06; consistency violations are answers
    labelled with the population rung-2 or the resampled value: 2 of the 4 answered with a
    point (the abstention is not a unit; a bounds item is not asked)."""
    cf = {"rung": 3, "family": "counterfactuals"}
    rows = [_row("correct", abs_error=0.02, **cf),
            _row("wrong", world="w2", abs_error=0.10, labels=[INT_CF], **cf),
            _row("wrong", world="w2", labels=[NOISE_REUSE], identifiable=False,
                 item_type="cf_no_mechanism", **cf),
            _row("false_answer_on_non_id", world="w3", labels=[UNEXPLAINED],
                 identifiable=False, item_type="cf_no_mechanism", **cf),
            _row("abstain", world="w3", **cf),
            _row("wrong", world="w3", labels=[INT_CF], asks=["bounds"], **cf)]
    err = _metric(rows, "counterfactual_abs_error")
    assert err["value"] == pytest.approx(0.06) and (err["n"], err["cases"]) == (2, 3)
    v = _metric(rows, "consistency_violations")
    assert (v["k"], v["n"], v["cases"], v["value"]) == (2, 4, 5, 0.5)


def test_revision_accuracy_and_collateral_retractions_by_hand() -> None:
    """Two revision episodes, 4 transitions. Episode 1: {a,b}/abstain → {a}/a (should
    change, right) → {c}/a (should change, wrong). Episode 2: {a,b}/a → {a,b}/b (a still
    supported, retracted) → {b}/b (should change, right; b supported, kept). Revision
    accuracy 2/3, collateral retractions 1/2."""
    def stage(world: str, ep: str, k: int, ident: list[str], named: str | None
              ) -> dict[str, Any]:
        return _episode_row("correct" if named else "justified_abstain", world=world,
                            family="sequential_revision", episode=ep, stage=k,
                            identified=ident, named=named)
    rows = [stage("w1", "e1", 3, ["c"], "a"), stage("w1", "e1", 1, ["a", "b"], None),
            stage("w1", "e1", 2, ["a"], "a"),
            stage("w2", "e1", 1, ["a", "b"], "a"), stage("w2", "e1", 2, ["a", "b"], "b"),
            stage("w2", "e1", 3, ["b"], "b")]
    acc = _metric(rows, "revision_accuracy")
    assert (acc["k"], acc["n"], acc["cases"], acc["unit"]) == (2, 3, 4, "transitions")
    assert acc["value"] == pytest.approx(2 / 3)
    col = _metric(rows, "collateral_retraction")
    assert (col["k"], col["n"], col["value"]) == (1, 2, 0.5)


def test_interval_resamples_whole_worlds_and_is_null_with_one_world() -> None:
    """A metric's interval is the stats package's cluster bootstrap with one cluster per
    world (not per case); with a single world there is no interval."""
    worlds = ["w1", "w1", "w1", "w2", "w3", "w3"]
    outcomes = ["correct", "correct", "wrong", "wrong", "lucky", "wrong"]
    rows = [_episode_row(o, world=w) for o, w in zip(outcomes, worlds, strict=True)]
    m = _metric(rows, "recall_at_1")
    values = [1.0, 1.0, 0.0, 0.0, 1.0, 0.0]
    test = cluster_tests({"mean": values}, worlds, n_boot=2000, rng=0)["mean"]
    assert m["ci95_cluster_bootstrap"] == [test.low, test.high]
    per_case = cluster_tests({"mean": values}, list(range(6)), n_boot=2000, rng=0)["mean"]
    assert [per_case.low, per_case.high] != m["ci95_cluster_bootstrap"]
    single = _metric([_episode_row("correct"), _episode_row("wrong")], "recall_at_1")
    assert single["ci95_cluster_bootstrap"] is None and single["value"] == 0.5


def test_asked_but_unanswered_metric_is_no_value_not_zero() -> None:
    """A metric whose cases exist but whose every response abstained is 'no value' with
    value None: neither 0 nor 'not exercised'."""
    rows = [_episode_row("abstain", family="active_experiments", item_type="experiment")]
    m = _metric(rows, "info_regret")
    assert (m["status"], m["value"], m["cases"], m["n"]) == (NO_VALUE, None, 1, 0)


# ------------------------------------------------------------------ on scored runs


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pathlib.Path]:
    root = tmp_path_factory.mktemp("subcap")
    build_split("dev", 4, 9, root / "bench", families=ALL_FAMILIES)
    out = {}
    for agent in ("oracle", "rung2_population"):
        out[agent] = root / agent
        evaluate(root / "bench", f"reference:{agent}", out[agent])
    return out


def test_rung1_only_rows_mark_every_episode_metric_not_exercised(
        runs: dict[str, pathlib.Path]) -> None:
    """Scored on its rung-1 records/1 cases only, a run's episode metrics (Recall@1,
    information regret, revision) and its rung-2/3 metrics are 'not exercised' with value
    None, never 0; the rung-1 metrics it does ask (edge F1) are measured."""
    rows = [r for r in load_rows(runs["oracle"]) if r["rung"] == 1 and r.get("version") is None]
    assert rows
    for key in (*EPISODE_METRICS, "effect_abs_error", "counterfactual_abs_error",
                "consistency_violations"):
        m = _metric(rows, key)
        assert (m["status"], m["value"], m["n"]) == (NOT_EXERCISED, None, 0), key
    assert _metric(rows, "edge_f1")["status"] == "measured"
    table = subcapability_table(rows)
    assert not next(r for r in table if r["subcapability"] == "Model revision")["exercised"]


def test_oracle_run_exercises_every_subcapability_with_zero_error(
        runs: dict[str, pathlib.Path]) -> None:
    """The oracle on a bench with every episode family: every sub-capability is exercised,
    regrets and errors are 0, edge F1 is 1, no consistency violation; each row names the
    families that fed it."""
    rep = build_report(runs["oracle"])
    table = rep["subcapabilities"]
    assert all(r["exercised"] and r["families"] for r in table)
    metrics = {m["metric"]: m for r in table for m in r["metrics"]}
    for key in ("info_regret", "effect_abs_error", "decision_regret",
                "counterfactual_abs_error"):
        assert metrics[key]["value"] == pytest.approx(0.0, abs=1e-9), key
    assert metrics["edge_f1"]["value"] == 1.0
    assert metrics["consistency_violations"]["k"] == 0
    assert metrics["revision_accuracy"]["value"] == 1.0
    assert "sequential_revision" in metrics["revision_accuracy"]["families"]


def test_population_rung2_agent_shows_consistency_violations(
        runs: dict[str, pathlib.Path]) -> None:
    """An agent answering rung-3 items with the population rung-2 value has consistency
    violations (k > 0) and a positive counterfactual error; its rung-2 error stays 0."""
    metrics = {m["metric"]: m for r in build_report(runs["rung2_population"])["subcapabilities"]
               for m in r["metrics"]}
    assert metrics["consistency_violations"]["k"] > 0
    assert metrics["counterfactual_abs_error"]["value"] > 0.02
    assert metrics["effect_abs_error"]["value"] == pytest.approx(0.0, abs=1e-9)


def test_markdown_report_prints_one_line_per_subcapability(
        runs: dict[str, pathlib.Path]) -> None:
    """The Markdown report has the sub-capability section with one table line per seed
    sub-capability, and prints 'not exercised' for sign F1."""
    md = to_markdown(build_report(runs["oracle"]))
    section = md.split("## Sub-capabilities (seed 003)", 1)[1].split("\n## ", 1)[0]
    lines = [ln for ln in section.splitlines() if ln.startswith("| ")
             and not ln.startswith(("| sub-capability", "| ---"))]
    assert [ln.split(" | ")[0].removeprefix("| ") for ln in lines] == [
        s.name for s in SEED_SUBCAPABILITIES]
    assert f"Sign F1 vs oracle: {NOT_EXERCISED}" in section
