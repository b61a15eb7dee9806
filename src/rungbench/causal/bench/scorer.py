"""The first deterministic scorer (seed 003 "Deterministic scorer", CONTRACTS §3).

No LLM grades anything: a verdict is a pure function of the private oracle record
and the agent's structured response. Response files are parsed line by line; a
bad line (malformed JSON, missing field, unknown case id, value outside [0, 1])
becomes an ``invalid`` verdict naming the line, and the rest of the file is
still scored.

Conventions of CONTRACTS §3 "Conventions" implemented here: a numeric field
that is not a JSON number (the string ``"0.374"``, ``true``) is ``invalid``;
malformed bounds (reversed, or an end outside [0, 1]) are ``invalid`` whatever
the status and whatever the item asks for; structure metrics, decision regret
and information regret are reported whenever the response carries their
payload, whatever the status (the status only picks the outcome); precision
with no claimed edges and recall with no true edges are 0.
"""

from __future__ import annotations

import json
import math
import pathlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from rungbench.causal.bench.records import (
    AgentResponse,
    EpisodeVerdict,
    Outcome,
    PrivateOracle,
    StructureScore,
    Verdict,
)
from rungbench.causal.scm.structure import mixed_graph, same_mec
from rungbench.errors import InputError

SLACK = 1e-12
"""Comparison slack added to every tolerance (CONTRACTS §3: tolerance inclusive)."""

_GRADED = {"correct", "wrong", "false_non_id", "false_answer_on_non_id", "correct_non_id"}
_RIGHT = {"correct", "correct_non_id"}


@dataclass(frozen=True)
class ScoredLine:
    """One line of a response file with its verdict."""

    line: int
    """1-based line number in the response file."""
    response: AgentResponse | None
    """The parsed response, or None when the line could not be parsed."""
    verdict: Verdict | EpisodeVerdict
    """The verdict (``invalid`` for a bad line; a records/2 verdict for an episode-family case)."""


def within(a: float, b: float, tol: float) -> bool:
    """Return |a − b| ≤ tol with the contract's 1e-12 slack."""
    return abs(a - b) <= tol + SLACK


def _in_unit(x: float) -> bool:
    return math.isfinite(x) and 0.0 <= x <= 1.0


def bounds_error(bounds: tuple[float, float] | None) -> str | None:
    """Why ``bounds`` are malformed (reversed, or an end outside [0, 1]), or None.

    CONTRACTS §3 "Conventions": malformed bounds are ``invalid`` wherever they
    appear, whatever the status and whether or not the item asks for bounds.
    """
    if bounds is None:
        return None
    lo, hi = bounds
    if _in_unit(lo) and _in_unit(hi) and lo <= hi:
        return None
    return f"bounds {list(bounds)!r} not an interval in [0, 1]"


def _invalid(case_id: str, why: str) -> Verdict:
    return Verdict(case_id=case_id, outcome="invalid", error=why)


def _is_json_number(x: object) -> bool:
    """Whether ``x`` parsed from JSON is a number (``true``/``false`` are not)."""
    return isinstance(x, int | float) and not isinstance(x, bool)


def non_number_field(raw: Mapping[str, Any]) -> tuple[str, str] | None:
    """Return (field, why) for a numeric response field that is not a JSON number, or None.

    CONTRACTS §3 "Conventions": ``value`` and ``confidence`` are floats and
    ``bounds`` a pair of floats; a string such as ``"0.374"`` is ``invalid``, not
    coerced.
    """
    for name in ("value", "confidence"):
        x = raw.get(name)
        if x is not None and not _is_json_number(x):
            return name, f"{name} {x!r} is not a JSON number"
    b = raw.get("bounds")
    if isinstance(b, list | tuple) and not all(_is_json_number(x) for x in b):
        return "bounds", f"bounds {b!r} are not JSON numbers"
    return None


def _brier(outcome: str, confidence: float | None) -> float | None:
    """Brier term (c − 1[correct])² (seed 003 "Endpoints and formulas")."""
    if confidence is None or outcome not in _GRADED:
        return None
    hit = 1.0 if outcome in _RIGHT else 0.0
    return (confidence - hit) ** 2


def structure_score(oracle: PrivateOracle, edges: list[tuple[str, str]]) -> StructureScore:
    """Directed precision/recall/F1 vs the true DAG, reversed edges and same_mec vs the CPDAG.

    Division by zero gives 0 (CONTRACTS §3 "Conventions"): precision is 0 with no
    claimed edges, recall 0 with no true edges, F1 0 when precision + recall is 0.
    """
    truth = {tuple(e) for e in oracle.true_edges or []}
    answer = {tuple(e) for e in edges}
    hits = len(truth & answer)
    precision = hits / len(answer) if answer else 0.0
    recall = hits / len(truth) if truth else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    reversed_ = sum(1 for a, b in truth if (b, a) in answer and (a, b) not in answer)
    cp = oracle.cpdag
    mec = cp is not None and same_mec(edges, mixed_graph(cp.directed, cp.undirected))
    return StructureScore(
        precision=precision, recall=recall, f1=f1, reversed=reversed_, same_mec=mec
    )


