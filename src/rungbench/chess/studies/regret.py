"""WDL regret and the outcome class of every cell (seeds 000-002), as pure functions.

Regret (seed 001's primary endpoint; seed 002's evaluator): for a position, every legal
successor is evaluated once by the evaluator (cleared state, fixed depth); its score,
from the successor's side to move, is negated to the mover's side and converted to a
WDL expectation ``E`` by the registered model (:mod:`rungbench.chess.studies.wdl_model`).
``E_best = max E``; the **best set** is every move with ``E == E_best`` (integer parts
per million, so a tie is an equality); ``wdl_regret = E_best − E_chosen`` ∈ [0, 1],
never negative by construction.

Outcome classes of a cell (the runner's registered classes, :mod:`rungbench.agents.
outcomes`, re-derived against the position):

* ``answered`` with a legal move → its WDL regret (class ``legal``);
* ``illegal`` (including a string that is not UCI, and a move of another position),
  ``malformed``, ``refusal``, and ``missing`` (an answer that carries no move) →
  regret 1.0, registered, never dropped;
* reliability outcomes (``provider_error``, ``network_error``, ``timeout``,
  ``interrupted``) and cells never sent → no regret; counted in the hazard table by
  condition and route.

Bad input (:func:`score_answers`): an answer naming an unknown cell and a second answer
for a cell are counted as anomalies and kept verbatim in the output; a non-UCI string
and a move for the wrong position are ``illegal`` with their detail. Nothing raises.

Catastrophic blunder (:data:`CATASTROPHIC_PPM`): regret ≥ 0.40. Justification from the
registered Ethereal model (fitted on 1,200 bundled-data positions, ``benchmarks/
evaluator.py`` prints these): from a level position, dropping a minor piece (−300 cp)
costs ``E(0) − E(−300)`` = 0.450 at full material and 0.466 at half material; a rook
costs 0.493; one pawn costs 0.227 / 0.254 and two pawns (−200 cp) 0.377 at full
material. 0.40 is the round number between "two pawns" and "a piece", so a catastrophe
is losing at least a piece's worth of winning chances, with a margin of 0.05 for
fixed-depth noise. It is a registered constant, the same for every evaluator, so the
catastrophic-blunder rate is comparable across evaluators. Model failures (regret 1.0)
are catastrophic by this rule too; the summary reports the rate over every scored cell
and over legal moves only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import chess
from rungbench.chess.studies.wdl_model import PPM, WdlModel, board_phase, terminal_ppm

CATASTROPHIC_PPM = 400_000
"""Registered catastrophic-blunder threshold: WDL regret ≥ 0.40 (see module docstring)."""

MAX_REGRET_PPM = PPM
"""Regret of a model failure (illegal, malformed, refusal, missing)."""

MODEL_FAILURE_CLASSES = ("illegal", "malformed", "refusal", "missing")
"""Classes that receive maximal regret."""
RELIABILITY_CLASSES = ("provider_error", "network_error", "timeout", "interrupted", "not_sent")
"""Classes that are reliability outcomes (no regret; hazard table)."""
CellClass = Literal["legal", "illegal", "malformed", "refusal", "missing", "provider_error",
                    "network_error", "timeout", "interrupted", "not_sent"]
"""The class a cell is scored in."""
ANOMALIES = ("unknown_cell", "duplicate_answer")
"""Bad-input anomalies that cannot be scored against a cell (counted, kept verbatim)."""


def mover_ppm(score: Mapping[str, int], successor: chess.Board, model: WdlModel) -> int:
    """Return the mover's expectation from the successor's side-to-move ``score``.

    ``{"cp": n}`` is negated and converted; ``{"mate": n}`` with n > 0 (the opponent
    mates) is 0, otherwise 1 (the stated mate rule).
    """
    if "mate" in score:
        return 0 if score["mate"] > 0 else PPM
    return model.expectation_ppm(-int(score["cp"]), board_phase(successor))


def successor_board(fen: str, move: str) -> chess.Board:
    """Return the board after ``move`` from ``fen``."""
    board = chess.Board(fen)
    board.push(chess.Move.from_uci(move))
    return board


def rule_ppm(fen: str, move: str) -> int | None:
    """Return the mover's expectation when the move ends the game, else None."""
    return terminal_ppm(successor_board(fen, move))


