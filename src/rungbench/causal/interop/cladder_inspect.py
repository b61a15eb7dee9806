"""CLadder questions as an inspect_ai task (docs/CONTRACTS.md §16 over the import of §23).

Export: :func:`export_cladder_task` writes a sealed directory holding ``task.py`` over a
sealed CLadder import (``rungbench causal import cladder``). Its dataset is the imported
cases whose exact label is decided (the 68 ``backadj`` items where both candidate sets
are valid back-door sets have no exact label and are left out), each sample's target is
the EXACT label (``exact_label``, not CLadder's stored one), its solver offers the
``submit_label`` tool (one argument, ``yes`` or ``no``) and generates once, and its
scorer is :func:`score_label`: the first ``submit_label`` call, else the first
``yes``/``no`` word of the final text, compared with the target. The task refuses to load
when the import's seal changed since export.

Import: :func:`import_cladder_log` reads an inspect log of such a task and writes one
``rungbench.cladder_response/1`` line per sample (case id, the label extracted by the same
:func:`label_from_messages`), rescored directly against the import's cases; the summary
reports accuracy against the exact label and against CLadder's stored label, and how many
of inspect's recorded scores agree with the direct ones.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rungbench.causal.interop.cladder import CLADDER_IMPORT_KIND
from rungbench.errors import InputError, IntegrityError, Reason, Refusal
from rungbench.evidence.canonical import bytes_digest, canonical_bytes
from rungbench.evidence.sealed import SEAL_NAME, publish_dir, verify_sealed

EXPORT_KIND = "rungbench.inspect_cladder_task"
"""Seal kind of an exported CLadder inspect task directory."""

TASK_NAME = "rungbench_cladder"
"""Name of the exported inspect task."""

RESPONSE_SCHEMA = "rungbench.cladder_response/1"
"""Schema of one imported CLadder response line."""

SYSTEM_PROMPT = ("Answer the causal question about the hypothetical world described. "
                 "Reply by calling submit_label with label 'yes' or 'no'.")
"""System message of every sample."""

_WORD = re.compile(r"\b(yes|no)\b", re.IGNORECASE)

_TASK_FILE = '''"""inspect_ai task exported by ``rungbench causal export-inspect --cladder``.

Run: inspect eval task.py --model PROVIDER/MODEL
"""

from inspect_ai import Task, task

from rungbench.causal.interop.cladder_inspect import cladder_task

IMPORT = {root!r}
"""The sealed CLadder import (its seal digest is checked when the task loads)."""

SEAL_DIGEST = {seal!r}
"""Digest of the import's SEAL.json at export time."""


@task
def {name}(limit: int | None = {limit!r}) -> Task:
    """CLadder questions with their exact labels as targets and rungbench's label scorer."""
    return cladder_task(IMPORT, seal_digest=SEAL_DIGEST, limit=limit)
