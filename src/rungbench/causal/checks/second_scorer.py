"""The second, independently written deterministic scorer of the causal benchmark.

Seed 003, "Deterministic scorer", and ``docs/CONTRACTS.md`` §3 define what a
verdict is; this module derives it without sharing code with the first scorer,
so that ``rungbench causal scorer-agreement`` compares two readings of the spec.

A response is graded in three passes:

1. **Read** the response into a ``Claim``. Every field that is present but
   malformed (a value outside [0, 1], bounds that are not an ordered pair in
   [0, 1], an edge that is not a pair of names, an action or experiment the
   item does not offer, an unknown status) is recorded as a defect. Any defect
   makes the verdict ``invalid`` with every metric null.
2. **Cell.** The status and the item's identifiability pick the cell of the
   seed's identification table (``_CELL``); only an identifiable item answered
   with a value needs grading, by the payload the item asks for.
3. **Metrics.** Absolute error, Brier, decision and information regret and the
   structure report are attached where they apply.

Conventions the contract leaves open, fixed here:

- An answer without the payload the item asks for (edges for discovery items,
  bounds when the oracle has bounds, else a value; an action / experiment for
  pure decision / experiment items) is ``invalid``, on non-identifiable items too.
- Metrics are computed whenever their payload is present, whatever the status:
  a ``need_info`` naming an experiment has an information regret, an
  abstention listing edges has a structure report. The status only picks the
  outcome cell.
- A value must be a JSON number: the string ``"0.3"`` is ``invalid``.
- A pure decision (experiment) item is ``correct`` iff the chosen action
  (experiment) has zero regret (within 1e-12).
- Structure metrics divide by zero as 0 (scikit-learn's ``zero_division=0``):
  no claimed edges gives precision 0, no true edges gives recall 0, and F1 is 0
  when precision + recall is 0. The agreement hand cases pin this for an empty
  claim; the contract itself does not say.
- ``abs_error`` is reported only for point values, not for bounds.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from rungbench.errors import InputError

DEFAULT_TOL = 0.02
"""Tolerance tau of seed 003, used when a record does not state its own."""

SLACK = 1e-12
"""Float slack on every tolerance comparison; a difference of exactly tau is correct."""

ITEM_TYPES = frozenset({"exact", "identification", "discovery", "cf_no_mechanism"})
"""``private_oracle.item_type`` values (CONTRACTS §3)."""

STATUSES = frozenset({"answer", "not_identifiable", "abstain", "need_info"})
"""``agent_response.status`` values (CONTRACTS §3)."""

BRIER_OUTCOMES = frozenset(
    {"correct", "wrong", "false_non_id", "false_answer_on_non_id", "correct_non_id"}
)
"""Outcomes on which a stated confidence is scored by Brier (CONTRACTS §3)."""

RIGHT_OUTCOMES = frozenset({"correct", "correct_non_id"})
"""Outcomes that count as 1 in ``1[correct]`` of the Brier score."""

Edge = tuple[str, str]
Payload = Literal["value", "bounds", "edges", "action", "experiment"]

# Seed 003, identification table: (truth is identifiable, response status) -> outcome.
# ``None`` means "grade the answer against the reference".
_CELL: Mapping[tuple[bool, str], str | None] = {
    (True, "answer"): None,
    (True, "not_identifiable"): "false_non_id",
    (True, "abstain"): "abstain",
    (True, "need_info"): "abstain",
    (False, "answer"): "false_answer_on_non_id",
    (False, "not_identifiable"): "correct_non_id",
    (False, "abstain"): "abstain",
    (False, "need_info"): "abstain",
}


# ------------------------------------------------------------------ the oracle


@dataclass(frozen=True)
class Key:
    """The fields of one ``private_oracle`` record that scoring needs."""

    case_id: str
    """Joins the record to responses."""
    item_type: str
    """``exact``, ``identification``, ``discovery`` or ``cf_no_mechanism``."""
    identifiable: bool
    """False: the reference answer is ``not_identifiable``."""
    value: float | None
    """Exact reference value for numeric items."""
    tol: float
    """Tolerance tau of numeric and bounds answers (seed: 0.02)."""
    bounds: tuple[float, float] | None
    """Reference bounds when the item asks for bounds."""
    true_edges: frozenset[Edge] | None
    """True DAG over the observed variables, for discovery items."""
    compelled: frozenset[Edge]
    """Directed edges of the oracle's equivalence class (CPDAG), when it supplies one."""
    expected_loss: Mapping[str, float] | None
    """Expected loss per action, for decision items."""
    eig_bits: Mapping[str, float] | None
    """Expected information gain per experiment, for experiment-choice items."""

    @property
    def asks_for(self) -> Payload:
        """The response field an answer to this item must carry."""
        if self.item_type == "discovery":
            return "edges"
        if self.bounds is not None:
            return "bounds"
        if self.value is not None or not self.identifiable:
            return "value"
        return "action" if self.expected_loss is not None else "experiment"


