"""Tests for rungbench.causal.bench.report (accuracy with intervals, tables, paired delta)."""

from __future__ import annotations

import pathlib

import pytest

from rungbench.causal.bench.build import build_split
from rungbench.causal.bench.evaluate import evaluate
from rungbench.causal.bench.report import (
    accuracy,
    build_report,
    load_rows,
    to_markdown,
    transfer_gap,
    transfer_lines,
    transfer_table,
)
from rungbench.causal.bench.taxonomy import ALL_LABELS, TAXONOMY
from rungbench.stats import clopper_pearson, paired_cluster_bootstrap


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pathlib.Path]:
    root = tmp_path_factory.mktemp("report")
    build_split("dev", 14, 9, root / "bench")
    out = {}
    for agent in ("oracle", "rung1", "always_abstain"):
        out[agent] = root / agent
        evaluate(root / "bench", f"reference:{agent}", out[agent])
    return out


def test_accuracy_uses_clopper_pearson() -> None:
    """accuracy() reports k/n with the stats package's Clopper–Pearson interval."""
    rows = [{"verdict": {"outcome": o}} for o in ["correct", "wrong", "correct_non_id", "abstain"]]
    a = accuracy(rows)
    assert (a["k"], a["n"], a["accuracy"]) == (2, 4, 0.5)
    assert a["ci95"] == list(clopper_pearson(2, 4))


def test_report_tables_match_outcomes(runs: dict[str, pathlib.Path]) -> None:
    """The identification table sums to n; the oracle is right everywhere; abstain is a cell."""
    rep = build_report(runs["oracle"])
    table = rep["identification"]
    assert sum(sum(r.values()) for r in table.values()) == rep["overall"]["n"]
    assert table["not_identifiable"]["correct_non_id"] > 0
    assert rep["overall"]["accuracy"] == 1.0
    assert build_report(runs["rung1"])["failure_labels"]["observation_intervention_confusion"] > 0
    abst = build_report(runs["always_abstain"])["identification"]
    assert sum(r["abstain"] for r in abst.values()) == rep["overall"]["n"]


def test_paired_delta_over_worlds(runs: dict[str, pathlib.Path]) -> None:
    """Oracle minus always-abstain is exactly +1 with a degenerate interval; rung1 is worse."""
    d = build_report(runs["oracle"], runs["always_abstain"])["paired"]["delta"]
    assert (d["mean"], d["low"], d["high"]) == (1.0, 1.0, 1.0)
    assert d["n_clusters"] == 14
    d2 = build_report(runs["rung1"], runs["oracle"])["paired"]["delta"]
    assert d2["mean"] < 0 and d2["excludes_zero"]


def test_markdown_has_every_section(runs: dict[str, pathlib.Path]) -> None:
    """The Markdown report holds family, rung, identification, calibration and paired sections."""
    md = to_markdown(build_report(runs["rung1"], runs["oracle"]))
    for heading in ("Accuracy by family", "Accuracy by rung", "Identification table",
                    "Calibration", "Failure labels", "Paired difference"):
        assert f"## {heading}" in md


def test_accuracy_per_family_and_rung_with_clopper_pearson(runs: dict[str, pathlib.Path]) -> None:
    """Every family and rung group reports k/n with its own Clopper–Pearson interval."""
    rows = load_rows(runs["rung1"])
    rep = build_report(runs["rung1"])
    assert set(rep["by_rung"]) == {"1", "2", "3"}
    assert set(rep["by_family"]) == {r["family"] for r in rows}
    for key, groups in (("rung", rep["by_rung"]), ("family", rep["by_family"])):
        assert sum(g["n"] for g in groups.values()) == len(rows)
        for value, g in groups.items():
            members = [r for r in rows if str(r[key]) == value]
            k = sum(r["verdict"]["outcome"] in ("correct", "correct_non_id") for r in members)
            assert (g["k"], g["n"]) == (k, len(members))
            assert g["ci95"] == list(clopper_pearson(k, len(members)))
    assert rep["by_rung"]["1"]["accuracy"] == 1.0
    assert rep["by_rung"]["2"]["accuracy"] < 1.0


