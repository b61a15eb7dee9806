"""The outcome-blind audit of the E020/E021 ladder and the E022 falsifier arms (seed 001,
"The paired intervention ladder", "Random order is not the same as counterbalanced order";
seed 002, "Pass A presents; pass B only audits").

The audit renders every registered arm of the preset through the execution code
(:func:`~rungbench.chess.studies.bindings.ladder_slot_orders`,
:func:`~rungbench.chess.studies.ladder.shown_moves`,
:func:`~rungbench.chess.studies.ladder.list_request`) over as many positions as the
preset binds, and checks what reaches the model. It makes zero provider calls, zero
engine calls and reads no manifest: the positions are bundled Lichess puzzles with at
least ten legal moves (cycled when fewer than the bound count), and each position's
"pass A" list is synthetic (:func:`synthetic_list`: ten legal moves in a seeded order,
with 0, 1 or 2 moves tied with rank 1 by position), so best-move ties are exercised.

Checks: oracle lists are pass A prefixes and nest in registered order (top-2 ⊂ top-5 ⊂
top-10); best-omitted drops exactly the moves tied with the best; every candidate line
shows the move's UCI and its SAN (recomputed from the board) in the frozen slot order,
and nothing else (the registered line grammar leaves no residue: no score, rank or
number); no prompt names a score, rank or evaluation; every cell offers the one
``submit_move`` schema; every arm's prompt equals the unaided prompt outside its
candidate block; E022's arms share one width and show the same moves in the same order, each
successor FEN is the position after the move and each reply is pass A's PV reply, legal
there. The rank-1 slot of every list arm over the bound positions is tested against
uniform by Pearson's chi-square (p reported; a p below :data:`BALANCE_MIN_P` fails).

With a probe registered, each position also renders the self-shortlist choice of a
synthetic probe answer (k legal moves in a seeded listing order, plus a repeat and a
non-move that :func:`~rungbench.chess.studies.ladder.own_shortlist` must drop) and of a
failed probe: the listed moves appear as UCI and SAN in the binding-seeded order (the
slot of the first-listed move is chi-square tested against uniform: the model's own
order is not shown), and the empty list renders as the unaided prompt. The stand-in for
the binding digest that seeds that order is the preset digest.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import chisquare

import chess
from rungbench.agents.protocol import Request
from rungbench.chess.labels.stage_records import Candidate, CandidateList, SearchStats
from rungbench.chess.studies.bindings import (
    Binding,
    design_kind,
    ladder_arms,
    ladder_slot_orders,
)
from rungbench.chess.studies.ladder import (
    CHOICE,
    INSTRUCTION,
    LIST_HEAD,
    SCHEMA_DIGEST,
    best_set,
    list_request,
    own_shortlist,
    shortlist_order,
    shown_moves,
)
from rungbench.chess.studies.panels import load_positions
from rungbench.design.audit import AuditReport, Figure
from rungbench.design.registry import RegisteredDesign, load_design, require
from rungbench.design.selectors import stage_signature
from rungbench.errors import InputError
from rungbench.evidence.canonical import digest

SYNTHETIC_SEED = 2020
"""Seed of the synthetic pass A lists (which ten legal moves, in which order)."""
BALANCE_MIN_P = 0.001
"""Smallest chi-square p of the rank-1 slot counts that passes (an audit rule, not a design
constant: a seeded uniform permutation fails it one time in a thousand per arm)."""
PUZZLES_READ = 1000
"""Bundled puzzles read for the audit positions."""
FORBIDDEN = re.compile(r"\b(rank(ed|s)?|scores?|eval(uation)?s?|centipawns?|cp|wdl|"
                       r"expectation|win|draw|loss|mate in|best move|stockfish|engine)\b",
                       re.IGNORECASE)
"""Words no prompt may contain (seed 001: "Rank and score remain hidden")."""
PAIR = r"(?P<uci>[a-h][1-8][a-h][1-8][qrbn]?) \((?P<san>[^()]+)\)"
LINE_GRAMMAR = {
    "oracle": re.compile(rf"^{PAIR}$"),
    "omitted": re.compile(rf"^{PAIR}$"),
    "successor": re.compile(rf"^{PAIR} -> resulting position \(FEN\): (?P<fen>[^;]+)$"),
    "reply": re.compile(rf"^{PAIR}; the proposer's best reply: (?:(?P<reply>[a-h][1-8][a-h]"
                        r"[1-8][qrbn]?) \((?P<reply_san>[^()]+)\)|none \(the game ends\))$"),
}
"""The registered candidate-line grammar of each list arm kind (anything else is a leak)."""


def synthetic_list(fen: str, position: int) -> CandidateList:
    """A stand-in pass A list: ten legal moves, ``position % 3`` of them tied with rank 1."""
    board = chess.Board(fen)
    legal = sorted(m.uci() for m in board.legal_moves)
    pick = np.random.default_rng([SYNTHETIC_SEED, position]).permutation(len(legal))[:10]
    ties = position % 3
    candidates = []
    for rank, index in enumerate(pick, start=1):
        uci = legal[int(index)]
        move = chess.Move.from_uci(uci)
        after = board.copy()
        after.push(move)
        replies = sorted(m.uci() for m in after.legal_moves)
        value = 0.8 if rank <= 1 + ties else round(0.75 - 0.05 * rank, 4)
        candidates.append(Candidate(
            rank=rank, uci=uci, san=board.san(move), score={"cp": round(1000 * value) - 500},
            wdl=(round(1000 * value), 0, 1000 - round(1000 * value)), expectation=value,
            search=SearchStats(depth=1, seldepth=1, nodes=1), pv=[uci, *replies[:1]]))
    return CandidateList.model_validate({
        "schema": "rungbench.chess.candidates/1", "key": f"audit-{position:04d}", "fen": fen,
        "engine": "synthetic", "contract": {}, "pass": "A", "record": "synthetic",
        "candidates": [c.model_dump() for c in candidates]})


def bound_positions(reg: RegisteredDesign) -> int:
    """Positions the preset binds: the quotas of its schedule's partitions in its own
    ``[manifest]``, or (E022) in the E020/E021 manifest it shares."""
    parts = require(reg.section("schedule"), "partitions", list, source=reg.source,
                    prefix="schedule")
    manifest = (reg.section("manifest") if "manifest" in reg.document
                else load_design("e020_e021").section("manifest"))
    cells = len(manifest["classes"]) * len(manifest["colours"])
    return sum(cells * int(manifest["quota"][str(p)]) for p in parts)


def audit_fens(count: int, *, data_dir: Path | None = None) -> list[str]:
    """``count`` bundled puzzle positions with at least ten legal moves (cycled)."""
    fens = [f for f in load_positions(PUZZLES_READ, data_dir=data_dir)
            if chess.Board(f).legal_moves.count() >= 10]
    if not fens:
        raise InputError("no bundled puzzle has ten legal moves", field="positions")
    return [fens[p % len(fens)] for p in range(count)]


@dataclass
class _Tally:
    """Violations found while rendering, by check."""

    violations: dict[str, int] = field(default_factory=dict)
    rank1_slots: dict[str, list[int]] = field(default_factory=dict)
    tool_digests: set[str] = field(default_factory=set)
    cells: int = 0

    def flag(self, check: str, bad: bool = True) -> None:
        self.violations[check] = self.violations.get(check, 0) + int(bad)


def _block(text: str) -> tuple[list[str], str]:
    """The candidate lines of a prompt and the prompt with its candidate block removed."""
    lines = text.split("\n")
    if LIST_HEAD not in lines:
        return [], text
    start = lines.index(LIST_HEAD)
    end = lines.index(INSTRUCTION) if INSTRUCTION in lines else len(lines)
    return lines[start + 1:end], "\n".join(lines[:start] + lines[end:])


def _check_lines(kind: str, lst: CandidateList, shown: Sequence[str], lines: Sequence[str],
                 tally: _Tally) -> None:
    board = chess.Board(lst.fen)
    grammar = LINE_GRAMMAR[kind]
    matches = [grammar.match(line) for line in lines]
    tally.flag("lines_follow_the_grammar", any(m is None for m in matches))
    found = [m for m in matches if m is not None]
    tally.flag("lines_show_the_frozen_moves_in_order", [m["uci"] for m in found] != list(shown))
    pv = {c.uci: c.pv for c in lst.candidates}
    for m in found:
        move = chess.Move.from_uci(m["uci"])
        legal = move in board.legal_moves
        tally.flag("uci_and_san_shown", not legal or m["san"] != board.san(move))
        if not legal:
            continue
        after = board.copy()
        after.push(move)
        if kind == "successor":
            tally.flag("successor_fen_is_the_position_after", m["fen"] != after.fen())
        if kind == "reply":
            reply = m["reply"]
            expected = pv.get(m["uci"], [])[1:2]
            ok = (reply is None and not expected) or (
                [reply] == expected and chess.Move.from_uci(reply) in after.legal_moves
                and m["reply_san"] == after.san(chess.Move.from_uci(reply)))
            tally.flag("reply_is_the_pv_reply_and_legal", not ok)


def _choice_requests(p: int, lst: CandidateList, k: int, binding: Binding,
                     tally: _Tally) -> dict[str, Request]:
    """The self-shortlist choice cells of a synthetic probe answer (k legal moves, listed in
    a seeded order) and of a failed probe (an empty list: the unaided prompt)."""
    board = chess.Board(lst.fen)
    legal = sorted(m.uci() for m in board.legal_moves)
    listed = [legal[int(i)] for i in
              np.random.default_rng([SYNTHETIC_SEED, p, k]).permutation(len(legal))[:k]]
    own = own_shortlist(lst.fen, [*listed, listed[0], "zz9"], k)
    tally.flag("own_shortlist_is_the_listed_legal_moves", own != listed)
    shown = shortlist_order(binding, p, own)
    arm = {"name": CHOICE, "kind": "self_shortlist"}
    out = {CHOICE: list_request(f"audit:{p:04d}:{CHOICE}", arm, lst, shown, {"key": lst.key}),
           f"{CHOICE}:empty": list_request(f"audit:{p:04d}:{CHOICE}:empty", arm, lst, [],
                                           {"key": lst.key})}
    for name, req in out.items():
        tally.cells += 1
        tally.tool_digests.add(digest(list(req.tools)))
        text = req.messages[-1].content
        tally.flag("no_score_or_rank_text", bool(FORBIDDEN.search(text)))
        lines, _ = _block(text)
        if name == CHOICE:
            _check_lines("oracle", lst, shown, lines, tally)
            tally.rank1_slots.setdefault(f"{CHOICE}:first_listed", []).append(
                shown.index(listed[0]))
        else:
            tally.flag("empty_shortlist_is_the_unaided_prompt", bool(lines) or LIST_HEAD in text)
    return out


def _audit_position(p: int, fen: str, arms: list[dict[str, Any]],
                    orders: dict[str, list[list[int]]], tally: _Tally, shortlist_k: int,
                    binding: Binding) -> None:
    lst = synthetic_list(fen, p)
    passa = [c.uci for c in lst.candidates]
    tied = set(best_set(lst))
    shown: dict[str, list[str]] = {}
    requests: dict[str, Request] = {}
    for arm in arms:
        name = str(arm["name"])
        shown[name] = shown_moves(arm, lst, orders[name][p])
        requests[name] = list_request(f"audit:{p:04d}:{name}", arm, lst, shown[name],
                                      {"key": lst.key})
    _check_sets(arms, shown, passa, tied, tally)
    bare = {}
    for arm in arms:
        name, kind = str(arm["name"]), str(arm["kind"])
        req = requests[name]
        tally.cells += 1
        tally.tool_digests.add(digest(list(req.tools)))
        tally.flag("one_tool_schema", digest(list(req.tools)) != SCHEMA_DIGEST
                   or req.tool_choice != "required")
        text = req.messages[-1].content
        tally.flag("no_score_or_rank_text", bool(FORBIDDEN.search(text)))
        lines, bare[name] = _block(text)
        if kind != "unaided":
            _check_lines(kind, lst, shown[name], lines, tally)
            if passa[0] in shown[name]:
                tally.rank1_slots.setdefault(name, []).append(shown[name].index(passa[0]))
        else:
            tally.flag("unaided_shows_no_list", bool(lines) or LIST_HEAD in text)
        bare[name] = "\n".join([req.messages[0].content, bare[name]])
    if shortlist_k:
        for name, req in _choice_requests(p, lst, shortlist_k, binding, tally).items():
            requests[name] = req
            bare[name] = "\n".join([req.messages[0].content, _block(req.messages[-1].content)[1]])
    tally.flag("prompts_differ_only_in_the_candidate_block", len(set(bare.values())) != 1)
    payloads = {digest({k: v for k, v in r.payload().items() if k != "messages"})
                for r in requests.values()}
    tally.flag("payloads_differ_only_in_messages", len(payloads) != 1)


def _check_sets(arms: list[dict[str, Any]], shown: dict[str, list[str]], passa: list[str],
                tied: set[str], tally: _Tally) -> None:
    oracle = [str(a["name"]) for a in arms if a["kind"] == "oracle"]
    for arm in arms:
        name, width = str(arm["name"]), int(arm.get("width", 0))
        if arm["kind"] in ("oracle", "successor", "reply"):
            tally.flag("oracle_lists_are_pass_a_prefixes", sorted(shown[name])
                       != sorted(passa[:width]) or len(set(shown[name])) != len(shown[name]))
        if arm["kind"] == "omitted":
            tally.flag("best_omitted_drops_every_tie_and_only_ties",
                       bool(set(shown[name]) & tied)
                       or sorted(shown[name]) != sorted(set(passa[:width]) - tied))
    for a, b in itertools.pairwise(oracle):
        tally.flag("oracle_lists_nest", not set(shown[a]) < set(shown[b]))
    by_width: dict[int, set[tuple[str, ...]]] = {}
    for arm in arms:
        if arm["kind"] in ("oracle", "successor", "reply"):
            by_width.setdefault(int(arm["width"]), set()).add(tuple(shown[str(arm["name"])]))
    tally.flag("same_width_arms_share_moves_and_order", any(len(v) > 1
                                                             for v in by_width.values()))
    if any(a["kind"] in ("successor", "reply") for a in arms):
        tally.flag("falsifiers_at_the_control_width", len(by_width) != 1)


def slot_balance(slots: Sequence[int], width: int) -> tuple[list[int], float, float]:
    """Counts of rank 1 per slot, Pearson's chi-square against uniform, and its p."""
    counts = [sum(1 for s in slots if s == i) for i in range(width)]
    if width < 2:
        return counts, 0.0, 1.0
    result = chisquare(counts)
    return counts, float(result.statistic), float(result.pvalue)


