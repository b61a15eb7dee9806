"""CLadder import and exact re-grade (``rungbench causal import cladder``; docs/CONTRACTS.md §23).

CLadder (Jin et al., NeurIPS 2023; causalNLP/cladder, MIT) ships binary Bayesian
networks in ``test-model-meta.json`` (``structure`` such as ``X->V2,X->Y``, ``params``
with ``p(V | A, B)`` nested lists indexed ``[a][b]`` in the order of the key, and the
stored ``groundtruth`` quantities) and questions in ``test-generate-*.json`` linked by
``meta.model_id``. Every model becomes a rungbench world (``cpts.world_from_cpts``,
comonotone encoding); every question becomes a case whose CLadder label is kept beside
the exact label.

CLadder's answer rule, reproduced here (:func:`cladder_label`) and checked against every
stored answer: round the quantity to two decimals; ``marginal`` compares with 0.5, all
other numeric types with 0; a tie ("0.00 = 0") answers ``no``; otherwise ``yes`` iff the
sign (reversed for ``ett``, whose question asks about the untreated world) agrees with
``meta.polarity``. Structural types: ``collider_bias`` asks whether X affects Y (it does
iff X is an ancestor of Y), ``backadj`` whether Method 1's set is a better adjustment set
than Method 2's (back-door criterion on each), ``det-counterfactual`` whether
Y_{X=a} = t holds given the evidence in a deterministic world.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rungbench.causal.scm import estimands, oracle
from rungbench.causal.scm.cpts import Cpt, world_from_cpts
from rungbench.causal.scm.identify import is_backdoor_set
from rungbench.causal.scm.world import Query, World
from rungbench.errors import InputError

MODEL_FILE = "test-model-meta.json"
"""CLadder's model metadata file."""

QUESTION_FILES: tuple[str, ...] = (
    "test-generate-anti.json", "test-generate-det.json", "test-generate-easy.json",
    "test-generate-hard.json", "test-generate-non.json",
)
"""CLadder's in-repo test question files (all five are read)."""

TIE = 0.005
"""CLadder's generator answers ``no`` when the quantity's magnitude is below this."""

AGREE_TOLERANCE = 1e-9
"""A stored value agrees with the exact one when they differ by at most this."""

NUMERIC_TYPES: tuple[str, ...] = ("marginal", "correlation", "ate", "ett", "nde", "nie",
                                  "exp_away")
"""Question types whose label is decided by one number (CLadder's answer rule)."""

STRUCTURAL_TYPES: tuple[str, ...] = ("collider_bias", "backadj", "det-counterfactual")
"""Question types whose label is decided by the graph or a deterministic world."""

_EFFECT = re.compile(r"^(ATE|ETT|NDE|NIE)\((\w+) \| (\w+)\)$")
_PROB = re.compile(r"^P\((\w+)=([01])(?: \| (\w+)=([01]))?\)$")
_PARAM = re.compile(r"^p\((\w+)(?: \| ([\w, ]+))?\)$")
_DET = re.compile(r"^(\w+)_\{(\w+)=([01])\} = ([01]) \|\s*(.*)$")


@dataclass(frozen=True)
class CladderModel:
    """One CLadder model as a rungbench world."""

    model_id: int
    """CLadder's ``model_id``."""
    family: str
    """CLadder's ``graph_id`` (chain, fork, arrowhead, ...)."""
    story_id: str
    """CLadder's story."""
    equation_type: str
    """``bernoulli`` or ``deterministic``."""
    edges: tuple[tuple[str, str], ...]
    """Edges of ``structure`` in the order written."""
    cpts: tuple[Cpt, ...]
    """P(V=1 | parents) per variable, row index first parent LSB."""
    world: World
    """The comonotone response-function world (``cpts.ENCODING``)."""
    groundtruth: Mapping[str, float]
    """CLadder's stored quantities, by CLadder's name."""
    background: str = ""
    """CLadder's natural-language background."""

    @property
    def world_id(self) -> str:
        """``cladder-m<model_id>``."""
        return self.world.world_id


