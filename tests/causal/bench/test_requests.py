"""Causal public cases as submit_answer requests, the case-agent adapter, and run answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rungbench.agents.protocol import Message, Request, Response, ToolCall
from rungbench.causal.bench.build import build_split
from rungbench.causal.bench.records import AgentResponse, PublicCase
from rungbench.causal.bench.requests import (
    CAUSAL_TASK,
    SUBMIT_ANSWER_TOOL,
    causal_request,
    causal_schedule,
    reference_case_agent,
    validate_causal_answer,
    write_agent_responses,
)
from rungbench.errors import InputError, IntegrityError
from rungbench.execute.events import read_events
from rungbench.execute.runner import EVENTS, create_run, describe_agent, execute_run


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-world dev bench (seed 3)."""
    out = tmp_path_factory.mktemp("causal") / "bench"
    build_split("dev", 1, 3, out, None)
    return out


def test_causal_validator_names_inadmissible_fields() -> None:
    """Confidence outside [0, 1] and reversed bounds are illegal answers."""
    request = Request("c", (Message("user", "q"),))
    assert "confidence" in str(
        validate_causal_answer(request, "submit_answer", {"status": "answer", "confidence": 1.5})
    )
    assert "bounds" in str(
        validate_causal_answer(request, "submit_answer", {"status": "answer", "bounds": [0.6, 0.2]})
    )
    assert validate_causal_answer(request, "submit_answer", {"status": "abstain"}) is None


def test_adapter_needs_the_public_case_in_metadata(bench: Path) -> None:
    """The causal adapter refuses a request that does not carry its public case."""
    adapter = reference_case_agent("oracle", bench)
    with pytest.raises(InputError, match="public case"):
        adapter.respond(Request("c", (Message("user", "q"),)))


def test_request_carries_question_tool_and_case(bench: Path) -> None:
    """A rendered case holds its question, the required submit_answer tool and its record."""
    schedule = causal_schedule(bench)
    request = schedule.cells[0].request
    case = request.metadata["public_case"]
    assert schedule.task == CAUSAL_TASK and request.metadata["task"] == CAUSAL_TASK
    assert request.tools == (SUBMIT_ANSWER_TOOL,) and request.tool_choice == "required"
    assert request.case_id == case["case_id"] == schedule.cells[0].cell_id
    assert request.messages[-1].content.startswith(case["question"])
    assert f"Answer format: {case['answer_format']}" in request.messages[-1].content
    rerendered = causal_request(PublicCase.model_validate(case))
    assert rerendered.payload_digest() == request.payload_digest()


def test_offset_and_limit_select_a_slice_of_cases(bench: Path) -> None:
    """offset=1, limit=2 gives the second and third cells of the whole schedule."""
    whole = [c.cell_id for c in causal_schedule(bench)]
    assert [c.cell_id for c in causal_schedule(bench, limit=2, offset=1)] == whole[1:3]


def test_bench_without_public_records_is_refused(tmp_path: Path) -> None:
    """A directory with an empty public/ folder and no seal is refused, naming SEAL.json."""
    (tmp_path / "public").mkdir()
    with pytest.raises(IntegrityError, match=r"SEAL\.json: missing"):
        causal_schedule(tmp_path)


def test_reference_case_agent_needs_a_known_policy_and_the_oracle(
    bench: Path, tmp_path: Path
) -> None:
    """Unknown policies and a bench without private/oracle.jsonl are InputErrors."""
    with pytest.raises(InputError, match="unknown causal reference agent 'psychic'"):
        reference_case_agent("psychic", bench)
    with pytest.raises(InputError, match="private oracle"):
        reference_case_agent("oracle", tmp_path)
    with pytest.raises(InputError, match="private oracle"):
        reference_case_agent("oracle", None)


