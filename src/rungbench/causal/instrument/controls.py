"""The C0–C5 control matrix of seed 003 ("Matched controls"), run on any ``causal()``.

Each row changes only the graph contents; the query text, the harness (this module), the
parser (:func:`http_contract.parse_response`) and the scorers are the same objects in
every row, and their sha256 digests are recomputed per row into the manifest (a
difference is an IntegrityError). Rows: ``C0`` original (targets withheld), ``C1`` target
present, ``C2`` minimal oracle (targets only), ``C3`` full oracle (every case's true
mechanism, multi-hop paths included), ``C4-empty``, ``C4-unrelated`` (equal size, the
case endpoints present but unconnected), ``C5-reversed``, ``C5-sign`` (one edge per path
flipped — flipping every edge of an even-length path cancels, the seed's harness bug),
``C5-sibling`` (the last target edge's effect swapped to the effect's sibling).

Every case passes four logged stages: (1) database lookup — direct SQL for the target
rows; (2) tool response — the raw return, or a ``crash`` / ``timeout`` outcome;
(3) harness parse — ``unparseable`` is its own outcome; (4) score. Truth per condition
comes from :func:`truth` over the in-memory edge list (never from the store or a tool).
A wrong verdict is localized to the first stage whose output is wrong: stage 1 when the
SQL disagrees with the edge list, stage 2 when the raw response (read by the independent
:func:`strict_check.strict_check`) disagrees with the truth, stage 3 when the parse lost or
changed it, else stage 4 (the scorer). No case is ever dropped. Those localizations give
two labels of seed 003's failure taxonomy per control case (:func:`failure_label`): graph
retrieval failure and scorer / harness failure.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rungbench.causal.bench.taxonomy import GRAPH_RETRIEVAL, SCORER_HARNESS
from rungbench.causal.instrument.cases import TAGS, Case, World
from rungbench.causal.instrument.graph_store import Edge, GraphStore, write_store
from rungbench.causal.instrument.http_contract import Unparseable, parse_response, raw_bytes
from rungbench.causal.instrument.query import CausalTool, ToolRequest
from rungbench.causal.instrument.scorers import Gold, Scorer
from rungbench.causal.instrument.strict_check import strict_check
from rungbench.errors import IntegrityError

CONDITIONS = ("C0", "C1", "C2", "C3", "C4-empty", "C4-unrelated", "C5-reversed", "C5-sign",
              "C5-sibling")
INSTRUMENT_ROWS = CONDITIONS[1:]
"""The eight conditions that diagnose the instrument (C0 is the measurement)."""
RECOVERY_ROWS = ("C1", "C2", "C3")
FALSE_ACCEPT_ROWS = ("C4-empty", "C4-unrelated", "C5-reversed", "C5-sign", "C5-sibling")
PASS_BARS = {"C1": 40, "C2": 40, "C3": 38}
"""Seed pass bars for n = 40 (scaled by n/40 for other case sets); C4 0, C5 ≤ 1 each."""
STAGES = ("database lookup", "tool response", "harness parse", "score")


@dataclass(frozen=True)
class Graph:
    """The contents of one condition."""

    edges: tuple[Edge, ...]
    """Every edge of the condition."""
    aliases: tuple[tuple[str, str], ...]
    """The alias table of the condition."""


def flip_one(path: Sequence[Edge]) -> tuple[Edge, ...]:
    """Flip the sign of exactly one edge (the middle one): the net sign always changes."""
    k = len(path) // 2
    return tuple(replace(e, polarity="-" if e.polarity == "+" else "+") if i == k else e
                 for i, e in enumerate(path))


def flip_all(path: Sequence[Edge]) -> tuple[Edge, ...]:
    """The seed's buggy corruption: flip every edge (cancels on even-length paths)."""
    return tuple(replace(e, polarity="-" if e.polarity == "+" else "+") for e in path)