@dataclass(frozen=True)
class CladderQuestion:
    """One CLadder question, linked to its model."""

    key: str
    """Unique key ``<file stem>:<question_id>`` (question ids repeat across files)."""
    source: str
    """File the question came from."""
    question_id: int
    """CLadder's ``question_id``."""
    desc_id: str
    """CLadder's ``desc_id``."""
    model_id: int
    """Linked model."""
    family: str
    """``meta.graph_id``."""
    query_type: str
    """``meta.query_type``."""
    rung: int
    """``meta.rung``."""
    text: str
    """``given_info`` and ``question`` joined."""
    label: str
    """CLadder's answer (``yes``/``no``)."""
    meta: Mapping[str, Any] = field(repr=False)
    """CLadder's ``meta`` object, verbatim."""


@dataclass(frozen=True)
class CladderSet:
    """All models and questions of a CLadder directory."""

    models: Mapping[int, CladderModel]
    """Models by ``model_id``."""
    questions: tuple[CladderQuestion, ...]
    """Questions in file order."""
    files: tuple[str, ...]
    """Files read."""


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("CLadder file is missing", path=str(path)) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"not valid JSON: {exc}", path=str(path)) from None


def _nested(value: Any, depth: int, where: str) -> list[float]:
    """Flatten a depth-``depth`` nested list indexed [a][b]... into row order (a is the LSB)."""
    if depth == 0:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InputError(f"expected a probability, got {value!r}", field=where)
        return [float(value)]
    if not isinstance(value, list) or len(value) != 2:
        raise InputError(f"expected a list of two entries, got {value!r}", field=where)
    # value[a] holds the sub-table of the remaining parents; a is the least significant bit.
    low, high = (_nested(value[i], depth - 1, f"{where}[{i}]") for i in (0, 1))
    out: list[float] = []
    for lo_v, hi_v in zip(low, high, strict=True):
        out.extend((lo_v, hi_v))
    return out


def parse_model(raw: Any, where: str) -> CladderModel:
    """One entry of ``test-model-meta.json``; InputError names the entry and field."""
    if not isinstance(raw, Mapping):
        raise InputError("model must be an object", field=where)
    for key in ("model_id", "graph_id", "structure", "params", "groundtruth"):
        if key not in raw:
            raise InputError(f"missing {key!r}", field=where)
    model_id = raw["model_id"]
    if isinstance(model_id, bool) or not isinstance(model_id, int):
        raise InputError(f"model_id must be an integer, got {model_id!r}", field=where)
    structure = raw["structure"]
    if not isinstance(structure, str):
        raise InputError("structure must be a string", field=f"{where}.structure")
    edges = []
    for part in structure.split(","):
        ends = part.split("->")
        if len(ends) != 2 or not all(e.strip() for e in ends):
            raise InputError(f"bad edge {part!r}", field=f"{where}.structure")
        edges.append((ends[0].strip(), ends[1].strip()))
    params = raw["params"]
    if not isinstance(params, Mapping):
        raise InputError("params must be an object", field=f"{where}.params")
    cpts = []
    for key, value in params.items():
        m = _PARAM.match(key)
        if m is None:
            raise InputError(f"unrecognised parameter name {key!r}", field=f"{where}.params")
        name = m.group(1)
        parents = tuple(p.strip() for p in m.group(2).split(",")) if m.group(2) else ()
        if not parents and isinstance(value, list) and len(value) == 1:
            value = value[0]  # some roots are stored as a one-element list
        rows = _nested(value, len(parents), f"{where}.params[{key!r}]")
        cpts.append(Cpt(name, parents, tuple(rows)))
    from_params = {(p, c.name) for c in cpts for p in c.parents}
    if from_params != set(edges):
        raise InputError(f"structure {structure!r} does not match the parents in params",
                         field=f"{where}.structure")
    truth = raw["groundtruth"]
    if not isinstance(truth, Mapping) or not all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in truth.values()):
        raise InputError("groundtruth must map names to numbers", field=f"{where}.groundtruth")
    world = world_from_cpts(f"cladder-m{model_id}", cpts)
    return CladderModel(model_id, str(raw["graph_id"]), str(raw.get("story_id", "")),
                        str(raw.get("equation_type", "")), tuple(edges), tuple(cpts), world,
                        {str(k): float(v) for k, v in truth.items()},
                        str(raw.get("background", "")))


