"""Seeded planted agents that write cell tables with a stipulated mechanism.

They validate the analysis under known inputs (like ``design.factorial``'s surfaces); they
are never evidence about any model. A105 agents plant R(B, L) surfaces, panel-order
shifts and per-condition network-error hazards; the E020/E021 agent plants coverage C
and conditional selection S (seed 001's 31.5 % pair: C 0.35 / S 0.90 and C 0.90 / S 0.35).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rungbench.chess.studies.cells import (
    A105_CONDITIONS,
    PANEL_ORDERS,
    CellTableHeader,
    PromptAudit,
    schedule_digest,
)
from rungbench.evidence.canonical import digest

SURFACES: dict[str, dict[str, float]] = {
    "board_limited": {"no_information": 0.0, "legal_list_only": 0.0, "board_only": -0.15,
                      "board_plus_legal_list": -0.15},
    "complementary": {"no_information": 0.0, "legal_list_only": 0.0, "board_only": 0.0,
                      "board_plus_legal_list": -0.2},
    "substitutable": {"no_information": 0.0, "legal_list_only": -0.15, "board_only": -0.15,
                      "board_plus_legal_list": -0.15},
    "null": {c: 0.0 for c in A105_CONDITIONS}}
"""Planted regret shifts per condition (negative = regret falls)."""


@dataclass(frozen=True)
class PlantedA105:
    """One planted A105 agent."""

    surface: str = "null"
    """Key of :data:`SURFACES`."""
    order_shift: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    """Panel order → condition → extra regret shift."""
    network_hazard: Mapping[str, float] = field(default_factory=dict)
    """Condition → probability the cell ends in a network error."""
    failure_rate: float = 0.02
    """Probability of an illegal submission (maximal regret)."""
    noise: float = 0.06
    """SD of per-cell noise."""


def _digests(label: str) -> dict[str, str]:
    return {k: digest({"planted": label, "of": k}) for k in ("study", "evaluation")}


def a105_table(agents: Mapping[str, PlantedA105], *, positions: int = 60, games: int = 30,
               seed: int = 0, design_digest: str, prompt_audit: PromptAudit | None = None,
               evaluator_family: str = "ethereal", labeller_family: str = "stockfish",
               ) -> tuple[CellTableHeader, list[dict[str, Any]]]:
    """A planted A105 table: ``positions`` per split, every model × condition × order."""
    rng = np.random.default_rng(seed)
    d = _digests(f"a105:{seed}")
    rows: list[dict[str, Any]] = []
    tool = digest({"tool": "submit_move", "parameters": {"move": "string"}})
    for split in ("development", "held_out"):
        base = rng.uniform(0.25, 0.55, positions) + rng.normal(0, 0.05, games)[
            np.arange(positions) % games]
        for i in range(positions):
            pos = f"{split}-p{i:04d}"
            for model, agent in agents.items():
                for condition in A105_CONDITIONS:
                    for order in PANEL_ORDERS:
                        rows.append(_a105_row(d, design_digest, tool, rng, split, pos,
                                              f"{split}-g{i % games:03d}", model, agent,
                                              condition, order, float(base[i]), i,
                                              evaluator_family))
    return _header(d, "A105", design_digest, rows, prompt_audit, evaluator_family,
                   labeller_family), rows


def _a105_row(d: dict[str, str], design_digest: str, tool: str, rng: np.random.Generator,
              split: str, pos: str, game: str, model: str, agent: PlantedA105,
              condition: str, order: str, base: float, i: int,
              evaluator_family: str) -> dict[str, Any]:
    b, l_ = A105_CONDITIONS[condition]
    shift = SURFACES[agent.surface][condition] + agent.order_shift.get(order, {}).get(
        condition, 0.0)
    draw = rng.random()
    regret: float | None = float(np.clip(base + shift + rng.normal(0, agent.noise), 0, 1))
    outcome = "legal"
    if draw < agent.network_hazard.get(condition, 0.0):
        outcome, regret = "network_error", None
    elif rng.random() < agent.failure_rate:
        outcome, regret = "illegal", 1.0
    cell = f"{model}|{pos}|{condition}|{order}"
    return {"schema": "rungbench.chess.cell/1", "cell": cell, "study_digest": d["study"],
            "design_digest": design_digest, "design_id": "A105", "model": model,
            "split": split, "condition": condition, "board": b, "legal_list": l_,
            "panel_order": order, "position": pos, "source_game": game,
            "route": "route-a" if i % 2 == 0 else "route-b", "outcome": outcome,
            "regret": regret, "evaluator_family": evaluator_family,
            "evaluator_proxy": evaluator_family == "stockfish",
            "evaluation_digest": None if regret is None else digest({"eval": cell}),
            "tool_schema_digest": tool, "action_universe_digest": digest({"legal": pos})}


def _header(d: dict[str, str], design_id: str, design_digest: str,
            rows: list[dict[str, Any]], audit: PromptAudit | None, evaluator_family: str,
            labeller_family: str) -> CellTableHeader:
    schedule = tuple(r["cell"] for r in rows)
    return CellTableHeader.model_validate({
        "schema": "rungbench.chess.cell-table/1", "study_digest": d["study"],
        "design_id": design_id, "design_digest": design_digest,
        "evaluation_digest": d["evaluation"], "evaluator_family": evaluator_family,
        "labeller_family": labeller_family,
        "evaluator_proxy": evaluator_family == labeller_family, "schedule": schedule,
        "schedule_digest": schedule_digest(schedule),
        "prompt_audit": None if audit is None else audit.model_dump(mode="json")})


PHASE_CYCLE = ("opening", "middlegame", "endgame")
"""Planted phases (position i: ``i % 3``)."""
CLASS_CYCLE = ("tactical", "ambiguous", "quiet")
"""Planted tacticality classes (position i: ``(i // 6) % 3``)."""


def planted_strata(seed: int, i: int) -> dict[str, Any]:
    """The strata of planted position ``i``: colour alternates, phase and class cycle so that
    every combination occurs every 18 positions, and the value gap is U(0, 0.4) from a stream
    of its own (the outcome draws are unchanged by it)."""
    gap = float(np.random.default_rng([seed, 17, i]).uniform(0.0, 0.4))
    return {"side_to_move": "white" if i % 2 == 0 else "black",
            "phase": PHASE_CYCLE[i % 3], "tacticality": CLASS_CYCLE[(i // 6) % 3],
            "legal_moves": 20 + i % 17, "value_gap": round(gap, 9)}


@dataclass(frozen=True)
class PlantedStages:
    """A two-stage E020/E021 agent: coverage C and conditional selection S, with optional
    planted width and colour mechanisms (seed 001's falsifiers)."""

    coverage: float
    """P(best move in its own shortlist)."""
    selection: float
    """P(best chosen | best available)."""
    width_cost: float = 0.0
    """Selection lost in an oracle list wider than two."""
    cost_gap: float | None = None
    """When set, the width cost applies only below this value gap (errors confined to
    ambiguous positions)."""
    colour_selection: Mapping[str, float] = field(default_factory=dict)
    """Side to move → S in every oracle list (overrides ``selection``)."""

    def selection_at(self, arm: str, strata: Mapping[str, Any]) -> float:
        """S in oracle list ``arm`` at a position with ``strata``."""
        s = self.colour_selection.get(str(strata["side_to_move"]), self.selection)
        width = int(arm.removeprefix("oracle_top")) if arm.startswith("oracle_top") else 10
        if width > 2 and (self.cost_gap is None or strata["value_gap"] < self.cost_gap):
            s -= self.width_cost
        return min(1.0, max(0.0, s))


def e020_table(agents: Mapping[str, PlantedStages], *, positions: int = 400, games: int = 100,
               seed: int = 0, design_digest: str,
               arms: tuple[str, ...] = ("unaided", "self_shortlist", "oracle_top2",
                                        "oracle_top5"),
               ) -> tuple[CellTableHeader, list[dict[str, Any]]]:
    """A planted E020/E021 table (held-out): one cell per model × position × arm.

    The coverage probe's shortlist holds a best move with probability C (no regret); an
    oracle list always shows one and the agent picks it with probability S; unaided, it
    finds the best move with probability C × S. A miss costs U(0.05, 0.5) regret.
    """
    rng = np.random.default_rng(seed)
    d = _digests(f"e020:{seed}")
    tool = digest({"tool": "submit_move"})
    rows = []
    for i in range(positions):
        pos = f"p{i:04d}"
        for model, a in agents.items():
            for arm in arms:
                rows.append(_e020_row(d, design_digest, tool, rng, model, a, arm, pos,
                                      f"g{i % games:03d}", planted_strata(seed, i)))
    return _header(d, "E020_E021", design_digest, rows, None, "ethereal", "stockfish"), rows


def _e020_row(d: dict[str, str], design_digest: str, tool: str, rng: np.random.Generator,
              model: str, a: PlantedStages, arm: str, pos: str, game: str,
              strata: Mapping[str, Any]) -> dict[str, Any]:
    cell = f"{model}|{pos}|{arm}"
    shown: bool | None
    chose: bool | None
    if arm == "self_shortlist":
        shown, chose = bool(rng.random() < a.coverage), None
    elif arm == "unaided":
        shown, chose = None, bool(rng.random() < a.coverage * a.selection)
    else:
        shown = arm != "best_omitted"
        chose = bool(shown and rng.random() < a.selection_at(arm, strata))
    regret = None if chose is None else (0.0 if chose else float(rng.uniform(0.05, 0.5)))
    return {"cell": cell, "study_digest": d["study"], "design_digest": design_digest,
            "design_id": "E020_E021", "model": model, "split": "held_out", "condition": arm,
            "position": pos, "source_game": game, "route": "route-a", "outcome": "legal",
            "regret": regret, "evaluator_family": "ethereal", "evaluator_proxy": False,
            "evaluation_digest": None if regret is None else digest({"eval": cell}),
            "tool_schema_digest": tool, "action_universe_digest": digest({"legal": pos}),
            "best_in_candidates": shown, "chose_best": chose, **strata}


def e023_table(temperatures: Mapping[str, float], *, positions: int = 120, seed: int = 0,
               design_digest: str, games: int | None = None,
               primacy: Mapping[str, float] | None = None,
               ) -> tuple[CellTableHeader, list[dict[str, Any]]]:
    """A planted E023 table: softmax over u(rank) = −log(rank) at each model's temperature;
    regret of rank r is 0.12·log(r) plus noise (a monotone stipulation). Each position is
    its own source game unless ``games`` folds them into that many. ``primacy`` (model →
    probability) plants an order-sensitive selector: with that probability it takes the
    move in the first slot, where presentation A's slots are a seeded permutation and B
    rotates A by one (the registered cyclic counterbalance)."""
    from rungbench.chess.studies.cells import E023_ARMS

    ranks = {"near_strong": (1, 2, 3, 4, 5), "mid_band": (1, 4, 5, 6, 7),
             "mixed_tail": (1, 2, 8, 9, 10), "far_tail": (1, 7, 8, 9, 10)}
    rng = np.random.default_rng(seed)
    d = _digests(f"e023:{seed}")
    tool = digest({"tool": "submit_move"})
    rows = []
    for i in range(positions):
        pos = f"p{i:04d}"
        strata = planted_strata(seed, i)
        for model, temp in temperatures.items():
            for j, arm in enumerate(E023_ARMS):
                logits = -np.log(np.array(ranks[arm], dtype=float)) / temp
                prob = np.exp(logits - logits.max())
                prob /= prob.sum()
                order = list(np.random.default_rng([seed, 3, i, j]).permutation(ranks[arm]))
                for k, pres in enumerate(("A", "B")):
                    rank = int(rng.choice(ranks[arm], p=prob))
                    first = int(order[k])  # B = A rotated by one: its first slot is A's second
                    bias = (primacy or {}).get(model, 0.0)
                    if bias and np.random.default_rng([seed, 5, i, j, k]).random() < bias:
                        rank = first
                    regret = float(np.clip(0.12 * np.log(rank) + rng.normal(0, 0.02), 0, 1))
                    cell = f"{model}|{pos}|{arm}|{pres}"
                    rows.append({"cell": cell, "study_digest": d["study"],
                                 "design_digest": design_digest, "design_id": "E023",
                                 "model": model, "split": "held_out", "condition": arm,
                                 "presentation": pres, "position": pos,
                                 "source_game": f"g{i % (games or positions):04d}",
                                 "route": "route-a",
                                 "outcome": "legal", "regret": regret,
                                 "evaluator_family": "ethereal", "evaluator_proxy": False,
                                 "evaluation_digest": digest({"eval": cell}),
                                 "tool_schema_digest": tool,
                                 "action_universe_digest": digest({"legal": pos}),
                                 "chose_best": rank == 1, "selected_rank": rank,
                                 "selected_move": f"{pos}:rank{rank}", **strata})
    return _header(d, "E023", design_digest, rows, None, "ethereal", "stockfish"), rows


def e022_table(selection: Mapping[str, float], *, positions: int = 300, games: int = 100,
               seed: int = 0, design_digest: str, model: str = "planted"
               ) -> tuple[CellTableHeader, list[dict[str, Any]]]:
    """A planted E022 table (held-out): per arm (``oracle_top5``, ``successor_top5``,
    ``reply_top5``) the shown list holds a best move and the agent picks one with the arm's
    probability; a miss costs U(0.05, 0.5) regret."""
    rng = np.random.default_rng(seed)
    d = _digests(f"e022:{seed}")
    tool = digest({"tool": "submit_move"})
    rows = []
    for i in range(positions):
        pos = f"p{i:04d}"
        strata = planted_strata(seed, i)
        for arm, s in selection.items():
            chose = bool(rng.random() < s)
            cell = f"{model}|{pos}|{arm}"
            rows.append({"cell": cell, "study_digest": d["study"], "design_digest": design_digest,
                         "design_id": "E022", "model": model, "split": "held_out",
                         "condition": arm, "position": pos, "source_game": f"g{i % games:03d}",
                         "route": "route-a", "outcome": "legal",
                         "regret": 0.0 if chose else float(rng.uniform(0.05, 0.5)),
                         "evaluator_family": "ethereal", "evaluator_proxy": False,
                         "evaluation_digest": digest({"eval": cell}),
                         "tool_schema_digest": tool,
                         "action_universe_digest": digest({"legal": pos}),
                         "best_in_candidates": True, "chose_best": chose, **strata})
    return _header(d, "E022", design_digest, rows, None, "ethereal", "stockfish"), rows
