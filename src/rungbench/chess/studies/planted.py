"""Planted-mechanism agents that validate the study instrument (seed 000, seed 001).

Each agent's mechanism is stated here, seeded per request (``(seed, payload digest)``),
and independent of the analysis code: it decides from what the rendered prompt shows
(a revealed panel, the listed candidates) and from the hidden truth a synthetic agent is
stipulated to know (the request metadata's best set and, for E023, the hidden ranks).
They are served through :class:`~rungbench.agents.loopback.LoopbackServer`, so the whole
chain runs through the real ``openai`` client. They are controlled inputs, not claims
about any model.

* A105 (:class:`PanelAgent`): P(best) = ``base`` + ``lift`` × g(B, L), where B and L say
  whether the prompt's board and legal-action panels are revealed and g is
  ``board_limited`` B, ``list_limited`` L, ``substitutable`` B ∨ L, ``complementary``
  B ∧ L, ``null`` 0; otherwise a uniformly random legal non-best move. With
  ``reversed_order`` set, prompts whose panels come in that order (read from the prompt:
  which panel opens first) get P(best) = ``base`` − ``reversal`` × g(B, L) instead: the
  panel hurts in that order (a planted sign reversal between panel orders).
* E020/E021 (:class:`TwoStageAgent`): a shortlist of k holds a best move with
  probability C; from a list holding a best move it picks one with probability S, else
  a uniform other listed move; unaided it shortlists, then selects (P(best) = C × S).
  ``ideas_limited`` C 0.35 S 0.90, ``vision_limited`` C 0.90 S 0.35.
* E022 (:class:`TwoStageAgent` with S by arm kind, read from the request's ``arm_kind``):
  ``transition_limited`` S 0.35 from bare candidates, 0.90 with each candidate's resulting
  position, 0.60 with the proposer's reply (successor states repair its choice);
  ``comparison_limited`` S 0.35 whatever it is shown.
* E023 (:class:`SoftmaxSelector`): P(slot s) ∝ exp((−log rank_s)/T − primacy × s);
  ``sharp`` T 0.25, ``diffuse`` T 1.0, ``primacy`` T 1.0 with 0.5 per slot.

Planted attrition (:func:`condition_drops`): the loopback server drops the connection
(a network error, a reliability outcome) on every request of one condition at a seeded
share of positions, chosen from ``(seed, position key)`` alone.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rungbench.agents.loopback import Fault
from rungbench.agents.protocol import Request, Response, ToolCall
from rungbench.agents.providers import FaultFn
from rungbench.chess.reference_agents import legal_moves
from rungbench.chess.studies.panels import BOARD_CLOSE, BOARD_OPEN, LEGAL_CLOSE, LEGAL_OPEN, MASK
from rungbench.errors import InputError
from rungbench.evidence.canonical import digest

LISTED_RE = re.compile(r"^([a-h][1-8][a-h][1-8][qrbn]?) \(", re.MULTILINE)
"""A listed candidate line starts with its UCI move and its SAN in parentheses."""

A105_MECHANISMS = ("board_limited", "list_limited", "substitutable", "complementary", "null")
"""Registered A105 planted mechanisms."""
TWO_STAGE = {"ideas_limited": (0.35, 0.90), "vision_limited": (0.90, 0.35)}
"""Registered E020/E021 planted (C, S)."""
SELECTORS = {"sharp": (0.25, 0.0), "diffuse": (1.0, 0.0), "primacy": (1.0, 0.5)}
"""Registered E023 planted (temperature, primacy per slot)."""
FALSIFIER_AGENTS = {"transition_limited": {"oracle": 0.35, "successor": 0.90, "reply": 0.60},
                    "comparison_limited": {"oracle": 0.35, "successor": 0.35, "reply": 0.35}}
"""Registered E022 planted S per arm kind."""


def request_rng(seed: int, request: Request) -> np.random.Generator:
    """A generator seeded by ``seed`` and the request's payload digest."""
    return np.random.default_rng([seed, int(request.payload_digest()[7:23], 16)])


def _user_text(request: Request) -> str:
    return next(m.content for m in reversed(request.messages) if m.role == "user")


def _submit(move: str) -> Response:
    return Response(text=None, tool_calls=(ToolCall("submit_move", json.dumps({"move": move})),))


def _best(request: Request) -> list[str]:
    best = request.metadata.get("best_moves")
    if not isinstance(best, list) or not best:
        raise InputError(f"request {request.case_id!r} has no best_moves in its metadata; a "
                         "planted agent needs the stipulated truth", field="metadata.best_moves")
    return [str(b) for b in best]