def _parse_question(raw: Any, source: str, index: int,
                    models: Mapping[int, CladderModel]) -> CladderQuestion:
    where = f"{source}[{index}]"
    if not isinstance(raw, Mapping) or not isinstance(raw.get("meta"), Mapping):
        raise InputError("question must be an object with a meta object", field=where)
    meta = raw["meta"]
    model_id = meta.get("model_id")
    if model_id not in models:
        raise InputError(f"meta.model_id {model_id!r} names no model", field=where)
    for key in ("query_type", "rung", "graph_id"):
        if key not in meta:
            raise InputError(f"missing meta.{key}", field=where)
    label = raw.get("answer")
    if label not in ("yes", "no"):
        raise InputError(f"answer must be 'yes' or 'no', got {label!r}", field=where)
    qtype = str(meta["query_type"])
    if qtype not in NUMERIC_TYPES + STRUCTURAL_TYPES:
        raise InputError(f"unknown query_type {qtype!r}", field=f"{where}.meta.query_type")
    stem = source.removesuffix(".json").removeprefix("test-generate-")
    qid = raw.get("question_id")
    if isinstance(qid, bool) or not isinstance(qid, int):
        raise InputError(f"question_id must be an integer, got {qid!r}", field=where)
    text = " ".join(str(raw.get(k, "")).strip() for k in ("given_info", "question")).strip()
    return CladderQuestion(f"{stem}:{qid}", source, qid, str(raw.get("desc_id", "")),
                           int(model_id), str(meta["graph_id"]), qtype, int(meta["rung"]), text,
                           str(label), dict(meta))


def load_cladder(directory: Path) -> CladderSet:
    """Read every model and question of a CLadder directory (fail closed on any defect)."""
    raw_models = _load_json(directory / MODEL_FILE)
    if not isinstance(raw_models, list) or not raw_models:
        raise InputError("expected a non-empty list of models", path=str(directory / MODEL_FILE))
    models: dict[int, CladderModel] = {}
    for i, raw in enumerate(raw_models):
        try:
            model = parse_model(raw, f"models[{i}]")
        except InputError as exc:
            raise InputError(str(exc), path=str(directory / MODEL_FILE)) from None
        if model.model_id in models:
            raise InputError(f"duplicate model_id {model.model_id}",
                             path=str(directory / MODEL_FILE))
        models[model.model_id] = model
    questions: list[CladderQuestion] = []
    for name in QUESTION_FILES:
        raw_questions = _load_json(directory / name)
        if not isinstance(raw_questions, list):
            raise InputError("expected a list of questions", path=str(directory / name))
        for i, raw in enumerate(raw_questions):
            try:
                questions.append(_parse_question(raw, name, i, models))
            except InputError as exc:
                raise InputError(str(exc), path=str(directory / name)) from None
    keys = [q.key for q in questions]
    if len(set(keys)) != len(keys):
        raise InputError("question keys repeat within a file", path=str(directory))
    return CladderSet(models, tuple(questions), (MODEL_FILE, *QUESTION_FILES))


def exact_quantity(model: CladderModel, name: str) -> float:
    """The exact value of one of CLadder's stored quantity names (e.g. ``NDE(Y | X)``)."""
    world = model.world
    effect = _EFFECT.match(name)
    if effect is not None:
        kind, y, x = effect.group(1).lower(), effect.group(2), effect.group(3)
        return estimands.estimate(world, kind, x, y).value
    prob = _PROB.match(name)
    if prob is None:
        raise InputError(f"unrecognised quantity {name!r}", field=f"groundtruth[{name!r}]")
    target = {prob.group(1): int(prob.group(2))}
    evidence = {prob.group(3): int(prob.group(4))} if prob.group(3) else {}
    return oracle.probability(world, Query(1, target, {}, evidence))


def cladder_label(query_type: str, value: float, polarity: bool) -> str:
    """CLadder's yes/no answer rule for a numeric question (module docstring).

    ``marginal``: the sign of 2P(Y=1) - 1, a tie only at exactly 1/2 (or, as in CLadder's
    generator, when P(Y=1) < 0.005); ``exp_away``: the sign, a tie only at exactly 0; every
    other type: a tie when |value| < 0.005. A tie answers ``no``; ``ett`` reverses the sign.
    """
    if query_type == "marginal":
        signed = 2.0 * value - 1.0
        tie = signed == 0.0 or abs(value) < TIE
    elif query_type == "exp_away":
        signed, tie = value, value == 0.0
    else:
        signed = value
        tie = value == 0.0 or abs(value) < TIE
    if tie:
        return "no"
    positive = signed > 0.0
    if query_type == "ett":
        positive = not positive
    return "yes" if positive == bool(polarity) else "no"


