"""Every registered key drives the code (docs/presets.md): for every key of every bundled
preset, a changed value is either refused naming the key, or changes the part of the study
the key says it drives — the schedule, the requests, the retry policy, the analysis (with
its gates and wording) or the audit — computed by the code that consumes the preset on small
fixtures. A key that can change without changing anything fails here.

Digests are stripped from every compared output (a changed preset changes every digest; that
alone proves nothing), and so is the analysis plan the documents echo.
"""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rungbench.causal.ablations.analysis import ablation_report
from rungbench.causal.ablations.arms import AblationPreset, parse_matrix
from rungbench.chess.studies.analysis import Settings
from rungbench.chess.studies.analysis_report import analyze_table
from rungbench.chess.studies.bindings import binding_document
from rungbench.chess.studies.cells import PromptAudit, build_table
from rungbench.chess.studies.ladder_audit import ladder_audit
from rungbench.chess.studies.manifest import FrozenManifest, StageView, _sample, quota_rule
from rungbench.chess.studies.panels import a105_audit
from rungbench.chess.studies.plan import best_moves, plan_of
from rungbench.chess.studies.planted_tables import (
    PlantedA105,
    PlantedStages,
    a105_table,
    e020_table,
    e022_table,
    e023_table,
)
from rungbench.chess.studies.study import registered_policy
from rungbench.chess.studies.study_presets import STUDY_PRESETS, study_preset
from rungbench.design.audit import order_audit
from rungbench.design.presets import arms_design, factorial_design
from rungbench.design.registry import RegisteredDesign, load_design, registered_names
from rungbench.design.schema import PresetModel, key_docs
from rungbench.errors import InputError, Refusal
from rungbench.evidence.canonical import digest

ECHOES = {"digest", "design_digest", "registered_design_digest", "table", "study", "source",
          "plan", "evaluation", "files", "matrix", "matrix_digest", "arm_digest", "manifest"}
"""Keys whose values are digests of the preset or echo it; stripped before comparing."""


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in ECHOES}
    if isinstance(value, list | tuple):
        return [_strip(v) for v in value]
    if isinstance(value, str) and value.startswith("sha256:"):
        return "<digest>"
    return value


# ---------------------------------------------------------------------------- mutations

Path_ = tuple[str | int, ...]


def _leaves(doc: Any, prefix: Path_ = ()) -> Iterator[Path_]:
    """Every key path of a parsed preset: tables walked, arrays of tables by index."""
    for k, v in doc.items():
        here = (*prefix, k)
        if isinstance(v, dict):
            yield from _leaves(v, here)
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            for i, table in enumerate(v):
                yield from _leaves(table, (*here, i))
        else:
            yield here


def _doc_key(path: Path_) -> str:
    """The docs/presets.md name of a key path (``arms[].width``, ``prompts.*``)."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += "[]"
        else:
            out += f".{part}" if out else part
    return out


def _allowed(model: type[PresetModel]) -> dict[str, list[str]]:
    """Literal values allowed for each documented key."""
    out = {}
    for doc in key_docs(model):
        if doc.allowed.startswith("'") or doc.allowed[:1].isdigit():
            out[doc.key] = [v.strip().strip("'") for v in doc.allowed.split(",")
                            if v.strip().startswith("'")]
    return out


def _mutated(value: Any, allowed: list[str]) -> Any:
    """Another value of the same kind: an allowed alternative, a nudged number, a list one
    element shorter (or one longer when empty), a renamed string."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return round(value + 0.01 if value < 0.5 else value - 0.01, 6)
    if isinstance(value, str):
        others = [a for a in allowed if a != value]
        return others[0] if others else f"{value}-x"
    if isinstance(value, list):
        if value:
            return value[:-1]
        return [allowed[0] if allowed else "x"]
    raise AssertionError(f"no mutation for {value!r}")