def net_sign(path: Sequence[Edge]) -> str:
    """Product of the edge signs along ``path``."""
    return "-" if sum(e.polarity == "-" for e in path) % 2 else "+"


def _corrupt(world: World, how: str) -> tuple[Edge, ...]:
    swap: dict[str, Edge] = {}
    for case in world.cases:
        path = list(case.target)
        k = len(path) // 2
        if how == "reversed":
            path[k] = replace(path[k], cause=path[k].effect, effect=path[k].cause)
        elif how == "sign":
            path = list(flip_one(path))
        else:
            path[-1] = replace(path[-1], effect=case.sibling)
        swap.update({old.edge_id: new for old, new in zip(case.target, path, strict=True)})
    return tuple(swap.get(e.edge_id, e) for e in world.edges)


def _unrelated(world: World) -> tuple[Edge, ...]:
    """As many edges as C1; each case's endpoints present but never connected."""
    edges: list[Edge] = []
    for case in world.cases:
        sink, source = f"unrelated sink {case.case_id}", f"unrelated source {case.case_id}"
        edges += [Edge(f"u-{case.case_id}-a", case.gold.cause, sink),
                  Edge(f"u-{case.case_id}-b", source, case.gold.effect)]
    j = 0
    while len(edges) < len(world.edges):
        edges.append(Edge(f"u-bg-{j:04d}", f"unrelated node {j:04d}",
                          f"unrelated node {j + 1:04d}"))
        j += 1
    return tuple(edges)


def condition_graphs(world: World) -> dict[str, Graph]:
    """The nine graphs of the matrix, built from the world's edge list."""
    withheld = {e.edge_id for c in world.cases for e in c.target}
    aliases = world.aliases
    return {
        "C0": Graph(tuple(e for e in world.edges if e.edge_id not in withheld), aliases),
        "C1": Graph(world.edges, aliases),
        "C2": Graph(tuple(e for c in world.cases for e in c.target), aliases),
        "C3": Graph(tuple(e for c in world.cases for e in c.mechanism), aliases),
        "C4-empty": Graph((), ()),
        "C4-unrelated": Graph(_unrelated(world), aliases),
        "C5-reversed": Graph(_corrupt(world, "reversed"), aliases),
        "C5-sign": Graph(_corrupt(world, "sign"), aliases),
        "C5-sibling": Graph(_corrupt(world, "sibling"), aliases),
    }


def truth(gold: Gold, edges: Sequence[Edge]) -> bool:
    """Whether the gold answer is true of ``edges`` (the oracle; no store, no tool)."""
    causal = [e for e in edges if e.relation_kind == "causal_claim"]
    if gold.kind == "path":
        have = {(e.cause, e.effect, e.polarity, e.condition) for e in causal}
        return all((g.cause, g.effect, g.polarity, g.condition) in have for g in gold.edges)
    reach, todo = {gold.cause}, [gold.cause]
    while todo:
        node = todo.pop()
        for e in causal:
            if e.cause == node and e.effect not in reach:
                reach.add(e.effect)
                todo.append(e.effect)
    return gold.effect not in reach


def write_conditions(graphs: Mapping[str, Graph], folder: Path) -> dict[str, str]:
    """One SQLite store per condition under ``folder``; returns condition → path."""
    folder.mkdir(parents=True, exist_ok=True)
    paths: dict[str, str] = {}
    for name, graph in graphs.items():
        path = folder / f"{name}.sqlite"
        path.unlink(missing_ok=True)
        write_store(path, graph.edges, graph.aliases).close()
        paths[name] = str(path)
    return paths


