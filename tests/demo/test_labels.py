"""The labels demo stage (rungbench.demo.labels) on the bundled data."""

from __future__ import annotations

from pathlib import Path

from rungbench.chess.engine_builds import default_build
from rungbench.demo import StageResult
from rungbench.demo.labels import NODES, run


def test_stage_labels_and_publishes(labelled: tuple[Path, StageResult]) -> None:
    """The gate refuses for an unfrozen cohort, then qualifies; the stage labels and publishes
    every pooled position at the stated reduced node budget."""
    _, first = labelled
    summary = first.summary
    assert "cohort_absent" in summary["refused_without_cohort"]
    assert summary["preflight_cleared"] is True
    assert summary["labelled"] + summary["excluded"] == summary["pool_positions"]
    assert summary["nodes"] == NODES < summary["registered_nodes"] == 50_000
    assert summary["manifest"].startswith("sha256:")
    assert Path(summary["stage"], "manifest.json").is_file()


def test_stage_names_its_engine_stockfish_18_where_installed(
        labelled: tuple[Path, StageResult]) -> None:
    """The demo labels with the default build, Stockfish 18 (WebAssembly) where installed, and
    its summary names the engine and whether it is seed 002's registered one."""
    engine = labelled[1].summary["engine"]
    assert engine["build"] == default_build()
    if engine["build"] == "stockfish-18-wasm":
        assert engine == {"name": "Stockfish 18 WASM", "build": "stockfish-18-wasm",
                          "version": "18.0.8", "is_registered": True}


def test_second_run_verifies_and_reuses_everything(labelled: tuple[Path, StageResult]) -> None:
    """A re-run reuses pool, cohorts and stage (no search) and reproduces every digest."""
    workdir, first = labelled
    again = run(workdir).summary
    assert again["reused"] == {"pool": True, "pilot": True, "replication": True, "stage": True}
    assert again["searches_this_run"] == 0
    for key in ("pool", "cohorts", "qualification", "manifest", "labels"):
        assert again[key] == first.summary[key], key
