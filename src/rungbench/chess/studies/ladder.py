"""Cells of a bound study and the E020/E021 ladder estimands (seed 001, seed 000).

:func:`schedule_for` renders one model's frozen schedule from a binding as a pure
function of (binding, manifest, model, route). Every move-choice cell of every design
offers the byte-identical ``submit_move`` tool (one non-enumerated UCI string) as a
required OpenAI tool call and records in its metadata (never sent): the model, the
route, the split, the position key and source game, the schema digest
(:data:`SCHEMA_DIGEST`), the legal-action-universe digest (:func:`universe_digest`),
the best set (pass A rank 1 and every pass A candidate tied with it in expectation)
and what was shown (UCI candidates by slot and their hidden ranks).

Arms (preset ``[[arms]]``): ``unaided`` (no list); ``oracle`` (pass A ranks 1..w);
``omitted`` (ranks 1..w minus every move tied with the best); ``successor`` and
``reply`` (E022: each candidate with its resulting position, or with the proposer's
best reply from pass A's PV). Candidates are shown in the binding's frozen order as UCI
and SAN, never with scores or ranks. The ``shortlist`` probe asks for k moves through
``submit_shortlist``; it is a separate schedule and is never scored for regret.

The self-shortlist arm is two calls (seed 001, "the model first lists k candidates, then
chooses"): the probe, then :func:`choice_schedule`, derived from a verified, complete probe
run of the same binding, model and route. Its cells (condition
``self_shortlist_choice``) show the model's own shortlist (:func:`own_shortlist`: the
first k distinct legal moves it listed) as UCI and SAN, in an order drawn from the
binding's digest (the model's own listing order is not shown), with the one
``submit_move`` tool. Every position keeps exactly one choice cell, so the arm pairs 1:1
with unaided: a probe that is a model failure (malformed, refused) or lists no legal
move yields an empty shortlist, and its choice cell is rendered as the unaided prompt
(no candidate block) and counts as a coverage failure. Then C = covered / N, S_self =
P(best chosen | covered) and C × S_self = P(covered and best chosen) over the same N
positions as the unaided best-move rate. A probe cell without a final answer (a provider
error) is a missing observation: the probe run is incomplete and the choice stage refuses
(``probe_incomplete``) until the probe run is resumed; it is never turned into a
coverage failure.

Estimands (:func:`ladder_estimands`): coverage C (a best move is in the probe's
shortlist), conditional selection S per oracle arm (a best move is chosen, over cells
where one is shown), the unaided best-move rate, C × S, each with a Wilson interval,
and paired regret contrasts from a published evaluation (:func:`paired_contrasts`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import norm

import chess
from rungbench.agents.protocol import Message, Request
from rungbench.chess.labels.stage_records import CandidateList
from rungbench.chess.reference_agents import (
    SUBMIT_MOVE_TOOL,
    SUBMIT_SHORTLIST_TOOL,
    SYSTEM_PROMPT,
    TASK,
    validate_move,
)
from rungbench.chess.studies.bindings import Binding
from rungbench.chess.studies.manifest import FrozenManifest
from rungbench.chess.studies.panels import a105_request, legal_uci, render_prompt
from rungbench.design.presets import FactorialCondition
from rungbench.errors import InputError, IntegrityError, Reason, Refusal
from rungbench.evidence.canonical import bytes_digest, digest, loads_canonical
from rungbench.evidence.store import ObjectStore
from rungbench.execute.runner import (
    MANIFEST,
    load_run,
    read_log,
    response_from_json,
    verify_run,
)
from rungbench.execute.schedule import Schedule

SCHEMA_DIGEST = digest([SUBMIT_MOVE_TOOL])
"""Digest of the one tool list every move-choice cell offers."""
INSTRUCTION = "Choose your move and submit it with the submit_move tool, in UCI notation."
LIST_HEAD = "Candidate moves (UCI and SAN, in random order):"
CHOICE = "self_shortlist_choice"
"""Condition name of the self-shortlist choice cells (the arm's second call)."""
GATE = "chess study shortlist"
"""Gate name of the choice-stage refusals."""


def universe_digest(fen: str) -> str:
    """Digest of the sorted legal-action universe (UCI) of ``fen``."""
    return digest(legal_uci(chess.Board(fen)))


def best_set(lst: CandidateList) -> list[str]:
    """Pass A rank 1 and every candidate tied with it in WDL expectation."""
    top = lst.candidates[0].expectation
    return [c.uci for c in lst.candidates if c.expectation == top]


def _base_metadata(binding: Binding, row: dict[str, Any], lst: CandidateList, model: str,
                   route: str) -> dict[str, Any]:
    return {"task": TASK, "fen": lst.fen, "design": binding.document["design"]["id"],
            "binding": binding.digest, "model": model, "route": route,
            "split": row["partition"], "key": row["key"], "game": row["game"],
            "label": row["label"], "phase": row["phase"], "best_move": lst.candidates[0].uci,
            "best_moves": best_set(lst), "schema_digest": SCHEMA_DIGEST,
            "universe_digest": universe_digest(lst.fen)}


def _rows(binding: Binding, manifest: FrozenManifest) -> list[dict[str, Any]]:
    by_key = {p["key"]: p for p in manifest.positions()}
    missing = [k for k in binding.document["positions"] if k not in by_key]
    if missing:
        raise InputError(f"binding names {len(missing)} positions the manifest lacks",
                         field="positions")
    return [by_key[k] for k in binding.document["positions"]]


def _check_model(binding: Binding, model: str) -> None:
    models = binding.document.get("models") or []
    if models and model not in models:
        raise InputError(f"model {model!r} is not registered by {binding.design_name}; "
                         f"registered: {', '.join(models)}", field="model")


# --------------------------------------------------------------------------- A105


def a105_schedule(binding: Binding, manifest: FrozenManifest, model: str, route: str,
                  ) -> Schedule:
    """One model's A105 cells: the bound Latin schedule, rendered byte-matched (panels)."""
    rows = _rows(binding, manifest)
    doc = binding.document
    conditions = {str(t["name"]): FactorialCondition(str(t["name"]), (bool(t["board"]),
                                                                     bool(t["legal_list"])))
                  for t in doc["design"]["document"]["conditions"]}
    requests: list[Request] = []
    for unit, split, condition, order, cell_model, block, ordinal in doc["cells"]:
        if cell_model != model:
            continue
        row = rows[unit]
        lst = manifest.lists[row["key"]]
        prompt = render_prompt(lst.fen, conditions[condition], order)
        case = f"{doc['design']['id']}:{model}:{unit:04d}:{condition}:{order}"
        req = a105_request(case, prompt, design_digest=doc["design"]["digest"])
        meta = {**req.metadata, **_base_metadata(binding, row, lst, model, route),
                "condition": condition, "panel_order": order, "block": block,
                "ordinal": ordinal}
        if meta["split"] != split:
            raise InputError(f"cell {case!r} is bound to {split}, its position to "
                             f"{meta['split']}", field="split")
        requests.append(replace(req, metadata=meta))
    return _schedule(binding, model, route, requests)


# --------------------------------------------------------------------------- lists


def _pairs(lst: CandidateList, ucis: Sequence[str]) -> list[str]:
    san = {c.uci: c.san for c in lst.candidates}
    board = chess.Board(lst.fen)
    return [f"{u} ({san.get(u) or board.san(chess.Move.from_uci(u))})" for u in ucis]


def _successor_lines(lst: CandidateList, ucis: Sequence[str]) -> list[str]:
    board = chess.Board(lst.fen)
    out = []
    for pair, uci in zip(_pairs(lst, ucis), ucis, strict=True):
        after = board.copy()
        after.push_uci(uci)
        out.append(f"{pair} -> resulting position (FEN): {after.fen()}")
    return out


def _reply_lines(lst: CandidateList, ucis: Sequence[str]) -> list[str]:
    board = chess.Board(lst.fen)
    by_uci = {c.uci: c for c in lst.candidates}
    out = []
    for pair, uci in zip(_pairs(lst, ucis), ucis, strict=True):
        pv = by_uci[uci].pv
        if len(pv) < 2:
            out.append(f"{pair}; the proposer's best reply: none (the game ends)")
            continue
        after = board.copy()
        after.push_uci(uci)
        reply = chess.Move.from_uci(pv[1])
        out.append(f"{pair}; the proposer's best reply: {reply.uci()} ({after.san(reply)})")
    return out


def list_prompt(fen: str, lines: Sequence[str] | None) -> str:
    """The user message of a list arm (``lines`` None: the unaided arm)."""
    board = chess.Board(fen)
    side = "White" if board.turn == chess.WHITE else "Black"
    parts = [f"Position (FEN): {board.fen()}", f"Side to move: {side}."]
    if lines is not None:
        parts += [LIST_HEAD, *lines]
    return "\n".join([*parts, INSTRUCTION])


def shown_moves(arm: dict[str, Any], lst: CandidateList, order: Sequence[int]) -> list[str]:
    """The UCI moves an arm shows, in slot order (the binding's permutation of its slice)."""
    kind, width = str(arm["kind"]), int(arm.get("width", 0))
    if kind == "unaided":
        return []
    pool = [c.uci for c in lst.candidates[:width]]
    ordered = [pool[i] for i in order]
    if kind == "omitted":
        tied = set(best_set(lst))
        ordered = [u for u in ordered if u not in tied]
    return ordered


def list_request(case: str, arm: dict[str, Any], lst: CandidateList, shown: list[str],
                 meta: dict[str, Any]) -> Request:
    """The request of one list-arm cell: fresh context, the one required ``submit_move``."""
    kind = str(arm["kind"])
    if kind == "unaided":
        lines = None
    elif kind == "successor":
        lines = _successor_lines(lst, shown)
    elif kind == "reply":
        lines = _reply_lines(lst, shown)
    elif kind in ("oracle", "omitted"):
        lines = _pairs(lst, shown)
    elif kind == "self_shortlist":
        lines = _pairs(lst, shown) if shown else None  # an empty shortlist: the unaided prompt
    else:
        raise InputError(f"unknown arm kind {kind!r}", field="arms.kind")
    ranks = {c.uci: c.rank for c in lst.candidates}
    return Request(case_id=case,
                   messages=(Message("system", SYSTEM_PROMPT),
                             Message("user", list_prompt(lst.fen, lines))),
                   tools=(SUBMIT_MOVE_TOOL,), tool_choice="required",
                   metadata={**meta, "condition": str(arm["name"]), "arm_kind": kind,
                             **({"candidates": shown, "ranks": [ranks.get(u) for u in shown]}
                                if kind != "unaided" else {})})


def ladder_schedule(binding: Binding, manifest: FrozenManifest, model: str, route: str,
                    ) -> Schedule:
    """One model's E020/E021 (or E022) move-choice cells: every position × every arm."""
    doc = binding.document
    arms = {str(a["name"]): a for a in doc["design"]["document"]["arms"]}
    requests = []
    for p, row in enumerate(_rows(binding, manifest)):
        lst = manifest.lists[row["key"]]
        base = _base_metadata(binding, row, lst, model, route)
        for name in doc["arms"]:
            shown = shown_moves(arms[name], lst, doc["slot_orders"][name][p])
            requests.append(list_request(f"{doc['design']['id']}:{model}:{p:04d}:{name}",
                                         arms[name], lst, shown, base))
    return _schedule(binding, model, route, requests)


def probe_schedule(binding: Binding, manifest: FrozenManifest, model: str, route: str,
                   ) -> Schedule:
    """One model's self-shortlist probe cells (``submit_shortlist``, k moves)."""
    doc = binding.document
    k = int(doc["design"]["document"]["schedule"]["shortlist_k"])
    requests = []
    for p, row in enumerate(_rows(binding, manifest)):
        lst = manifest.lists[row["key"]]
        text = list_prompt(lst.fen, None).replace(
            INSTRUCTION, f"List the {k} moves you would consider, in UCI notation, with the "
            "submit_shortlist tool.")
        for name in doc.get("probes", []):
            meta = {**_base_metadata(binding, row, lst, model, route), "condition": name,
                    "shortlist_size": k, "schema_digest": digest([SUBMIT_SHORTLIST_TOOL])}
            requests.append(Request(case_id=f"{doc['design']['id']}:{model}:{p:04d}:{name}",
                                    messages=(Message("system", SYSTEM_PROMPT),
                                              Message("user", text)),
                                    tools=(SUBMIT_SHORTLIST_TOOL,), tool_choice="required",
                                    metadata=meta))
    return _schedule(binding, model, route, requests, suffix="probe")


# --------------------------------------------------------------------------- self-shortlist


def own_shortlist(fen: str, moves: Any, k: int) -> list[str]:
    """The first ``k`` distinct legal UCI moves of a probe answer, in the order listed.

    ``moves`` is the ``submit_shortlist`` argument; entries that are not strings, not UCI
    or not legal in ``fen`` are dropped. Coverage and the choice stage both use this list.
    """
    if not isinstance(moves, list):
        return []
    board = chess.Board(fen)
    out: list[str] = []
    for entry in moves:
        try:
            move = chess.Move.from_uci(entry.strip()) if isinstance(entry, str) else None
        except ValueError:
            move = None
        if move is not None and move in board.legal_moves and move.uci() not in out:
            out.append(move.uci())
        if len(out) == k:
            break
    return out


def shortlist_order(binding: Binding, position: int, moves: Sequence[str]) -> list[str]:
    """``moves`` sorted by UCI, then permuted by ``default_rng([binding seed, position, n])``.

    The binding seed is the first 64 bits of the binding digest, so the shown order is a
    pure function of the binding and the listed set, never of the model's own order.
    """
    ordered = sorted(moves)
    seed = int(binding.digest.removeprefix("sha256:")[:16], 16)
    perm = np.random.default_rng([seed, position, len(ordered)]).permutation(len(ordered))
    return [ordered[int(i)] for i in perm]


def _refuse(code: str, detail: str, subject: str, **data: Any) -> Refusal:
    return Refusal([Reason(code, detail, subject=subject, data=data)], gate=GATE)


def verified_probe(binding: Binding, manifest: FrozenManifest, probe_run: Path, model: str,
                   route: str) -> tuple[str, dict[str, dict[str, Any]]]:
    """The probe run's manifest digest and every probe cell's final record, verified.

    Refuses ``probe_mismatch`` when the run holds another schedule than this binding's probe
    for ``model`` and ``route``, and ``probe_incomplete`` when it does not verify or a
    cell has no final answer.
    """
    expected = probe_schedule(binding, manifest, model, route)
    try:
        _, schedule = load_run(probe_run)
        if schedule.digest() != expected.digest():
            raise _refuse("probe_mismatch", f"{probe_run} holds schedule {schedule.digest()}, "
                          f"not the probe of {binding.digest} for {model}@{route} "
                          f"({expected.digest()})", str(probe_run), found=schedule.digest(),
                          expected=expected.digest())
        check = verify_run(probe_run, validate_move)
        _, states = read_log(probe_run, schedule, validate_move)
    except (InputError, IntegrityError) as exc:
        raise _refuse("probe_incomplete", f"probe run {probe_run} does not verify: {exc}",
                      str(probe_run)) from exc
    if not check.ok:
        raise _refuse("probe_incomplete", f"probe run {probe_run} has {check.final} of "
                      f"{check.cells} final cells; resume it first", str(probe_run),
                      final=check.final, cells=check.cells)
    finals = {cid: state.finals[0] for cid, state in states.items()}
    return bytes_digest((probe_run / MANIFEST).read_bytes()), finals


def choice_schedule(binding: Binding, manifest: FrozenManifest, probe_run: Path, model: str,
                    route: str) -> Schedule:
    """One model's self-shortlist choice cells, from its verified, complete probe run.

    One cell per bound position, showing its own shortlist (:func:`own_shortlist`, in
    :func:`shortlist_order`) with the one ``submit_move`` tool; metadata ``candidates``
    (the shown moves), ``shortlist_run`` (the probe run's manifest digest),
    ``shortlist_cell`` and ``shortlist_status`` (``listed``, ``no_legal_move`` or the
    probe's model-failure outcome). Same probe run, same schedule digest.
    """
    doc = binding.document
    probes = doc.get("probes") or []
    if not probes:
        raise InputError(f"{binding.design_name} registers no probe", field="probe")
    k = int(doc["design"]["document"]["schedule"]["shortlist_k"])
    run_digest, finals = verified_probe(binding, manifest, probe_run, model, route)
    arm = {"name": CHOICE, "kind": "self_shortlist"}
    requests = []
    for p, row in enumerate(_rows(binding, manifest)):
        lst = manifest.lists[row["key"]]
        probe_cell = f"{doc['design']['id']}:{model}:{p:04d}:{probes[0]}"
        final = finals[probe_cell]
        args = final.get("arguments")
        listed = (own_shortlist(lst.fen, args.get("moves"), k)
                  if final["outcome"] == "answered" and isinstance(args, dict) else [])
        status = ("listed" if listed else "no_legal_move") if final["outcome"] == "answered" \
            else str(final["outcome"])
        shown = shortlist_order(binding, p, listed)
        meta = {**_base_metadata(binding, row, lst, model, route), "shortlist_run": run_digest,
                "shortlist_cell": probe_cell, "shortlist_status": status}
        requests.append(list_request(f"{doc['design']['id']}:{model}:{p:04d}:{CHOICE}", arm,
                                     lst, shown, meta))
    name = f"{binding.design_name}-{model}-{route}-choice"
    return Schedule.of(TASK, name, requests, {"binding": binding.digest, "model": model,
                                             "route": route, "part": "choice",
                                             "shortlist_run": run_digest})


# --------------------------------------------------------------------------- E023


def e023_schedule(binding: Binding, manifest: FrozenManifest, model: str, route: str,
                  ) -> Schedule:
    """One model's E023 cells: every position × arm × presentation (cyclic orders)."""
    doc = binding.document
    requests = []
    for p, row in enumerate(_rows(binding, manifest)):
        lst = manifest.lists[row["key"]]
        by_rank = {c.rank: c.uci for c in lst.candidates}
        base = _base_metadata(binding, row, lst, model, route)
        for name in doc["arms"]:
            for pres, ranks in zip(doc["presentations"], doc["ranks_by_slot"][name][p],
                                   strict=True):
                shown = [by_rank[r] for r in ranks]
                req = list_request(f"{doc['design']['id']}:{model}:{p:04d}:{name}:{pres}",
                                   {"name": name, "kind": "oracle"}, lst, shown, base)
                requests.append(replace(req, metadata={**req.metadata, "presentation": pres}))
    return _schedule(binding, model, route, requests)


def _schedule(binding: Binding, model: str, route: str, requests: list[Request],
              suffix: str = "cells") -> Schedule:
    name = f"{binding.design_name}-{model}-{route}-{suffix}"
    return Schedule.of(TASK, name, requests, {"binding": binding.digest, "model": model,
                                             "route": route, "part": suffix})


def schedule_for(binding: Binding, manifest: FrozenManifest, model: str, route: str,
                 *, probe: bool = False, shortlist_from: Path | None = None) -> Schedule:
    """The move-choice (or, with ``probe``, the shortlist-probe; with ``shortlist_from``, a
    probe run, the self-shortlist choice) schedule of one model."""
    _check_model(binding, model)
    if probe and shortlist_from is not None:
        raise InputError("the probe and the choice stage are separate runs; give one",
                         field="shortlist_from")
    if shortlist_from is not None:
        return choice_schedule(binding, manifest, shortlist_from, model, route)
    if probe:
        if not binding.document.get("probes"):
            raise InputError(f"{binding.design_name} registers no probe", field="probe")
        return probe_schedule(binding, manifest, model, route)
    kind = binding.kind
    if kind == "factorial_2x2":
        return a105_schedule(binding, manifest, model, route)
    if kind == "counterbalanced_arms":
        return e023_schedule(binding, manifest, model, route)
    return ladder_schedule(binding, manifest, model, route)


# --------------------------------------------------------------------------- estimands


def wilson(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion."""
    if trials == 0:
        return (0.0, 1.0)
    z = float(norm.ppf(0.5 + confidence / 2))
    p = successes / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (
        1 + z * z / trials)
    return (max(0.0, centre - half), min(1.0, centre + half))


def _rate(successes: int, trials: int) -> dict[str, Any]:
    low, high = wilson(successes, trials)
    return {"estimate": successes / trials if trials else None, "successes": successes,
            "trials": trials, "interval": [low, high]}


def final_calls(run_dir: Path) -> list[tuple[dict[str, Any], str, dict[str, Any] | None]]:
    """``(cell metadata, outcome, first tool call's arguments)`` of every final cell, verified."""
    _, schedule = load_run(run_dir)
    _, states = read_log(run_dir, schedule, None)
    store = ObjectStore(run_dir)
    meta = {c.cell_id: c.request.metadata for c in schedule}
    out = []
    for cell_id, state in states.items():
        if not state.finals:
            continue
        final = state.finals[0]
        out.append((meta[cell_id], str(final["outcome"]), final_arguments(store, final)))
    return out


def final_arguments(store: ObjectStore, final: dict[str, Any]) -> dict[str, Any] | None:
    """The first tool call's JSON arguments of a verified final's stored response (None when
    it has no response, no tool call or arguments that are not a JSON object)."""
    name = final.get("response")
    if not (isinstance(name, str) and name.startswith("sha256:")):
        return None
    response = response_from_json(store.get_json(name), where=str(store.path_for(name)))
    if not response.tool_calls:
        return None
    try:
        parsed = json.loads(response.tool_calls[0].arguments)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def ladder_estimands(move_runs: Sequence[Path], probe_runs: Sequence[Path],
                     selection_arms: Sequence[str] = ("oracle_top2", "oracle_top5",
                                                      "oracle_top10")) -> dict[str, Any]:
    """C, S per oracle arm, the unaided best-move rate and C × S, with Wilson intervals.

    Cells of every run given are pooled (e.g. one model's replicate runs).

    A cell without a legal final move counts as not choosing a best move (total systems
    outcome); S counts only cells whose shown list holds a best move.
    """
    hits: dict[str, list[int]] = {}
    for meta, _, args in (c for run in move_runs for c in final_calls(run)):
        arm = str(meta["condition"])
        move = args.get("move") if isinstance(args, dict) else None
        best = set(meta["best_moves"])
        shown = meta.get("candidates")
        if shown is not None and not best & set(shown):
            continue
        tally = hits.setdefault(arm, [0, 0])
        tally[0] += int(move in best)
        tally[1] += 1
    result: dict[str, Any] = {"best_move_rate": {a: _rate(*t) for a, t in sorted(hits.items())}}
    own = _two_stage(move_runs)
    if own is not None:
        result["self_shortlist"] = own
    if probe_runs:
        covered = [0, 0]
        for meta, outcome, args in (c for run in probe_runs for c in final_calls(run)):
            moves = args.get("moves") if isinstance(args, dict) and outcome == "answered" \
                else None
            listed = set(own_shortlist(str(meta["fen"]), moves, int(meta["shortlist_size"])))
            covered[0] += int(bool(listed & set(meta["best_moves"])))
            covered[1] += 1
        result["coverage"] = _rate(*covered)
        pooled = [sum(hits.get(a, [0, 0])[i] for a in selection_arms) for i in (0, 1)]
        result["selection"] = _rate(*pooled)
        c, s = result["coverage"], result["selection"]
        if c["estimate"] is not None and s["estimate"] is not None:
            result["coverage_x_selection"] = {
                "estimate": c["estimate"] * s["estimate"],
                "interval": [c["interval"][0] * s["interval"][0],
                             c["interval"][1] * s["interval"][1]]}
    return result


def _two_stage(move_runs: Sequence[Path]) -> dict[str, Any] | None:
    """The self-shortlist arm's own C, S and C × S from its choice cells (None: none run).

    Over every choice cell (one per position): covered = a best move is in its shown
    shortlist; success = covered and the chosen move is a best move. C × S is the success
    rate, i.e. exactly C times S over the same positions as the unaided rate.
    """
    counts = [0, 0, 0]  # cells, covered, covered and best chosen
    for meta, _, args in (c for run in move_runs for c in final_calls(run)):
        if meta.get("condition") != CHOICE:
            continue
        best = set(meta["best_moves"])
        covered = bool(best & set(meta["candidates"]))
        move = args.get("move") if isinstance(args, dict) else None
        counts[0] += 1
        counts[1] += int(covered)
        counts[2] += int(covered and move in best)
    if not counts[0]:
        return None
    return {"coverage": _rate(counts[1], counts[0]), "selection": _rate(counts[2], counts[1]),
            "coverage_x_selection": _rate(counts[2], counts[0])}


def paired_contrasts(evaluation: Path, pairs: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """Paired mean regret contrasts ``a − b`` within position from a published evaluation.

    Reads ``cells.json`` (verify the evaluation first: :func:`~rungbench.chess.studies.
    evaluation.verify_evaluation`); model failures carry the maximal regret; pairs
    cells by (position key, presentation) and reports mean, n and a normal 95% interval.
    """
    cells = loads_canonical((evaluation / "cells.json").read_bytes(),
                            path=str(evaluation / "cells.json"))["cells"]
    regret: dict[tuple[str, str], dict[str, float]] = {}
    for cell in cells:
        if cell["regret"] is None:
            continue
        part = str(cell["cell"]).rsplit(":", 1)[-1] if str(cell["cell"]).endswith(
            (":A", ":B")) else ""
        regret.setdefault((cell["key"], part), {})[cell["condition"]] = float(cell["regret"])
    out: dict[str, Any] = {}
    for a, b in pairs:
        diffs = [v[a] - v[b] for v in regret.values() if a in v and b in v]
        n = len(diffs)
        mean = sum(diffs) / n if n else None
        sd = (math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
              if n > 1 and mean is not None else None)
        half = 1.959964 * sd / math.sqrt(n) if sd is not None else None
        out[f"{a} - {b}"] = {"mean": mean, "n": n,
                             "interval": None if half is None or mean is None
                             else [mean - half, mean + half]}
    return out