def test_calibration_brier_is_the_mean_squared_gap(runs: dict[str, pathlib.Path]) -> None:
    """Brier = mean (c − 1[right])² over graded cases; 0 for the oracle; none if abstaining."""
    rows = load_rows(runs["rung1"])
    graded = [r for r in rows if r["verdict"]["outcome"] not in ("abstain", "invalid")]
    right = [r["verdict"]["outcome"] in ("correct", "correct_non_id") for r in graded]
    expected = sum((0.95 - float(h)) ** 2 for h in right) / len(graded)
    cal = build_report(runs["rung1"])["calibration"]
    assert cal["n"] == len(graded)
    assert cal["brier"] == pytest.approx(expected, abs=1e-12)
    top = cal["bins"][-1]
    assert top["n"] == len(graded) and top["mean_confidence"] == pytest.approx(0.95)
    assert top["accuracy"] == pytest.approx(sum(right) / len(graded))
    assert build_report(runs["oracle"])["calibration"]["brier"] == 0.0
    abstained = build_report(runs["always_abstain"])["calibration"]
    assert abstained["n"] == 0 and abstained["brier"] is None


def test_paired_delta_resamples_whole_worlds(runs: dict[str, pathlib.Path]) -> None:
    """The paired interval is the cluster bootstrap with one cluster per world, not per case."""
    a, b = load_rows(runs["rung1"]), load_rows(runs["oracle"])
    d = build_report(runs["rung1"], runs["oracle"], seed=3)["paired"]["delta"]
    right = ("correct", "correct_non_id")
    by_case = {r["verdict"]["case_id"]: r for r in b}
    va = [float(r["verdict"]["outcome"] in right) for r in a]
    vb = [float(by_case[r["verdict"]["case_id"]]["verdict"]["outcome"] in right) for r in a]
    worlds = [r["world_id"] for r in a]
    expected = paired_cluster_bootstrap(va, vb, worlds, n_boot=2000, rng=3)
    assert (d["mean"], d["low"], d["high"]) == (expected.mean, expected.low, expected.high)
    assert d["n"] == len(a) > d["n_clusters"] == len(set(worlds))
    per_case = paired_cluster_bootstrap(va, vb, list(range(len(a))), n_boot=2000, rng=3)
    assert (per_case.low, per_case.high) != (d["low"], d["high"])


def test_failure_label_table_lists_all_22_labels_zeros_included(
        runs: dict[str, pathlib.Path]) -> None:
    """The oracle's report lists every label of the seed's 22 (and the project's two) with a
    zero count; the Markdown table has one row per label with its evidence rule."""
    counts = build_report(runs["oracle"])["failure_labels"]
    assert list(counts) == list(ALL_LABELS) and set(counts.values()) == {0}
    md = to_markdown(build_report(runs["oracle"]))
    table = md.split("## Failure labels")[1].split("\n## ")[0]
    rows = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(rows) == 1 + 22 + 2
    for f in TAXONOMY:
        assert f"| {f.name} | {f.evidence} | 0 |" in rows


# ------------------------------------------------------------------ transfer table


@pytest.fixture(scope="module")
def paraphrase_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pathlib.Path]:
    """An oracle run and a planted wording-bound run on a bench with two paraphrases per item."""
    root = tmp_path_factory.mktemp("transfer")
    build_split("dev", 12, 9, root / "bench", paraphrases=2)
    out = {}
    for agent in ("oracle", "original_wording"):
        out[agent] = root / agent
        evaluate(root / "bench", f"reference:{agent}", out[agent])
    return out


def test_a_wording_bound_agent_shows_a_negative_paraphrase_gap_in_every_rung(
        paraphrase_runs: dict[str, pathlib.Path]) -> None:
    """The agent right only on original wording: in each rung, paraphrase accuracy 0, gap
    −1 with its whole cluster-bootstrap interval below zero; the nonsense skin (original
    wording) shows no gap."""
    table = build_report(paraphrase_runs["original_wording"])["transfer"]
    assert sorted(table) == ["1", "2", "3"]
    for rung, block in table.items():
        p = block["paraphrase"]
        assert p["built"] and p["n"] == 2 * block["original"]["n"], rung
        assert p["accuracy"] == 0.0 and block["original"]["accuracy"] == 1.0
        assert p["gap"] == -1.0
        assert p["ci95_cluster_bootstrap"][1] < 0 and p["excludes_zero"]
        assert block["nonsense_skin"]["gap"] == 0.0 and not block["nonsense_skin"]["excludes_zero"]


def test_skin_swap_and_renaming_are_compared_like_paraphrases(tmp_path: pathlib.Path) -> None:
    """On a bench with every mutation built, the wording-bound agent transfers to the skin
    swap and the renaming (original wording, other names: gap 0 in every rung) and not to
    the paraphrases (gap −1); every row is built."""
    build_split("dev", 6, 9, tmp_path / "bench", paraphrases=1, skin_swap=True, renaming=True)
    evaluate(tmp_path / "bench", "reference:original_wording", tmp_path / "run")
    table = build_report(tmp_path / "run")["transfer"]
    for block in table.values():
        assert all(a["built"] for a in block.values())
        assert block["skin_swap"]["gap"] == block["renaming"]["gap"] == 0.0
        assert block["paraphrase"]["gap"] == -1.0


