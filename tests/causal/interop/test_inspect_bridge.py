"""Tests for rungbench.causal.interop.inspect_bridge: export to inspect_ai and import back.

The ``inspect eval`` CLI test runs the plain ``inspect`` binary with its ``openai`` provider
against a loopback OpenAI-compatible server (a real socket, the real SDK); nothing of
inspect's internals is patched.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import skip_unless_ci

from rungbench.agents import inspect_logs
from rungbench.agents.loopback import LoopbackServer
from rungbench.agents.protocol import Request, Response
from rungbench.causal.bench.build import build_split
from rungbench.causal.bench.evaluate import score_responses
from rungbench.causal.bench.verified import (
    bench_cases,
    bench_oracles,
    open_bench,
    open_run,
    run_verdicts,
)
from rungbench.causal.interop import inspect_bridge as bridge
from rungbench.errors import IntegrityError, Refusal

UNAVAILABLE = inspect_logs.inspect_available()
"""Why inspect_ai cannot be used here; the test extra installs it, so under CI it must be."""


@pytest.fixture(autouse=True)
def _inspect_installed() -> None:
    if UNAVAILABLE is not None:
        skip_unless_ci(UNAVAILABLE)

class PlainText:
    """An agent that answers every request with text that is no answer."""

    name = "plain-text"

    def respond(self, request: Request) -> Response:
        return Response(text="I cannot tell from this.")


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ib")
    build_split("dev", 2, 23, root / "bench")
    return root / "bench"


def _outputs(bench: Path, n: int) -> list[Any]:
    """Scripted mockllm outputs: right, wrong, non-ID and malformed answers in turn."""
    from inspect_ai.model import ModelOutput, ModelUsage

    oracles = bench_oracles(open_bench(bench))
    out = []
    for i, case in enumerate(bench_cases(open_bench(bench))[:n]):
        o = oracles[case.case_id]
        right = o.value if o.value is not None else 0.5
        kinds: list[dict[str, Any]] = [{"status": "answer", "value": right, "confidence": 0.8},
                 {"status": "answer", "value": 0.999},
                 {"status": "not_identifiable"}]
        if i % 4 == 3:
            m = ModelOutput.from_content("mockllm/model", "I think it is 0.4")
        else:
            m = ModelOutput.for_tool_call("mockllm/model", "submit_answer", kinds[i % 4])
        m.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
        out.append(m)
    return out


def _scored_outcomes(bench: Path, responses: Path, run: Path) -> dict[str, str]:
    score_responses(bench, responses, run, "inspect")
    return {r["verdict"]["case_id"]: r["verdict"]["outcome"]
            for r in run_verdicts(open_run(run)) if not r["missing"]}


def test_eval_log_imports_and_scores_like_direct_scoring(bench: Path, tmp_path: Path) -> None:
    """inspect's run of the exported task, its log imported and scored by rungbench, and
    scoring the same responses directly all give the same per-case outcomes."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    n = 12
    task = bridge.causal_task(bench, seal_digest=bridge.seal_digest(bench), limit=n)
    logs = inspect_eval(task, model=get_model("mockllm/model", custom_outputs=_outputs(bench, n)),
                        log_dir=str(tmp_path / "logs"), display="none", max_samples=1)
    assert logs[0].status == "success"
    log_path = Path(logs[0].location)
    result = bridge.import_log(log_path, bench, tmp_path / "responses.jsonl")
    assert result["samples"] == n and result["inspect_scores_agree"] == n
    responses = [json.loads(line) for line in (tmp_path / "responses.jsonl").read_text()
                 .splitlines()]
    imported = _scored_outcomes(bench, tmp_path / "responses.jsonl", tmp_path / "run")
    oracles = bench_oracles(open_bench(bench))
    direct = {r["case_id"]: bridge.score_response(oracles[r["case_id"]], r)["outcome"]
              for r in responses}
    recorded = bridge.log_scores(inspect_logs.read_log(log_path))
    assert imported == direct == recorded
    assert {"correct", "wrong", "invalid"} <= set(direct.values())


def test_inspect_eval_cli_runs_the_exported_task(bench: Path, tmp_path: Path) -> None:
    """``inspect eval task.py --model openai/loopback`` runs against a loopback endpoint (one
    HTTP request per sample); its log imports and rescores."""
    bridge.export_task(bench, tmp_path / "task", limit=5)
    bridge.verify_export(tmp_path / "task")
    key = "sk-inspect-" + os.urandom(8).hex()
    with LoopbackServer(PlainText(), api_key=key) as server:
        done = subprocess.run(
            [str(Path(sys.executable).with_name("inspect")), "eval", "task/task.py",
             "--model", "openai/loopback", "-M", "responses_api=false",  # chat completions
             "--log-dir", str(tmp_path / "logs"), "--display", "none"],
            cwd=tmp_path,  # inspect wants a relative task path
            env={**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": key},
            capture_output=True, text=True, timeout=300, check=False)
        served = len(server.served)
    assert done.returncode == 0, done.stderr[-2000:]
    assert served == 5
    logs = sorted((tmp_path / "logs").glob("*.eval"))
    assert inspect_logs.read_log(logs[-1]).status == "success"
    result = bridge.import_log(logs[-1], bench, tmp_path / "r.jsonl")
    assert result["samples"] == 5 and result["inspect_scores_agree"] == 5
    assert result["model"] == "openai/loopback"
    imported = _scored_outcomes(bench, tmp_path / "r.jsonl", tmp_path / "run")
    assert set(imported.values()) == {"invalid"}  # plain text is no answer
    assert len(imported) == 5


def test_logs_of_another_bench_and_changed_benches_are_refused(bench: Path,
                                                               tmp_path: Path) -> None:
    """A log exported from another bench is refused (foreign_log); a changed bench fails."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    other = tmp_path / "other"
    build_split("dev", 2, 99, other)
    task = bridge.causal_task(other, limit=2)
    logs = inspect_eval(task, model=get_model("mockllm/model", custom_outputs=_outputs(other, 2)),
                        log_dir=str(tmp_path / "logs"), display="none")
    with pytest.raises(Refusal) as info:
        bridge.import_log(Path(logs[0].location), bench, tmp_path / "r.jsonl")
    assert info.value.codes == ("foreign_log",)
    with pytest.raises(IntegrityError, match="changed since"):
        bridge.causal_task(bench, seal_digest="sha256:" + "0" * 64)


def test_text_answers_fall_back_to_a_json_object() -> None:
    """Without a tool call, a JSON object in the final text is the response."""
    from inspect_ai.model import ChatMessageAssistant

    msg = ChatMessageAssistant(content='Answer: {"status": "answer", "value": 0.25}')
    assert bridge.response_from_messages("c1", [msg]) == {
        "case_id": "c1", "arm": "inspect", "status": "answer", "value": 0.25}
    none = bridge.response_from_messages("c1", [ChatMessageAssistant(content="no idea")])
    assert none["status"] == "no_answer"
