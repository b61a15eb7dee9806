"""inspect_ai bridge (docs/CONTRACTS.md §16; optional extra ``rungbench[inspect]``).

Export: :func:`export_task` writes a sealed directory holding ``task.py``, an
inspect_ai task file over a built causal bench. Its dataset is the bench's public cases
(rendered exactly as ``causal.bench.requests.causal_request`` renders them for
rungbench's own runner), its solver offers the ``submit_answer`` tool (the same
arguments as the agent_response record) and generates once, and its scorer is
rungbench's deterministic scorer (``causal.bench.scorer.score_dict``) against the
bench's private oracle. ``inspect eval DIR/task.py --model PROVIDER/MODEL`` then runs it
against any provider inspect supports. The task refuses to load when the bench's seal
changed since export.

Import: :func:`import_log` reads an inspect ``.eval`` (or ``.json``) log of such a task
and writes one agent_response line per sample (``responses.jsonl``), extracted from the
sample's messages by the same :func:`response_from_messages` the scorer uses: the first
``submit_answer`` tool call, else a JSON object in the final text, else a line with no
valid status (scored ``invalid``). ``rungbench causal score --responses`` then scores
them as any other run, so the paired analyses, claim gates and reports apply.

An inspect log holds a per-sample score (the verdict outcome) — a per-case record that
CONTRACTS §10 keeps private: write logs of bench tasks where the agent side cannot read
them (``--log-dir`` under the evaluator's private folder). The log carries no oracle
value, tolerance or abs_error.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rungbench.agents.inspect_logs import read_log, require_inspect
from rungbench.causal.bench.records import PrivateOracle, PublicCase
from rungbench.causal.bench.requests import causal_request
from rungbench.causal.bench.scorer import score_dict
from rungbench.causal.bench.verified import bench_cases, bench_oracles, open_bench
from rungbench.errors import (
    IntegrityError,
    Reason,
    Refusal,
)
from rungbench.evidence.canonical import bytes_digest, canonical_bytes
from rungbench.evidence.sealed import SEAL_NAME, publish_dir, verify_sealed

EXPORT_KIND = "rungbench.inspect_task"
"""Seal kind of an exported inspect task directory."""

TASK_NAME = "rungbench_causal"
"""Name of the exported inspect task."""

ARM = "inspect"
"""Default arm of imported responses."""

CORRECT_OUTCOMES = ("correct", "correct_non_id")
"""Verdict outcomes the inspect score counts as correct (1); every other outcome is 0."""

_TASK_FILE = '''"""inspect_ai task exported by rungbench (``rungbench causal export-inspect``).

Run: inspect eval task.py --model PROVIDER/MODEL
"""

from inspect_ai import Task, task

from rungbench.causal.interop.inspect_bridge import causal_task

BENCH = {bench!r}
"""The built causal bench (its seal digest is checked when the task loads)."""

SEAL_DIGEST = {seal!r}
"""Digest of the bench's SEAL.json at export time."""


@task
def {name}(limit: int | None = {limit!r}) -> Task:
    """The bench's public cases, rungbench's submit_answer tool and deterministic scorer."""
    return causal_task(BENCH, seal_digest=SEAL_DIGEST, limit=limit)