def _oracle_error(case: object, message: str, name: str) -> InputError:
    return InputError(f"private_oracle {case!r}: {message}", field=name)


def _finite(raw: Any) -> float | None:
    """A JSON number as a finite float, or None for anything else (bools included)."""
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        return None
    number = float(raw)
    return number if math.isfinite(number) else None


def _number_map(raw: Any, case: object, name: str) -> dict[str, float] | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise _oracle_error(case, f"expected an object of numbers, got {raw!r}", name)
    out: dict[str, float] = {}
    for key, item in raw.items():
        number = _finite(item)
        if not isinstance(key, str) or number is None:
            raise _oracle_error(case, f"entry {key!r}: {item!r} is not a finite number", name)
        out[key] = number
    return out


def _edge_set(raw: Any, case: object, name: str) -> frozenset[Edge]:
    edges = _as_edges(raw)
    if edges is None:
        raise _oracle_error(case, f"expected a list of [cause, effect] pairs, got {raw!r}", name)
    return edges


def read_key(oracle: Mapping[str, Any]) -> Key:
    """Validate a ``private_oracle`` record (CONTRACTS §3); raise InputError naming the field."""
    if not isinstance(oracle, Mapping):
        raise InputError(f"private_oracle must be an object, got {oracle!r}")
    case = oracle.get("case_id")
    if not isinstance(case, str) or not case:
        raise _oracle_error(case, "case_id must be a non-empty string", "case_id")
    item_type = oracle.get("item_type")
    if item_type not in ITEM_TYPES:
        raise _oracle_error(case, f"unknown item_type {item_type!r}", "item_type")
    identifiable = oracle.get("identifiable")
    if not isinstance(identifiable, bool):
        raise _oracle_error(case, f"identifiable must be a boolean, got {identifiable!r}",
                            "identifiable")
    # A record without tol uses the seed's tau = 0.02 (seed 003, "Deterministic scorer").
    tol = _finite(oracle.get("tol", DEFAULT_TOL))
    if tol is None or tol < 0:
        raise _oracle_error(case, f"tol must be a non-negative number, got {oracle.get('tol')!r}",
                            "tol")
    value = oracle.get("value")
    if value is not None and _finite(value) is None:
        raise _oracle_error(case, f"value must be a number or null, got {value!r}", "value")
    key = Key(
        case_id=case,
        item_type=str(item_type),
        identifiable=identifiable,
        value=_finite(value),
        tol=tol,
        bounds=_read_reference_bounds(oracle.get("bounds"), case),
        true_edges=None if oracle.get("true_edges") is None
        else _edge_set(oracle.get("true_edges"), case, "true_edges"),
        compelled=_read_compelled(oracle.get("cpdag"), case),
        expected_loss=_number_map(oracle.get("expected_loss"), case, "expected_loss"),
        eig_bits=_number_map(oracle.get("eig_bits"), case, "eig_bits"),
    )
    _check_answerable(key)
    return key