def _set(doc: dict[str, Any], path: Path_, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    node: Any = out
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return out


def _get(doc: Any, path: Path_) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def _preset(name: str, document: dict[str, Any]) -> RegisteredDesign:
    return RegisteredDesign(name, f"<{name} mutated>", document, digest(document))


# ------------------------------------------------------------------------------ effects


def _manifest(reg: RegisteredDesign) -> FrozenManifest:
    """A frozen manifest holding enough positions of every partition for any preset."""
    rows = [{"key": f"{part}-{i:04d}", "partition": part}
            for part in ("training", "development", "held_out") for i in range(400)]
    return FrozenManifest(Path("/nonexistent"), "sha256:" + "0" * 64,
                          {"positions": rows}, {})


def _view() -> StageView:
    """Labelled positions enough for the registered quotas (3 classes x 2 colours)."""
    labels = [{"key": f"k{i:05d}", "label": ("tactical", "ambiguous", "quiet")[i % 3],
               "colour": ("white", "black")[(i // 3) % 2], "game": f"g{i % 300:03d}",
               "candidates": "x"} for i in range(3000)]
    return StageView({}, labels, {}, {})


def _schedule(reg: RegisteredDesign) -> Any:
    body = binding_document(reg, _manifest(reg))
    out = {k: v for k, v in body.items() if k != "design"}
    if "manifest" in reg.document:
        chosen, cells, _ = _sample(_view(), quota_rule(reg))
        out["quota"] = ({p: [u.id for u in units] for p, units in chosen.items()},
                        [(c.name, c.quota) for c in cells])
    return out


def _request(reg: RegisteredDesign) -> Any:
    kind = reg.document["design"]["kind"]
    if kind in ("intervention_ladder", "falsifier_arms"):
        report = ladder_audit(reg, positions=3).to_json()
        report["detail"].pop("arms", None)
        return report
    return _schedule(reg)


AUDIT = PromptAudit(digest=digest({"audit": "clean"}), blocks=8, stray_offsets=0,
                    length_mismatches=0, masked_token_leaks=0)
"""A clean prompt audit: the instrument gates pass, so a null's wording (with the
registered MDE envelope) is reachable."""
TIES = [({"best_move": "e2e4", "best_moves": ["e2e4", "d2d4"]}, ["e2e4", "d2d4", "c2c4"]),
        ({"best_move": "g1f3", "best_moves": ["g1f3"]}, ["b1c3"])]
"""Cells whose pass A ranks tie and whose evaluator disagrees (the best-move rule shows)."""


def _analysis(reg: RegisteredDesign) -> Any:
    kind = reg.document["design"]["kind"]
    models = reg.document["schedule"].get("models") or ["sharp", "diffuse"]
    if kind == "factorial_2x2":
        # a claim and a null: the null's wording states the registered MDE envelope
        header, rows = a105_table({m: PlantedA105("board_limited" if i == 0 else "null")
                                   for i, m in enumerate(models)},
                                  positions=12, games=6, design_digest=reg.digest,
                                  prompt_audit=AUDIT)
    elif kind == "intervention_ladder":
        arms = [a["name"] for a in reg.document["arms"]] + [
            p["name"] for p in reg.document.get("probes", [])]
        # 30 positions: each planted phase holds exactly 10, the registered
        # min_level_positions, so a changed minimum changes which levels are estimated
        header, rows = e020_table({m: PlantedStages(0.5, 0.7) for m in models}, positions=30,
                                  games=15, design_digest=reg.digest, arms=tuple(arms))
    elif kind == "falsifier_arms":
        header, rows = e022_table({a["name"]: 0.5 + 0.1 * i
                                   for i, a in enumerate(reg.document["arms"])},
                                  positions=60, games=20, design_digest=reg.digest)
    else:
        header, rows = e023_table({"sharp": 0.25, "diffuse": 1.0}, positions=30,
                                  design_digest=reg.digest, games=10)
    table = build_table(header, list(enumerate(rows, start=2)))
    doc = analyze_table(table, Settings(n_boot=100, seed=1), preset=reg)
    rule = plan_of(reg).best_set
    return doc, [sorted(best_moves(rule, evaluator, meta)) for meta, evaluator in TIES]


def _audit(reg: RegisteredDesign) -> Any:
    kind = reg.document["design"]["kind"]
    if kind == "factorial_2x2":
        return a105_audit(factorial_design(reg), positions=4, replicates=2).to_json()
    if kind == "counterbalanced_arms":
        return order_audit(arms_design(reg)).to_json()
    return ladder_audit(reg, positions=3).to_json()


CHESS_EFFECTS: dict[str, Callable[[RegisteredDesign], Any]] = {
    "schedule": _schedule, "request": _request,
    "retry": lambda reg: registered_policy(reg).to_json(),
    "analysis": _analysis, "gate": _analysis, "wording": _analysis, "audit": _audit}
"""What each ``drives`` value of a chess study key is observed through."""


def _rows_by_arm(matrix: Any) -> dict[str, list[dict[str, Any]]]:
    """Synthetic cells of every arm: three worlds, an endpoint value varying by arm. Two arms
    sit on the registered validity floor: the first has exactly ``min_valid_answers`` valid
    answers, the second a valid share just under ``min_valid_share`` (so either floor moved
    by one step changes which comparisons give a verdict)."""
    floor = parse_matrix(load_design("causal_arms")).floor
    assert floor.min_valid_share >= 0.5  # the mutation below moves it down by 0.01
    out = {}
    for j, name in enumerate(matrix.arms):
        total, valid = 24, 24
        if j == 0:
            valid = floor.min_valid_answers
        elif j == 1:
            total = 200
            valid = math.ceil((floor.min_valid_share - 0.005) * total)
        out[name] = [{"case_id": f"c{i}", "sample": 0, "world_id": f"w{i % 3}",
                      "right": (i + j) % 3 != 0, "item_type": "exact",
                      "identifiable": i % 4 != 0,
                      "outcome": "correct" if i < valid else "invalid",
                      "decision": i % 2 == 0, "brier": 0.1 * ((i + j) % 5),
                      "tokens": 100 + i + 7 * j, "tool_calls": j, "cost_usd": 0.001 * j,
                      "edges_obtained": j} for i in range(total)]
    return out


def _causal(reg: RegisteredDesign, category: str) -> Any:
    matrix = parse_matrix(reg)
    if category == "identity":
        return matrix.id
    if category == "schedule":
        return matrix.samples, matrix.items_per_world, list(matrix.arms)
    if category in ("request", "gate"):
        return {n: a.to_json() for n, a in matrix.arms.items()}
    report = ablation_report(matrix, _rows_by_arm(matrix), seed=1)
    return report


# -------------------------------------------------------------------------------- cases


def _cases() -> Iterator[tuple[str, Path_]]:
    for name in registered_names():
        for path in _leaves(load_design(name).document):
            yield name, path


CASES = list(_cases())


@functools.cache
def _baseline(name: str, category: str) -> Any:
    return _effect(load_design(name), category)


def _effect(reg: RegisteredDesign, category: str) -> Any:
    if reg.document["design"]["kind"] == "ablation_matrix":
        return _strip(_causal(reg, category))
    return _strip(CHESS_EFFECTS[category](reg))


def _schema(reg: RegisteredDesign) -> type[PresetModel]:
    kind = reg.document["design"]["kind"]
    return AblationPreset if kind == "ablation_matrix" else STUDY_PRESETS[kind]


def _check(reg: RegisteredDesign) -> None:
    """Parse as every consumer does (the key schema, and the typed views)."""
    kind = reg.document["design"]["kind"]
    if kind == "ablation_matrix":
        parse_matrix(reg)
        return
    study_preset(reg)
    if kind == "factorial_2x2":
        factorial_design(reg)
    if kind == "counterbalanced_arms":
        arms_design(reg)


def test_every_bundled_preset_key_is_covered() -> None:
    """The cases walk every key of every bundled preset (counted here), and each is a key
    the schema documents."""
    assert len({n for n, _ in CASES}) == len(registered_names()) == 9
    assert len(CASES) > 400
    for name, path in CASES:
        documented = {d.key for d in key_docs(_schema(load_design(name)))}
        key = _doc_key(path)
        assert key in documented or key.rsplit(".", 1)[0] in documented, (name, key)


@pytest.mark.parametrize(("name", "path"), CASES,
                         ids=[f"{n}:{_doc_key(p)}" for n, p in CASES])
def test_a_changed_key_is_refused_or_changes_what_it_drives(name: str, path: Path_) -> None:
    """A changed value is refused naming the key (or the value that broke a reference), or
    the output of the part the key drives changes."""
    original = load_design(name)
    schema = _schema(original)
    key = _doc_key(path)
    docs = {d.key: d for d in key_docs(schema)}
    doc = docs.get(key) or docs[key.rsplit(".", 1)[0]]
    old = _get(original.document, path)
    new = _mutated(old, _allowed(schema).get(doc.key, []))
    mutated = _preset(name, _set(original.document, path, new))
    try:
        _check(mutated)
    except InputError as exc:
        said = f"{exc} {exc.field}"
        names = [str(p) for p in path if isinstance(p, str)]
        assert any(n in said for n in names[-1:]) or str(old) in said or str(new) in said, said
        return
    assert doc.drives != "identity" or mutated.document["design"]["kind"] == "ablation_matrix"
    try:
        after = _effect(mutated, doc.drives)
    except (InputError, Refusal) as exc:  # refused by the consumer itself: it reads the key
        said = str(exc)
        assert any(str(p) in said for p in path if isinstance(p, str)) or str(new) in said \
            or str(old) in said, said
        return
    assert after != _baseline(name, doc.drives), f"{name}: {key} = {new!r} changed nothing"


def test_a_misspelt_key_is_refused_naming_the_key_it_resembles() -> None:
    """``confidense`` is not silently ignored: refused, naming ``confidence``."""
    reg = load_design("e020_e021")
    analysis = dict(reg.document["analysis"])
    analysis["confidense"] = analysis.pop("confidence")
    with pytest.raises(InputError) as info:
        study_preset(_preset("e020_e021", {**reg.document, "analysis": analysis}))
    assert info.value.field == "analysis.confidense"
    assert "did you mean 'confidence'" in str(info.value)