@dataclass(frozen=True)
class CaseRun:
    """The four logged stages of one case in one condition for one tool."""

    condition: str
    """Condition name."""
    case_id: str
    """Case id."""
    tag: str
    """Case tag."""
    db_present: bool
    """Stage 1: direct SQL found every target row."""
    db_expected: bool
    """Whether the edge list holds every target row (what stage 1 must say)."""
    raw: str
    """Stage 2: the raw response text (or the crash / timeout message)."""
    outcome: str
    """``ok`` · ``tool_error`` (a defined error) · ``crash`` · ``timeout`` · ``unparseable``."""
    parsed: dict[str, Any] | None
    """Stage 3: the parsed response as contract JSON (None unless parsed)."""
    reference: bool
    """Whether the raw response states the gold answer (independent strict check)."""
    parsed_reference: bool
    """The same check on the parsed response (differs from ``reference``: the parse erred)."""
    truth: bool
    """Whether the gold answer is true in this condition."""
    verdicts: dict[str, bool]
    """Stage 4: each scorer's hit (False when there is nothing to score)."""

    def localize(self, scorer: str) -> str | None:
        """First stage whose output is wrong for ``scorer`` (None if the verdict is right)."""
        if self.verdicts[scorer] == self.truth:
            return None
        if self.db_present != self.db_expected:
            return STAGES[0]
        if self.outcome in ("crash", "timeout") or self.reference != self.truth:
            return STAGES[1]
        if self.parsed is None or self.parsed_reference != self.reference:
            return STAGES[2]
        return STAGES[3]


def failure_label(r: CaseRun, scorer: str) -> str | None:
    """The seed 003 taxonomy label a wrong verdict's localization licenses, or None.

    "Graph retrieval failure: edge present in DB, absent from tool output (stage log)" — the
    miss is localized to the tool response while the store holds the true target. "Scorer /
    harness failure: stage 2 output correct, stage 4 verdict wrong" — localized to the
    harness parse or the score, the raw response being right. A store that disagrees with
    its edge list (stage 1) is no label of the seed's.
    """
    stage = r.localize(scorer)
    if stage == STAGES[1] and r.truth and r.db_present:
        return GRAPH_RETRIEVAL
    if stage in (STAGES[2], STAGES[3]):
        return SCORER_HARNESS
    return None


def _digest(text: str | bytes) -> str:
    data = text.encode() if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()


def source_digest(obj: object) -> str:
    """sha256 of an object's source (a user function, a built-in scorer, the parser)."""
    target = getattr(obj, "__wrapped__", obj)
    try:
        return _digest(inspect.getsource(target))  # type: ignore[arg-type]
    except (OSError, TypeError):
        return _digest(repr(target))


def _call(pool: list[ThreadPoolExecutor], tool: CausalTool, request: ToolRequest,
          timeout: float) -> tuple[str, bytes | str]:
    future = pool[0].submit(tool, request)
    try:
        return "ok", raw_bytes(future.result(timeout=timeout))
    except FutureTimeout:
        pool[0].shutdown(wait=False, cancel_futures=True)
        pool[0] = ThreadPoolExecutor(max_workers=1)
        return "timeout", f"no response within {timeout} s"
    except TimeoutError as exc:
        return "timeout", f"timeout: {exc}"
    except Unparseable as exc:
        return "unparseable", str(exc)
    except Exception as exc:
        return "crash", f"{type(exc).__name__}: {exc}"