def _read_reference_bounds(raw: Any, case: object) -> tuple[float, float] | None:
    if raw is None:
        return None
    pair = _as_bounds(raw)
    if pair is None:
        raise _oracle_error(case, f"bounds must be [lo, hi] in [0, 1], got {raw!r}", "bounds")
    return pair


def _read_compelled(raw: Any, case: object) -> frozenset[Edge]:
    if raw is None:
        return frozenset()
    if not isinstance(raw, Mapping):
        raise _oracle_error(case, f"cpdag must be an object, got {raw!r}", "cpdag")
    return _edge_set(raw.get("directed", []), case, "cpdag.directed")


def _check_answerable(key: Key) -> None:
    """An identifiable item must carry the reference its payload is graded against."""
    if not key.identifiable:
        return
    if key.item_type == "discovery" and key.true_edges is None:
        raise _oracle_error(key.case_id, "a discovery item needs true_edges", "true_edges")
    if key.item_type != "discovery" and key.bounds is None and key.value is None \
            and key.expected_loss is None and key.eig_bits is None:
        raise _oracle_error(key.case_id, "an identifiable item needs value, bounds, "
                            "expected_loss or eig_bits", "value")


# --------------------------------------------------------------- the response


@dataclass(frozen=True)
class Claim:
    """One ``agent_response`` read against its item, with its defects listed."""

    status: str
    """The response status as given."""
    value: float | None
    """Point answer."""
    bounds: tuple[float, float] | None
    """Interval answer."""
    edges: frozenset[Edge] | None
    """Claimed DAG edges."""
    action: str | None
    """Chosen action."""
    experiment: str | None
    """Chosen experiment."""
    confidence: float | None
    """Stated probability that the answer is correct."""
    defects: tuple[str, ...] = field(default=())
    """Why the response is malformed; non-empty means the verdict is ``invalid``."""


def _as_probability(raw: Any) -> float | None:
    number = _finite(raw)
    return number if number is not None and 0.0 <= number <= 1.0 else None


def _as_bounds(raw: Any) -> tuple[float, float] | None:
    if not isinstance(raw, list | tuple) or len(raw) != 2:
        return None
    lo, hi = _as_probability(raw[0]), _as_probability(raw[1])
    if lo is None or hi is None or lo > hi:
        return None
    return lo, hi


def _as_edges(raw: Any) -> frozenset[Edge] | None:
    if not isinstance(raw, list | tuple):
        return None
    edges: set[Edge] = set()
    for pair in raw:
        if not isinstance(pair, list | tuple) or len(pair) != 2 \
                or not all(isinstance(end, str) and end for end in pair):
            return None
        edges.add((pair[0], pair[1]))
    return frozenset(edges)


def _choice(raw: Any, menu: Mapping[str, float] | None, name: str,
            defects: list[str]) -> str | None:
    if raw is None:
        return None
    if not isinstance(raw, str):
        defects.append(f"{name} must be a string, got {raw!r}")
        return None
    if menu is not None and raw not in menu:
        defects.append(f"unknown {name} {raw!r}; offered: {sorted(menu)!r}")
    return raw


def _optional(raw: Any, parse: Any, message: str, defects: list[str]) -> Any:
    if raw is None:
        return None
    parsed = parse(raw)
    if parsed is None:
        defects.append(f"{message}, got {raw!r}")
    return parsed


