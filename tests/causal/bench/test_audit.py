"""Tests for rungbench.causal.bench.audit (listing order, skin invariance, varsortability)."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from rungbench.causal.bench.audit import (
    audit_bench,
    listing_agreement,
    skin_behaviour_audit,
    skin_structure_audit,
    sort_by_variance_accuracy,
    standardize,
    varsortability,
)
from rungbench.causal.bench.build import build_split
from rungbench.causal.bench.evaluate import evaluate
from rungbench.causal.bench.verified import CASES, ORACLE, open_bench, open_run, run_verdicts


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    out = tmp_path_factory.mktemp("audit") / "bench"
    build_split("dev", 40, 3, out)
    return out


def test_listing_agreement_known_answer() -> None:
    """Listing C, A, B with edges A->B, A->C, C->B: 2 of 3 parents listed before children."""
    assert listing_agreement(["C", "A", "B"], [("A", "B"), ("A", "C"), ("C", "B")]) == (2, 3)


def test_listing_order_before_is_causal_after_is_shuffled(bench: pathlib.Path) -> None:
    """Causal-order listing agrees 100%; the public shuffled listings agree at most 55%."""
    lo = audit_bench(bench)["listing_order"]
    assert lo["before"]["rate"] == 1.0
    assert lo["after"]["rate"] <= 0.55
    assert lo["after"]["rate"] >= 0.3
    assert lo["pass"]


def test_skin_structure_invariance_and_its_failure(
    bench: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    """Twins differ only by names; a domain case given an extra hint breaks invariance."""
    cases = open_bench(bench).jsonl(CASES)
    ok = skin_structure_audit(cases)
    assert ok["pass"] and ok["pairs"] > 100
    cases[0] = {**cases[0], "question": cases[0]["question"] + " Note that it usually rains."}
    bad = skin_structure_audit(cases)
    assert bad["mismatched"] == 1 and not bad["pass"]


def test_skin_behaviour_audit(bench: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """The oracle agent is skin-invariant; an agent right only under domain skins is flagged."""
    run = tmp_path / "run"
    evaluate(bench, "reference:oracle", run)
    rows = run_verdicts(open_run(run))
    assert skin_behaviour_audit(rows)["pass"]
    for r in rows:
        if r["verdict"]["case_id"].endswith("n"):
            r["verdict"]["outcome"] = "wrong"
    flagged = skin_behaviour_audit(rows)
    assert not flagged["pass"]
    assert flagged["domain_accuracy"] - flagged["nonsense_accuracy"] == pytest.approx(1.0)


def test_varsortability_known_answers() -> None:
    """Rising variance along A->B->C gives varsortability 1 and a perfect baseline;
    standardization makes every variance tie (varsortability 0.5)."""
    rng = np.random.default_rng(0)
    a = rng.normal(0, 1, 500)
    b = a + rng.normal(0, 1, 500)
    c = b + rng.normal(0, 1, 500)
    x = np.column_stack([c, a, b])
    names, edges = ["C", "A", "B"], [("A", "B"), ("B", "C")]
    assert varsortability(x, names, edges) == 1.0
    assert sort_by_variance_accuracy(x, names, edges) == 1.0
    z = standardize(x)
    assert varsortability(z, names, edges) == 0.5
    assert sort_by_variance_accuracy(z, names, edges) == 0.5  # ties: listing order C, A, B


def test_varsortability_audit_reports_discovery_samples(bench: pathlib.Path) -> None:
    """Discovery items expose samples; standardized varsortability is exactly one half."""
    v = audit_bench(bench)["varsortability"]
    assert v["items"] > 0
    assert v["varsortability_standardized"] == pytest.approx(0.5)
    raw = v["sort_by_variance_accuracy_raw"]
    assert v["sort_by_variance_best_direction_raw"] == pytest.approx(max(raw, 1.0 - raw))
    assert v["varsortability_raw"] is not None


@pytest.mark.parametrize("split", ["validation", "test"])
def test_listing_order_gate_holds_on_every_split(split: str, tmp_path: pathlib.Path) -> None:
    """Validation and test builds too: 100% agreement before shuffling, at most 55% after."""
    build_split(split, 26, 11, tmp_path / "b")
    lo = audit_bench(tmp_path / "b")["listing_order"]
    assert lo["before"]["rate"] == 1.0 and lo["before"]["edges"] > 40
    assert lo["after"]["rate"] <= 0.55 and lo["pass"]
    assert lo["after"]["edges"] >= lo["before"]["edges"]


def test_standardized_baseline_falls_back_to_listing_order(bench: pathlib.Path) -> None:
    """After standardization the sort-by-variance baseline is exactly the listing-order cue."""
    verified = open_bench(bench)
    oracles = {o["case_id"]: o for o in verified.jsonl(ORACLE)}
    shares: list[float] = []
    raw: list[float] = []
    for case in verified.jsonl(CASES):
        samples = case["evidence"]["payload"].get("samples")
        edges = oracles[case["case_id"]]["true_edges"]
        if samples is None or not edges:
            continue
        k, n = listing_agreement(samples["names"], [tuple(e) for e in edges])
        shares.append(k / n)
        x = np.asarray(samples["rows"], dtype=float)
        value = varsortability(x, samples["names"], [tuple(e) for e in edges])
        assert value is not None
        raw.append(value)
    v = audit_bench(bench)["varsortability"]
    assert v["items"] == len(shares) > 0
    assert v["sort_by_variance_accuracy_standardized"] == pytest.approx(float(np.mean(shares)))
    assert v["varsortability_raw"] == pytest.approx(float(np.mean(raw)))


def test_listing_gate_fails_above_55_percent(tmp_path: pathlib.Path) -> None:
    """A public listing agreeing with 2 of 3 edges (67% > 55%) fails the listing-order gate."""
    from rungbench.causal.bench.audit import listing_order_audit

    variables = [{"name": "C", "parents": ["A"]}, {"name": "A", "parents": []},
                 {"name": "B", "parents": ["A", "C"]}]
    world = {"world": {"variables": variables}, "causal_order": ["A", "C", "B"]}
    case = {"world_id": "w0", "skin": "domain",
            "evidence": {"kind": "mechanism", "payload": {"variables": variables}}}
    lo = listing_order_audit([world], [case])
    assert lo["before"]["rate"] == 1.0
    assert lo["after"]["rate"] == pytest.approx(2 / 3)
    assert lo["pass"] is False


def test_listing_audit_counts_each_world_skin_listing_once(tmp_path: pathlib.Path) -> None:
    """Several cases of one world and skin show one listing: its 3 edges are counted once."""
    from rungbench.causal.bench.audit import listing_order_audit

    variables = [{"name": "C", "parents": ["A"]}, {"name": "A", "parents": []},
                 {"name": "B", "parents": ["A", "C"]}]
    case = {"world_id": "w0", "skin": "domain",
            "evidence": {"kind": "mechanism", "payload": {"variables": variables}}}
    after = listing_order_audit([], [case] * 3)["after"]
    assert (after["agree"], after["edges"]) == (2, 3)


def test_skin_structure_audit_without_twins_does_not_pass(tmp_path: pathlib.Path) -> None:
    """A bench with no domain/nonsense twin pair has nothing checked, so the audit fails."""
    case = {"case_id": "c0001d", "skin": "domain", "evidence": {"kind": "joint"}}
    out = skin_structure_audit([case])
    assert out["pairs"] == 0 and out["pass"] is False


def test_standardize_centres_and_scales_each_column() -> None:
    """Columns (0, 2) and the constant (1, 1) standardize to (−1, 1) and (0, 0) (population SD)."""
    z = standardize(np.array([[0, 1], [2, 1]]))
    np.testing.assert_allclose(z, [[-1.0, 0.0], [1.0, 0.0]])


def test_skin_behaviour_audit_clusters_by_world(tmp_path: pathlib.Path) -> None:
    """Eight twin pairs from four worlds are bootstrapped as four world clusters."""
    rows = []
    for w in range(4):
        for item in range(2):
            for skin, outcome in (("d", "correct"), ("n", "wrong" if item else "correct")):
                rows.append({"world_id": f"w{w}",
                             "verdict": {"case_id": f"w{w}i{item}{skin}", "outcome": outcome}})
    out = skin_behaviour_audit(rows)
    assert out["pairs"] == 8
    assert out["delta"]["n_clusters"] == 4
    assert out["delta"]["mean"] == pytest.approx(0.5)
