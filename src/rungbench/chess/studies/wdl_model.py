"""The named, versioned centipawn → WDL conversion model of an evaluator engine (seed 002).

Ethereal, Toga II and a depth-limited Stockfish report centipawns (or mate), never a
win/draw/loss triple. Regret is defined on the WDL expectation (seed 001: WDL regret),
so each evaluator carries a fitted conversion model whose parameters are part of its
identity (:attr:`WdlModel.digest` enters every cache key and the published record).

Form (a logistic in centipawns with a phase term)::

    E(cp, p) = 1 / (1 + exp(-cp · (k0 + k1 · p)))

``cp`` is the score from the side to move's point of view, ``p`` the non-pawn phase
weight of the board divided by 24 and capped at 1 (:func:`rungbench.chess.position.
phase_weight`; 1 at the start, 0 with kings and pawns only). The model is symmetric,
``E(-cp, p) = 1 - E(cp, p)``, so negating a successor's score to the mover's side and
converting commute, and ``E(0, p) = 0.5`` (a level position is a draw expectation).

Mate rule (stated, not fitted): a mate score for the side to move is expectation 1,
a mate against it expectation 0, whatever the distance (a forced win is a win in WDL
terms, so keeping a longer forced mate is not a regret). A successor that is already
over is scored by the rules of chess: checkmate is 1 for the mover who delivered it;
stalemate, insufficient material, the 75-move rule and fivefold repetition are 0.5.

Fit (:func:`fit_model`): the parameters minimise the mean binary cross-entropy between
``E`` and Stockfish's own WDL expectation ``(W + D/2) / 1000`` of the same positions
(soft targets), by BFGS from a fixed start; mate scores are excluded from the fit
(they follow the rule). The fit report holds ``n``, the log-loss, the log-loss floor
(the mean entropy of the targets, reached only by a perfect model), the log-loss of the
constant 0.5, and calibration by decile of the prediction. The model is monotone in cp:
it does not reorder moves, it only puts the evaluator's scale onto Stockfish's WDL
scale, which is what makes regret comparable across evaluators.

Expectations are carried as integers in parts per million (:data:`PPM`), so ties are
equalities and published bytes never depend on float formatting.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

import chess
from rungbench.chess.position import phase_weight
from rungbench.errors import InputError
from rungbench.evidence.canonical import digest, loads_canonical

MODEL_SCHEMA = "rungbench.chess.wdl-model/1"
"""Schema name and version of a conversion-model data file."""
FORM = "logistic(cp*(k0+k1*phase)); phase=min(1,phase_weight/24); symmetric"
"""The functional form, recorded in the model's identity."""
MATE_RULE = ("mate for the side to move -> 1, mate against it -> 0 (any distance); "
             "checkmate on the board -> 1 for the mover; stalemate, insufficient material, "
             "75-move rule, fivefold repetition -> 0.5")
"""The stated mate and terminal rule, recorded in the model's identity."""
PPM = 1_000_000
"""Expectations and regrets are integers in parts per million."""
DRAW_PPM = PPM // 2
"""Expectation of a draw."""
CP_CLIP = 5_000
"""Centipawn scores are clipped to ±this before conversion (no overflow, no NaN)."""


@dataclass(frozen=True)
class WdlModel:
    """One fitted conversion model."""

    name: str
    """Model name, e.g. ``ethereal-12.00-logistic``."""
    version: int
    """Version of the model under that name (a refit is a new version)."""
    engine: str
    """``id name`` of the evaluator whose centipawns it converts."""
    depth: int
    """Search depth at which the evaluator's scores were taken for the fit."""
    k0: float
    """Slope per centipawn at phase 0 (kings and pawns)."""
    k1: float
    """Change of the slope from phase 0 to phase 1 (full material)."""

    def to_json(self) -> dict[str, Any]:
        """Return the model's identity (what its digest covers)."""
        return {"schema": MODEL_SCHEMA, "name": self.name, "version": self.version,
                "engine": self.engine, "depth": self.depth, "form": FORM,
                "mate_rule": MATE_RULE, "parameters": {"k0": self.k0, "k1": self.k1}}

    @property
    def digest(self) -> str:
        """Digest of the model's identity."""
        return digest(self.to_json())

    def expectation(self, cp: int, phase: float) -> float:
        """Return ``E(cp, phase)`` for the side to move, in [0, 1]."""
        return logistic(cp_clipped(cp) * (self.k0 + self.k1 * phase))

    def expectation_ppm(self, cp: int, phase: float) -> int:
        """Return ``E(cp, phase)`` in parts per million (rounded half to even)."""
        return round(self.expectation(cp, phase) * PPM)


def cp_clipped(cp: int) -> int:
    """Return ``cp`` clipped to ±:data:`CP_CLIP`."""
    return max(-CP_CLIP, min(CP_CLIP, cp))


def logistic(x: float) -> float:
    """Return ``1 / (1 + exp(-x))`` without overflow."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


def board_phase(board: chess.Board) -> float:
    """Return the model's phase input of ``board``: non-pawn phase weight / 24, capped at 1."""
    return min(1.0, phase_weight(board) / 24)