def read_claim(response: Mapping[str, Any], key: Key) -> Claim:
    """Read an ``agent_response`` (CONTRACTS §3) against its item, collecting defects."""
    defects: list[str] = []
    status = response.get("status")
    if status not in STATUSES:
        defects.append(f"unknown status {status!r}")
    return Claim(
        status=str(status),
        value=_optional(response.get("value"), _as_probability, "value must be in [0, 1]",
                        defects),
        bounds=_optional(response.get("bounds"), _as_bounds,
                         "bounds must be [lo, hi] with 0 <= lo <= hi <= 1", defects),
        edges=_optional(response.get("edges"), _as_edges,
                        "edges must be a list of [cause, effect] name pairs", defects),
        action=_choice(response.get("action"), key.expected_loss, "action", defects),
        experiment=_choice(response.get("experiment"), key.eig_bits, "experiment", defects),
        confidence=_optional(response.get("confidence"), _as_probability,
                             "confidence must be in [0, 1]", defects),
        defects=tuple(defects),
    )


# ---------------------------------------------------- structure (seed: Structure)


def skeleton(edges: Iterable[Edge]) -> frozenset[frozenset[str]]:
    """Undirected adjacencies of a graph."""
    return frozenset(frozenset(edge) for edge in edges)


def v_structures(edges: Iterable[Edge]) -> frozenset[tuple[str, str, str]]:
    """Unshielded colliders ``a -> c <- b`` as ``(min(a, b), c, max(a, b))``."""
    edge_list = list(edges)
    adjacent = skeleton(edge_list)
    into: dict[str, set[str]] = {}
    for cause, effect in edge_list:
        into.setdefault(effect, set()).add(cause)
    found = set()
    for collider, causes in into.items():
        for a in causes:
            for b in causes:
                if a < b and frozenset((a, b)) not in adjacent:
                    found.add((a, collider, b))
    return frozenset(found)


def is_acyclic(edges: Iterable[Edge]) -> bool:
    """True when the directed graph has no cycle (a self-loop is a cycle)."""
    children: dict[str, set[str]] = {}
    indegree: dict[str, int] = {}
    for cause, effect in set(edges):
        children.setdefault(cause, set()).add(effect)
        indegree[effect] = indegree.get(effect, 0) + 1
        indegree.setdefault(cause, 0)
    frontier = [node for node, count in indegree.items() if count == 0]
    removed = 0
    while frontier:
        node = frontier.pop()
        removed += 1
        for child in children.get(node, ()):
            indegree[child] -= 1
            if indegree[child] == 0:
                frontier.append(child)
    return removed == len(indegree)


def cpdag(edges: Iterable[Edge]) -> tuple[frozenset[Edge], frozenset[frozenset[str]]]:
    """The completed partially directed graph of a DAG's Markov equivalence class.

    Orient the v-structures, then apply Meek's rules R1-R3 to a fixed point
    (Meek 1995, "Causal inference and causal explanation with background
    knowledge": R4 is only needed with background knowledge). Returns the
    compelled directed edges and the reversible (undirected) adjacencies.
    """
    edge_list = list(edges)
    adjacent = skeleton(edge_list)
    directed: set[Edge] = set()
    for a, c, b in v_structures(edge_list):
        directed |= {(a, c), (b, c)}
    undirected = {pair for pair in adjacent
                  if not any(frozenset(edge) == pair for edge in directed)}
    while True:
        compelled = _meek_step(directed, undirected, adjacent)
        if compelled is None:
            return frozenset(directed), frozenset(undirected)
        directed.add(compelled)
        undirected.discard(frozenset(compelled))


def _meek_step(directed: set[Edge], undirected: set[frozenset[str]],
               adjacent: frozenset[frozenset[str]]) -> Edge | None:
    """One edge that R1, R2 or R3 compels, or None at the fixed point."""
    for pair in sorted(undirected, key=sorted):
        low, high = sorted(pair)
        for x, y in ((low, high), (high, low)):
            if _compelled(x, y, directed, undirected, adjacent):
                return (x, y)
    return None


