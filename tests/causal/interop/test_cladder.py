"""Tests for rungbench.causal.interop.cladder: CLadder import and exact re-grade (SOURCES.md)."""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import re
import shutil
import time
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from rungbench.causal.interop import cladder
from rungbench.causal.scm.cpts import Cpt
from rungbench.errors import InputError
from rungbench.evidence.sealed import verify_sealed

DATA = Path(__file__).resolve().parents[3] / "data" / "cladder"


@pytest.fixture(scope="module")
def data() -> cladder.CladderSet:
    return cladder.load_cladder(DATA)


@pytest.fixture(scope="module")
def graded(data: cladder.CladderSet) -> cladder.Regrade:
    return cladder.regrade(data)


def _p(c: Cpt, value: int, env: Mapping[str, int]) -> float:
    row = sum(env[q] << i for i, q in enumerate(c.parents))
    return c.p_one[row] if value else 1.0 - c.p_one[row]


def _joint(cpts: Sequence[Cpt], do: Mapping[str, int] | None = None
           ) -> list[tuple[dict[str, int], float]]:
    """Every full assignment with its probability (truncated factorization under ``do``)."""
    do = do or {}
    out = []
    for bits in itertools.product((0, 1), repeat=len(cpts)):
        env = {c.name: b for c, b in zip(cpts, bits, strict=True)}
        if any(env[k] != v for k, v in do.items()):
            continue
        w = 1.0
        for c in cpts:
            if c.name not in do:
                w *= _p(c, env[c.name], env)
        out.append((env, w))
    return out


def _topo(cpts: Sequence[Cpt]) -> list[Cpt]:
    done: list[Cpt] = []
    names: set[str] = set()
    todo = list(cpts)
    while todo:
        for c in todo:
            if set(c.parents) <= names:
                done.append(c)
                names.add(c.name)
                todo.remove(c)
                break
    return done


def _nested(cpts: Sequence[Cpt], x: str, y: str, outer: int, inner: int,
            factual_x: int | None = None) -> float:
    """E[Y_{outer, D_inner}] where every descendant D of X is read once in the inner world."""
    order = _topo(cpts)
    desc = {x}
    for c in order:
        if any(p in desc for p in c.parents):
            desc.add(c.name)
    total = norm = 0.0
    for bits in itertools.product((0, 1), repeat=len(order)):
        env = {c.name: b for c, b in zip(order, bits, strict=True)}
        w = 1.0
        for c in order:
            if c.name == x:
                w *= 1.0 if factual_x is None else _p(c, factual_x, env)
                continue
            setting = {**env, x: outer if c.name == y else inner}
            w *= _p(c, env[c.name], setting)
        if factual_x is not None:
            norm += w if env[x] == 0 else 0.0  # X's own value is summed out once
        total += w * env[y] * (1.0 if env[x] == 0 else 0.0)
    return total / (norm if factual_x is not None else 1.0)


def _brute(model: cladder.CladderModel, name: str) -> float:
    """Independent exact value of a CLadder quantity from its CPTs by full enumeration."""
    cpts = list(model.cpts)
    m = re.match(r"^(ATE|ETT|NDE|NIE)\((\w+) \| (\w+)\)$", name)
    if m is not None:
        kind, y, x = m.groups()
        base = _nested(cpts, x, y, 0, 0)
        if kind == "ATE":
            return _nested(cpts, x, y, 1, 1) - base
        if kind == "NDE":
            return _nested(cpts, x, y, 1, 0) - base
        if kind == "NIE":
            return _nested(cpts, x, y, 0, 1) - base
        joint = _joint(cpts)
        px = sum(w for env, w in joint if env[x] == 1)
        treated = sum(w for env, w in joint if env[x] == 1 and env[y] == 1) / px
        return treated - _nested(cpts, x, y, 0, 0, factual_x=1)
    m2 = re.match(r"^P\((\w+)=([01])(?: \| (\w+)=([01]))?\)$", name)
    assert m2 is not None, name
    t, tv, e, ev = m2.groups()
    joint = _joint(cpts)
    den = sum(w for env, w in joint if e is None or env[e] == int(ev))
    num = sum(w for env, w in joint if env[t] == int(tv) and (e is None or env[e] == int(ev)))
    return num / den