def mate_ppm(mate: int) -> int:
    """Return the expectation of a mate score for the side to move (the stated rule)."""
    return PPM if mate > 0 else 0


def terminal_ppm(board: chess.Board) -> int | None:
    """Return the mover's expectation when ``board`` (after the move) is over, else None.

    ``board`` is the successor: its side to move is the mover's opponent.
    """
    if board.is_checkmate():
        return PPM
    if (board.is_stalemate() or board.is_insufficient_material()
            or board.is_seventyfive_moves() or board.is_fivefold_repetition()):
        return DRAW_PPM
    return None


def model_from_json(document: Any, *, path: str | None = None) -> WdlModel:
    """Rebuild a model from its data file's ``model`` part; raise InputError on a bad one."""
    try:
        if document["schema"] != MODEL_SCHEMA or document["form"] != FORM:
            raise InputError(f"not a {MODEL_SCHEMA} model of form {FORM!r}", path=path,
                             field="model.schema")
        if document["mate_rule"] != MATE_RULE:
            raise InputError("the model states another mate rule", path=path,
                             field="model.mate_rule")
        params = document["parameters"]
        model = WdlModel(str(document["name"]), int(document["version"]),
                         str(document["engine"]), int(document["depth"]),
                         float(params["k0"]), float(params["k1"]))
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(f"not a conversion model: {exc!r}", path=path, field="model") from exc
    if model.to_json() != document:
        raise InputError("conversion model has fields outside its identity", path=path,
                         field="model")
    return model


def model_file(name: str) -> Path:
    """Return the bundled data file ``chess/data/<name>``."""
    return Path(str(resources.files("rungbench.chess").joinpath("data", name)))


def load_model(path: Path) -> tuple[WdlModel, dict[str, Any]]:
    """Return the model and its fit report from a model data file."""
    if not path.is_file():
        raise InputError("conversion model file does not exist", path=str(path))
    document = loads_canonical(path.read_bytes(), path=str(path))
    if not isinstance(document, dict) or "model" not in document:
        raise InputError("not a conversion model file", path=str(path), field="model")
    return model_from_json(document["model"], path=str(path)), dict(document.get("fit", {}))


@dataclass(frozen=True)
class FitPoint:
    """One fit observation: the evaluator's score and Stockfish's WDL expectation."""

    cp: int
    """Evaluator centipawns, side to move's view."""
    phase: float
    """Board phase input (:func:`board_phase`)."""
    target: float
    """Stockfish's WDL expectation ``(2W + D) / 2000`` for the side to move."""


def _predict(params: np.ndarray, cp: np.ndarray, phase: np.ndarray) -> np.ndarray:
    x = cp * (params[0] + params[1] * phase)
    return np.asarray(1.0 / (1.0 + np.exp(-np.clip(x, -50.0, 50.0))))


def log_loss(pred: np.ndarray, target: np.ndarray) -> float:
    """Return the mean binary cross-entropy of predictions against soft targets."""
    p = np.clip(pred, 1e-12, 1 - 1e-12)
    return float(-np.mean(target * np.log(p) + (1 - target) * np.log(1 - p)))


def calibration_by_decile(pred: np.ndarray, target: np.ndarray) -> list[dict[str, Any]]:
    """Return mean prediction vs mean target in ten equal-count bins ordered by prediction."""
    order = np.argsort(pred, kind="stable")
    rows = []
    for i, part in enumerate(np.array_split(order, 10), start=1):
        rows.append({"decile": i, "n": int(part.size),
                     "mean_predicted": round(float(pred[part].mean()), 6) if part.size else None,
                     "mean_target": round(float(target[part].mean()), 6) if part.size else None})
    return rows


def fit_model(points: Sequence[FitPoint], *, name: str, version: int, engine: str,
              depth: int) -> tuple[WdlModel, dict[str, Any]]:
    """Fit ``k0, k1`` by minimum cross-entropy (BFGS, fixed start); return model and report."""
    from scipy.optimize import minimize

    if len(points) < 20:
        raise InputError(f"a fit needs at least 20 points, got {len(points)}", field="points")
    cp = np.array([cp_clipped(p.cp) for p in points], dtype=float)
    phase = np.array([p.phase for p in points], dtype=float)
    target = np.array([p.target for p in points], dtype=float)
    result = minimize(lambda w: log_loss(_predict(w, cp, phase), target),
                      np.array([0.004, 0.0]), method="BFGS")
    k0, k1 = (float(f"{v:.6g}") for v in result.x)
    model = WdlModel(name, version, engine, depth, k0, k1)
    pred = _predict(np.array([k0, k1]), cp, phase)
    report = {
        "n": len(points), "log_loss": round(log_loss(pred, target), 6),
        "log_loss_floor": round(log_loss(target, target), 6),
        "log_loss_constant_half": round(log_loss(np.full_like(target, 0.5), target), 6),
        "mean_abs_error": round(float(np.mean(np.abs(pred - target))), 6),
        "calibration_by_decile": calibration_by_decile(pred, target),
        "optimizer": {"method": "BFGS", "start": [0.004, 0.0], "converged": bool(result.success)},
    }
    return model, report
