"""The control matrix reproduces seed 003's demonstration table and its lessons."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from rungbench.causal.instrument.cases import Case, World, build_world, ceiling_cases
from rungbench.causal.instrument.controls import (
    ToolRun,
    condition_graphs,
    flip_all,
    flip_one,
    net_sign,
    run_tool,
    summarize,
    write_conditions,
)
from rungbench.causal.instrument.graph_store import Edge
from rungbench.causal.instrument.query import ToolRequest, fixed, naive
from rungbench.causal.instrument.scorers import lenient, strict

SCORERS = {"lenient": lenient, "strict": strict}


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    world = build_world()
    graphs = condition_graphs(world)
    stores = write_conditions(graphs, tmp_path_factory.mktemp("controls"))
    runs = {n: run_tool(n, t, world, graphs, stores, SCORERS) for n, t in
            (("naive", naive), ("fixed", fixed))}
    return {"world": world, "graphs": graphs, "stores": stores, "runs": runs}


SEED_TABLE = {("naive", "lenient"): (22, 20, 20), ("naive", "strict"): (14, 12, 12),
              ("fixed", "lenient"): (40, 0, 36), ("fixed", "strict"): (40, 0, 0)}


@pytest.mark.parametrize("pair", sorted(SEED_TABLE))
def test_demonstration_table_matches_the_seed(matrix: dict[str, Any],
                                              pair: tuple[str, str]) -> None:
    """C1 recovered and C5 reversed / sign-flip false accepts equal the seed's numbers."""
    row = summarize(matrix["runs"][pair[0]], pair[1], 40)
    got = (row["recovered"]["C1"], row["false_accepts"]["C5-reversed"],
           row["false_accepts"]["C5-sign"])
    assert got == SEED_TABLE[pair]


def test_fixed_strict_passes_every_bar(matrix: dict[str, Any]) -> None:
    """fixed × strict: C1–C3 40/40, C4 0 false positives, C5 ≤ 1 per corruption."""
    row = summarize(matrix["runs"]["fixed"], "strict", 40)
    assert [row["recovered"][c] for c in ("C1", "C2", "C3")] == [40, 40, 40]
    assert all(v == 0 for v in row["false_accepts"].values())
    assert row["instrument_valid"] and row["failures"] == []


def test_naive_passes_direct_and_fails_every_hard_tag(matrix: dict[str, Any]) -> None:
    """naive × strict: all direct cases hit; every 2-hop, 3+-hop, alias, sign, condition misses."""
    tags = summarize(matrix["runs"]["naive"], "strict", 40)["per_tag"]
    assert tags["direct"]["C1"] == "12/12"
    for tag in ("2-hop", "3+-hop", "alias", "negative polarity", "conditional"):
        assert tags[tag]["C1"].startswith("0/"), tag


def test_five_case_ceiling_reads_five_of_five_on_the_broken_query(matrix: dict[str, Any]) -> None:
    """A ceiling drawn from direct edges reads 5/5 on naive, which recovers 14/40."""
    world: World = matrix["world"]
    five = ceiling_cases(world.cases)
    sub = World(world.seed, world.edges, world.aliases, world.sources, five)
    run = run_tool("naive", naive, sub, matrix["graphs"], matrix["stores"], SCORERS)
    assert summarize(run, "strict", 5)["recovered"]["C1"] == 5


def test_every_miss_is_localized_to_the_tool_for_naive(matrix: dict[str, Any]) -> None:
    """naive's 26 C1 misses are all located at stage 2 (tool response), none dropped."""
    row = summarize(matrix["runs"]["naive"], "strict", 40)
    assert row["misses_localized"]["C1"] == {"tool response": 26}
    assert sum(row["outcomes"]["C1"].values()) == 40


def test_tool_response_misses_of_present_edges_are_graph_retrieval_failures(
        matrix: dict[str, Any]) -> None:
    """The 26 C1 misses (edge in the store, absent from naive's output) carry the seed's
    graph retrieval failure label; the fixed query's C1 carries none."""
    row = summarize(matrix["runs"]["naive"], "strict", 40)
    assert row["failure_labels"]["C1"] == {"graph_retrieval_failure": 26}
    assert summarize(matrix["runs"]["fixed"], "strict", 40)["failure_labels"]["C1"] == {}


def test_lenient_sign_flip_accepts_are_localized_to_the_scorer(matrix: dict[str, Any]) -> None:
    """fixed × lenient's 36 sign-flip false accepts are scorer defects (stage 4)."""
    row = summarize(matrix["runs"]["fixed"], "lenient", 40)
    assert row["misses_localized"]["C5-sign"] == {"score": 36}
    assert row["failure_labels"]["C5-sign"] == {"scorer_harness_failure": 36}


def test_flipping_every_edge_of_an_even_path_cancels(matrix: dict[str, Any]) -> None:
    """The seed's harness bug: flip-all keeps an even path's sign; flip-one never does."""
    path = [Edge("a", "x", "y"), Edge("b", "y", "z")]
    assert net_sign(flip_all(path)) == net_sign(path)
    for n in (1, 2, 3, 4):
        chain = [Edge(str(i), str(i), str(i + 1)) for i in range(n)]
        assert net_sign(flip_one(chain)) != net_sign(chain)


def test_manifest_hashes_are_identical_across_rows(matrix: dict[str, Any]) -> None:
    """Query text, harness, parser and scorer hashes are the same in all nine rows."""
    run: ToolRun = matrix["runs"]["fixed"]
    rows = list(run.manifest.values())
    assert len(rows) == 9
    for key in rows[0]:
        if key != "store_sha256":
            assert {r[key] for r in rows} == {rows[0][key]}
    assert len({r["store_sha256"] for r in rows}) == 9


def test_crash_timeout_and_unparseable_are_their_own_outcomes(
        matrix: dict[str, Any]) -> None:
    """A tool that crashes, hangs or returns junk gets counted outcome classes, no drops."""
    world: World = matrix["world"]

    def flaky(request: ToolRequest) -> object:
        n = sum(map(ord, request.query)) % 3
        if n == 0:
            raise RuntimeError("boom")
        if n == 1:
            time.sleep(0.3)
            return {"status": "none"}
        return b"not json"

    three: tuple[Case, ...] = world.cases[:6]
    sub = World(world.seed, world.edges, world.aliases, world.sources, three)
    run = run_tool("flaky", flaky, sub, matrix["graphs"], matrix["stores"], SCORERS,
                   timeout=0.05)
    row = summarize(run, "strict", 6)
    assert sum(row["outcomes"]["C1"].values()) == 6
    assert set(row["outcomes"]["C1"]) <= {"crash", "timeout", "unparseable"}
    assert not row["instrument_valid"]


def test_matrix_of_eight_conditions_runs_under_half_a_second(matrix: dict[str, Any],
                                                             tmp_path: Path) -> None:
    """8 conditions × 40 cases with the fixed query take well under the seed's 0.5 s."""
    assert matrix["runs"]["fixed"].seconds < 0.5
