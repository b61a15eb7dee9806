"""Edge census (two raters, Cohen's κ, mixed-store flag) and the leakage scan."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from rungbench.causal.instrument.cases import build_world
from rungbench.causal.instrument.census import (
    cohen_kappa,
    coverage,
    leakage_scan,
    sample_edges,
    score_sheets,
)
from rungbench.causal.instrument.graph_store import GraphStore, write_store
from rungbench.errors import InputError


@pytest.fixture()
def store(tmp_path: Path) -> GraphStore:
    world = build_world()
    return write_store(tmp_path / "g.sqlite", world.edges, world.aliases, world.sources)


def _fill(path: Path, kinds: dict[str, str], flip: int) -> None:
    rows = list(csv.DictReader(path.open(encoding="utf-8")))
    for i, row in enumerate(rows):
        kind = kinds[row["edge_id"]]
        row.update(relation_kind=kind if i >= flip else "other", direction="yes",
                   prov_source_id="yes", prov_time="yes", prov_scope="yes",
                   prov_confidence="no", prov_contrary="no", mechanism_status="asserted")
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def test_sample_is_seeded_and_kappa_flags_the_mixed_store(store: GraphStore,
                                                          tmp_path: Path) -> None:
    """100 edges by seed; κ from two sheets; > 20% non-causal flags a mixed store."""
    log = sample_edges(store, tmp_path, seed=11)
    again = sample_edges(store, tmp_path / ".." / tmp_path.name, seed=11)
    assert log["edge_ids"] == again["edge_ids"] and len(set(log["edge_ids"])) == 100
    kinds = {e.edge_id: e.relation_kind for e in store.edges()}
    _fill(tmp_path / "rater_a.csv", kinds, flip=0)
    _fill(tmp_path / "rater_b.csv", kinds, flip=10)
    report = score_sheets(tmp_path / "sample.json", tmp_path / "rater_a.csv",
                          tmp_path / "rater_b.csv")
    truth_share = sum(kinds[i] != "causal_claim" for i in log["edge_ids"]) / 100
    assert report.not_causal_share["a"] == truth_share
    assert report.mixed_store is (report.not_causal_share["mean"] > 0.2)
    assert report.kappa["relation_kind"] is not None and report.kappa["relation_kind"] < 1
    assert report.kappa["direction"] is None  # one category only: κ undefined


def test_blank_label_is_an_input_error_naming_line_and_field(store: GraphStore,
                                                             tmp_path: Path) -> None:
    """An unfilled sheet is refused with its file, line and field."""
    sample_edges(store, tmp_path, seed=3)
    with pytest.raises(InputError, match=r"rater_a.csv:2.*relation_kind"):
        score_sheets(tmp_path / "sample.json", tmp_path / "rater_a.csv",
                     tmp_path / "rater_b.csv")


def test_cohen_kappa_known_values() -> None:
    """κ = 1 on perfect agreement, 0 at chance, and the textbook 2x2 value."""
    assert cohen_kappa(["a", "b"] * 5, ["a", "b"] * 5) == 1.0
    a = ["y"] * 20 + ["n"] * 30 + ["y"] * 5 + ["n"] * 45
    b = ["y"] * 20 + ["y"] * 30 + ["n"] * 5 + ["n"] * 45
    assert cohen_kappa(a, b) == pytest.approx((0.65 - 0.5) / 0.5)


def test_leakage_scan_finds_every_withheld_edge_in_its_source_text(store: GraphStore) -> None:
    """Withholding rows only leaves every target's source text behind: 40/40 leak."""
    withheld = [e for c in build_world().cases for e in c.target]
    leaks = leakage_scan(store, withheld)
    assert coverage(withheld, leaks) == {"withheld": len(withheld),
                                         "with_source_text": len(withheld)}
    assert any(x.store == "summary" for x in leaks)