def run_case(case: Case, condition: str, graph: Graph, store: GraphStore, path: str,
             tool: CausalTool, scorers: Mapping[str, Scorer],
             pool: list[ThreadPoolExecutor], timeout: float) -> CaseRun:
    """The four stages of one case (the harness: identical for every row)."""
    edge_set = set(graph.edges)
    expected = all(e in edge_set for e in case.target)
    present = all(store.lookup_row(e) for e in case.target)
    aliases = dict(graph.aliases)
    gold_json = case.gold.to_json()
    status, raw = _call(pool, tool, ToolRequest(path, case.query), timeout)
    is_true = truth(case.gold, graph.edges)
    parsed_json: dict[str, Any] | None = None
    verdicts = {name: False for name in scorers}
    outcome = status
    reference = False
    parsed_reference = False
    if status in ("ok", "unparseable") and isinstance(raw, bytes):
        reference = strict_check(gold_json, raw, aliases)
        try:
            parsed = parse_response(raw)
        except Unparseable as exc:
            outcome, raw = "unparseable", raw + f"  [{exc}]".encode()
        else:
            parsed_json = parsed.to_json()
            outcome = "tool_error" if parsed.status == "error" else "ok"
            parsed_reference = strict_check(gold_json, parsed_json, aliases)
            for name, scorer in scorers.items():
                try:
                    verdicts[name] = bool(scorer(case.gold, parsed, aliases))
                except Exception:
                    verdicts[name] = False
    text = raw.decode(errors="replace") if isinstance(raw, bytes) else raw
    return CaseRun(condition, case.case_id, case.tag, present, expected, text, outcome,
                   parsed_json, reference, parsed_reference, is_true, verdicts)


@dataclass(frozen=True)
class ToolRun:
    """Every case of every condition for one tool."""

    tool: str
    """Tool spec."""
    runs: tuple[CaseRun, ...]
    """Condition-major, case order inside."""
    manifest: dict[str, dict[str, str]]
    """Per condition: the hashes of query text, harness, parser, scorers, store."""
    seconds: float
    """Wall time of the eight instrument conditions (C1–C5)."""


def run_tool(name: str, tool: CausalTool, world: World, graphs: Mapping[str, Graph],
             stores: Mapping[str, str], scorers: Mapping[str, Scorer], *,
             timeout: float = 5.0, tick: Callable[[int], None] | None = None) -> ToolRun:
    """Run every condition for one tool; raise IntegrityError if a row's hashes differ."""
    runs: list[CaseRun] = []
    manifest: dict[str, dict[str, str]] = {}
    pool = [ThreadPoolExecutor(max_workers=1)]
    seconds = 0.0
    try:
        for condition in CONDITIONS:
            start = time.perf_counter()
            store = GraphStore.open(stores[condition])
            queries = [c.query for c in world.cases]
            manifest[condition] = {
                "query_text_sha256": _digest("\n".join(queries)),
                "harness_sha256": source_digest(run_case),
                "parser_sha256": source_digest(parse_response),
                **{f"scorer_{s}_sha256": source_digest(f) for s, f in scorers.items()},
                "store_sha256": _digest(Path(stores[condition]).read_bytes()),
            }
            for case in world.cases:
                runs.append(run_case(case, condition, graphs[condition], store,
                                     stores[condition], tool, scorers, pool, timeout))
                if tick is not None:
                    tick(len(runs))
            store.close()
            if condition != "C0":
                seconds += time.perf_counter() - start
    finally:
        pool[0].shutdown(wait=False, cancel_futures=True)
    shared = {k for k in manifest["C0"] if k != "store_sha256"}
    for condition, row in manifest.items():
        if any(row[k] != manifest["C0"][k] for k in shared):
            raise IntegrityError(f"row {condition}: query text, harness, parser or scorer "
                                 "differs from row C0")
    return ToolRun(name, tuple(runs), manifest, seconds)


def _bar(name: str, n: int) -> int:
    return round(PASS_BARS[name] * n / 40)


