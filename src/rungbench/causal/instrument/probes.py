"""Seed 003's decisive probes (C.3, C.6) and the section-D query unit checks.

- :func:`probe_query` (C.3): insert the exact target row of every direct case into a
  scratch store and call ``causal()`` with the harness's exact wording; a row present and
  not returned is a query defect.
- :func:`probe_scorer` (C.6): feed the scorer hand-written correct, reversed, aliased and
  empty answers; correct or aliased scored as a miss, or reversed or empty scored as a
  hit, is a scorer defect.
- :func:`unit_checks` (section D): the eight behaviours a ``causal()`` must show on a
  scratch store (never production).

:func:`gate` raises :class:`~rungbench.errors.Refusal` naming every defect found.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rungbench.causal.instrument.cases import Case
from rungbench.causal.instrument.graph_store import Edge, write_store
from rungbench.causal.instrument.http_contract import Unparseable, parse_response, raw_bytes
from rungbench.causal.instrument.query import CausalTool, ResponseEdge, ToolRequest, ToolResponse
from rungbench.causal.instrument.scorers import Gold, GoldEdge, Scorer
from rungbench.causal.instrument.strict_check import strict_check
from rungbench.errors import Reason, Refusal


@dataclass(frozen=True)
class ProbeResult:
    """One probe check."""

    probe: str
    """``query`` (C.3), ``scorer`` (C.6) or ``unit`` (section D)."""
    check: str
    """What was checked."""
    passed: bool
    """Whether the behaviour was right."""
    detail: str
    """What was seen."""


def _ask(tool: CausalTool, store: str, query: str) -> tuple[ToolResponse | None, str]:
    try:
        body = raw_bytes(tool(ToolRequest(store, query)))
        return parse_response(body), body.decode(errors="replace")
    except Unparseable as exc:
        return None, f"unparseable: {exc}"
    except Exception as exc:
        return None, f"crash: {type(exc).__name__}: {exc}"


def probe_query(tool: CausalTool, cases: Sequence[Case], folder: Path) -> list[ProbeResult]:
    """C.3 on every direct case: exact target row present → it must come back."""
    direct = [c for c in cases if c.tag == "direct"]
    store = folder / "probe3.sqlite"
    store.unlink(missing_ok=True)
    write_store(store, [e for c in direct for e in c.target]).close()
    out = []
    for case in direct:
        answer, raw = _ask(tool, str(store), case.query)
        ok = answer is not None and strict_check(case.gold.to_json(), answer.to_json(), {})
        out.append(ProbeResult("query", f"{case.case_id}: {case.query}", ok, raw[:200]))
    return out


PROBE_GOLD = Gold("path", "disk full", "oom kill", (GoldEdge("disk full", "oom kill"),))
PROBE_ALIASES = {"disk space exhausted": "disk full"}


def probe_scorer(scorer: Scorer) -> list[ProbeResult]:
    """C.6: hand-written correct, reversed, aliased and empty answers."""
    answers = {
        "correct": (ToolResponse("found", ((ResponseEdge("disk full", "oom kill"),),)), True),
        "reversed": (ToolResponse("found", ((ResponseEdge("oom kill", "disk full"),),)), False),
        "aliased": (ToolResponse("found", ((ResponseEdge("disk space exhausted",
                                                         "oom kill"),),)), True),
        "empty": (ToolResponse("none"), False),
    }
    out = []
    for name, (answer, want) in answers.items():
        try:
            got = bool(scorer(PROBE_GOLD, answer, PROBE_ALIASES))
        except Exception as exc:
            out.append(ProbeResult("scorer", name, False, f"crash: {exc}"))
            continue
        out.append(ProbeResult("scorer", name, got == want,
                               f"scored {'hit' if got else 'miss'}, must be "
                               f"{'hit' if want else 'miss'}"))
    return out


UNIT_EDGES = (
    Edge("u1", "disk full", "oom kill"),
    Edge("u2", "swap spike", "cache stall"), Edge("u3", "cache stall", "queue backlog"),
    Edge("u4", "fan fault", "kernel freeze", polarity="-"),
    Edge("u5", "lock contention", "worker timeout", condition="when pool saturation"),
)
UNIT_ALIASES = (("disk space exhausted", "disk full"),)


def _unit_specs() -> list[tuple[str, str, Callable[[ToolResponse], bool]]]:
    def paths(r: ToolResponse) -> list[list[tuple[str, str]]]:
        return [[(e.cause, e.effect) for e in p] for p in r.paths]

    return [
        ("intact A->B, 'what does A cause' returns B", "what does disk full cause?",
         lambda r: r.status == "found" and [("disk full", "oom kill")] in paths(r)),
        ("intact A->B, 'what causes B' returns A", "what causes oom kill?",
         lambda r: r.status == "found" and [("disk full", "oom kill")] in paths(r)),
        ("reversed 'does B cause A' is not yes", "does oom kill cause disk full?",
         lambda r: r.status == "none"),
        ("alias 'disk space exhausted' finds 'disk full'", "does disk space exhausted cause "
         "oom kill?", lambda r: r.status == "found" and len(r.paths[0]) == 1),
        ("two-hop A->B->C returns the path, no invented A->C",
         "does swap spike cause queue backlog?",
         lambda r: r.status == "found" and all(len(p) == 2 for p in r.paths)
         and [("swap spike", "cache stall"), ("cache stall", "queue backlog")] in paths(r)),
        ("'A prevents B' is not returned as 'A causes B'", "does fan fault cause kernel freeze?",
         lambda r: r.status != "found" or all(any(e.polarity == "-" for e in p)
                                              for p in r.paths)),
        ("conditional edge comes back with its condition",
         "does lock contention cause worker timeout?",
         lambda r: r.status == "found" and all(any(e.condition for e in p) for p in r.paths)),
        ("missing node is a defined error", "does unicorn drift cause oom kill?",
         lambda r: r.status == "error" and r.error_code == "missing_node"),
        ("malformed input is a defined error", "disk full -> oom kill",
         lambda r: r.status == "error" and r.error_code == "malformed_query"),
        ("empty string is a defined error", "",
         lambda r: r.status == "error" and r.error_code == "empty_query"),
    ]


def unit_checks(tool: CausalTool, folder: Path) -> list[ProbeResult]:
    """Section D on a scratch store: each check names the behaviour it pins."""
    store = folder / "unit.sqlite"
    store.unlink(missing_ok=True)
    write_store(store, UNIT_EDGES, UNIT_ALIASES).close()
    out = []
    for name, query, ok in _unit_specs():
        answer, raw = _ask(tool, str(store), query)
        out.append(ProbeResult("unit", name, answer is not None and ok(answer), raw[:200]))
    return out


def run_probes(tools: Mapping[str, CausalTool], scorers: Mapping[str, Scorer],
               cases: Sequence[Case]) -> dict[str, list[ProbeResult]]:
    """Every probe for every tool and scorer, keyed ``query:NAME`` / ``scorer:NAME``."""
    out: dict[str, list[ProbeResult]] = {}
    with tempfile.TemporaryDirectory(prefix="rungbench-probe-") as tmp:
        for name, tool in tools.items():
            out[f"query:{name}"] = probe_query(tool, cases, Path(tmp))
            out[f"unit:{name}"] = unit_checks(tool, Path(tmp))
    for name, scorer in scorers.items():
        out[f"scorer:{name}"] = probe_scorer(scorer)
    return out


def gate(results: Mapping[str, Sequence[ProbeResult]]) -> None:
    """Refuse when probe C.3 or C.6 failed, naming the tool or scorer and the defect."""
    reasons = []
    for key, rows in results.items():
        kind, _, name = key.partition(":")
        failed = [r for r in rows if not r.passed]
        if not failed or kind == "unit":
            continue
        code = "query_misses_intact_edge" if kind == "query" else "scorer_defect"
        reasons.append(Reason(code, f"{kind} {name!r} failed probe "
                                    f"{'C.3' if kind == 'query' else 'C.6'}: "
                              + "; ".join(f"{r.check} ({r.detail[:60]})" for r in failed[:3]),
                              subject=name, data={"failed": [r.check for r in failed]}))
    if reasons:
        raise Refusal(reasons, gate="instrument probes")