def _x_value(meta: Mapping[str, Any]) -> int:
    return 1 if meta.get("treated", True) else 0


def exact_numeric(model: CladderModel, q: CladderQuestion) -> float:
    """The exact value of a numeric question's quantity."""
    meta, world = q.meta, model.world
    x, y = str(meta.get("treatment", "X")), str(meta.get("outcome", "Y"))
    t = q.query_type
    if t == "marginal":
        return oracle.probability(world, Query(1, {y: 1}))
    if t == "correlation":
        return (oracle.probability(world, Query(1, {y: 1}, {}, {x: 1}))
                - oracle.probability(world, Query(1, {y: 1}, {}, {x: 0})))
    if t == "exp_away":
        collider = str(meta.get("collider", "V3"))
        return (oracle.probability(world, Query(1, {y: 1}, {}, {x: _x_value(meta), collider: 1}))
                - oracle.probability(world, Query(1, {y: 1}, {}, {collider: 1})))
    mediators = meta.get("mediators")
    ms = tuple(str(m) for m in mediators) if isinstance(mediators, list) else None
    return estimands.estimate(world, t, x, y, mediator_set=ms).value


def engine_effect(model: CladderModel, kind: str, x: str, y: str,
                  mediators: Sequence[str]) -> float:
    """The exact value of the quantity CLadder's *code* computes for ``nde``/``nie``.

    CLadder's generator (``causalbenchmark/graphs/bayes.py``, ``BayesLike.nie``/``nde``)
    does not evaluate the nested counterfactual of its ``formal_form``: it replaces each
    mediator's mechanism by an independent coin with the mediator's marginal P(M=1 | do(X=x'))
    (a soft intervention) and returns P(Y=1 | do(X=x, M ~ coin)) - P(Y=1 | do(X=x0)). This
    equals Pearl's natural effect unless a mediator shares a cause with Y other than X (in
    CLadder, only the ``arrowhead`` family: V2 -> V3 and V2 -> Y), where it is the randomized
    interventional analogue without covariates. Computed here exactly (no loopy belief
    propagation), so the stored numbers can be split into definition and engine error.
    """
    if kind not in ("nde", "nie"):
        raise InputError(f"no engine definition for {kind!r}", field="query_type")
    key = (id(model), kind, x, y, tuple(mediators))
    hit = _ENGINE_CACHE.get(key)
    if hit is not None and hit[0] is model:
        return hit[1]
    value = _engine_effect(model, kind, x, y, mediators)
    if len(_ENGINE_CACHE) >= 4096:
        _ENGINE_CACHE.pop(next(iter(_ENGINE_CACHE)))
    _ENGINE_CACHE[key] = (model, value)
    return value


_ENGINE_CACHE: dict[tuple[object, ...], tuple[CladderModel, float]] = {}
"""Engine values by (model identity, kind, x, y, mediators): both polarities and every
file that asks the same question reuse one computation."""


def _engine_effect(model: CladderModel, kind: str, x: str, y: str,
                   mediators: Sequence[str]) -> float:
    world = model.world
    outer, inner = (1, 0) if kind == "nde" else (0, 1)
    coin = {m: oracle.probability(world, Query(2, {m: 1}, {x: inner})) for m in mediators}
    total = 0.0
    for bits in range(1 << len(mediators)):
        setting = {m: (bits >> i) & 1 for i, m in enumerate(mediators)}
        weight = 1.0
        for m, v in setting.items():
            weight *= coin[m] if v else 1.0 - coin[m]
        if weight:
            total += weight * oracle.probability(world, Query(2, {y: 1}, {x: outer, **setting}))
    return total - oracle.probability(world, Query(2, {y: 1}, {x: 0}))