def registered_cells(reg: RegisteredDesign) -> dict[str, int]:
    """The cells a ladder preset produces and their make-up (positions × models × calls).

    Each move-choice arm is one cell per position and model; each probe is two (the
    ``submit_shortlist`` call and its ``self_shortlist_choice`` call).
    """
    positions = bound_positions(reg)
    models = len(require(reg.section("schedule"), "models", list, source=reg.source,
                         prefix="schedule"))
    arms = len(ladder_arms(reg))
    probes = len(reg.document.get("probes", []))
    out = {"positions": positions, "models": models, "move_choice_arms": arms,
           "probes": probes, "move_choice": positions * models * arms,
           "probe_calls": positions * models * probes,
           "choice_calls": positions * models * probes}
    out["total"] = out["move_choice"] + out["probe_calls"] + out["choice_calls"]
    return out


def cells_statement(reg: RegisteredDesign | None = None) -> dict[str, Any]:
    """The E020/E021 cell count three ways: the seed's figure, what the bundled preset
    produces, what ``reg`` (a preset of one's own, or the bundled one) produces, and why no
    reading of the seed gives its figure (computed here from the presets, never typed)."""
    full = load_design("e020_e021")
    cells = registered_cells(full)
    manifest = full.section("manifest")
    per = len(manifest["classes"]) * len(manifest["colours"])
    sizes = [per * int(v) for v in manifest["quota"].values()]
    unit = math.gcd(*sizes)
    one_call = cells["positions"] * cells["models"] * (cells["move_choice_arms"]
                                                       + cells["probes"])
    e022 = load_design("e022")
    e022_arms = len(e022.table_list("arms")) - 1  # the control is E020/E021's own arm
    e022_cells = e022_arms * bound_positions(e022) * len(e022.section("schedule")["models"])
    seed = int(full.section("seed_figures")["registered_cells_in_seed"])
    explanation = (
        f"Seed 001 states {seed:,} registered cells; no reading of the seed gives it. Every "
        f"registered arm is given to whole partitions of {' / '.join(map(str, sizes))} "
        f"positions, so any arms x partitions x models x presentations count is a multiple of "
        f"{unit}, and {seed:,} is not ({seed:,} = {seed / unit:.4g} x {unit}). The preset "
        f"produces {cells['total']:,} ({cells['positions']} positions x {cells['models']} "
        f"models x ({cells['move_choice_arms']} move-choice arms + {cells['probes']} probe x 2 "
        f"calls)); the readings nearest the seed are {one_call:,} (the self-shortlist arm as "
        f"one call) and {cells['total'] + e022_cells:,} (with E022's {e022_arms} falsifier "
        "arms).")
    mine = registered_cells(reg)["total"] if reg is not None else cells["total"]
    return {"seed": seed, "registered": cells["total"], "produced": mine,
            "explanation": explanation}


