"""Tests for rungbench.causal.interop.cladder_inspect: CLadder questions as an inspect task."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any, ClassVar

import pytest
from tests.conftest import skip_unless_ci

from rungbench.agents import inspect_logs
from rungbench.causal.interop import cladder
from rungbench.causal.interop import cladder_inspect as ci
from rungbench.errors import IntegrityError, Refusal
from rungbench.evidence.sealed import verify_sealed

DATA = Path(__file__).resolve().parents[3] / "data" / "cladder"


@pytest.fixture(autouse=True)
def _inspect_installed() -> None:
    why = inspect_logs.inspect_available()
    if why is not None:
        skip_unless_ci(why)


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli") / "imp"
    cladder.import_cladder(DATA, root)
    return root


def _outputs(cases: list[dict[str, Any]]) -> list[Any]:
    """Scripted mockllm outputs: the exact label, CLadder's label, the opposite, free text."""
    from inspect_ai.model import ModelOutput, ModelUsage

    out = []
    for i, case in enumerate(cases):
        flip = {"yes": "no", "no": "yes"}
        kind = i % 4
        if kind == 3:
            m = ModelOutput.from_content("mockllm/model", f"Answer: {case['exact_label']}.")
        else:
            label = (case["exact_label"], case["cladder_label"],
                     flip[case["exact_label"]])[kind]
            m = ModelOutput.for_tool_call("mockllm/model", "submit_label", {"label": label})
        m.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
        out.append(m)
    return out


def test_targets_are_exact_labels_and_undecided_items_are_left_out(imported: Path) -> None:
    """The dataset has 4,164 - 68 cases; 14 numeric targets differ from CLadder's label."""
    cases = ci.decided_cases(imported)
    assert len(cases) == 4164 - 68
    assert sum(c["exact_label"] != c["cladder_label"] for c in cases) == 14
    with pytest.raises(IntegrityError, match="changed since"):
        ci.decided_cases(imported, seal="sha256:" + "0" * 64)


def test_eval_log_imports_and_scores_like_direct_scoring(imported: Path, tmp_path: Path) -> None:
    """export -> inspect eval (mockllm) -> import: the imported labels scored directly equal
    inspect's recorded scores and the scripted answers, flipped questions included."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    decided = ci.decided_cases(imported)
    flipped = [c for c in decided if c["exact_label"] != c["cladder_label"]][:4]
    n = 12
    chosen = decided[:n - len(flipped)]
    order = {c["case_id"]: i for i, c in enumerate(decided)}
    ids = sorted({c["case_id"] for c in chosen + flipped}, key=order.__getitem__)
    export = ci.export_cladder_task(imported, tmp_path / "task")
    assert export["n_cases"] == len(decided)
    verify_sealed(tmp_path / "task", kind=ci.EXPORT_KIND)
    spec = importlib.util.spec_from_file_location("exported_task", tmp_path / "task" / "task.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert len(module.rungbench_cladder(limit=3).dataset) == 3
    task = ci.cladder_task(imported, seal_digest=ci.seal_digest(imported))
    task.dataset = task.dataset.filter(lambda s: s.id in ids)
    cases = [decided[order[i]] for i in ids]
    logs = inspect_eval(task, model=get_model("mockllm/model", custom_outputs=_outputs(cases)),
                        log_dir=str(tmp_path / "logs"), display="none", max_samples=1)
    assert logs[0].status == "success"
    result = ci.import_cladder_log(Path(logs[0].location), imported, tmp_path / "r.jsonl")
    assert result["samples"] == n and result["inspect_scores_agree"] == n
    rows = {r["case_id"]: r for r in map(json.loads, (tmp_path / "r.jsonl").read_text()
                                         .splitlines())}
    by_id = {c["case_id"]: c for c in cases}
    expected = {}
    for i, c in enumerate(cases):
        label = [c["exact_label"], c["cladder_label"],
                 {"yes": "no", "no": "yes"}[c["exact_label"]], c["exact_label"]][i % 4]
        expected[c["case_id"]] = label
    assert {k: r["label"] for k, r in rows.items()} == expected
    assert all(r["correct"] == ci.score_label(by_id[k], r["label"]) for k, r in rows.items())
    assert result["correct_exact"] == sum(r["correct"] for r in rows.values())
    assert 0 < result["correct_exact"] < n


def test_logs_of_another_import_are_refused(imported: Path, tmp_path: Path) -> None:
    """A log whose task names another import's seal is refused (foreign_log)."""
    from inspect_ai.log import EvalLog

    class _Eval:
        metadata: ClassVar[dict[str, str]] = {"rungbench_cladder_seal": "sha256:" + "1" * 64}

    log = EvalLog.model_construct(eval=_Eval(), status="success", samples=[])
    with pytest.raises(Refusal) as info:
        ci.log_labels(log, imported)
    assert info.value.codes == ("foreign_log",)


def test_labels_come_from_the_tool_call_else_the_first_yes_or_no_word() -> None:
    """submit_label wins; otherwise the first yes/no word of the final text; else None."""
    from inspect_ai.model import ChatMessageAssistant
    from inspect_ai.tool import ToolCall

    call = ToolCall(id="1", function="submit_label", arguments={"label": "No"})
    assert ci.label_from_messages([ChatMessageAssistant(content="yes", tool_calls=[call])]) == "no"
    assert ci.label_from_messages([ChatMessageAssistant(content="I say YES, not no")]) == "yes"
    assert ci.label_from_messages([ChatMessageAssistant(content="unsure")]) is None
