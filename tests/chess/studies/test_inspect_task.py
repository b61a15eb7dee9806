"""A bound A105 design exported as an inspect task, run with mockllm, and imported back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.chess.studies import study_fixtures as fx  # one label stage per process
from tests.conftest import skip_unless_ci

import chess
from rungbench.agents import inspect_logs
from rungbench.chess.studies import budget as bud
from rungbench.chess.studies import inspect_task as it
from rungbench.chess.studies import study as st
from rungbench.chess.studies.ladder import final_calls
from rungbench.errors import Refusal
from rungbench.execute.runner import verify_run

MODEL, ROUTE = "luna", "loop-a"
RUNNER_CLASS = {"answered": "legal", "illegal": "illegal", "malformed": "malformed"}
"""The runner's outcome of a cell for each class the inspect scorer records (missing: a
reply with no tool call is malformed to the runner)."""


@pytest.fixture(autouse=True)
def _inspect_installed() -> None:
    why = inspect_logs.inspect_available()
    if why is not None:
        skip_unless_ci(why)


@pytest.fixture(scope="module")
def bound(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    stage = fx.small_stage()
    root = tmp_path_factory.mktemp("inspect-study") / "study"
    st.freeze(root, stage, fx.small_preset())
    return root, stage, str(st.bind(root, fx.a105_small(), stage)["binding"])


def _outputs(task: Any, fens: dict[str, str]) -> list[Any]:
    """Scripted replies in dataset order: legal, illegal, malformed arguments, no tool call."""
    from inspect_ai.model import ModelOutput, ModelUsage

    out = []
    for i, sample in enumerate(task.dataset):
        board = chess.Board(fens[str(sample.id)])
        legal = sorted(m.uci() for m in board.legal_moves)
        squares = [f"{a}{r}" for a in "abcdefgh" for r in "12345678"]
        illegal = next(f"{a}{b}" for a in squares for b in squares
                       if a != b and f"{a}{b}" not in legal)
        kind = i % 4
        if kind == 3:
            m = ModelOutput.from_content("mockllm/model", "I would play the best move.")
        else:
            args = ({"move": legal[0]}, {"move": illegal}, {"mv": legal[0]})[kind]
            m = ModelOutput.for_tool_call("mockllm/model", "submit_move", args)
        m.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
        out.append(m)
    return out


def test_export_eval_import_gives_the_directly_scored_responses(
        bound: tuple[Path, Path, str], tmp_path: Path) -> None:
    """export -> inspect eval (mockllm) -> import replays every sample through the real
    runner: the run is complete and verified, each cell's recorded arguments are the
    sample's, and the runner's outcome class equals the inspect scorer's legality."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    root, stage, binding = bound
    task = it.study_task(root, stage, binding, model=MODEL, route=ROUTE)
    n = len(task.dataset)
    assert n == 96
    schedule = it.study_schedule(root, stage, binding, model=MODEL, route=ROUTE)
    requests = {c.request.case_id: c.request for c in schedule}
    fens = {k: str(r.metadata["fen"]) for k, r in requests.items()}
    logs = inspect_eval(task, model=get_model("mockllm/model",
                                              custom_outputs=_outputs(task, fens)),
                        log_dir=str(tmp_path / "logs"), display="none", max_samples=1)
    assert logs[0].status == "success"
    log_path = Path(logs[0].location)
    log = inspect_logs.read_log(log_path)
    recorded = it.log_classes(log)
    assert set(recorded.values()) == set(it.MOVE_CLASSES)
    auth = bud.freeze_authorization(root, bud.Authorization(
        max_cells=1000, max_tokens=10**7, max_cost_usd=1.0, models=(MODEL,), routes=(ROUTE,),
        authorized_by="test"))
    result = it.import_study_log(log_path, root, stage, binding, model=MODEL, route=ROUTE,
                                 authorization=auth)
    assert result["complete"] and result["cells"] == n == result["final"]
    assert verify_run(Path(result["run"]), None).ok
    samples = {str(s.id): s for s in log.samples}
    finals = final_calls(Path(result["run"]))
    assert len(finals) == n
    case_of = {json.dumps(c.request.metadata, sort_keys=True): c.request.case_id
               for c in schedule}
    assert len(case_of) == n
    for meta, outcome, args in finals:
        case = case_of[json.dumps(meta, sort_keys=True)]
        name, arguments, _ = it.first_move_call(samples[case].messages)
        direct = it.move_class(requests[case], name, arguments)
        assert direct == recorded[case]
        assert RUNNER_CLASS.get(outcome) == direct or (direct == "missing"
                                                       and outcome == "malformed")
        if direct == "legal":
            assert args == {"move": samples[case].messages[-1].tool_calls[0].arguments["move"]}


def test_a_log_of_another_schedule_is_refused(bound: tuple[Path, Path, str],
                                              tmp_path: Path) -> None:
    """A log whose task names another schedule is refused before any cell runs."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    root, stage, binding = bound
    other = it.study_task(root, stage, binding, model="deepseek-v4-flash", route=ROUTE,
                          limit=2)
    from inspect_ai.model import ModelOutput, ModelUsage

    outputs = []
    for _ in range(2):
        m = ModelOutput.for_tool_call("mockllm/model", "submit_move", {"move": "e2e4"})
        m.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        outputs.append(m)
    logs = inspect_eval(other, model=get_model("mockllm/model", custom_outputs=outputs),
                        log_dir=str(tmp_path / "logs"), display="none")
    assert logs[0].status == "success"
    with pytest.raises(Refusal) as info:
        it.import_study_log(Path(logs[0].location), root, stage, binding, model=MODEL,
                            route=ROUTE, authorization="sha256:" + "0" * 64)
    assert info.value.codes == ("foreign_log",)