def ladder_audit(reg: RegisteredDesign, *, positions: int | None = None,
                 data_dir: Path | None = None) -> AuditReport:
    """Audit a ladder (E020/E021) or falsifier (E022) preset; see the module docstring."""
    kind = design_kind(reg)
    if kind not in ("intervention_ladder", "falsifier_arms"):
        raise InputError(f"{reg.name} is a {kind!r} design, not a ladder", path=reg.source,
                         field="design.kind")
    arms = ladder_arms(reg)
    seed = require(reg.section("schedule"), "order_seed", int, source=reg.source,
                   prefix="schedule")
    count = positions if positions is not None else bound_positions(reg)
    orders = ladder_slot_orders(seed, arms, count)
    tally = _Tally()
    probes = reg.document.get("probes") or []
    k = int(require(reg.section("schedule"), "shortlist_k", int, source=reg.source,
                    prefix="schedule")) if probes else 0
    stand_in = Binding(reg.digest, {})  # the choice order's seed: here the preset digest
    for p, fen in enumerate(audit_fens(count, data_dir=data_dir)):
        _audit_position(p, fen, arms, orders, tally, k, stand_in)
    return _report(reg, arms, count, tally, k)


def _applicable(arms: list[dict[str, Any]], shortlist_k: int) -> dict[str, bool]:
    """Every rendering check, and whether the preset's arms make it apply."""
    kinds = [str(a["kind"]) for a in arms]
    return {"oracle_lists_are_pass_a_prefixes": any(k in ("oracle", "successor", "reply")
                                                    for k in kinds),
            "oracle_lists_nest": kinds.count("oracle") > 1,
            "best_omitted_drops_every_tie_and_only_ties": "omitted" in kinds,
            "same_width_arms_share_moves_and_order": True,
            "falsifiers_at_the_control_width": "successor" in kinds or "reply" in kinds,
            "lines_follow_the_grammar": True, "lines_show_the_frozen_moves_in_order": True,
            "uci_and_san_shown": True, "successor_fen_is_the_position_after": "successor" in kinds,
            "reply_is_the_pv_reply_and_legal": "reply" in kinds, "no_score_or_rank_text": True,
            "unaided_shows_no_list": "unaided" in kinds,
            "own_shortlist_is_the_listed_legal_moves": shortlist_k > 0,
            "empty_shortlist_is_the_unaided_prompt": shortlist_k > 0, "one_tool_schema": True,
            "prompts_differ_only_in_the_candidate_block": True,
            "payloads_differ_only_in_messages": True}


