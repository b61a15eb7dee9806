"""Derived numbers and the one-page weekly report (seed 003 "Shadow evaluation and weekly
report", "Separate intent, action and outcome", "What counts as useful").

Every number is computed from the claim store (after verifying every chain: a broken
store is never reported on) and, for the bench and query-reliability blocks, from JSON
documents of the latest bench and control runs when given. Rules the seed fixes:

- routing rate = opportunities followed by a ``causal`` tool call (same episode, before
  the next opportunity) ÷ opportunities; graph calls are a diagnostic count, never a reward;
- an experiment is executed only when a tool event sits at its ``executed_seq``; a
  proposal without one is an intention;
- a prediction with no independent resolver row is **unresolved**, never failed;
- resolution coverage = claims with a resolved prediction ÷ claims older than 7 days;
- a verified useful conclusion = a claim whose current status is asserted with a
  prediction resolved as predicted by an independent resolver (telemetry, sandbox,
  operator); a root cause confirmed by fix-and-recheck is logged as such a prediction
  (action = the fix, predicted effect = the symptom clears, resolved by the recheck).

An episode belongs to the week in which its earliest opportunity or claim falls.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from rungbench.causal.instrument.claims import (
    Connection,
    column_names,
    decode_list,
    open_target,
    verify_connection,
)
from rungbench.errors import InputError
from rungbench.stats.intervals import wilson

Answer = Literal["yes", "no", "inconclusive"]

RESOLUTION_AGE = timedelta(days=7)
"""Claims older than this are in the resolution-coverage denominator."""

GRAPH_TOOLS = ("causal", "graph")
"""Tool names that count as graph calls (diagnostic)."""


def parse_t(text: str) -> datetime:
    """A stored UTC timestamp (``…Z``)."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _rows(db: Connection, table: str) -> list[dict[str, Any]]:
    cols = column_names(table)
    return [dict(zip(cols, r, strict=True))
            for r in db.execute(f"SELECT {', '.join(cols)} FROM {table} ORDER BY log_seq")]


@dataclass(frozen=True)
class Window:
    """The reporting week: ``[start, end)``; ``end`` is also the as-of time."""

    start: datetime
    """First instant of the week (UTC)."""
    end: datetime
    """First instant after it (UTC)."""

    def holds(self, t: datetime) -> bool:
        """Whether ``t`` falls in the week."""
        return self.start <= t < self.end


def _rate(k: int, n: int) -> dict[str, Any]:
    if n == 0:
        return {"k": k, "n": n, "rate": None, "wilson95": None}
    lo, hi = wilson(k, n)
    return {"k": k, "n": n, "rate": round(k / n, 6), "wilson95": [round(lo, 6), round(hi, 6)]}


def episodes_in(tables: Mapping[str, list[dict[str, Any]]], window: Window) -> set[str]:
    """Episodes whose earliest opportunity or claim time falls in the window."""
    first: dict[str, datetime] = {}
    for table in ("causal_opportunity", "causal_claim"):
        for r in tables[table]:
            t = parse_t(r["t"])
            if r["episode_id"] not in first or t < first[r["episode_id"]]:
                first[r["episode_id"]] = t
    return {e for e, t in first.items() if window.holds(t)}


def routing(opps: list[dict[str, Any]], calls: list[dict[str, Any]]) -> dict[str, Any]:
    """Opportunities followed by a ``causal`` call before the episode's next opportunity."""
    by_episode: dict[str, list[int]] = defaultdict(list)
    for o in opps:
        by_episode[o["episode_id"]].append(o["seq"])
    causal_calls: dict[str, list[int]] = defaultdict(list)
    for c in calls:
        if c["tool"] == "causal":
            causal_calls[c["episode_id"]].append(c["seq"])
    routed = 0
    for episode, seqs in by_episode.items():
        seqs = sorted(seqs)
        for i, s in enumerate(seqs):
            nxt = seqs[i + 1] if i + 1 < len(seqs) else None
            routed += any(c >= s and (nxt is None or c < nxt) for c in causal_calls[episode])
    kinds: dict[str, int] = defaultdict(int)
    for o in opps:
        kinds[o["kind"]] += 1
    return {"opportunities": len(opps), "routed": routed,
            "routing_rate": _rate(routed, len(opps)), "by_kind": dict(sorted(kinds.items())),
            "graph_calls_diagnostic": sum(c["tool"] in GRAPH_TOOLS for c in calls)}