@dataclass(frozen=True)
class QuestionGrade:
    """One question re-graded exactly."""

    question: CladderQuestion
    """The question."""
    cladder_value: float | None
    """CLadder's stored number (numeric types), else None."""
    exact_value: float | None
    """The exact number (numeric and det-counterfactual types), else None."""
    exact_label: str | None
    """The label the exact answer gives; None when the exact answer decides neither way."""
    note: str = ""
    """Why a structural label differs, or why no label is decided."""
    engine_value: float | None = None
    """``nde``/``nie``: the exact value of CLadder's implemented estimand
    (:func:`engine_effect`), else None."""
    engine_label: str | None = None
    """The label CLadder's rule gives on :attr:`engine_value` (None when there is none)."""

    @property
    def value_agrees(self) -> bool:
        """Whether CLadder's number equals the exact one (True when there is no number)."""
        if self.cladder_value is None or self.exact_value is None:
            return True
        return abs(self.cladder_value - self.exact_value) <= AGREE_TOLERANCE

    @property
    def label_flips(self) -> bool:
        """Whether the exact label differs from CLadder's."""
        return self.exact_label != self.question.label

    @property
    def engine_label_flips(self) -> bool:
        """Whether the label flips when the exact value of CLadder's implemented estimand
        replaces the stored number (the loopy-BP error alone; equals :attr:`label_flips`
        outside ``nde``/``nie``)."""
        if self.engine_value is None:
            return self.label_flips
        return self.engine_label != self.question.label

    def to_json(self) -> dict[str, Any]:
        """Flat record for the regrade table."""
        q = self.question
        return {
            "key": q.key, "model_id": q.model_id, "family": q.family,
            "query_type": q.query_type, "rung": q.rung, "cladder_label": q.label,
            "exact_label": self.exact_label, "cladder_value": self.cladder_value,
            "exact_value": self.exact_value, "value_agrees": self.value_agrees,
            "label_flips": self.label_flips, "note": self.note,
            "engine_value": self.engine_value, "engine_label": self.engine_label,
            "engine_label_flips": self.engine_label_flips,
        }


def _det_counterfactual(model: CladderModel, q: CladderQuestion) -> QuestionGrade:
    form = str(q.meta.get("formal_form", ""))
    m = _DET.match(form)
    if m is None:
        raise InputError(f"unrecognised det-counterfactual form {form!r}", field=q.key)
    evidence = {}
    for part in filter(None, (s.strip() for s in m.group(5).split(","))):
        name, _, value = part.partition("=")
        if value.strip() not in ("0", "1"):
            raise InputError(f"bad evidence {part!r}", field=q.key)
        evidence[name.strip()] = int(value)
    query = Query(3, {m.group(1): int(m.group(4))}, {m.group(2): int(m.group(3))}, evidence)
    value = oracle.probability(model.world, query)
    if abs(value - 1.0) <= AGREE_TOLERANCE:
        return QuestionGrade(q, None, value, "yes")
    if abs(value) <= AGREE_TOLERANCE:
        return QuestionGrade(q, None, value, "no")
    return QuestionGrade(q, None, value, None,
                         "the evidence leaves the counterfactual undetermined")


def _backadj(model: CladderModel, q: CladderQuestion) -> QuestionGrade:
    sets = q.meta.get("given_info")
    if not (isinstance(sets, list) and len(sets) == 2 and all(isinstance(s, list) for s in sets)):
        raise InputError("backadj given_info must be two candidate sets", field=q.key)
    x, y = str(q.meta.get("treatment", "X")), str(q.meta.get("outcome", "Y"))
    valid = [is_backdoor_set(model.world, x, y, [str(v) for v in s]) for s in sets]
    if valid[0] and not valid[1]:
        return QuestionGrade(q, None, None, "yes")
    if valid[1] and not valid[0]:
        return QuestionGrade(q, None, None, "no")
    state = "both" if valid[0] else "neither"
    return QuestionGrade(q, None, None, None,
                         f"{state} of {sets[0]!r} and {sets[1]!r} satisfy the back-door "
                         "criterion, so neither method is more correct")


def grade_question(model: CladderModel, q: CladderQuestion) -> QuestionGrade:
    """Re-grade one question exactly."""
    if q.query_type in NUMERIC_TYPES:
        gold = q.meta.get("groundtruth")
        if isinstance(gold, bool) or not isinstance(gold, int | float):
            raise InputError(f"numeric groundtruth expected, got {gold!r}", field=q.key)
        value = exact_numeric(model, q)
        polarity = bool(q.meta.get("polarity"))
        label = cladder_label(q.query_type, value, polarity)
        if q.query_type not in ("nde", "nie"):
            return QuestionGrade(q, float(gold), value, label)
        x, y = str(q.meta.get("treatment", "X")), str(q.meta.get("outcome", "Y"))
        mediators = q.meta.get("mediators")
        ms = ([str(m) for m in mediators] if isinstance(mediators, list)
              else list(estimands.mediators(model.world, x, y)))
        engine = engine_effect(model, q.query_type, x, y, ms)
        note = ""
        if abs(engine - value) > AGREE_TOLERANCE:
            note = ("CLadder's code draws the mediator independently of its other causes "
                    "(soft intervention), which is not the natural effect of its formal_form "
                    "in this graph")
        return QuestionGrade(q, float(gold), value, label, note, engine,
                             cladder_label(q.query_type, engine, polarity))
    if q.query_type == "collider_bias":
        x, y = str(q.meta.get("treatment", "X")), str(q.meta.get("outcome", "Y"))
        causes = x in model.world.ancestors([y]) and x != y
        return QuestionGrade(q, None, None,
                             "yes" if causes == bool(q.meta.get("polarity")) else "no")
    if q.query_type == "backadj":
        return _backadj(model, q)
    return _det_counterfactual(model, q)