@dataclass(frozen=True)
class PositionValues:
    """The mover's expectation of every legal move of one position."""

    key: str
    """Normalized identity of the position."""
    values: Mapping[str, int]
    """UCI move → expectation in ppm, for every legal move."""

    @property
    def e_best(self) -> int:
        """The maximum expectation."""
        return max(self.values.values())

    @property
    def best_moves(self) -> tuple[str, ...]:
        """Every move whose expectation equals the maximum (sorted UCI)."""
        best = self.e_best
        return tuple(sorted(m for m, e in self.values.items() if e == best))

    def regret_ppm(self, move: str) -> int:
        """Return ``E_best − E(move)`` in ppm; ``move`` must be legal."""
        return self.e_best - self.values[move]


def parse_move(fen: str, text: str | None) -> tuple[str | None, str]:
    """Return ``(legal UCI move or None, detail)`` for a submitted string in ``fen``."""
    if text is None or not text.strip():
        return None, "missing"
    try:
        move = chess.Move.from_uci(text.strip())
    except ValueError:
        return None, "not_uci"
    if move not in chess.Board(fen).legal_moves:
        return None, "illegal_in_position"
    return move.uci(), "legal"


@dataclass(frozen=True)
class Answer:
    """One answer as read from a run: which cell, its runner outcome and the move text."""

    cell: str
    """Cell identifier the answer names."""
    outcome: str
    """The runner's registered outcome class (or ``not_sent``)."""
    move: str | None = None
    """The submitted move string, when the answer carried one."""
    detail: str = ""
    """The runner's detail."""
    response: str | None = None
    """Digest of the stored response, when there is one."""

    def to_json(self) -> dict[str, Any]:
        """Return the answer as a JSON-ready mapping."""
        return {"cell": self.cell, "outcome": self.outcome, "move": self.move,
                "detail": self.detail, "response": self.response}


@dataclass(frozen=True)
class CellInfo:
    """What scoring needs to know about one frozen cell."""

    cell: str
    """Cell identifier."""
    fen: str
    """FEN shown to the agent."""
    key: str
    """Normalized identity of the position."""
    condition: str
    """The cell's condition (arm) for the hazard table."""


@dataclass(frozen=True)
class CellScore:
    """The scored outcome of one cell."""

    cell: str
    """Cell identifier."""
    key: str
    """Position key."""
    condition: str
    """Condition (arm)."""
    cell_class: CellClass
    """The class the cell is scored in."""
    detail: str
    """Why (``legal``, ``not_uci``, ``illegal_in_position``, the runner's detail …)."""
    submitted: str | None
    """The submitted string, verbatim."""
    move: str | None
    """The legal move, when there is one."""
    regret_ppm: int | None
    """WDL regret in ppm (None for a reliability outcome)."""
    e_chosen_ppm: int | None
    """Expectation of the chosen move (legal moves only)."""
    e_best_ppm: int
    """Expectation of the best move."""
    best_moves: tuple[str, ...]
    """The best set."""

    @property
    def catastrophic(self) -> bool | None:
        """Whether the regret reaches the registered threshold (None without a regret)."""
        return None if self.regret_ppm is None else self.regret_ppm >= CATASTROPHIC_PPM

    def to_json(self) -> dict[str, Any]:
        """Return the score as published."""
        return {"cell": self.cell, "key": self.key, "condition": self.condition,
                "class": self.cell_class, "detail": self.detail, "submitted": self.submitted,
                "move": self.move, "regret_ppm": self.regret_ppm,
                "regret": None if self.regret_ppm is None else self.regret_ppm / PPM,
                "e_chosen_ppm": self.e_chosen_ppm, "e_best_ppm": self.e_best_ppm,
                "best_moves": list(self.best_moves), "catastrophic": self.catastrophic}


def _class_of(info: CellInfo, answer: Answer) -> tuple[CellClass, str, str | None]:
    if answer.outcome in RELIABILITY_CLASSES:
        return answer.outcome, answer.detail, None  # type: ignore[return-value]
    if answer.outcome in ("malformed", "refusal"):
        return answer.outcome, answer.detail, None  # type: ignore[return-value]
    move, detail = parse_move(info.fen, answer.move)
    if move is not None:
        return "legal", detail, move
    if answer.outcome == "answered" and detail == "missing":
        return "missing", "answered without a move", None
    if answer.outcome not in ("answered", "illegal"):
        return "malformed", f"unregistered outcome {answer.outcome!r}"[:120], None
    return "illegal", detail, None