def _compelled(x: str, y: str, directed: set[Edge], undirected: set[frozenset[str]],
               adjacent: frozenset[frozenset[str]]) -> bool:
    """Whether the undirected x - y must be oriented x -> y."""
    into_x = {a for a, b in directed if b == x}
    # R1: a -> x - y with a, y non-adjacent.
    if any(frozenset((a, y)) not in adjacent for a in into_x):
        return True
    # R2: x -> z -> y.
    out_of_x = {b for a, b in directed if a == x}
    if any((z, y) in directed for z in out_of_x):
        return True
    # R3: x - c -> y and x - d -> y with c, d non-adjacent.
    spokes = [c for c in _neighbours(x, undirected) if (c, y) in directed]
    return any(frozenset((c, d)) not in adjacent for c in spokes for d in spokes if c < d)


def _neighbours(node: str, undirected: set[frozenset[str]]) -> Iterator[str]:
    for pair in undirected:
        if node in pair:
            yield from (other for other in pair if other != node)


def same_mec(claimed: frozenset[Edge], true: frozenset[Edge],
             compelled: frozenset[Edge] = frozenset()) -> bool:
    """Whether the claimed DAG lies in the equivalence class of the true DAG.

    Verma & Pearl: two DAGs are Markov equivalent iff they share the skeleton
    and the v-structures. A cyclic claim is in no class. ``compelled`` edges
    (the oracle's CPDAG, possibly refined by interventions, Hauser & Bühlmann
    2012) must also be oriented as given.
    """
    return (
        is_acyclic(claimed)
        and skeleton(claimed) == skeleton(true)
        and v_structures(claimed) == v_structures(true)
        and compelled <= claimed
    )


def structure_report(claimed: frozenset[Edge], true: frozenset[Edge],
                     compelled: frozenset[Edge] = frozenset()) -> dict[str, Any]:
    """Directed precision/recall/F1, reversed-edge count and ``same_mec`` (seed: Structure)."""
    hits = len(claimed & true)
    precision = hits / len(claimed) if claimed else 0.0
    recall = hits / len(true) if true else 0.0
    total = precision + recall
    return {
        "precision": precision,
        "recall": recall,
        "f1": 2 * precision * recall / total if total > 0 else 0.0,
        "reversed": sum(1 for a, b in claimed if (b, a) in true and (a, b) not in true),
        "same_mec": same_mec(claimed, true, compelled),
    }


# ------------------------------------------------------------------- grading


def _regret(menu: Mapping[str, float], chosen: str, *, lower_is_better: bool) -> float:
    """Decision regret E[L(a)] - min E[L], or information regret max EIG - EIG(x) (seed)."""
    if lower_is_better:
        return menu[chosen] - min(menu.values())
    return max(menu.values()) - menu[chosen]


def _within(answer: float, reference: float, tol: float) -> bool:
    return abs(answer - reference) <= tol + SLACK


def _grade_answer(key: Key, claim: Claim, regrets: Mapping[str, float | None],
                  structure: Mapping[str, Any] | None) -> str:
    """Outcome of a status-``answer`` response to an identifiable item."""
    wanted = key.asks_for
    if wanted == "edges":
        return "correct" if structure is not None and structure["same_mec"] else "wrong"
    if wanted == "bounds":
        assert key.bounds is not None and claim.bounds is not None
        ends = zip(claim.bounds, key.bounds, strict=True)
        return "correct" if all(_within(a, r, key.tol) for a, r in ends) else "wrong"
    if wanted == "value":
        assert key.value is not None and claim.value is not None
        return "correct" if _within(claim.value, key.value, key.tol) else "wrong"
    regret = regrets["decision_regret" if wanted == "action" else "info_regret"]
    return "correct" if regret is not None and regret <= SLACK else "wrong"


def _missing_payload(key: Key, claim: Claim) -> str | None:
    """Why a status-``answer`` response lacks what its item asks for, or None."""
    if claim.status != "answer" or getattr(claim, key.asks_for) is not None:
        return None
    return f"answer without {key.asks_for}"


def _empty_verdict(case_id: str | None, outcome: str) -> dict[str, Any]:
    return {"case_id": case_id, "outcome": outcome, "abs_error": None, "brier": None,
            "decision_regret": None, "info_regret": None, "structure": None}


