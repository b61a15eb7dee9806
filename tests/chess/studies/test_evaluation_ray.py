"""The evaluation stage on a local Ray cluster: the local executor's published bytes, and an
evaluator verified in every worker."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

import chess
from rungbench.chess.position import normalized_key
from rungbench.chess.studies import evaluator as ev
from rungbench.chess.studies.evaluation import StageOptions, evaluate_run, legal_moves_of
from rungbench.chess.studies.successor_records import SuccessorKey
from rungbench.chess.studies.successor_search import Engines, EvaluationJob, evaluate_in_worker
from rungbench.errors import Refusal
from rungbench.execute.executors import RayExecutor

from .conftest import DEPTH, OPEN, MakeRun, stage_fens

pytestmark = pytest.mark.xdist_group("ray")

CONFIG = ev.EvaluatorConfig(evaluator="ethereal", depth=DEPTH, timeout_s=30)
SCRIPT = {"c0-0": "illegal", "c0-1": "refusal", "c0-2": "network"}


def tree(root: Path) -> dict[str, bytes]:
    """Every published file (the seal included) by name."""
    return {p.name: p.read_bytes() for p in sorted(root.iterdir())}


def test_ray_workers_publish_the_local_evaluation_byte_for_byte(
        ray_cluster: Any, tmp_path: Path, make_run: MakeRun, label_stage: Path) -> None:
    """One local evaluator vs two Ray workers, fresh caches: identical directories and digest."""
    run_dir = make_run(tmp_path / "r", SCRIPT)
    local = evaluate_run(run_dir, label_stage, CONFIG,
                         StageOptions(cache=tmp_path / "a" / "cache", out=tmp_path / "a" / "out"),
                         OPEN)
    remote = evaluate_run(run_dir, label_stage, CONFIG,
                          StageOptions(cache=tmp_path / "b" / "cache", out=tmp_path / "b" / "out",
                                       workers=2), OPEN, executor=RayExecutor())
    assert remote["run"]["searches"] == local["run"]["searches"] > 0
    assert remote["evaluation"] == local["evaluation"]
    assert tree(tmp_path / "b" / "out") == tree(tmp_path / "a" / "out")


def test_a_worker_refuses_an_evaluator_that_is_not_the_drivers(
        ray_cluster: Any, label_stage: Path) -> None:
    """The worker's own identification must give the driver's digest: another contract or
    binary hash refuses engine_changed; the right one returns a record for the key."""
    model = ev.registered_model(CONFIG)
    engines = Engines(CONFIG, model, 1)
    identity = engines.identity
    engines.close()
    position = normalized_key(chess.Board(stage_fens(label_stage)[0]))
    key = SuccessorKey(identity.digest, model.digest, DEPTH, position, legal_moves_of(position)[0])
    pool = RayExecutor()
    record = pool.submit(evaluate_in_worker, EvaluationJob(CONFIG, model, identity), key)
    assert record.result(60)["key"] == key.to_json()
    for wrong in (dataclasses.replace(identity, contract={**identity.contract, "depth": 1}),
                  dataclasses.replace(identity, sha256="sha256:" + "0" * 64)):
        with pytest.raises(Refusal) as caught:
            pool.submit(evaluate_in_worker, EvaluationJob(CONFIG, model, wrong), key).result(60)
        assert caught.value.codes == ("engine_changed",)
        assert caught.value.reasons[0].subject == "worker"