SHA256 = {  # data/SOURCES.md
    "test-generate-anti.json": "576974176ba7a735e0b7ca63526039ea75951cb87bc7e0f345c40a57c5e9792b",
    "test-generate-det.json": "6d44e62822f84f68223ef2590f0353767ce83d1226d3363468114955cfa12e87",
    "test-generate-easy.json": "a59d096b75e92e7c19319c713d9de0c9cc2ef58b4725dade577419f7d5a2304c",
    "test-generate-hard.json": "8a9be6bf03ea84f4a6c4f2ed7f5d225090eebc13c2711ca81af508489fa32a18",
    "test-generate-non.json": "ead7f71b9b740a5d9c2a8290057a7c46d2679502dceb0944dea174381b7f5b45",
    "test-model-meta.json": "1223621dc2d12ea061f4242474638dc6770f3c48aa24eeafdc6118ab3f6b4148",
}


def test_the_copies_are_the_recorded_files() -> None:
    """Every CLadder file read hashes to its data/SOURCES.md sha256, and the import
    records the same digests."""
    for name, digest in SHA256.items():
        assert hashlib.sha256((DATA / name).read_bytes()).hexdigest() == digest
    recorded = cladder.source_digests(DATA, (cladder.MODEL_FILE, *cladder.QUESTION_FILES))
    assert recorded == {k: f"sha256:{v}" for k, v in SHA256.items()}


def test_every_model_and_question_imports(data: cladder.CladderSet) -> None:
    """All 396 in-repo test models become worlds; all 4,164 questions link to a model."""
    assert len(data.models) == 396
    assert len(data.questions) == 4164
    assert Counter(m.family for m in data.models.values())["arrowhead"] == 58
    assert sum(len(m.groundtruth) for m in data.models.values()) == 3742


def test_oracle_equals_independent_enumeration_on_all_stored_quantities(
        data: cladder.CladderSet, graded: cladder.Regrade) -> None:
    """The oracle's 3,742 exact values equal a brute-force sum over CPT products (1e-12)."""
    worst = 0.0
    for g in graded.quantities:
        worst = max(worst, abs(g.exact_value - _brute(data.models[g.model_id], g.quantity)))
    assert len(graded.quantities) == 3742
    assert worst <= 1e-12


def test_rung1_and_rung2_values_agree_with_pgmpy(data: cladder.CladderSet,
                                                graded: cladder.Regrade) -> None:
    """P(.) and ATE quantities of 80 models equal pgmpy's exact inference to 1e-9."""
    warnings.simplefilter("ignore")
    logging.getLogger("pgmpy").setLevel(logging.ERROR)
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.inference import CausalInference, VariableElimination
    from pgmpy.models import DiscreteBayesianNetwork

    checked = 0
    for model in list(data.models.values())[::5]:
        bn = DiscreteBayesianNetwork()
        bn.add_nodes_from(c.name for c in model.cpts)
        bn.add_edges_from(model.edges)
        for c in model.cpts:
            p1 = list(c.p_one)
            bn.add_cpds(TabularCPD(c.name, 2, [[1 - q for q in p1], p1],
                                   evidence=list(reversed(c.parents)) or None,
                                   evidence_card=[2] * len(c.parents) or None))
        ve, ci = VariableElimination(bn), CausalInference(bn)
        for g in (g for g in graded.quantities if g.model_id == model.model_id):
            m = re.match(r"^P\((\w+)=1(?: \| (\w+)=([01]))?\)$", g.quantity)
            if m is not None:
                ev = {m.group(2): int(m.group(3))} if m.group(2) else None
                ref = ve.query([m.group(1)], evidence=ev, show_progress=False).values[1]
            elif g.quantity.startswith("ATE"):
                ref = (ci.query(["Y"], do={"X": 1}, show_progress=False).values[1]
                       - ci.query(["Y"], do={"X": 0}, show_progress=False).values[1])
            else:
                continue
            assert g.exact_value == pytest.approx(float(ref), abs=1e-9)
            checked += 1
    assert checked > 400