def score_cell(info: CellInfo, answer: Answer, values: PositionValues) -> CellScore:
    """Return the scored outcome of one cell from its answer and its position's values."""
    cell_class, detail, move = _class_of(info, answer)
    regret: int | None
    chosen: int | None = None
    if move is not None:
        chosen = values.values[move]
        regret = values.regret_ppm(move)
    elif cell_class in RELIABILITY_CLASSES:
        regret = None
    else:
        regret = MAX_REGRET_PPM
    return CellScore(info.cell, info.key, info.condition, cell_class, detail, answer.move,
                     move, regret, chosen, values.e_best, values.best_moves)


@dataclass(frozen=True)
class Scored:
    """Every cell's score plus the answers that could not be scored against a cell."""

    cells: tuple[CellScore, ...]
    """One score per frozen cell, in schedule order."""
    anomalies: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    """Unknown-cell and duplicate answers, verbatim with their anomaly code."""


def score_answers(cells: Sequence[CellInfo], answers: Sequence[Answer],
                  values: Mapping[str, PositionValues]) -> Scored:
    """Score every frozen cell from ``answers`` (first answer per cell wins; nothing dropped).

    A cell without any answer is ``not_sent`` (a reliability outcome: missing observation).
    """
    known = {c.cell: c for c in cells}
    first: dict[str, Answer] = {}
    anomalies: list[dict[str, Any]] = []
    for index, answer in enumerate(answers):
        if answer.cell not in known:
            anomalies.append({"anomaly": "unknown_cell", "index": index, **answer.to_json()})
        elif answer.cell in first:
            anomalies.append({"anomaly": "duplicate_answer", "index": index, **answer.to_json()})
        else:
            first[answer.cell] = answer
    scores = tuple(score_cell(c, first.get(c.cell, Answer(c.cell, "not_sent")), values[c.key])
                   for c in cells)
    return Scored(scores, tuple(anomalies))


def mean_or_none(values: Sequence[int]) -> float | None:
    """Return the mean in units of 1 (from ppm), rounded to 6 places; None when empty."""
    return round(sum(values) / len(values) / PPM, 6) if values else None


def summarize(scored: Scored, route: str) -> dict[str, Any]:
    """Return class counts, mean regret, catastrophic rates, hazard table and bad input."""
    cells = scored.cells
    regrets = [c.regret_ppm for c in cells if c.regret_ppm is not None]
    legal = [c.regret_ppm for c in cells if c.cell_class == "legal" and c.regret_ppm is not None]
    classes: Counter[str] = Counter(str(c.cell_class) for c in cells)
    details = Counter(c.detail for c in cells if c.cell_class == "illegal")
    return {
        "cells": len(cells),
        "classes": {k: classes[k] for k in ("legal", *MODEL_FAILURE_CLASSES,
                                            *RELIABILITY_CLASSES)},
        "scored": len(regrets),
        "mean_wdl_regret": mean_or_none(regrets),
        "mean_wdl_regret_legal": mean_or_none(legal),
        "catastrophic_threshold": CATASTROPHIC_PPM / PPM,
        "catastrophic": sum(1 for r in regrets if r >= CATASTROPHIC_PPM),
        "catastrophic_rate": round(sum(1 for r in regrets if r >= CATASTROPHIC_PPM)
                                   / len(regrets), 6) if regrets else None,
        "catastrophic_rate_legal": round(sum(1 for r in legal if r >= CATASTROPHIC_PPM)
                                         / len(legal), 6) if legal else None,
        "best_move_rate_legal": round(sum(1 for c in cells if c.cell_class == "legal"
                                          and c.regret_ppm == 0) / len(legal), 6)
        if legal else None,
        "hazard": hazard_table(cells, route),
        "bad_input": {"illegal_details": dict(sorted(details.items())),
                      "anomalies": {a: sum(1 for x in scored.anomalies if x["anomaly"] == a)
                                    for a in ANOMALIES}},
    }


def hazard_table(cells: Sequence[CellScore], route: str) -> list[dict[str, Any]]:
    """Return reliability outcomes by condition and route: cells, missing, per class, hazard."""
    rows = []
    for condition in sorted({c.condition for c in cells}):
        group = [c for c in cells if c.condition == condition]
        missing: Counter[str] = Counter(str(c.cell_class) for c in group
                                       if c.cell_class in RELIABILITY_CLASSES)
        total = sum(missing.values())
        rows.append({"condition": condition, "route": route, "cells": len(group),
                     "missing": total, "by_class": {k: missing[k] for k in RELIABILITY_CLASSES},
                     "hazard": round(total / len(group), 6)})
    return rows