def _grade(oracle: Mapping[str, Any], response: Mapping[str, Any]) -> tuple[dict[str, Any],
                                                                            str | None]:
    """The verdict, and the reason when it is ``invalid``."""
    key = read_key(oracle)
    if not isinstance(response, Mapping):
        raise InputError(f"agent_response must be an object, got {response!r}")
    if response.get("case_id") != key.case_id:
        raise InputError(f"response case_id {response.get('case_id')!r} does not match "
                         f"oracle case_id {key.case_id!r}", field="case_id")
    claim = read_claim(response, key)
    problem = "; ".join(claim.defects) or _missing_payload(key, claim)
    if problem:
        return _empty_verdict(key.case_id, "invalid"), problem

    regrets = {
        "decision_regret": None if claim.action is None or key.expected_loss is None
        else _regret(key.expected_loss, claim.action, lower_is_better=True),
        "info_regret": None if claim.experiment is None or key.eig_bits is None
        else _regret(key.eig_bits, claim.experiment, lower_is_better=False),
    }
    structure = None
    if key.item_type == "discovery" and key.true_edges is not None and claim.edges is not None:
        structure = structure_report(claim.edges, key.true_edges, key.compelled)

    outcome = _CELL[(key.identifiable, claim.status)] \
        or _grade_answer(key, claim, regrets, structure)
    verdict = _empty_verdict(key.case_id, outcome)
    verdict.update(regrets)
    verdict["structure"] = structure
    if outcome in ("correct", "wrong") and key.asks_for == "value" \
            and claim.value is not None and key.value is not None:
        verdict["abs_error"] = abs(claim.value - key.value)
    if outcome in BRIER_OUTCOMES and claim.confidence is not None:
        verdict["brier"] = (claim.confidence - (1.0 if outcome in RIGHT_OUTCOMES else 0.0)) ** 2
    return verdict, None


def score(oracle: Mapping[str, Any], response: Mapping[str, Any]) -> dict[str, Any]:
    """Score one response against its private oracle record; return the verdict of CONTRACTS §3.

    Records of version ``rungbench.records/2`` (the episode families) are graded
    by :func:`grade_episode`. Raises InputError when the oracle record is malformed or
    the case ids differ; a malformed response is never an error but ``invalid``.
    """
    if isinstance(oracle, Mapping) and oracle.get("version") == EPISODE_VERSION:
        return grade_episode(oracle, response)[0]
    return _grade(oracle, response)[0]


# ------------------------------------------- episode families (records/2)
#
# The rows seed 003 "Task families and generator coverage" marks "next stage", graded as
# read from seed 003 "Deterministic scorer" (diagnosis outcomes, decision and information
# regret) and the records/2 oracle fields. Written without the first scorer: the
# diagnosis table is keyed on (abstained?, named the true cause?, named cause inside the
# identified set?, identified set a singleton?).

EPISODE_VERSION = "rungbench.records/2"
"""Oracle records of this version are graded by :func:`grade_episode`."""

EPISODE_ITEM_TYPES = frozenset({"diagnosis", "experiment", "posterior"})
"""``private_oracle.item_type`` values of the episode families."""

_EPISODE_EMPTY = ("abs_error", "brier", "decision_regret", "info_regret", "experiment_regret",
                  "structure")

# (truth named, named in set, set is a singleton) -> outcome of a diagnosis answer
_DIAGNOSIS: Mapping[tuple[bool, bool, bool], str] = {
    (True, True, True): "correct",
    (True, True, False): "lucky",
    (False, True, True): "consistent_unjustified",
    (False, True, False): "consistent_unjustified",
    (False, False, True): "wrong",
    (False, False, False): "wrong",
}

_HOLDS_BACK = frozenset({"abstain", "need_info", "not_identifiable"})


def _episode_verdict(case_id: str, outcome: str) -> dict[str, Any]:
    verdict: dict[str, Any] = {"case_id": case_id, "outcome": outcome}
    verdict.update(dict.fromkeys(_EPISODE_EMPTY))
    return verdict