def _choice_error(oracle: PrivateOracle, r: AgentResponse) -> str | None:
    """Return why a named action or experiment is not offered by the item, or None.

    Checked whatever the status, since regrets are reported whatever the status.
    """
    if oracle.expected_loss is not None and r.action is not None \
            and r.action not in oracle.expected_loss:
        return f"unknown action {r.action!r}"
    if oracle.eig_bits is not None and r.experiment is not None \
            and r.experiment not in oracle.eig_bits:
        return f"unknown experiment {r.experiment!r}"
    return None


def _metrics(oracle: PrivateOracle, r: AgentResponse) -> dict[str, Any]:
    """Structure and regrets for every payload the response carries, whatever its status.

    CONTRACTS §3 "Conventions": on a discovery item, ``edges`` give structure
    metrics; a named action gives ``decision_regret`` = E[L(a)] − min E[L]; a named
    experiment gives ``info_regret`` = max EIG − EIG(x) (seed 003 "Endpoints and
    formulas"). Call only after :func:`_choice_error` returned None.
    """
    out: dict[str, Any] = {}
    if oracle.cpdag is not None and r.edges is not None:
        out["structure"] = structure_score(oracle, list(r.edges))
    if oracle.expected_loss is not None and r.action is not None:
        losses = oracle.expected_loss
        out["decision_regret"] = losses[r.action] - min(losses.values())
    if oracle.eig_bits is not None and r.experiment is not None:
        eig = oracle.eig_bits
        out["info_regret"] = max(eig.values()) - eig[r.experiment]
    return out


def _answer_fields_error(oracle: PrivateOracle, r: AgentResponse) -> str | None:
    """Return why an ``answer`` response lacks the field its item requires, or None."""
    if oracle.cpdag is not None:
        return None if r.edges is not None else "answer without edges on a discovery item"
    if oracle.expected_loss is not None:
        if r.action is None:
            return "answer without action on a decision item"
        return None if r.action in oracle.expected_loss else f"unknown action {r.action!r}"
    if oracle.eig_bits is not None:
        if r.experiment is None:
            return "answer without experiment on an experiment-choice item"
        known = r.experiment in oracle.eig_bits
        return None if known else f"unknown experiment {r.experiment!r}"
    if oracle.bounds is not None:
        return "answer without bounds on a bounds item" if r.bounds is None else None
    return None if r.value is not None else "answer without a value"


def _identifiable_answer(
    oracle: PrivateOracle, r: AgentResponse, metrics: Mapping[str, Any]
) -> Verdict:
    """Score an ``answer`` on an identifiable item (fields valid, ``metrics`` from _metrics)."""
    cid = oracle.case_id
    if oracle.cpdag is not None:
        s: StructureScore = metrics["structure"]
        outcome: Outcome = "correct" if s.same_mec else "wrong"
        return Verdict(case_id=cid, outcome=outcome, **metrics)
    if oracle.expected_loss is not None:
        regret: float = metrics["decision_regret"]
        outcome_d: Outcome = "correct" if regret <= SLACK else "wrong"
        return Verdict(case_id=cid, outcome=outcome_d, **metrics)
    if oracle.eig_bits is not None:
        info: float = metrics["info_regret"]
        outcome_i: Outcome = "correct" if info <= SLACK else "wrong"
        return Verdict(case_id=cid, outcome=outcome_i, **metrics)
    if oracle.bounds is not None and r.bounds is not None:
        ok = all(within(a, b, oracle.tol) for a, b in zip(r.bounds, oracle.bounds, strict=True))
        return Verdict(case_id=cid, outcome="correct" if ok else "wrong", **metrics)
    if oracle.value is None:
        raise InputError("identifiable numeric item without a reference value", field="value")
    err = abs(float(r.value or 0.0) - oracle.value)
    outcome_v: Outcome = "correct" if err <= oracle.tol + SLACK else "wrong"
    return Verdict(case_id=cid, outcome=outcome_v, abs_error=err, **metrics)