def experiments(rows: list[dict[str, Any]], calls: list[dict[str, Any]],
                claims: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    """Proposed vs executed (with a tool event), discriminating share, outcome matched."""
    proposed = {r["exp_id"]: r for r in rows if r["event"] == "experiment_proposed"}
    executed = {r["exp_id"]: r for r in rows if r["event"] == "experiment_executed"}
    tool_at = {(c["episode_id"], c["seq"]) for c in calls}
    confirmed = {e: r for e, r in executed.items()
                 if e in proposed and (r["episode_id"], r["executed_seq"]) in tool_at}
    discriminating = sum(
        len([c for c in decode_list(p["discriminates"]) if c in claims]) >= 2
        for p in proposed.values())
    matched = sum(r["observed"] == proposed[e]["predicted"] for e, r in confirmed.items())
    return {"proposed": len(proposed), "executed": len(confirmed),
            "executed_claimed_without_tool_event": len(executed) - len(confirmed),
            "discriminating": _rate(discriminating, len(proposed)),
            "outcome_matched_prediction": _rate(matched, len(confirmed))}


def current_status(claims: Mapping[str, dict[str, Any]],
                   revisions: list[dict[str, Any]]) -> dict[str, str]:
    """Each claim's status after its revisions, in log order."""
    status = {cid: str(c["status"]) for cid, c in claims.items()}
    for r in revisions:
        if r["claim_id"] in status:
            status[r["claim_id"]] = str(r["new_status"])
    return status


def predictions(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each prediction joined with its independent resolution (``outcome`` field)."""
    out = {r["pred_id"]: dict(r) for r in rows if r["event"] == "prediction"}
    for r in rows:
        if r["event"] == "resolution" and r["pred_id"] in out:
            p = out[r["pred_id"]]
            p.update(observed_effect=r["observed_effect"], resolver=r["resolver"],
                     resolved_t=r["resolved_t"], executed=r["executed"])
    for p in out.values():
        p["outcome"] = ("unresolved" if p.get("resolver") is None
                        else "as_predicted" if p["observed_effect"] == p["predicted_effect"]
                        else "not_as_predicted")
    return out


@dataclass(frozen=True)
class Inputs:
    """Documents from the latest bench and control runs (any may be absent)."""

    bench: Mapping[str, Any] | None = None
    """``rungbench causal report --json`` of the candidate run, with ``paired`` vs baseline
    (question 1's endpoint)."""
    graph_vs_text: Mapping[str, Any] | None = None
    """A report whose ``paired`` is the graph arm vs its text-equivalent (question 2)."""
    controls: Mapping[str, Any] | None = None
    """Control-matrix summary: ``pass_rate`` and ``false_accepts`` (C4/C5)."""
    decisions: Mapping[str, Any] | None = None
    """Sandbox comparison of expected repair loss: ``paired`` delta, lower is better, and
    (from ``rungbench causal decisions``) success per dollar and cost (question 3)."""
    detector: Mapping[str, Any] | None = None
    """Detector quality (``DetectorQuality.to_json``)."""


def answer_from_delta(paired: Mapping[str, Any] | None, *, lower_is_better: bool = False
                      ) -> dict[str, Any]:
    """yes when the 95% interval is wholly on the improving side, no when wholly on the other,
    inconclusive when it straddles zero or is absent (never read as equivalence)."""
    delta = (paired or {}).get("delta", paired) if paired else None
    if not delta or delta.get("n", 0) == 0 or "low" not in delta:
        return {"answer": "inconclusive", "interval": None, "why": "no paired run supplied"}
    lo, hi = float(delta["low"]), float(delta["high"])
    if lower_is_better:
        lo, hi = -hi, -lo
    answer: Answer = "yes" if lo > 0 else "no" if hi < 0 else "inconclusive"
    return {"answer": answer, "mean": delta.get("mean"), "interval": [delta["low"],
                                                                       delta["high"]],
            "n": delta.get("n"), "why": "95% cluster-bootstrap interval"
            + (" straddles 0" if answer == "inconclusive" else " excludes 0")}


def answer_decisions(doc: Mapping[str, Any] | None) -> dict[str, Any]:
    """Question 3 from a ``decisions`` document (:mod:`rungbench.causal.bench.decisions`).

    The expected-repair-loss delta (a − b, lower is better) decides as
    :func:`answer_from_delta` does; a document that carries a ``cost`` block (one the
    endpoint computed) then gates a *yes* on cost: without registered prices it is
    inconclusive (``no_prices``: the cost is unknown, never taken as 0), and over the cost
    ceiling it is *no* (decisions improved, not at acceptable cost). The success-per-dollar
    delta is carried beside the answer.
    """
    q = answer_from_delta((doc or {}).get("paired"), lower_is_better=True)
    cost = (doc or {}).get("cost")
    if not isinstance(cost, Mapping):
        return q
    per_usd = (doc or {}).get("success_per_usd", {}).get("delta")
    q = {**q, "success_per_usd_delta": per_usd, "usd_ratio": cost.get("ratio")}
    if q["answer"] != "yes":
        return q
    if cost.get("acceptable") == "no_prices":
        return {**q, "answer": "inconclusive",
                "why": q["why"] + "; no_prices: dollars per incident unknown"}
    if cost.get("acceptable") is not True:
        ratio = cost.get("ratio")
        shown = f"{ratio:.3f}" if isinstance(ratio, int | float) else str(ratio)
        return {**q, "answer": "no", "why": q["why"] + f"; dollars per incident ×{shown} "
                f"exceed the +{cost.get('ceiling')} ceiling"}
    return {**q, "why": q["why"] + f"; dollars per incident ×{cost['ratio']:.3f} within "
            f"+{cost['ceiling']}"}


def derive(db: Connection, path: str, window: Window) -> dict[str, Any]:
    """Every derived number of the week from a verified store."""
    report = verify_connection(db, path)
    report.require_ok()
    tables = {t: _rows(db, t) for t in report.rows}
    eps = episodes_in(tables, window)

    def week(table: str) -> list[dict[str, Any]]:
        return [r for r in tables[table] if r["episode_id"] in eps]

    all_claims = {c["claim_id"]: c for c in tables["causal_claim"]}
    status = current_status(all_claims, tables["model_revision"])
    preds = predictions(tables["intervention_prediction"])
    claims = {c["claim_id"]: c for c in week("causal_claim")}
    route = routing(week("causal_opportunity"), week("causal_tool_call"))
    useful = sorted(cid for cid in claims if status[cid] == "asserted" and any(
        p["claim_id"] == cid and p["outcome"] == "as_predicted" for p in preds.values()))
    old = [cid for cid, c in all_claims.items() if parse_t(c["t"]) <= window.end - RESOLUTION_AGE]
    resolved = [cid for cid in old if any(p["claim_id"] == cid and p["outcome"] != "unresolved"
                                          for p in preds.values())]
    week_preds = [p for p in preds.values() if p["claim_id"] in claims]
    outcomes: dict[str, int] = defaultdict(int)
    for p in week_preds:
        outcomes[p["outcome"]] += 1
    calls = week("causal_tool_call")
    cost = sum(float(c["cost_usd"]) for c in calls)
    n_opp = route["opportunities"]
    return {
        "store": path, "rows": dict(report.rows), "episodes": len(eps),
        "window": [window.start.isoformat(), window.end.isoformat()],
        "coverage": route,
        "claim_support": {
            "claims": len(claims),
            "with_evidence_ids": _rate(sum(bool(decode_list(c["evidence_ids"]))
                                           for c in claims.values()), len(claims)),
            "rung_labelled": _rate(sum(c["rung"] is not None for c in claims.values()),
                                   len(claims)),
            "competing_recorded": _rate(sum(bool(decode_list(c["competing_ids"]))
                                            for c in claims.values()), len(claims)),
            "status": dict(sorted(_count(status[c] for c in claims).items()))},
        "experiments": experiments(week("experiment"), calls, claims),
        "predictions": {"n": len(week_preds), **{k: outcomes.get(k, 0) for k in
                                                 ("as_predicted", "not_as_predicted",
                                                  "unresolved")}},
        "useful_conclusions": {"count": len(useful), "claim_ids": useful,
                               "per_100_opportunities": None if n_opp == 0
                               else round(100 * len(useful) / n_opp, 6)},
        "resolution_coverage": _rate(len(resolved), len(old)),
        "revision": {"revisions": len(week("model_revision")),
                     "retractions": sum(r["new_status"] == "retracted"
                                        for r in week("model_revision")),
                     "graph_writes": len(week("graph_write"))},
        "cost": {"tool_calls": len(calls), "tool_cost_usd": round(cost, 6),
                 "latency_ms_total": sum(int(c["latency_ms"]) for c in calls),
                 "usd_per_episode": None if not eps else round(cost / len(eps), 6),
                 "usd_per_useful_conclusion": None if not useful
                 else round(cost / len(useful), 6)},
    }


def _count(values: Any) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for v in values:
        out[str(v)] += 1
    return out


def weekly_report(store: str | Path, window: Window, inputs: Inputs = Inputs()) -> dict[str, Any]:
    """The weekly report document: derived numbers, input blocks and the three answers."""
    db = open_target(store, readonly=True)
    try:
        numbers = derive(db, db.where, window)
    finally:
        db.close()
    caveats = []
    if inputs.detector is None:
        caveats.append("detector precision/recall not supplied: coverage numbers unqualified")
    elif inputs.detector.get("caveat"):
        caveats.append(str(inputs.detector["caveat"]))
    coverage = numbers["resolution_coverage"]["rate"]
    if coverage is None or coverage < 0.5:
        caveats.append(f"resolution coverage {coverage}: low coverage caps every other number")
    q3 = answer_decisions(inputs.decisions)
    if q3["answer"] != "inconclusive" and (coverage is None or coverage < 0.5):
        q3 = {**q3, "answer": "inconclusive", "why": q3["why"] + "; resolution coverage < 0.5"}
    return {
        "schema": "rungbench.weekly/1", **numbers, "caveats": caveats,
        "bench": dict(inputs.bench or {}).get("paired"),
        "sandbox": sandbox_block(inputs.decisions),
        "query_reliability": dict(inputs.controls) if inputs.controls else None,
        "detector": dict(inputs.detector) if inputs.detector else None,
        "questions": {
            "understands_causation_better": {
                "endpoint": "generated-world accuracy (identification, intervention, "
                            "counterfactual; abstention scored), paired vs baseline",
                **answer_from_delta((inputs.bench or {}).get("paired"))},
            "graph_tool_contributes": {
                "endpoint": "paired delta, graph arm vs text-equivalent arm, same worlds",
                **answer_from_delta((inputs.graph_vs_text or {}).get("paired"))},
            "decisions_improve_at_acceptable_cost": {
                "endpoint": "expected repair loss (sandbox), paired; lower is better; "
                            "sandbox success per dollar",
                **q3}},
    }


def _fmt_rate(r: Mapping[str, Any]) -> str:
    if r["rate"] is None:
        return f"— ({r['k']}/{r['n']})"
    lo, hi = r["wilson95"]
    return f"{r['rate']:.3f} ({r['k']}/{r['n']}; 95% {lo:.3f}–{hi:.3f})"


def to_markdown(doc: Mapping[str, Any]) -> str:
    """The one-page Markdown rendering of a weekly report document."""
    c, cs, ex = doc["coverage"], doc["claim_support"], doc["experiments"]
    det = doc.get("detector")
    qr = doc.get("query_reliability")
    lines = [f"# Causal weekly report {doc['window'][0][:10]} – {doc['window'][1][:10]}", "",
             f"Store `{doc['store']}` (chains verified); {doc['episodes']} episodes.", "",
             "| Block | Metrics |", "| --- | --- |",
             "| Bench | " + (_delta_text(doc["bench"]) if doc.get("bench")
                            else "no bench run supplied") + " |",
             f"| Coverage | {c['opportunities']} opportunities; routing rate "
             f"{_fmt_rate(c['routing_rate'])}; graph calls {c['graph_calls_diagnostic']} "
             "(diagnostic); detector "
             + (f"{det['version']} precision {det['precision']:.3f} recall {det['recall']:.3f}"
                if det else "quality not supplied") + " |",
             "| Query reliability | " + (f"control pass rate {qr.get('pass_rate')}; C4/C5 "
                                        f"false accepts {qr.get('false_accepts')}" if qr
                                        else "no control run supplied") + " |",
             f"| Claim support | {cs['claims']} claims; evidence ids "
             f"{_fmt_rate(cs['with_evidence_ids'])}; rung-labelled "
             f"{_fmt_rate(cs['rung_labelled'])}; competing causes "
             f"{_fmt_rate(cs['competing_recorded'])} |",
             f"| Experiments | proposed {ex['proposed']}, executed {ex['executed']} (tool "
             f"event), {ex['executed_claimed_without_tool_event']} claimed without one; "
             f"discriminating {_fmt_rate(ex['discriminating'])}; outcome matched "
             f"{_fmt_rate(ex['outcome_matched_prediction'])} |",
             f"| Diagnosis and repair | predictions {doc['predictions']['n']}: as predicted "
             f"{doc['predictions']['as_predicted']}, not as predicted "
             f"{doc['predictions']['not_as_predicted']}, unresolved "
             f"{doc['predictions']['unresolved']}; useful conclusions "
             f"{doc['useful_conclusions']['count']} (per 100 opportunities "
             f"{doc['useful_conclusions']['per_100_opportunities']}); lucky vs justified: "
             "sandbox replay only" + _sandbox_text(doc.get("sandbox")) + " |",
             f"| Revision and provenance | revisions {doc['revision']['revisions']}, "
             f"retractions {doc['revision']['retractions']}, graph writes "
             f"{doc['revision']['graph_writes']} |",
             f"| Cost | tool calls {doc['cost']['tool_calls']}, ${doc['cost']['tool_cost_usd']}"
             f", $/episode {doc['cost']['usd_per_episode']}, $/useful conclusion "
             f"{doc['cost']['usd_per_useful_conclusion']}; tokens not logged |",
             f"| Resolution coverage | {_fmt_rate(doc['resolution_coverage'])} |", ""]
    lines += [f"Caveat: {cv}" for cv in doc["caveats"]] + [""]
    for i, (name, q) in enumerate(doc["questions"].items(), 1):
        interval = "no interval" if q["interval"] is None else \
            f"95% [{q['interval'][0]:.3f}, {q['interval'][1]:.3f}]"
        lines.append(f"{i}. {name.replace('_', ' ')}: **{q['answer']}** — {q['endpoint']}; "
                     f"{interval} ({q['why']})" + _per_usd_text(q))
    return "\n".join(lines) + "\n"


def sandbox_block(doc: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Sandbox repair success and dollars per incident of each run of an endpoint-computed
    ``decisions`` document (None for a hand-supplied one without runs)."""
    runs = (doc or {}).get("runs")
    if not isinstance(runs, Mapping):
        return None
    keep = ("agent", "n", "mean_expected_loss", "success_rate", "usd_per_incident")
    return {k: {f: (r.get("agent") if f == "agent" else r.get("outcomes", {}).get(f))
                for f in keep} for k, r in sorted(runs.items()) if isinstance(r, Mapping)}


def _sandbox_text(block: Mapping[str, Any] | None) -> str:
    if not block:
        return ""

    def one(r: Mapping[str, Any]) -> str:
        usd = r["usd_per_incident"]
        shown = usd if isinstance(usd, str) else f"${usd:.6f}"
        return (f"{r['agent']} success {r['success_rate']:.3f}, loss "
                f"{r['mean_expected_loss']:.3f}, {shown}/incident (n={r['n']})")
    return "; sandbox repair: " + " vs ".join(one(r) for r in block.values())


def _per_usd_text(q: Mapping[str, Any]) -> str:
    if "success_per_usd_delta" not in q:
        return ""
    d = q["success_per_usd_delta"]
    if not isinstance(d, Mapping):
        return f"; success per $: {d}"
    return f"; success per $ a − b {d['mean']:+.3f} (95% {d['low']:.3f}, {d['high']:.3f})"


def _delta_text(paired: Mapping[str, Any]) -> str:
    d = paired.get("delta", paired)
    if not d or "low" not in d:
        return "paired delta: no common cases"
    return f"paired delta {d['mean']:+.3f} (95% {d['low']:.3f}–{d['high']:.3f}, n={d['n']})"


def parse_window(start: str, days: int = 7) -> Window:
    """The window starting at ``start`` (YYYY-MM-DD, UTC) lasting ``days``."""
    try:
        s = datetime.fromisoformat(start + "T00:00:00+00:00")
    except ValueError as exc:
        raise InputError(f"not a date: {start!r}", field="week") from exc
    return Window(s, s + timedelta(days=days))


def load_optional(paths: Sequence[Path | None]) -> list[dict[str, Any] | None]:
    """JSON documents for the optional inputs (None where absent)."""
    import json

    out: list[dict[str, Any] | None] = []
    for p in paths:
        if p is None:
            out.append(None)
            continue
        try:
            doc = json.loads(p.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise InputError(f"not JSON: {exc}", path=str(p)) from exc
        if not isinstance(doc, dict):
            raise InputError("expected a JSON object", path=str(p))
        out.append(doc)
    return out