def _menu(oracle: Mapping[str, Any], name: str) -> dict[str, float] | None:
    return _number_map(oracle.get(name), oracle.get("case_id"), name)


def grade_episode(oracle: Mapping[str, Any], response: Mapping[str, Any]
                  ) -> tuple[dict[str, Any], str | None]:
    """Grade a response to a records/2 item; return the verdict and why it is invalid."""
    case = oracle.get("case_id")
    if not isinstance(case, str) or not case:
        raise _oracle_error(case, "case_id must be a non-empty string", "case_id")
    kind = oracle.get("item_type")
    if kind not in EPISODE_ITEM_TYPES:
        raise _oracle_error(case, f"unknown item_type {kind!r}", "item_type")
    if not isinstance(response, Mapping) or response.get("case_id") != case:
        raise InputError(f"response does not answer {case!r}", field="case_id")
    losses, gains = _menu(oracle, "expected_loss"), _menu(oracle, "eig_bits")
    after = _menu(oracle, "experiment_loss")
    defects: list[str] = []
    status = response.get("status")
    if status not in STATUSES:
        defects.append(f"unknown status {status!r}")
    value = _optional(response.get("value"), _as_probability, "value must be in [0, 1]",
                      defects)
    confidence = _optional(response.get("confidence"), _as_probability,
                           "confidence must be in [0, 1]", defects)
    _optional(response.get("bounds"), _as_bounds, "bounds must be [lo, hi] in [0, 1]", defects)
    action = _choice(response.get("action"), losses or {}, "action", defects)
    experiment = _choice(response.get("experiment"), gains or {}, "experiment", defects)
    label = response.get("label")
    if label is not None and not isinstance(label, str):
        defects.append(f"label must be a string, got {label!r}")
    answering = status == "answer"
    if not defects and answering:
        wanted = {"diagnosis": label, "experiment": experiment, "posterior": value}[str(kind)]
        if wanted is None:
            defects.append(f"answer without the {kind} item's payload")
    if defects:
        return _episode_verdict(case, "invalid"), "; ".join(defects)

    verdict = _episode_verdict(case, "abstain")
    if action is not None and losses is not None:
        verdict["decision_regret"] = _regret(losses, action, lower_is_better=True)
    if experiment is not None and gains is not None:
        verdict["info_regret"] = _regret(gains, experiment, lower_is_better=False)
        if after is not None:
            verdict["experiment_regret"] = _regret(after, experiment, lower_is_better=True)
    hit = False
    if kind == "diagnosis":
        live = list(oracle.get("identified_set") or [])
        if not answering:
            verdict["outcome"] = "justified_abstain" if len(live) > 1 else "abstain"
        else:
            truth = oracle.get("true_cause")
            hit = label == truth
            verdict["outcome"] = _DIAGNOSIS[(hit, label in live, len(live) == 1)]
    elif kind == "experiment":
        if answering:
            hit = verdict["info_regret"] <= SLACK
            verdict["outcome"] = "correct" if hit else "wrong"
    else:
        reference = _finite(oracle.get("value"))
        tol = _finite(oracle.get("tol", DEFAULT_TOL))
        if reference is None or tol is None:
            raise _oracle_error(case, "a posterior item needs value and tol", "value")
        if status == "not_identifiable":
            verdict["outcome"] = "false_non_id"
        elif answering:
            assert value is not None
            verdict["abs_error"] = abs(value - reference)
            hit = _within(value, reference, tol)
            verdict["outcome"] = "correct" if hit else "wrong"
    if confidence is not None and verdict["outcome"] not in ("abstain", "justified_abstain"):
        verdict["brier"] = (confidence - float(hit)) ** 2
    return verdict, None