def test_cladder_gold_is_wrong_on_exactly_the_measured_quantities(
        graded: cladder.Regrade) -> None:
    """578 of 3,742 stored values are wrong: P(Y=1) in 7 families, arrowhead's effects."""
    wrong = graded.disagreements()
    assert len(wrong) == 578
    assert sum(1 for g in graded.quantities if g.agrees) == 3164
    kinds = {(g.family, cladder.quantity_kind(g.quantity)) for g in wrong}
    marginal_families = {f for f, k in kinds if k == "P(Y=1)"}
    assert marginal_families == {"IV", "arrowhead", "confounding", "diamond", "diamondcut",
                                 "frontdoor", "mediation"}
    assert {k for f, k in kinds if f == "arrowhead"} == {"ATE", "ETT", "NDE", "NIE", "P(Y|X)",
                                                         "P(Y=1)"}
    assert {f for f, _ in kinds} - marginal_families == set()
    assert max(abs(g.cladder_value - g.exact_value) for g in wrong) == pytest.approx(
        0.2235, abs=1e-3)


def test_answer_rule_reproduces_every_stored_numeric_label(graded: cladder.Regrade) -> None:
    """CLadder's rule applied to CLadder's own numbers gives its 2,940 stored answers."""
    numeric = [g for g in graded.questions if g.question.query_type in cladder.NUMERIC_TYPES]
    assert len(numeric) == 2940
    for g in numeric:
        assert g.cladder_value is not None
        assert cladder.cladder_label(g.question.query_type, g.cladder_value,
                                     bool(g.question.meta["polarity"])) == g.question.label


def test_exact_values_flip_fourteen_numeric_labels(graded: cladder.Regrade) -> None:
    """Exact values of the quantity each question states (its formal_form; for NIE Pearl's
    E[Y_{0, M_1}] - E[Y_{0, M_0}]) flip 8 marginal and 6 arrowhead NIE labels."""
    flips = sorted(g.question.key for g in graded.questions
                   if g.label_flips and g.question.query_type in cladder.NUMERIC_TYPES)
    assert flips == sorted([
        "hard:445", "hard:446", "non:187", "non:188", "non:363", "non:364", "non:501",
        "non:502",  # marginal
        "non:72", "non:519", "non:520", "non:743", "non:744", "non:1079",  # arrowhead nie
    ])
    assert {g.question.family for g in graded.questions
            if g.label_flips and g.question.query_type == "nie"} == {"arrowhead"}
    counts = graded.counts()
    assert counts["numeric_labels_flipped_by_type"] == {"marginal": 8, "nie": 6}
    assert counts["numeric_values_wrong"] == 820


def test_cladder_code_computes_a_soft_intervention_not_the_formal_nie(
        data: cladder.CladderSet, graded: cladder.Regrade) -> None:
    """Why 14 and not SOURCES.md's 10: the formal_form E[Y_{X=0, V3=1} - Y_{X=0, V3=0}] is
    Pearl's NIE (V3 read under X=1, with the unit's own V2), but CLadder's code draws V3 as
    an independent coin with P(V3=1 | do(X=1)); in arrowhead (V2 -> V3, V2 -> Y) the two
    differ. Hand formulas on model 392 (non:1079/1080) give both; the code's quantity,
    computed exactly, flips SOURCES.md's 10 labels (8 marginal, non:743 and non:1080)."""
    m = data.models[392]
    c = {k.name: k for k in m.cpts}
    pk = {1: c["V2"].p_one[0], 0: 1 - c["V2"].p_one[0]}

    def pv(v: int, x: int, k: int) -> float:  # P(V3=v | X=x, V2=k); row = X + 2*V2
        q = c["V3"].p_one[x + 2 * k]
        return q if v else 1 - q

    def py(x: int, v: int, k: int) -> float:  # P(Y=1 | X, V2, V3); row = X + 2*V2 + 4*V3
        return c["Y"].p_one[x + 2 * k + 4 * v]

    base = sum(pk[k] * pv(v, 0, k) * py(0, v, k) for k in (0, 1) for v in (0, 1))
    pearl = sum(pk[k] * pv(v, 1, k) * py(0, v, k) for k in (0, 1) for v in (0, 1)) - base
    coin = {v: sum(pk[k] * pv(v, 1, k) for k in (0, 1)) for v in (0, 1)}
    soft = sum(coin[v] * pk[k] * py(0, v, k) for k in (0, 1) for v in (0, 1)) - base
    by_key = {g.question.key: g for g in graded.questions}
    for key in ("non:1079", "non:1080"):
        g = by_key[key]
        assert g.exact_value == pytest.approx(pearl, abs=1e-12)
        assert g.engine_value == pytest.approx(soft, abs=1e-12)
    assert pearl == pytest.approx(0.012222358281203327, abs=1e-12)
    assert soft == pytest.approx(-0.019346712428775725, abs=1e-12)
    counts = graded.counts()
    assert counts["numeric_labels_flipped_engine_definition"] == 10
    assert counts["numeric_labels_flipped_engine_definition_by_type"] == {"marginal": 8,
                                                                           "nie": 2}
    engine_flips = {g.question.key for g in graded.questions
                    if g.engine_label_flips and g.question.query_type == "nie"}
    assert engine_flips == {"non:743", "non:1080"}
    differs = [g for g in graded.questions if g.engine_value is not None
               and abs(g.engine_value - (g.exact_value or 0.0)) > 1e-9]
    assert {g.question.family for g in differs} == {"arrowhead"}
    others = [g for g in graded.questions if g.engine_value is not None
              and g.question.family != "arrowhead"]
    assert others and all(g.engine_value == pytest.approx(g.exact_value, abs=1e-12)
                          for g in others)


