"""The evaluation stage end to end on real runs, a real label stage and a real evaluator."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from rungbench.chess.studies.evaluation import StageOptions, evaluate_run, verify_evaluation
from rungbench.chess.studies.evaluator import PROXY_LABEL, EvaluatorConfig
from rungbench.chess.studies.successor_records import EvaluationCache
from rungbench.cli import app
from rungbench.errors import Refusal

from .conftest import DEPTH, OPEN, MakeRun, stage_fens

CONFIG = EvaluatorConfig(evaluator="ethereal", depth=DEPTH, timeout_s=30)
SCRIPT = {"c0-0": "illegal", "c0-1": "malformed", "c0-2": "refusal", "c0-3": "network",
          "c0-4": "not_uci"}
CLI = [sys.executable, "-c", "from rungbench.cli import main; main()"]


def _evaluate(run_dir: Path, stage: Path, root: Path, *, workers: int = 1,
              config: EvaluatorConfig = CONFIG) -> dict[str, Any]:
    options = StageOptions(cache=root / "cache", out=root / "out", workers=workers)
    return evaluate_run(run_dir, stage, config, options, OPEN)


def _published(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


def test_every_cell_is_scored_in_its_class(tmp_path: Path, make_run: MakeRun,
                                           label_stage: Path) -> None:
    """Illegal, malformed, refusal and non-UCI get 1.0 in their class; a network error is hazard."""
    run_dir = make_run(tmp_path / "r", SCRIPT)
    summary = _evaluate(run_dir, label_stage, tmp_path)
    cells = {c["cell"]: c for c in json.loads((tmp_path / "out" / "cells.json").read_text())
             ["cells"]}
    n = len(stage_fens(label_stage))
    assert len(cells) == n >= 5
    expected = {"c0-0": ("illegal", 1.0), "c0-1": ("malformed", 1.0),
                "c0-2": ("refusal", 1.0), "c0-3": ("network_error", None),
                "c0-4": ("illegal", 1.0)}
    for cell, (cls, regret) in expected.items():
        assert (cells[cell]["class"], cells[cell]["regret"]) == (cls, regret), cell
    assert cells["c0-4"]["detail"] == "not_uci" and cells["c0-4"]["submitted"] == "Nf3!!"
    legal = [c for c in cells.values() if c["class"] == "legal"]
    assert all(0.0 <= c["regret"] <= 1.0 for c in legal)
    body = summary["summary"]
    assert body["classes"]["illegal"] == 2 and body["classes"]["network_error"] == 1
    assert body["hazard"][0]["missing"] == 1 and body["hazard"][0]["route"] == "test:scripted"
    assert summary["role"] == "different-family evaluator"
    assert (summary["evaluator_family"], summary["labeller_family"]) == ("ethereal", "stockfish")
    record = verify_evaluation(tmp_path / "out")
    assert record["family_check"]["labeller"].startswith("Stockfish")


def test_wrong_position_and_non_uci_answers_without_a_validator(
        tmp_path: Path, make_run: MakeRun, label_stage: Path) -> None:
    """Run without a validator: non-UCI and wrong-position moves are re-derived as illegal."""
    run_dir = make_run(tmp_path / "r", {"c0-0": "not_uci", "c0-1": "wrong_position"},
                       validator=False)
    summary = _evaluate(run_dir, label_stage, tmp_path)
    assert summary["summary"]["bad_input"]["illegal_details"] == {
        "illegal_in_position": 1, "not_uci": 1}
    assert summary["summary"]["classes"]["illegal"] == 2


def test_two_clean_runs_and_one_or_two_workers_are_byte_identical(
        tmp_path: Path, make_run: MakeRun, label_stage: Path) -> None:
    """Fresh caches, 1 vs 2 workers: the published directories are byte for byte the same."""
    run_dir = make_run(tmp_path / "r", SCRIPT)
    first = _evaluate(run_dir, label_stage, tmp_path / "a")
    second = _evaluate(run_dir, label_stage, tmp_path / "b")
    two = _evaluate(run_dir, label_stage, tmp_path / "c", workers=2)
    assert first["evaluation"] == second["evaluation"] == two["evaluation"]
    assert _published(tmp_path / "a" / "out") == _published(tmp_path / "b" / "out") == (
        _published(tmp_path / "c" / "out"))
    assert first["run"]["searches"] > 0 and two["run"]["searches"] == first["run"]["searches"]


def test_shared_cache_is_reused_and_a_tampered_record_is_researched(
        tmp_path: Path, make_run: MakeRun, label_stage: Path) -> None:
    """A second evaluation hits the cache; an edited record is quarantined, searched again."""
    run_dir = make_run(tmp_path / "r", SCRIPT)
    first = _evaluate(run_dir, label_stage, tmp_path)
    cache = EvaluationCache(tmp_path / "cache")
    index = sorted((cache.root / "index").glob("*.json"))[0]
    name = json.loads(index.read_text())["record"]
    target = cache.store.path_for(name)
    os.chmod(target, 0o644)
    target.write_bytes(target.read_bytes().replace(b'"nodes":', b'"nodes":1'))
    again = evaluate_run(run_dir, label_stage, CONFIG,
                         StageOptions(cache=tmp_path / "cache", out=tmp_path / "out2"), OPEN)
    assert again["evaluation"] == first["evaluation"]
    assert again["run"]["searches"] == 1 and sum(again["run"]["rejected"].values()) == 1
    assert again["run"]["cache_hits"] == first["run"]["searches"] - 1


def test_same_family_is_refused_and_the_proxy_is_labelled(
        tmp_path: Path, make_run: MakeRun, label_stage: Path) -> None:
    """Stockfish refuses (evaluator_same_family) unless proxy; proxy outputs carry the label."""
    run_dir = make_run(tmp_path / "r", SCRIPT)
    with pytest.raises(Refusal) as caught:
        _evaluate(run_dir, label_stage, tmp_path / "x",
                  config=EvaluatorConfig(evaluator="stockfish", depth=DEPTH))
    assert caught.value.codes == ("evaluator_same_family",)
    assert not (tmp_path / "x" / "cache").exists()  # refused before any engine or cache
    proxy = _evaluate(run_dir, label_stage, tmp_path / "p",
                      config=EvaluatorConfig(evaluator="stockfish", depth=DEPTH, proxy=True))
    assert proxy["role"] == PROXY_LABEL
    for path in (tmp_path / "p" / "out").glob("*.json"):
        if path.name != "SEAL.json":
            assert json.loads(path.read_text())["role"] == PROXY_LABEL, path.name


def test_cli_refuses_same_family_with_exit_3(tmp_path: Path, make_run: MakeRun,
                                             label_stage: Path) -> None:
    """`rungbench chess evaluate --evaluator stockfish` exits 3 naming evaluator_same_family."""
    run_dir = make_run(tmp_path / "r", SCRIPT)
    result = CliRunner().invoke(app, ["chess", "evaluate", str(run_dir), "--manifest",
                                      str(label_stage), "--evaluator", "stockfish", "--json"])
    assert result.exit_code == 3
    assert json.loads(result.stdout)["reasons"][0]["code"] == "evaluator_same_family"


def test_a_position_outside_the_label_stage_is_refused(
        tmp_path: Path, make_run: MakeRun, label_stage: Path, label_data: Any) -> None:
    """A run whose cell shows an unfrozen position refuses (position_not_frozen)."""
    from rungbench.chess.reference_agents import RandomMover
    from rungbench.chess.studies.move_choice import fen_schedule
    from rungbench.execute.runner import create_run, execute_run

    source = tmp_path / "p.jsonl"
    source.write_text(json.dumps({"fen": "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/"
                                  "RNBQK2R w KQkq - 4 4"}) + "\n")
    run_dir = create_run(tmp_path / "o", fen_schedule(source), {"name": "reference:random"})
    execute_run(run_dir, RandomMover())
    with pytest.raises(Refusal) as caught:
        _evaluate(run_dir, label_stage, tmp_path)
    assert caught.value.codes == ("position_not_frozen",)


def _cmd(run_dir: Path, stage: Path, root: Path) -> list[str]:
    return [*CLI, "chess", "evaluate", str(run_dir), "--manifest", str(stage), "--depth",
            str(DEPTH + 2), "--cache", str(root / "cache"), "--out", str(root / "out"),
            "--max-load", "1000000", "--json"]


def _records(root: Path) -> int:
    index = root / "cache" / "index"
    return len(list(index.glob("*.json"))) if index.exists() else 0


def test_sigkill_at_seeded_points_then_resume_gives_the_same_digest(
        tmp_path: Path, make_run: MakeRun, label_stage: Path) -> None:
    """Five SIGKILLs of the CLI at seeded record counts, then a resume: the same digest."""
    run_dir = make_run(tmp_path / "r", SCRIPT)
    reference = subprocess.run(_cmd(run_dir, label_stage, tmp_path / "ref"),
                               capture_output=True, text=True, timeout=300)
    assert reference.returncode == 0, reference.stderr
    expected = json.loads(reference.stdout)
    total = expected["run"]["searches"]
    killed = tmp_path / "killed"
    targets = sorted(int(t) for t in np.random.default_rng(12).choice(
        np.arange(1, total - 1), 5, replace=False))
    counts = []
    for target in targets:
        proc = subprocess.Popen(_cmd(run_dir, label_stage, killed), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while _records(killed) < target and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
        assert proc.poll() is None, "the evaluation ended before its kill point"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        counts.append(_records(killed))
    assert not (killed / "out").exists() and counts == sorted(counts)
    done = subprocess.run(_cmd(run_dir, label_stage, killed), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["evaluation"] == expected["evaluation"]
    assert result["run"]["cache_hits"] >= counts[-1] - 1
    assert _published(killed / "out") == _published(tmp_path / "ref" / "out")
    shutil.rmtree(killed / "cache")