'''


def seal_digest(root: Path) -> str:
    """Digest of the import's seal file."""
    return bytes_digest((root / SEAL_NAME).read_bytes())


def decided_cases(root: Path, *, seal: str | None = None,
                  limit: int | None = None) -> list[dict[str, Any]]:
    """The sealed import's cases that have an exact label, in file order (verified read)."""
    if seal is not None and seal_digest(root) != seal:
        raise IntegrityError(f"{root / SEAL_NAME}: the CLadder import changed since the task "
                             "was exported (seal digest differs)")
    verify_sealed(root, kind=CLADDER_IMPORT_KIND)
    cases = []
    for i, line in enumerate((root / "cases.jsonl").read_text(encoding="utf-8").splitlines()):
        case = json.loads(line)
        if not isinstance(case, dict) or case.get("schema") != "rungbench.cladder_case/1":
            raise InputError("not a rungbench.cladder_case/1 record",
                             path=str(root / "cases.jsonl"), line=i + 1)
        if case.get("exact_label") in ("yes", "no"):
            cases.append(case)
    return cases if limit is None else cases[:limit]


def label_from_messages(messages: Sequence[Any]) -> str | None:
    """The label of one sample: first ``submit_label`` call, else the first yes/no word of
    the final assistant text; None when neither gives ``yes`` or ``no``."""
    final_text = ""
    for message in messages:
        if getattr(message, "role", None) != "assistant":
            continue
        for call in getattr(message, "tool_calls", None) or []:
            if call.function == "submit_label":
                label = str((call.arguments or {}).get("label", "")).strip().lower()
                return label if label in ("yes", "no") else None
        final_text = str(getattr(message, "text", "") or "")
    found = _WORD.search(final_text)
    return found.group(1).lower() if found else None


def score_label(case: Mapping[str, Any], label: str | None) -> bool:
    """Whether ``label`` equals the case's exact label (None is wrong)."""
    return label is not None and label == case["exact_label"]


def cladder_task(root: str | Path, *, seal_digest: str | None = None,
                 limit: int | None = None) -> Any:
    """The inspect_ai Task over a sealed CLadder import (module docstring)."""
    from rungbench.agents.inspect_logs import require_inspect

    require_inspect()
    from inspect_ai import Task
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import ChatMessageSystem, ChatMessageUser
    from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer
    from inspect_ai.solver import TaskState, generate, use_tools
    from inspect_ai.tool import Tool, tool

    base = Path(root)
    cases = decided_cases(base, seal=seal_digest, limit=limit)
    by_id = {c["case_id"]: c for c in cases}
    samples = [Sample(input=[ChatMessageSystem(content=SYSTEM_PROMPT),
                             ChatMessageUser(content=str(c["question"]))],
                      target=str(c["exact_label"]), id=str(c["case_id"]),
                      metadata={"case_id": c["case_id"], "family": c["family"],
                                "query_type": c["query_type"], "rung": c["rung"],
                                "cladder_label": c["cladder_label"]})
               for c in cases]

    @tool
    def submit_label() -> Tool:
        async def execute(label: str) -> str:
            """Submit your answer to the causal question.

            Args:
              label: yes or no.
            """
            return "recorded"

        return execute

    @scorer(metrics=[accuracy()])
    def rungbench_label_scorer() -> Any:
        async def score(state: TaskState, target: Target) -> Score:
            label = label_from_messages(state.messages)
            right = score_label(by_id[str(state.metadata["case_id"])], label)
            return Score(value=CORRECT if right else INCORRECT, answer=label or "",
                         explanation="correct" if right else "wrong")

        return score

    return Task(dataset=MemoryDataset(samples, name=base.name),
                solver=[use_tools(submit_label(), tool_choice="any"),
                        generate(tool_calls="none")],
                scorer=rungbench_label_scorer(), name=TASK_NAME,
                metadata={"rungbench_cladder_seal": seal_digest_of(base)})


def seal_digest_of(root: Path) -> str:
    """:func:`seal_digest` (named for the task metadata)."""
    return seal_digest(root)


def export_cladder_task(root: Path, out: Path, *, limit: int | None = None,
                        force: bool = False) -> dict[str, Any]:
    """Write the sealed task directory ``out`` over the CLadder import ``root``."""
    n_cases = len(decided_cases(root))  # fail closed before anything is written
    seal = seal_digest(root)
    source = _TASK_FILE.format(root=str(root.resolve()), seal=seal, name=TASK_NAME,
                               limit=limit)
    doc = {"schema": "rungbench.inspect_cladder_export/1", "task": TASK_NAME,
           "import": str(root.resolve()), "import_seal": seal, "n_cases": n_cases,
           "limit": limit, "target": "exact_label",
           "run": f"inspect eval {out / 'task.py'} --model PROVIDER/MODEL"}
    with publish_dir(out, kind=EXPORT_KIND, force=force) as tmp:
        (tmp / "task.py").write_text(source, encoding="utf-8")
        (tmp / "export.json").write_bytes(canonical_bytes(doc))
    return doc


def log_labels(log: Any, root: Path) -> dict[str, str | None]:
    """The label of every sample of ``log``; refuses a log of another import."""
    seal = seal_digest(root)
    logged = (dict(getattr(log.eval, "metadata", None) or {}).get("rungbench_cladder_seal")
              or dict(getattr(log.eval, "task_metadata", None) or {}).get(
                  "rungbench_cladder_seal"))
    if logged != seal:
        raise Refusal([Reason("foreign_log", f"the log's task was exported from a CLadder "
                              f"import with seal {logged!r}, not {seal!r}", subject=str(root),
                              data={"logged": logged, "import": seal})], gate="inspect import")
    if getattr(log, "status", "success") != "success":
        raise Refusal([Reason("unfinished_log", f"the inspect run ended {log.status!r}",
                              subject=str(root))], gate="inspect import")
    return {str(s.id): label_from_messages(s.messages)
            for s in sorted(log.samples or [], key=lambda s: str(s.id))}


def import_cladder_log(path: Path, root: Path, out: Path, *,
                       force: bool = False) -> dict[str, Any]:
    """Write ``out`` (one response line per sample) from an inspect log; return the summary."""
    from rungbench.agents.inspect_logs import read_log
    from rungbench.causal.interop.inspect_bridge import log_scores

    if out.exists() and not force:
        raise Refusal([Reason("exists", f"{out} exists; pass --force to replace it",
                              subject=str(out))], gate="inspect import")
    log = read_log(path)
    labels = log_labels(log, root)
    cases = {c["case_id"]: c for c in decided_cases(root)}
    unknown = [k for k in labels if k not in cases]
    if unknown:
        raise Refusal([Reason("foreign_cases", f"{len(unknown)} samples name no CLadder case",
                              subject=str(path), data={"examples": unknown[:5]})],
                      gate="inspect import")
    rows: list[dict[str, Any]] = [{"schema": RESPONSE_SCHEMA, "case_id": k, "label": v,
                                   "correct": score_label(cases[k], v)}
                                  for k, v in labels.items()]
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_bytes(b"".join(canonical_bytes(r) + b"\n" for r in rows))
    tmp.replace(out)
    recorded = log_scores(log)
    agree = sum(1 for r in rows if recorded.get(str(r["case_id"])) ==
                ("correct" if r["correct"] else "wrong"))
    n = len(rows)
    return {"log": str(path), "samples": n, "responses": str(out),
            "inspect_scores_agree": agree,
            "correct_exact": sum(1 for r in rows if r["correct"]),
            "agree_cladder_label": sum(1 for r in rows
                                       if r["label"] == cases[r["case_id"]]["cladder_label"]),
            "model": str(getattr(log.eval, "model", ""))}