@dataclass(frozen=True)
class QuantityGrade:
    """One stored model quantity against its exact value."""

    model_id: int
    """Model."""
    family: str
    """Graph family."""
    quantity: str
    """CLadder's quantity name."""
    cladder_value: float
    """Stored value."""
    exact_value: float
    """Exact value."""

    @property
    def agrees(self) -> bool:
        """Whether the two differ by at most :data:`AGREE_TOLERANCE`."""
        return abs(self.cladder_value - self.exact_value) <= AGREE_TOLERANCE

    def to_json(self) -> dict[str, Any]:
        """Flat record for the quantity table."""
        return {"model_id": self.model_id, "family": self.family, "quantity": self.quantity,
                "cladder_value": self.cladder_value, "exact_value": self.exact_value,
                "abs_diff": abs(self.cladder_value - self.exact_value),
                "agrees": self.agrees}


def quantity_kind(name: str) -> str:
    """Summary bucket of a quantity name: ``ATE``, ``P(Y|X)``, ``P(Y=1)``, ``P(V2=1)``..."""
    effect = _EFFECT.match(name)
    if effect is not None:
        return effect.group(1)
    prob = _PROB.match(name)
    if prob is not None and prob.group(3):
        return f"P({prob.group(1)}|{prob.group(3)})"
    return name.replace(" ", "")


@dataclass(frozen=True)
class Regrade:
    """The exact re-grade of a CLadder set."""

    quantities: tuple[QuantityGrade, ...]
    """Every stored model quantity."""
    questions: tuple[QuestionGrade, ...]
    """Every question."""

    def disagreements(self) -> list[QuantityGrade]:
        """Stored quantities that differ from the exact value."""
        return [g for g in self.quantities if not g.agrees]

    def question_disagreements(self) -> list[QuestionGrade]:
        """Questions whose stored number differs from the exact one, or whose label differs."""
        return [g for g in self.questions if not g.value_agrees or g.label_flips]

    def summary(self) -> list[dict[str, Any]]:
        """Per family x quantity kind: stored, wrong, max |diff|, numeric labels flipped."""
        cells: dict[tuple[str, str], dict[str, Any]] = {}
        for g in self.quantities:
            cell = cells.setdefault((g.family, quantity_kind(g.quantity)),
                                    {"family": g.family, "quantity": quantity_kind(g.quantity),
                                     "stored": 0, "wrong": 0, "max_abs_diff": 0.0})
            cell["stored"] += 1
            cell["wrong"] += 0 if g.agrees else 1
            cell["max_abs_diff"] = max(cell["max_abs_diff"],
                                       abs(g.cladder_value - g.exact_value))
        return [cells[k] for k in sorted(cells)]

    def counts(self) -> dict[str, Any]:
        """Headline numbers of the re-grade."""
        numeric = [g for g in self.questions if g.question.query_type in NUMERIC_TYPES]
        flips = [g for g in numeric if g.label_flips]
        by_type: dict[str, int] = {}
        for g in flips:
            by_type[g.question.query_type] = by_type.get(g.question.query_type, 0) + 1
        structural = [g for g in self.questions if g.question.query_type in STRUCTURAL_TYPES]
        engine_flips = [g for g in numeric if g.engine_label_flips]
        engine_by_type: dict[str, int] = {}
        for g in engine_flips:
            engine_by_type[g.question.query_type] = (
                engine_by_type.get(g.question.query_type, 0) + 1)
        return {
            "models": len({g.model_id for g in self.quantities}),
            "quantities": len(self.quantities),
            "quantities_wrong": len(self.disagreements()),
            "questions": len(self.questions),
            "numeric_questions": len(numeric),
            "numeric_values_wrong": sum(1 for g in numeric if not g.value_agrees),
            "numeric_labels_flipped": len(flips),
            "numeric_labels_flipped_by_type": dict(sorted(by_type.items())),
            "numeric_labels_flipped_engine_definition": len(engine_flips),
            "numeric_labels_flipped_engine_definition_by_type":
                dict(sorted(engine_by_type.items())),
            "natural_effect_definition_differs": sum(
                1 for g in numeric if g.engine_value is not None
                and g.exact_value is not None
                and abs(g.engine_value - g.exact_value) > AGREE_TOLERANCE),
            "structural_questions": len(structural),
            "structural_labels_differing": sum(1 for g in structural if g.label_flips),
            "structural_undecided": sum(1 for g in structural if g.exact_label is None),
        }