def test_structural_labels_agree_except_the_fork_backdoor_items(
        graded: cladder.Regrade) -> None:
    """Collider and deterministic counterfactual labels all agree; 68 fork backadj items
    offer two valid back-door sets, so neither method is more correct."""
    structural = [g for g in graded.questions if g.question.query_type in
                  cladder.STRUCTURAL_TYPES]
    differing = [g for g in structural if g.label_flips]
    assert len(differing) == 68
    assert {(g.question.query_type, g.question.family) for g in differing} == {
        ("backadj", "fork")}
    assert all(g.exact_label is None and "both" in g.note for g in differing)
    det = [g for g in structural if g.question.query_type == "det-counterfactual"]
    assert len(det) == 512 and not any(g.label_flips for g in det)


def test_import_and_regrade_take_under_five_seconds(tmp_path: Path) -> None:
    """Import (worlds, cases, full re-grade) of the whole set publishes in under 5 s."""
    start = time.perf_counter()
    summary = cladder.import_cladder(DATA, tmp_path / "imp")
    elapsed = time.perf_counter() - start
    assert elapsed < 5.0
    verify_sealed(tmp_path / "imp", kind=cladder.CLADDER_IMPORT_KIND)
    assert summary["coupling_dependent_questions"] == 0
    assert "coupling" in summary["coupling_note"]
    cases = [json.loads(line) for line in (tmp_path / "imp" / "cases.jsonl").read_text()
             .splitlines()]
    assert len(cases) == 4164
    assert all(c["cladder_label"] in ("yes", "no") for c in cases)
    assert sum(c["cladder_label"] != c["exact_label"] for c in cases) == 14 + 68


def test_regrade_tables_list_only_disagreements(tmp_path: Path) -> None:
    """The regrade publishes 578 wrong quantities and the disagreeing questions as JSON."""
    result = cladder.write_regrade(DATA, tmp_path / "rg", "json")
    quantities = json.loads((tmp_path / "rg" / "quantities.json").read_text())["rows"]
    assert len(quantities) == 578 and not any(r["agrees"] for r in quantities)
    questions = json.loads((tmp_path / "rg" / "disagreements.json").read_text())["rows"]
    assert all(not r["value_agrees"] or r["label_flips"] for r in questions)
    assert len(questions) == 820 + 68  # wrong numbers (every flip is among them), backadj
    assert result["counts"]["quantities_wrong"] == 578


def _copy(tmp_path: Path) -> Path:
    target = tmp_path / "cl"
    shutil.copytree(DATA, target)
    return target


def test_missing_or_corrupt_files_fail_closed(tmp_path: Path) -> None:
    """A missing question file, bad JSON or a structure/params mismatch names the file."""
    d = _copy(tmp_path)
    (d / "test-generate-det.json").unlink()
    with pytest.raises(InputError, match=r"test-generate-det\.json"):
        cladder.load_cladder(d)
    d2 = _copy(tmp_path / "b")
    (d2 / "test-model-meta.json").write_text("[{", encoding="utf-8")
    with pytest.raises(InputError, match="not valid JSON"):
        cladder.load_cladder(d2)
    d3 = _copy(tmp_path / "c")
    models = json.loads((d3 / "test-model-meta.json").read_text())
    models[5]["structure"] = "X->Y"
    (d3 / "test-model-meta.json").write_text(json.dumps(models))
    with pytest.raises(InputError, match=r"models\[5\]"):
        cladder.load_cladder(d3)