'''



def seal_digest(bench: Path) -> str:
    """Digest of a bench's seal file (identifies the exact bench an export targets)."""
    return bytes_digest((bench / SEAL_NAME).read_bytes())


def _cases(bench: Path, seal: str | None, limit: int | None
           ) -> tuple[list[PublicCase], dict[str, PrivateOracle]]:
    if seal is not None and seal_digest(bench) != seal:
        raise IntegrityError(f"{bench / SEAL_NAME}: the bench changed since the task was "
                             "exported (seal digest differs)")
    verified = open_bench(bench)
    cases = bench_cases(verified)
    return (cases if limit is None else cases[:limit]), bench_oracles(verified)


def response_from_messages(case_id: str, messages: Sequence[Any], arm: str = ARM
                           ) -> dict[str, Any]:
    """The agent_response of one inspect sample, from its chat messages."""
    final_text = ""
    for message in messages:
        if getattr(message, "role", None) != "assistant":
            continue
        for call in getattr(message, "tool_calls", None) or []:
            if call.function == "submit_answer":
                args = dict(call.arguments or {})
                args.pop("case_id", None)
                args.pop("arm", None)
                return {"case_id": case_id, "arm": arm, **args}
        final_text = str(getattr(message, "text", "") or "")
    start, end = final_text.find("{"), final_text.rfind("}")
    if 0 <= start < end:
        try:
            parsed = json.loads(final_text[start:end + 1])
        except json.JSONDecodeError:
            parsed = None
        if isinstance(parsed, dict):
            parsed.pop("case_id", None)
            parsed.pop("arm", None)
            return {"case_id": case_id, "arm": arm, **parsed}
    return {"case_id": case_id, "arm": arm, "status": "no_answer", "claim_text": final_text}


def score_response(oracle: PrivateOracle, response: Mapping[str, Any]) -> dict[str, Any]:
    """rungbench's verdict of one response (the scorer inside the inspect task)."""
    return score_dict(oracle.model_dump(mode="json"), response)


def causal_task(bench: str | Path, *, seal_digest: str | None = None,
                limit: int | None = None) -> Any:
    """The inspect_ai Task over a built bench (see the module docstring)."""
    require_inspect()
    from inspect_ai import Task
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import ChatMessageSystem, ChatMessageUser
    from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer
    from inspect_ai.solver import TaskState, generate, use_tools
    from inspect_ai.tool import Tool, tool

    root = Path(bench)
    cases, oracles = _cases(root, seal_digest, limit)
    samples = []
    for case in cases:
        request = causal_request(case)
        messages: list[Any] = [ChatMessageSystem(content=m.content) if m.role == "system"
                               else ChatMessageUser(content=m.content)
                               for m in request.messages]
        samples.append(Sample(input=messages, id=case.case_id,
                              metadata={"case_id": case.case_id, "family": case.family,
                                        "rung": case.rung}))

    @tool
    def submit_answer() -> Tool:
        async def execute(status: str, value: float | None = None,
                          bounds: list[float] | None = None, label: str | None = None,
                          confidence: float | None = None, experiment: str | None = None,
                          action: str | None = None, edges: list[list[str]] | None = None,
                          claim_text: str = "") -> str:
            """Submit your answer to the causal question (fields of agent_response).

            Args:
              status: answer, not_identifiable, abstain or need_info.
              value: Numeric answer.
              bounds: [lo, hi] when the question asks for bounds.
              label: Categorical answer.
              confidence: Probability that your answer is correct, in [0, 1].
              experiment: Chosen experiment.
              action: Chosen intervention id.
              edges: Directed edges [cause, effect].
              claim_text: Short justification.
            """
            return "recorded"

        return execute

    @scorer(metrics=[accuracy()])
    def rungbench_scorer() -> Any:
        async def score(state: TaskState, target: Target) -> Score:
            case_id = str(state.metadata["case_id"])
            response = response_from_messages(case_id, state.messages)
            verdict = score_response(oracles[case_id], response)
            right = verdict["outcome"] in CORRECT_OUTCOMES
            return Score(value=CORRECT if right else INCORRECT,
                         answer=canonical_bytes(response).decode(),
                         explanation=str(verdict["outcome"]))

        return score

    return Task(dataset=MemoryDataset(samples, name=root.name),
                solver=[use_tools(submit_answer(), tool_choice="any"),
                        generate(tool_calls="none")],
                scorer=rungbench_scorer(), name=TASK_NAME,
                metadata={"rungbench_bench_seal": seal_digest_of(root)})


def seal_digest_of(bench: Path) -> str:
    """:func:`seal_digest` (kept separate so the task metadata names it explicitly)."""
    return seal_digest(bench)


def export_task(bench: Path, out: Path, *, limit: int | None = None,
                force: bool = False) -> dict[str, Any]:
    """Write the sealed task directory ``out`` for ``bench``; return its summary."""
    verified = open_bench(bench)  # fail closed before anything is written
    n_cases = len(bench_cases(verified))
    seal = seal_digest(bench)
    source = _TASK_FILE.format(bench=str(bench.resolve()), seal=seal, name=TASK_NAME,
                               limit=limit)
    doc = {"schema": "rungbench.inspect_export/1", "task": TASK_NAME,
           "bench": str(bench.resolve()), "bench_seal": seal, "n_cases": n_cases,
           "limit": limit, "run": f"inspect eval {out / 'task.py'} --model PROVIDER/MODEL"}
    with publish_dir(out, kind=EXPORT_KIND, force=force) as tmp:
        (tmp / "task.py").write_text(source, encoding="utf-8")
        (tmp / "export.json").write_bytes(canonical_bytes(doc))
    return doc


def verify_export(out: Path) -> dict[str, Any]:
    """Verify an export directory and return its ``export.json``."""
    verify_sealed(out, kind=EXPORT_KIND, ignore=("__pycache__/",))
    doc: dict[str, Any] = json.loads((out / "export.json").read_bytes())
    return doc



def log_responses(log: Any, bench: Path, *, arm: str = ARM) -> list[dict[str, Any]]:
    """One agent_response per sample of ``log``, in sample-id order; refuses foreign logs."""
    seal = seal_digest(bench)
    meta = dict(getattr(log.eval, "metadata", None) or {})
    task_meta = dict(getattr(log.eval, "task_args", None) or {})
    logged = meta.get("rungbench_bench_seal") or task_meta.get("rungbench_bench_seal")
    if logged is None:
        logged = _task_metadata(log)
    if logged != seal:
        raise Refusal([Reason("foreign_log", f"the log's task was exported from a bench with "
                              f"seal {logged!r}, not {seal!r}", subject=str(bench),
                              data={"logged": logged, "bench": seal})], gate="inspect import")
    if getattr(log, "status", "success") != "success":
        raise Refusal([Reason("unfinished_log", f"the inspect run ended {log.status!r}",
                              subject=str(bench))], gate="inspect import")
    samples = sorted(log.samples or [], key=lambda s: str(s.id))
    return [response_from_messages(str(s.id), s.messages, arm) for s in samples]


def _task_metadata(log: Any) -> Any:
    meta = getattr(log.eval, "task_metadata", None) or {}
    return dict(meta).get("rungbench_bench_seal")


def log_scores(log: Any) -> dict[str, str]:
    """The outcome inspect's run of the rungbench scorer recorded per sample."""
    out = {}
    for s in log.samples or []:
        for score in (s.scores or {}).values():
            out[str(s.id)] = str(score.explanation)
    return out


def import_log(path: Path, bench: Path, out: Path, *, arm: str = ARM,
               force: bool = False) -> dict[str, Any]:
    """Write ``out`` (agent_response JSONL) from an inspect log of an exported task."""
    if out.exists() and not force:
        raise Refusal([Reason("exists", f"{out} exists; pass --force to replace it",
                              subject=str(out))], gate="inspect import")
    log = read_log(path)
    responses = log_responses(log, bench, arm=arm)
    oracles = bench_oracles(open_bench(bench))
    unknown = [r["case_id"] for r in responses if r["case_id"] not in oracles]
    if unknown:
        raise Refusal([Reason("foreign_cases", f"{len(unknown)} samples name no bench case",
                              subject=str(path), data={"examples": unknown[:5]})],
                      gate="inspect import")
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_bytes(b"".join(canonical_bytes(r) + b"\n" for r in responses))
    tmp.replace(out)
    recorded = log_scores(log)
    rescored = {r["case_id"]: score_response(oracles[r["case_id"]], r)["outcome"]
                for r in responses}
    agree = sum(1 for k, v in rescored.items() if recorded.get(k) == v)
    return {"log": str(path), "samples": len(responses), "responses": str(out),
            "inspect_scores_agree": agree, "model": str(getattr(log.eval, "model", ""))}