def score(oracle: PrivateOracle, response: AgentResponse) -> Verdict:
    """Return the verdict for one response (CONTRACTS §3 outcome rules and conventions).

    ``response`` is already typed; raw JSON goes through :func:`score_dict` or
    :func:`score_lines`, which first refuse non-number numeric fields.
    """
    cid = oracle.case_id
    if response.case_id != cid:
        why = f"response for {response.case_id!r} scored against {cid!r}"
        return _invalid(response.case_id, why)
    if response.value is not None and not _in_unit(response.value):
        return _invalid(cid, f"value {response.value!r} outside [0, 1]")
    if response.confidence is not None and not _in_unit(response.confidence):
        return _invalid(cid, f"confidence {response.confidence!r} outside [0, 1]")
    malformed = bounds_error(response.bounds)
    if malformed is not None:
        return _invalid(cid, malformed)
    choice = _choice_error(oracle, response)
    if choice is not None:
        return _invalid(cid, choice)
    metrics = _metrics(oracle, response)
    status = response.status
    if status in ("abstain", "need_info"):
        return Verdict(case_id=cid, outcome="abstain", **metrics)
    if status == "not_identifiable":
        outcome_n: Outcome = "correct_non_id" if not oracle.identifiable else "false_non_id"
        return Verdict(case_id=cid, outcome=outcome_n,
                       brier=_brier(outcome_n, response.confidence), **metrics)
    problem = _answer_fields_error(oracle, response)
    if problem is not None:
        return _invalid(cid, problem)
    if not oracle.identifiable:
        outcome_f: Outcome = "false_answer_on_non_id"
        return Verdict(case_id=cid, outcome=outcome_f,
                       brier=_brier(outcome_f, response.confidence), **metrics)
    verdict = _identifiable_answer(oracle, response, metrics)
    brier = _brier(verdict.outcome, response.confidence)
    return verdict.model_copy(update={"brier": brier})


def score_dict(oracle: Mapping[str, Any], response: Mapping[str, Any]) -> dict[str, Any]:
    """Score JSON mappings; the shape compared by ``scorer-agreement``."""
    try:
        o = PrivateOracle.model_validate(oracle)
    except ValidationError as exc:
        raise InputError(f"bad private_oracle: {_first_error(exc)}") from exc
    bad = non_number_field(response)
    if bad is not None:
        return _invalid(str(response.get("case_id", o.case_id)), bad[1]).model_dump(mode="json")
    try:
        r = AgentResponse.model_validate(response)
    except ValidationError as exc:
        cid = str(response.get("case_id", o.case_id))
        return _invalid(cid, _first_error(exc)).model_dump(mode="json")
    return score(o, r).model_dump(mode="json")


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "record"
    return f"{where}: {err['msg']} (got {err.get('input')!r})"


def parse_response_line(
    text: str, line: int, oracles: Mapping[str, object], path: str
) -> AgentResponse:
    """Parse one JSONL line into a response; raise :class:`InputError` naming the line."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"malformed JSON: {exc.msg}", path=path, line=line) from exc
    if not isinstance(raw, dict):
        raise InputError("a response line must be a JSON object", path=path, line=line)
    bad = non_number_field(raw)
    if bad is not None:
        raise InputError(bad[1], path=path, line=line, field=bad[0])
    try:
        response = AgentResponse.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        raise InputError(
            f"{err['msg']} (got {err.get('input')!r})", path=path, line=line, field=field
        ) from exc
    if response.case_id not in oracles:
        raise InputError(
            f"unknown case id {response.case_id!r}", path=path, line=line, field="case_id"
        )
    for name in ("value", "confidence"):
        value = getattr(response, name)
        if value is not None and not _in_unit(value):
            raise InputError(f"{name} {value!r} outside [0, 1]", path=path, line=line, field=name)
    malformed = bounds_error(response.bounds)
    if malformed is not None:
        raise InputError(malformed, path=path, line=line, field="bounds")
    return response


Grade = Callable[[Any, AgentResponse], "Verdict | EpisodeVerdict"]
"""Scores one parsed response against its oracle record (records/1 or records/2)."""


def score_lines(
    lines: list[str], oracles: Mapping[str, Any], path: str = "<responses>",
    grade: Grade | None = None,
) -> list[ScoredLine]:
    """Score every non-blank line; bad lines become ``invalid`` verdicts naming their line.

    ``grade`` scores a parsed response against its oracle record (default: :func:`score`,
    records/1); a bench with episode-family cases passes a grader that dispatches on the
    record's version.
    """
    grade_fn: Grade = grade or score
    out: list[ScoredLine] = []
    for n, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            response = parse_response_line(text, n, oracles, path)
        except InputError as exc:
            out.append(ScoredLine(n, None, _invalid(_case_id_guess(text, n), str(exc))))
            continue
        out.append(ScoredLine(n, response, grade_fn(oracles[response.case_id], response)))
    return out


def _case_id_guess(text: str, line: int) -> str:
    try:
        raw = json.loads(text)
    except json.JSONDecodeError:
        return f"<line {line}>"
    cid = raw.get("case_id") if isinstance(raw, dict) else None
    return cid if isinstance(cid, str) else f"<line {line}>"


def score_file(path: pathlib.Path, oracles: Mapping[str, PrivateOracle]) -> list[ScoredLine]:
    """Score a JSONL response file against oracle records keyed by case id."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read responses: {exc.strerror}", path=str(path)) from exc
    return score_lines(text.splitlines(), oracles, str(path))


def load_oracles(path: pathlib.Path) -> dict[str, PrivateOracle]:
    """Load ``private_oracle`` JSONL keyed by case id; a bad line raises naming it."""
    out: dict[str, PrivateOracle] = {}
    for n, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not text.strip():
            continue
        try:
            record = PrivateOracle.model_validate_json(text)
        except ValidationError as exc:
            raise InputError(_first_error(exc), path=str(path), line=n) from exc
        out[record.case_id] = record
    return out