def panels_shown(text: str) -> tuple[bool, bool]:
    """Whether the prompt's board panel and legal-action panel show real content."""
    board = text[text.index(BOARD_OPEN) + len(BOARD_OPEN):text.index(BOARD_CLOSE)]
    legal = text[text.index(LEGAL_OPEN) + len(LEGAL_OPEN):text.index(LEGAL_CLOSE)]
    squares = [line.split("|", 1)[1] for line in board.splitlines() if "|" in line]
    return (any(ch not in f" {MASK}" for row in squares for ch in row),
            any(ch not in f", {MASK}" for ch in legal))


def _other(rng: np.random.Generator, moves: list[str], best: list[str]) -> str:
    others = [m for m in moves if m not in best]
    return others[int(rng.integers(len(others)))] if others else moves[0]


@dataclass
class PanelAgent:
    """A105 planted agent: the best-move probability depends on the panels revealed."""

    mechanism: str
    """One of :data:`A105_MECHANISMS`."""
    base: float = 0.2
    """P(best) with no helpful panel."""
    lift: float = 0.5
    """Added P(best) when the mechanism's panels are revealed."""
    seed: int = 0
    """Base seed."""
    reversed_order: str | None = None
    """Panel order (``board_first`` / ``legal_list_first``) in which the panel hurts."""
    reversal: float = 0.0
    """P(best) removed in ``reversed_order`` when the mechanism's panels are revealed."""
    name: str = field(init=False)
    """Agent name recorded in run manifests."""

    def __post_init__(self) -> None:
        self.name = f"planted:a105:{self.mechanism}"
        if not 0.0 <= self.reversal <= self.base:
            raise InputError("reversal must be in [0, base]", field="reversal")
        if self.mechanism not in A105_MECHANISMS:
            raise InputError(f"unknown A105 mechanism {self.mechanism!r}", field="mechanism")
        if not 0.0 <= self.base <= self.base + self.lift <= 1.0:
            raise InputError("base and base + lift must be probabilities", field="lift")


    def helped(self, board: bool, legal: bool) -> bool:
        """Whether the mechanism's panels are revealed."""
        return {"board_limited": board, "list_limited": legal, "substitutable": board or legal,
                "complementary": board and legal, "null": False}[self.mechanism]

    def respond(self, request: Request) -> Response:
        """Choose a best move with the mechanism's probability, else a random other move."""
        rng = request_rng(self.seed, request)
        text = _user_text(request)
        board, legal = panels_shown(text)
        order = "board_first" if text.index(BOARD_OPEN) < text.index(LEGAL_OPEN) \
            else "legal_list_first"
        helped = self.helped(board, legal)
        if order == self.reversed_order:
            p = self.base - (self.reversal if helped else 0.0)
        else:
            p = self.base + (self.lift if helped else 0.0)
        best = _best(request)
        moves = legal_moves(str(request.metadata["fen"]))
        if rng.random() < p:
            return _submit(best[0])
        return _submit(_other(rng, moves, best))

    def describe(self) -> dict[str, Any]:
        """The agent's stated mechanism."""
        return {"kind": "planted", "name": self.name, "mechanism": self.mechanism,
                "base": self.base, "lift": self.lift, "seed": self.seed,
                "reversed_order": self.reversed_order, "reversal": self.reversal}


@dataclass
class TwoStageAgent:
    """E020/E021 planted agent: coverage C, then conditional selection S (seed 001)."""

    mechanism: str
    """``ideas_limited`` or ``vision_limited`` (or ``custom``)."""
    coverage: float
    """C."""
    selection: float
    """S."""
    seed: int = 0
    """Base seed."""
    kind_selection: dict[str, float] = field(default_factory=dict)
    """S by the request's arm kind (E022), overriding ``selection``."""
    family: str = "e020"
    """Registered family of the name (``e020`` or ``e022``)."""
    name: str = field(init=False)
    """Agent name recorded in run manifests."""

    def __post_init__(self) -> None:
        self.name = f"planted:{self.family}:{self.mechanism}"

    def shortlist(self, rng: np.random.Generator, request: Request, k: int) -> list[str]:
        """k legal moves holding a best move with probability C."""
        best = _best(request)
        others = [m for m in legal_moves(str(request.metadata["fen"])) if m not in best]
        covered = bool(rng.random() < self.coverage)
        take = min(k - 1 if covered else k, len(others))
        picked = [others[i] for i in rng.choice(len(others), take, replace=False)]
        moves = [*picked, best[0]] if covered else picked
        return [moves[i] for i in rng.permutation(len(moves))]

    def select(self, rng: np.random.Generator, shown: list[str], best: list[str],
               kind: str | None = None) -> str:
        """A best move with probability S (of the arm ``kind`` when given) when one is shown,
        else a uniform other one."""
        if not shown:
            raise InputError("cannot select from an empty list", field="candidates")
        present = [m for m in shown if m in best]
        s = self.kind_selection.get(kind or "", self.selection)
        if present and (len(present) == len(shown) or rng.random() < s):
            return present[int(rng.integers(len(present)))]
        return _other(rng, shown, best)

    def respond(self, request: Request) -> Response:
        """Answer the probe with a shortlist, a list arm by selection, unaided by both."""
        rng = request_rng(self.seed, request)
        best = _best(request)
        size = request.metadata.get("shortlist_size")
        if size is not None:
            moves = self.shortlist(rng, request, int(size))
            return Response(text=None, tool_calls=(ToolCall("submit_shortlist",
                                                 json.dumps({"moves": moves})),))
        shown = LISTED_RE.findall(_user_text(request))
        if not shown:
            shown = self.shortlist(rng, request, 5)
        kind = request.metadata.get("arm_kind")
        return _submit(self.select(rng, shown, best, str(kind) if kind else None))

    def describe(self) -> dict[str, Any]:
        """The agent's stated mechanism."""
        out = {"kind": "planted", "name": self.name, "coverage": self.coverage,
               "selection": self.selection, "seed": self.seed}
        return out | ({"selection_by_arm_kind": self.kind_selection}
                      if self.kind_selection else {})