def test_oracle_run_becomes_one_agent_response_per_case(bench: Path, tmp_path: Path) -> None:
    """An oracle run's finals become agent_response lines, one per case, under its arm."""
    schedule = causal_schedule(bench, limit=4)
    adapter = reference_case_agent("oracle", bench)
    assert describe_agent(adapter) == {"kind": "reference", "name": "reference:oracle"}
    run_dir = create_run(tmp_path, schedule, describe_agent(adapter))
    execute_run(run_dir, adapter, validator=validate_causal_answer, concurrency=1)
    assert write_agent_responses(run_dir) == {"responses": 4, "invalid": 0, "missing": 0}
    lines = (run_dir / "responses.jsonl").read_text(encoding="utf-8").splitlines()
    records = [AgentResponse.model_validate(json.loads(line)) for line in lines]
    assert sorted(r.case_id for r in records) == sorted(c.cell_id for c in schedule)
    assert {r.arm for r in records} == {"reference:oracle"}


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"status": "answer", "value": 1.2}, "value"),
        ({"status": "answer", "value": -0.01}, "value"),
        ({"status": "answer", "value": float("nan")}, "value"),
        ({"status": "answer", "confidence": float("inf")}, "confidence"),
        ({"status": "answer", "bounds": [-0.1, 0.4]}, "bounds"),
        ({"status": "answer", "bounds": [0.2, 1.5]}, "bounds"),
        ({"status": "abstain", "bounds": [0.2, float("nan")]}, "bounds"),
    ],
)
def test_numbers_outside_the_unit_interval_are_illegal(
    arguments: dict[str, object], field: str
) -> None:
    """A value, confidence or bound end outside [0, 1] (or not finite) is named as inadmissible."""
    request = Request("c", (Message("user", "q"),))
    reason = validate_causal_answer(request, "submit_answer", arguments)
    assert reason is not None and reason.startswith(field)


def test_unit_interval_ends_are_admissible() -> None:
    """value 0 and 1, confidence 1 and bounds [0, 1] sit on the closed interval: admissible."""
    request = Request("c", (Message("user", "q"),))
    for arguments in (
        {"status": "answer", "value": 0.0, "confidence": 1.0},
        {"status": "answer", "value": 1},
        {"status": "answer", "bounds": [0, 1]},
        {"status": "answer", "bounds": [0.3, 0.3]},
    ):
        assert validate_causal_answer(request, "submit_answer", arguments) is None


class _OutOfRange:
    """Answers every case with a schema-valid value of 1.25 (outside [0, 1])."""

    name = "test:out-of-range"

    def respond(self, request: Request) -> Response:
        arguments = {"status": "answer", "value": 1.25, "confidence": 0.5}
        return Response(text=None, tool_calls=(ToolCall("submit_answer", json.dumps(arguments)),))


def test_out_of_range_value_is_an_illegal_final_counted_invalid(
    bench: Path, tmp_path: Path
) -> None:
    """The runner finalizes a value of 1.25 as ``illegal`` (not answered); responses count it."""
    schedule = causal_schedule(bench, limit=3)
    agent = _OutOfRange()
    run_dir = create_run(tmp_path, schedule, describe_agent(agent))
    summary = execute_run(run_dir, agent, validator=validate_causal_answer, concurrency=1)
    assert summary.outcomes == {"illegal": 3}
    finals = [e for e in read_events(run_dir / EVENTS) if e["kind"] == "final"]
    assert {e["outcome"] for e in finals} == {"illegal"}
    assert all("value 1.25 outside [0, 1]" in e["detail"] for e in finals)
    assert write_agent_responses(run_dir) == {"responses": 0, "invalid": 3, "missing": 0}


def test_public_file_that_is_not_utf8_names_it(bench: Path, tmp_path: Path) -> None:
    """A public record file given a non-UTF-8 line after sealing is refused, naming the file."""
    import shutil

    copy = tmp_path / "bench"
    shutil.copytree(bench, copy)
    target = copy / "public" / "cases.jsonl"
    lines = target.read_bytes().splitlines(keepends=True)
    target.write_bytes(b"".join([lines[0], b"\xff\xfe\n", *lines[1:]]))
    with pytest.raises(IntegrityError, match="changed since it was sealed") as caught:
        causal_schedule(copy)
    assert str(target) in str(caught.value)