def regrade(data: CladderSet) -> Regrade:
    """Every stored quantity and every question against the exact oracle."""
    quantities = [QuantityGrade(m.model_id, m.family, name, value, exact_quantity(m, name))
                  for m in data.models.values() for name, value in m.groundtruth.items()]
    questions = [grade_question(data.models[q.model_id], q) for q in data.questions]
    return Regrade(tuple(quantities), tuple(questions))


def case_record(model: CladderModel, grade: QuestionGrade) -> dict[str, Any]:
    """The rungbench case of one question: public text, CLadder's label beside the exact one."""
    q = grade.question
    return {
        "schema": "rungbench.cladder_case/1",
        "case_id": f"cladder-{q.key}",
        "world_id": model.world_id,
        "family": q.family,
        "query_type": q.query_type,
        "rung": q.rung,
        "question": " ".join(filter(None, (model.background, q.text))),
        "answer_format": "yes|no",
        "cladder_label": q.label,
        "exact_label": grade.exact_label,
        "cladder_value": grade.cladder_value,
        "exact_value": grade.exact_value,
        "note": grade.note,
        "source": {"file": q.source, "question_id": q.question_id, "desc_id": q.desc_id},
    }


def questions_of(data: CladderSet, types: Sequence[str]) -> list[CladderQuestion]:
    """The questions of the given types, in file order."""
    return [q for q in data.questions if q.query_type in types]


CLADDER_IMPORT_KIND = "rungbench.cladder_import"
"""Seal kind of a CLadder import directory."""


def _jsonl(records: Sequence[Mapping[str, Any]]) -> bytes:
    from rungbench.evidence.canonical import canonical_bytes

    return b"".join(canonical_bytes(dict(r)) + b"\n" for r in records)


def source_digests(directory: Path, files: Sequence[str]) -> dict[str, str]:
    """``sha256:`` digest of every CLadder file read."""
    from rungbench.evidence.canonical import bytes_digest

    return {name: bytes_digest((directory / name).read_bytes()) for name in files}


def import_summary(data: CladderSet, graded: Regrade, digests: Mapping[str, str]
                   ) -> dict[str, Any]:
    """The ``import.json`` document of a CLadder import."""
    from rungbench.causal.scm.cpts import COUPLING_NOTE, ENCODING

    return {
        "schema": "rungbench.cladder_import/1",
        "source": {"kind": "cladder", "files": dict(digests)},
        "encoding": ENCODING,
        "coupling": None,
        "coupling_note": COUPLING_NOTE,
        "coupling_dependent_questions": 0,
        "counts": graded.counts(),
        "summary": graded.summary(),
    }


def check_coupling_free(data: CladderSet) -> int:
    """Count the questions whose exact value depends on a CPT coupling (must be 0).

    Every CLadder numeric quantity is rung 1, rung 2, ETT or a natural effect with the
    graph's mediator set; det-counterfactual worlds are deterministic. A non-zero count
    would mean the comonotone stand-in decided a value the CPTs do not fix.
    """
    from rungbench.causal.scm import cpts as cpt_module

    bad = 0
    for q in data.questions:
        world = data.models[q.model_id].world
        x, y = str(q.meta.get("treatment", "X")), str(q.meta.get("outcome", "Y"))
        if q.query_type in ("ett", "nde", "nie"):
            mediators = q.meta.get("mediators")
            ms = tuple(str(m) for m in mediators) if isinstance(mediators, list) else None
            bad += bool(estimands.coupled(world, q.query_type, x, y, mediator_set=ms))
        elif q.query_type == "det-counterfactual":
            m = _DET.match(str(q.meta.get("formal_form", "")))
            if m is not None:
                ev = dict(part.strip().split("=") for part in m.group(5).split(",")
                          if part.strip())
                query = Query(3, {m.group(1): int(m.group(4))}, {m.group(2): int(m.group(3))},
                              {k.strip(): int(v) for k, v in ev.items()})
                bad += bool(cpt_module.coupling_dependence(world, query))
    return bad