def revision_rates(episode: Iterable[tuple[Mapping[str, Any], Mapping[str, Any]]]
                   ) -> dict[str, int]:
    """Revision counts of one episode from its (oracle, response) pairs in any order.

    Seed 003 "Revision items": revision accuracy (changed when the new evidence
    should change the answer), stale belief (kept an answer the new evidence
    refutes), collateral retraction (dropped a belief that remains supported).
    A stage's reference answer is its identified set's only member, else none; an
    agent's answer is its named label when it answered, else none.
    """
    rows = sorted(((int(o.get("stage", 1)), list(o.get("identified_set") or []),
                    r.get("label") if r.get("status") == "answer" else None)
                   for o, r in episode), key=lambda t: t[0])
    tally = {"should_change": 0, "revised_right": 0, "refuted": 0, "stale": 0,
             "supported": 0, "retracted": 0}
    for before, now in itertools.pairwise(rows):
        ref_before = before[1][0] if len(before[1]) == 1 else None
        ref_now = now[1][0] if len(now[1]) == 1 else None
        if ref_before != ref_now:
            tally["should_change"] += 1
            tally["revised_right"] += now[2] == ref_now
        if before[2] is not None:
            still = before[2] in now[1]
            tally["supported" if still else "refuted"] += 1
            if still:
                tally["retracted"] += now[2] != before[2]
            else:
                tally["stale"] += now[2] == before[2]
    return tally


# ------------------------------------------------------------------- files


def _json_lines(path: Path) -> Iterator[tuple[int, str]]:
    with path.open(encoding="utf-8") as handle:
        for number, text in enumerate(handle, start=1):
            if text.strip():
                yield number, text


def _read_oracle_file(path: Path) -> dict[str, Mapping[str, Any]]:
    keys: dict[str, Mapping[str, Any]] = {}
    for number, text in _json_lines(path):
        try:
            record = json.loads(text)
        except json.JSONDecodeError as error:
            raise InputError(f"malformed JSON: {error.msg}", path=str(path), line=number) \
                from error
        case = record.get("case_id") if isinstance(record, dict) else None
        if not isinstance(case, str):
            raise InputError(f"record has no string case_id: {text.strip()[:80]!r}",
                             path=str(path), line=number, field="case_id")
        if case in keys:
            raise InputError(f"duplicate case_id {case!r}", path=str(path), line=number,
                             field="case_id")
        keys[case] = record
    return keys


def _bad_line(case_id: str | None, number: int, reason: str) -> dict[str, Any]:
    verdict = _empty_verdict(case_id, "invalid")
    verdict.update({"line": number, "error": reason})
    return verdict


def _score_line(oracles: Mapping[str, Mapping[str, Any]], number: int,
                text: str) -> dict[str, Any]:
    try:
        response = json.loads(text)
    except json.JSONDecodeError as error:
        return _bad_line(None, number, f"malformed JSON: {error.msg}")
    if not isinstance(response, dict):
        return _bad_line(None, number, f"expected a JSON object, got {type(response).__name__}")
    case = response.get("case_id")
    if not isinstance(case, str):
        return _bad_line(None, number, f"missing or non-string case_id {case!r}")
    if case not in oracles:
        return _bad_line(case, number, f"unknown case_id {case!r}")
    verdict, reason = _grade(oracles[case], response)
    if reason is not None:
        verdict.update({"line": number, "error": reason})
    return verdict


def score_file(oracle_path: str | Path, responses_path: str | Path) -> list[dict[str, Any]]:
    """Score every line of a responses ``.jsonl`` against a private-oracle ``.jsonl``.

    One verdict per non-blank response line, in file order. A line that cannot
    be scored (malformed JSON, missing or unknown case id, malformed fields) is
    the ``invalid`` outcome with ``line`` and ``error`` keys naming why; the rest
    of the file is still scored. A malformed oracle file raises InputError.
    """
    oracles = _read_oracle_file(Path(oracle_path))
    return [_score_line(oracles, number, text)
            for number, text in _json_lines(Path(responses_path))]

