"""Contamination scan after a validation run (seed 003, "Splits and contamination").

What the agent side wrote is searched for what only the harness should know:

* **validation world ids** — in every stored response of every turn, every tool-call
  argument, and every file of the memory directory the arm declares. The agent is never
  shown a world id (:func:`rungbench.causal.ablations.cells.case_text` strips it), so one in
  its output came from somewhere it should not have read;
* **variable names unique to validation worlds** (names the validation cases use that no
  dev case uses) and **oracle values** (the private oracle's exact values, matched to 4
  decimals when they have at least 4 significant decimals) — in the memory directory. A
  validation response names its item's variables and, when right, the oracle value: that is
  answering, not leaking, so those two needles are searched where the agent keeps state
  across items, as the seed's scan of memory, ledger and summaries does.

Any hit retires the cohort (:mod:`rungbench.causal.ablations.prereg`). Hits are harness-side
records; the agent side is told only how many there were.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rungbench.causal.bench.records import PublicCase
from rungbench.causal.bench.verified import bench_cases, bench_oracles, open_bench
from rungbench.evidence.store import ObjectStore
from rungbench.execute.events import read_events
from rungbench.execute.runner import EVENTS

_WORD = re.compile(r"[A-Za-z0-9_]+")
_DECIMAL = re.compile(r"\d*\.\d{4,}")
MAX_MEMORY_FILE = 8 * 1024 * 1024
"""Largest memory file read whole (bytes); a larger one is scanned in its first 8 MiB."""


@dataclass(frozen=True)
class Needles:
    """What the scan looks for."""

    world_ids: frozenset[str]
    """Validation world ids."""
    names: frozenset[str]
    """Variable names used by validation cases and by no dev case."""
    values: tuple[float, ...]
    """Oracle values with at least 4 significant decimals."""


@dataclass(frozen=True)
class Hit:
    """One contamination finding (harness side)."""

    kind: str
    """``world_id``, ``variable_name`` or ``oracle_value``."""
    needle: str
    """What was found."""
    where: str
    """Run object, tool-call argument or memory file it was found in."""

    def to_json(self) -> dict[str, str]:
        """Return the hit as a JSON-ready mapping."""
        return {"kind": self.kind, "needle": self.needle, "where": self.where}


def case_names(cases: Iterable[PublicCase]) -> set[str]:
    """Every variable name a case shows in its evidence or query."""
    out: set[str] = set()
    for case in cases:
        payload = case.evidence.payload
        for key in ("variables", "graph"):
            for v in payload.get(key, []) or []:
                out.add(str(v["name"]))
        joint = payload.get("joint")
        if isinstance(joint, dict):
            out.update(str(n) for n in joint.get("names", []))
        for part in (case.query or {}).values():
            if isinstance(part, dict):
                out.update(str(k) for k in part)
    return out


def needles(validation: Path, dev: Path | None = None) -> Needles:
    """Needles from a validation bench (and the dev bench whose names are not unique)."""
    bench = open_bench(validation)
    cases = bench_cases(bench)
    names = case_names(cases)
    if dev is not None:
        names -= case_names(bench_cases(open_bench(dev)))
    values = sorted({round(o.value, 4) for o in bench_oracles(bench).values()
                     if o.value is not None and _decimals(o.value) >= 4})
    return Needles(frozenset(c.world_id for c in cases), frozenset(names), tuple(values))


def _decimals(value: float) -> int:
    text = f"{value:.6f}".rstrip("0")
    return len(text.partition(".")[2])


def cell_writings(run_dir: Path) -> list[tuple[str, str, str]]:
    """``(cell, where, text)`` of everything the agent wrote in a run, cell by cell: every
    turn's stored response and every tool call's arguments, of every attempt."""
    store = ObjectStore(run_dir)
    out = []
    for event in read_events(run_dir / EVENTS):
        names: list[str] = []
        if event["kind"] == "tool_event" and event.get("response"):
            names.append(str(event["response"]))
        elif event["kind"] == "tool_call":
            names += [str(event["turn_response"]), str(event["arguments"])]
        for name in names:
            out.append((str(event["cell"]), f"{run_dir.name}/{name}",
                        json.dumps(store.get_json(name))))
    return out


def agent_texts(run_dir: Path) -> list[tuple[str, str]]:
    """``(where, text)`` of everything the agent wrote in a run (:func:`cell_writings`)."""
    return [(where, text) for _, where, text in cell_writings(run_dir)]


def memory_texts(memory: Path | None) -> list[tuple[str, str]]:
    """``(path, text)`` of every regular file under a declared memory directory."""
    if memory is None or not memory.exists():
        return []
    out = []
    for path in sorted(p for p in memory.rglob("*") if p.is_file() and not p.is_symlink()):
        with open(path, "rb") as fh:
            out.append((str(path), fh.read(MAX_MEMORY_FILE).decode("utf-8", "replace")))
    return out


def world_id_hits(where: str, text: str, n: Needles) -> list[Hit]:
    """Validation world ids in one text."""
    return [Hit("world_id", w, where) for w in sorted(set(_WORD.findall(text)) & n.world_ids)]


def name_hits(where: str, text: str, n: Needles) -> list[Hit]:
    """Variable names unique to validation worlds in one text."""
    return [Hit("variable_name", w, where) for w in sorted(set(_WORD.findall(text)) & n.names)]


def value_hits(where: str, text: str, n: Needles) -> list[Hit]:
    """Oracle values (to 4 decimals) in one text."""
    found = {round(float(x), 4) for x in _DECIMAL.findall(text)}
    return [Hit("oracle_value", f"{v:.4f}", where) for v in n.values if v in found]


def scan_text(where: str, text: str, n: Needles, *, memory: bool) -> list[Hit]:
    """Hits in one text; names and oracle values only when ``memory``."""
    hits = world_id_hits(where, text, n)
    if memory:
        hits += name_hits(where, text, n) + value_hits(where, text, n)
    return hits


def scan(runs: Sequence[Path], memory: Path | None, n: Needles) -> list[Hit]:
    """Scan the agent side of ``runs`` and the memory directory; return every hit."""
    hits: list[Hit] = []
    for run in runs:
        for where, text in agent_texts(run):
            hits += scan_text(where, text, n, memory=False)
    for where, text in memory_texts(memory):
        hits += scan_text(where, text, n, memory=True)
    return hits


def summary(hits: Sequence[Hit]) -> dict[str, Any]:
    """What the agent side may be told: counts by kind, nothing else."""
    counts: dict[str, int] = {}
    for h in hits:
        counts[h.kind] = counts.get(h.kind, 0) + 1
    return {"hits": len(hits), "by_kind": dict(sorted(counts.items()))}