def import_cladder(directory: Path, out: Path, *, force: bool = False) -> dict[str, Any]:
    """Import a CLadder directory into the sealed directory ``out``; return its summary.

    Writes ``import.json`` (counts, per family x quantity summary, encoding, coupling
    caveat, source digests), ``worlds.jsonl`` (one `rungbench.world/1` document per model
    with its CPTs), ``cases.jsonl`` (one case per question, CLadder's label beside the
    exact one), ``quantities.jsonl`` and ``questions.jsonl`` (the full re-grade).
    """
    from rungbench.evidence.canonical import canonical_bytes
    from rungbench.evidence.sealed import publish_dir

    data = load_cladder(directory)
    graded = regrade(data)
    coupled = check_coupling_free(data)
    summary = import_summary(data, graded, source_digests(directory, data.files))
    summary["coupling_dependent_questions"] = coupled
    worlds = [{"model_id": m.model_id, "family": m.family, "story_id": m.story_id,
               "equation_type": m.equation_type,
               "cpts": [{"name": c.name, "parents": list(c.parents), "p_one": list(c.p_one)}
                        for c in m.cpts],
               "world": m.world.to_json(seed=0)} for m in data.models.values()]
    cases = [case_record(data.models[g.question.model_id], g) for g in graded.questions]
    with publish_dir(out, kind=CLADDER_IMPORT_KIND, force=force) as tmp:
        (tmp / "import.json").write_bytes(canonical_bytes(summary))
        (tmp / "worlds.jsonl").write_bytes(_jsonl(worlds))
        (tmp / "cases.jsonl").write_bytes(_jsonl(cases))
        (tmp / "quantities.jsonl").write_bytes(_jsonl([g.to_json() for g in graded.quantities]))
        (tmp / "questions.jsonl").write_bytes(_jsonl([g.to_json() for g in graded.questions]))
    return summary


REGRADE_KIND = "rungbench.cladder_regrade"
"""Seal kind of a regrade output directory."""


def write_regrade(directory: Path, out: Path, fmt: str, *, force: bool = False
                  ) -> dict[str, Any]:
    """Re-grade a CLadder directory; publish the tables in ``fmt`` under ``out`` (sealed).

    ``disagreements.<fmt>``: every question whose stored number differs from the exact
    one or whose label flips (schema ``cladder-questions``); ``quantities.<fmt>``: every
    stored model quantity that is wrong (``cladder-quantities``); ``summary.<fmt>``: per
    family x quantity kind (``cladder-summary``); ``regrade.json``: the counts.
    """
    from rungbench.causal.interop import export
    from rungbench.evidence.canonical import canonical_bytes
    from rungbench.evidence.sealed import publish_dir

    if fmt not in export.FORMATS:
        raise InputError(f"unknown format {fmt!r}; choose one of {list(export.FORMATS)}",
                         field="format")
    data = load_cladder(directory)
    graded = regrade(data)
    counts = graded.counts()
    with publish_dir(out, kind=REGRADE_KIND, force=force) as tmp:
        export.write_table([g.to_json() for g in graded.question_disagreements()],
                           export.CLADDER_QUESTIONS, tmp / f"disagreements.{fmt}", fmt)
        export.write_table([g.to_json() for g in graded.disagreements()],
                           export.CLADDER_QUANTITIES, tmp / f"quantities.{fmt}", fmt)
        export.write_table(graded.summary(), export.CLADDER_SUMMARY, tmp / f"summary.{fmt}", fmt)
        (tmp / "regrade.json").write_bytes(canonical_bytes({
            "schema": "rungbench.cladder_regrade/1", "format": fmt, "counts": counts,
            "source": source_digests(directory, data.files)}))
    return {"counts": counts, "summary": [s for s in graded.summary() if s["wrong"]],
            "flipped": [g.to_json() for g in graded.questions
                        if g.label_flips and g.question.query_type in NUMERIC_TYPES],
            "out": str(out), "format": fmt}