def _report(reg: RegisteredDesign, arms: list[dict[str, Any]], count: int,
            tally: _Tally, shortlist_k: int) -> AuditReport:
    cells = registered_cells(reg)
    stated = reg.document.get("cells", {}).get("total")
    seed_cells = reg.document.get("seed_figures", {}).get("registered_cells_in_seed")
    statement = cells_statement(reg) if design_kind(reg) == "intervention_ladder" else None
    figures = [Figure("audit_positions", "positions rendered (bound count)", count, None,
                      False),
               Figure("cells", "registered cells (positions × models × calls)",
                      cells["total"], None if seed_cells is None else float(seed_cells),
                      False)]
    if "manifest" in reg.document:
        figures += _manifest_figures(reg)
    balance: dict[str, Any] = {}
    widths = {str(a["name"]): int(a.get("width", 0)) for a in arms}
    widths[f"{CHOICE}:first_listed"] = shortlist_k
    for name, width in widths.items():
        if name not in tally.rank1_slots:
            continue
        counts, stat, pvalue = slot_balance(tally.rank1_slots[name], width)
        balance[name] = {"counts": counts, "chi_square": stat, "p": pvalue}
        what = "first-listed move's slot" if name.startswith(CHOICE) else "rank-1 slot"
        figures.append(Figure(f"rank1_slot_p_{name}", f"{name}: chi-square p, {what} "
                              "uniform", round(pvalue, 6), None, False))
    names = [n for n, applies in _applicable(arms, shortlist_k).items() if applies]
    checks = {n: tally.violations.get(n, 0) == 0 for n in names}
    checks["tool_schema_identical_across_arms"] = tally.tool_digests == {SCHEMA_DIGEST}
    checks["rank1_slot_balanced"] = all(b["p"] >= BALANCE_MIN_P for b in balance.values())
    checks["cells_as_registered"] = stated is None or stated == cells["total"]
    detail = {"violations": {n: tally.violations.get(n, 0) for n in _applicable(arms, 1)},
              "rank1_slot_balance": balance, "cells": cells, "cells_stated": stated,
              "cells_statement": statement,
              "rendered_cells": tally.cells, "balance_min_p": BALANCE_MIN_P,
              "arms": [dict(a) for a in arms]}
    return AuditReport(str(reg.section("design").get("id", reg.name)), reg.digest, figures,
                       checks, detail)


def _manifest_figures(reg: RegisteredDesign) -> list[Figure]:
    """The manifest's positions (all, and per partition) beside the seed's, and the seed's
    coverage x selection example, each checked."""
    manifest = reg.section("manifest")
    seed = reg.document.get("seed_figures", {})
    per = len(manifest["classes"]) * len(manifest["colours"])
    figures = [Figure("manifest_positions", "manifest positions (quota x classes x colours)",
                      per * sum(int(v) for v in manifest["quota"].values()),
                      seed.get("manifest_positions"), True)]
    for part, quota in manifest["quota"].items():
        figures.append(Figure(f"{part}_positions", f"{part} positions", per * int(quota),
                              seed.get(f"{part}_positions"), True))
    ideas = stage_signature(0.35, 0.90)
    figures.append(Figure("coverage_selection_product", "C x S of seed 001's example "
                          "(C 0.35, S 0.90)", round(ideas.unaided_best_rate, 12),
                          seed.get("coverage_selection_product"), True))
    return figures