def test_the_oracle_transfers_everywhere(paraphrase_runs: dict[str, pathlib.Path]) -> None:
    """The oracle is right on every mutation: every gap is 0 with the interval [0, 0]."""
    table = build_report(paraphrase_runs["oracle"])["transfer"]
    for block in table.values():
        for m in ("nonsense_skin", "paraphrase"):
            assert block[m]["gap"] == 0.0 and block[m]["ci95_cluster_bootstrap"] == [0.0, 0.0]


def test_the_table_has_a_row_per_rung_and_mutation_and_says_not_built(
        paraphrase_runs: dict[str, pathlib.Path], runs: dict[str, pathlib.Path]) -> None:
    """Every rung lists all five mutations in order; the skin swap and renaming, which no
    bench builds yet, are "not built" (never 0/0 or an accuracy of 0), in the JSON and the
    Markdown; a bench without paraphrases says the same of paraphrase."""
    report = build_report(paraphrase_runs["original_wording"])
    md = to_markdown(report)
    assert "## Transfer across mutations" in md
    for rung, name in (("1", "observation"), ("2", "intervention"), ("3", "counterfactual")):
        block = report["transfer"][rung]
        assert list(block) == ["original", "skin_swap", "nonsense_skin", "renaming",
                               "paraphrase"]
        assert block["skin_swap"] == {"built": False} == block["renaming"]
        assert f"| {rung} ({name}) | skin_swap | not built |" in md
        assert f"| {rung} ({name}) | paraphrase | 0/" in md
    assert "| 0/0 |" not in md
    plain = build_report(runs["oracle"])["transfer"]
    assert all(b["paraphrase"] == {"built": False} for b in plain.values())
    assert all(b["nonsense_skin"]["built"] for b in plain.values())


def test_transfer_gap_is_the_difference_of_accuracies_over_resampled_worlds() -> None:
    """A hand case over two worlds: world a has originals 2/2 and mutated 1/2 right, world b
    originals 1/2 and mutated 0/2. The gap is 1/4 − 3/4 = −0.5, and it is −0.5 in every
    resample of whole worlds (n_a copies of a and n_b of b give (n_a − 2n_a − n_b) /
    2(n_a + n_b)), so the interval is the point −0.5; resampling single cases would not."""
    def row(world: str, right: bool) -> dict[str, object]:
        return {"world_id": world, "verdict": {"outcome": "correct" if right else "wrong"}}
    original = [row("a", True), row("a", True), row("b", True), row("b", False)]
    mutated = [row("a", True), row("a", False), row("b", False), row("b", False)]
    gap = transfer_gap(mutated, original, seed=3)
    assert gap["gap"] == -0.5
    assert gap["ci95_cluster_bootstrap"] == pytest.approx([-0.5, -0.5], abs=1e-12)
    assert gap["excludes_zero"]
    assert transfer_gap(mutated[:2], original[:2])["ci95_cluster_bootstrap"] is None


def test_a_gap_compares_only_the_worlds_that_hold_the_mutation() -> None:
    """A family built without a mutation (an imported network: originals only) does not
    enter that mutation's gap: world a's originals and paraphrases are all right, network
    world n's originals all wrong, so the paraphrase gap is 0 against world a's 2 originals,
    not +0.5 against all 4; the original row still counts all 4."""
    def row(world: str, right: bool, mutation: str | None = None) -> dict[str, object]:
        return {"world_id": world, "rung": 1, "skin": "network" if world == "n" else "web",
                "verdict": {"outcome": "correct" if right else "wrong"},
                **({"mutation": mutation} if mutation else {})}
    rows = [row("a", True), row("a", True), row("n", False), row("n", False),
            row("a", True, "paraphrase"), row("a", True, "paraphrase")]
    block = transfer_table(rows)["1"]
    assert block["original"]["n"] == 4 and block["original"]["accuracy"] == 0.5
    assert block["paraphrase"]["gap"] == 0.0 and block["paraphrase"]["n_original"] == 2
    assert block["paraphrase"]["k_original"] == 2
    assert "+0.000 (2/2)" in "\n".join(transfer_lines(transfer_table(rows)))