@dataclass
class SoftmaxSelector:
    """E023 planted selector: softmax over −log(hidden rank) with a primacy penalty."""

    mechanism: str
    """``sharp``, ``diffuse`` or ``primacy``."""
    temperature: float
    """Softmax temperature."""
    primacy: float = 0.0
    """Logit penalty per slot (0 = none)."""
    seed: int = 0
    """Base seed."""
    name: str = field(init=False)
    """Agent name recorded in run manifests."""

    def __post_init__(self) -> None:
        self.name = f"planted:e023:{self.mechanism}"

    def probabilities(self, ranks: list[int]) -> list[float]:
        """Choice probability of each slot."""
        logits = [-math.log(r) / self.temperature - self.primacy * s
                  for s, r in enumerate(ranks)]
        top = max(logits)
        weights = [math.exp(v - top) for v in logits]
        total = sum(weights)
        return [w / total for w in weights]

    def respond(self, request: Request) -> Response:
        """Pick a listed move by the softmax of its hidden rank and slot."""
        rng = request_rng(self.seed, request)
        shown = LISTED_RE.findall(_user_text(request))
        ranks = request.metadata.get("ranks")
        if not shown or not isinstance(ranks, list) or len(ranks) != len(shown):
            raise InputError(f"request {request.case_id!r} shows no ranked list",
                             field="metadata.ranks")
        p = self.probabilities([int(r) for r in ranks])
        return _submit(shown[int(rng.choice(len(shown), p=p))])

    def describe(self) -> dict[str, Any]:
        """The agent's stated mechanism."""
        return {"kind": "planted", "name": self.name, "temperature": self.temperature,
                "primacy": self.primacy, "seed": self.seed}


PlantedAgent = PanelAgent | TwoStageAgent | SoftmaxSelector
"""Any planted agent."""
PLANTED_NAMES = (*(f"a105:{m}" for m in A105_MECHANISMS), *(f"e020:{m}" for m in TWO_STAGE),
                 *(f"e022:{m}" for m in FALSIFIER_AGENTS), *(f"e023:{m}" for m in SELECTORS))
"""Every registered planted agent name."""


def planted_agent(name: str, *, seed: int = 0) -> PlantedAgent:
    """Return the planted agent registered as ``name`` (see :data:`PLANTED_NAMES`)."""
    family, _, mech = name.partition(":")
    if family == "a105" and mech in A105_MECHANISMS:
        return PanelAgent(mech, seed=seed)
    if family == "e020" and mech in TWO_STAGE:
        return TwoStageAgent(mech, *TWO_STAGE[mech], seed=seed)
    if family == "e022" and mech in FALSIFIER_AGENTS:
        by_kind = FALSIFIER_AGENTS[mech]
        return TwoStageAgent(mech, 1.0, by_kind["oracle"], seed=seed,
                             kind_selection=dict(by_kind), family="e022")
    if family == "e023" and mech in SELECTORS:
        return SoftmaxSelector(mech, *SELECTORS[mech], seed=seed)
    raise InputError(f"unknown planted agent {name!r}; known: {', '.join(PLANTED_NAMES)}",
                     field="agent")



def condition_drops(condition: str, share: float, *, seed: int = 0) -> FaultFn:
    """Drop the connection on every ``condition`` request at a seeded ``share`` of positions.

    Whether a position is hit depends on ``(seed, position key)`` only, so both panel
    orders of a hit position fail and every retry fails again (differential attrition).
    """
    if not 0.0 <= share <= 1.0:
        raise InputError(f"share must be in [0, 1], got {share!r}", field="share")

    def fault(request: Request) -> Fault | None:
        meta = request.metadata
        if meta.get("condition") != condition:
            return None
        key = str(meta.get("key", request.case_id))
        u = np.random.default_rng([seed, int(digest(key)[7:23], 16)]).random()
        return Fault.DROP if u < share else None

    return fault