def summarize(run: ToolRun, scorer: str, n: int) -> dict[str, Any]:
    """One query × scorer row: recoveries, false accepts, outcomes, tags, localization."""
    by_cond: dict[str, list[CaseRun]] = {c: [] for c in CONDITIONS}
    for r in run.runs:
        by_cond[r.condition].append(r)
    recovered = {c: sum(r.verdicts[scorer] for r in by_cond[c]) for c in ("C0", *RECOVERY_ROWS)}
    false = {c: sum(r.verdicts[scorer] and not r.truth for r in by_cond[c])
             for c in FALSE_ACCEPT_ROWS}
    outcomes = {c: dict(Counter(r.outcome for r in by_cond[c])) for c in CONDITIONS}
    where = {c: dict(Counter(s for r in by_cond[c] if (s := r.localize(scorer)))) for c in
             INSTRUMENT_ROWS}
    labelled = {c: dict(Counter(lb for r in by_cond[c] if (lb := failure_label(r, scorer))))
                for c in INSTRUMENT_ROWS}
    tags: dict[str, dict[str, str]] = {}
    for tag in TAGS:
        row: dict[str, str] = {}
        for c in ("C0", *RECOVERY_ROWS):
            cell = [r for r in by_cond[c] if r.tag == tag]
            row[c] = f"{sum(r.verdicts[scorer] for r in cell)}/{len(cell)}"
        for c in FALSE_ACCEPT_ROWS:
            row[c] = str(sum(r.verdicts[scorer] and not r.truth
                             for r in by_cond[c] if r.tag == tag))
        tags[tag] = row
    confusion = {}
    for label, rows in (("C1", ("C1",)), ("C4", ("C4-empty", "C4-unrelated")),
                        ("C5", ("C5-reversed", "C5-sign", "C5-sibling"))):
        cells = [r for c in rows for r in by_cond[c]]
        confusion[label] = {
            "true_hit": sum(r.truth and r.verdicts[scorer] for r in cells),
            "false_miss": sum(r.truth and not r.verdicts[scorer] for r in cells),
            "false_hit": sum(not r.truth and r.verdicts[scorer] for r in cells),
            "true_miss": sum(not r.truth and not r.verdicts[scorer] for r in cells)}
    broken = sum(outcomes[c].get(k, 0) for c in INSTRUMENT_ROWS
                 for k in ("crash", "timeout", "unparseable"))
    failures = [f"{c} {recovered[c]}/{n} < {_bar(c, n)}" for c in RECOVERY_ROWS
                if recovered[c] < _bar(c, n)]
    failures += [f"{c} {false[c]} false positives" for c in ("C4-empty", "C4-unrelated")
                 if false[c] > 0]
    failures += [f"{c} {false[c]} false accepts > 1" for c in FALSE_ACCEPT_ROWS[2:]
                 if false[c] > 1]
    if broken:
        failures.append(f"{broken} crash/timeout/unparseable outcomes")
    return {"query": run.tool, "scorer": scorer, "n": n, "recovered": recovered,
            "false_accepts": false, "outcomes": outcomes, "misses_localized": where,
            "failure_labels": labelled,
            "per_tag": tags, "confusion": confusion, "failures": failures,
            "instrument_valid": not failures}


def verdict(rows: Sequence[Mapping[str, Any]]) -> str:
    """The one-line verdict: did the 0/40 measure the graph or the instrument?"""
    valid = [r for r in rows if r["instrument_valid"]]
    if valid and len(valid) == len(rows):
        r = valid[0]
        names = ", ".join(f"{x['query']} x {x['scorer']}" for x in valid)
        return (f"graph: the instrument passes every control ({names}), so C0 = "
                f"{r['recovered']['C0']}/{r['n']} measures the graph, not the instrument")
    bad = [r for r in rows if not r["instrument_valid"]]
    detail = "; ".join(f"{r['query']} x {r['scorer']}: {', '.join(r['failures'][:2])}"
                       for r in bad)
    first = bad[0]
    return (f"instrument: C0 = {first['recovered']['C0']}/{first['n']} on this instrument "
            f"measures the instrument, not the graph ({detail})")


def manifest_json(runs: Sequence[ToolRun]) -> dict[str, Any]:
    """The run manifest: per tool and condition, the hashes that must not vary."""
    return {r.tool: r.manifest for r in runs}


def dumps_runs(run: ToolRun) -> str:
    """Every stage log of one tool as JSON lines (for ``--out``)."""
    return "".join(json.dumps({"tool": run.tool, **r.__dict__}, sort_keys=True) + "\n"
                   for r in run.runs)
