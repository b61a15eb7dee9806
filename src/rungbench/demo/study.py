"""Demo stage: one chess study end to end, through the library calls the CLI makes.

``rungbench chess study freeze|bind|authorize|run|evaluate`` and the analysis, in order, on
the label stage of :mod:`rungbench.demo.labels`:

1. freeze the final manifest by ``demo_e020_e021``'s quotas (30 positions);
2. write the models file naming every planted agent by its label
   (``chess-study/models.toml``) and bind ``demo_a105``, ``demo_e020_e021``,
   ``demo_e022`` and ``demo_e023`` to the manifest with it;
3. freeze one budget authorization covering every planted model on the loopback route;
4. run every model of every binding through the real ``openai`` client against a loopback
   server that serves the planted-mechanism agents (:mod:`rungbench.chess.studies.planted`;
   controlled inputs, not claims about any model); for E020/E021 also the self-shortlist
   coverage probe and the choice stage built from it;
5. evaluate every move-choice run with the different-family evaluator (Ethereal, its
   registered depth) into one shared, revalidated successor cache;
6. analyse each binding with the claim gates (:func:`rungbench.chess.studies.study.analyze`,
   published sealed under ``<study>/analyses/``, where the report reads it).

A second run verifies and reuses everything: the manifest and the bindings re-hash to the
same digests, the authorization is the same content-addressed object, every run resumes
with nothing pending (nothing is sent again), every evaluation's seal and file digests
verify. ``detail`` is the summary; the report reads the study directory itself.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from rungbench.agents.models_file import ModelsFile, load_models, models_toml
from rungbench.agents.spec import AgentSpec
from rungbench.chess.labels.idle import IdleGate, default_max_load
from rungbench.chess.studies import budget as bud
from rungbench.chess.studies import study as st
from rungbench.chess.studies.evaluation import StageOptions, evaluate_run, verify_evaluation
from rungbench.chess.studies.evaluator import EvaluatorConfig
from rungbench.demo import StageResult
from rungbench.demo.labels import workspace
from rungbench.design.registry import load_design
from rungbench.errors import InputError
from rungbench.evidence.canonical import bytes_digest
from rungbench.evidence.store import write_atomic

MANIFEST_PRESET = "demo_e020_e021"
"""The preset whose [manifest] quotas the demo manifest is frozen by."""
ROUTE = "loopback"
"""Route label of every demo run (a loopback OpenAI-compatible server)."""
Plan = tuple[str, tuple[tuple[str, str], ...], bool]
"""One binding of the demo study (see :data:`PLANS`)."""
PLANS: tuple[Plan, ...] = (
    ("demo_a105", (("planted-board-limited", "a105:board_limited"),
                   ("planted-complementary", "a105:complementary")), False),
    ("demo_e020_e021", (("planted-ideas-limited", "e020:ideas_limited"),
                        ("planted-vision-limited", "e020:vision_limited")), True),
    ("demo_e022", (("planted-transition-limited", "e022:transition_limited"),
                   ("planted-comparison-limited", "e022:comparison_limited")), False),
    ("demo_e023", (("planted-sharp", "e023:sharp"), ("planted-diffuse", "e023:diffuse")),
     False),
)
"""(preset, ((model label, planted agent), ...), has a coverage probe) per binding."""


def cells_per_model(preset: str) -> int:
    """The cells one model of a demo binding is sent, as its preset registers them: A105's
    requests per model; a ladder's ``[cells] total`` (arms, probe and choice) per model;
    E023's positions × arms × presentations."""
    reg = load_design(preset)
    kind = reg.section("design").get("kind")
    schedule = reg.section("schedule")
    if kind == "factorial_2x2":
        return int(schedule["planned_requests_per_model"])
    if kind == "counterbalanced_arms":
        return (int(schedule["positions"]) * len(reg.table_list("arms"))
                * int(schedule["presentations"]))
    return int(reg.section("cells")["total"]) // len(schedule["models"])


def planned_cells(plans: tuple[Plan, ...] | None = None) -> int:
    """The cells the study stage sends on its first run of ``plans`` (default
    :data:`PLANS`: what ``rungbench demo`` prints, and README quotes)."""
    return sum(cells_per_model(preset) * len(agents)
               for preset, agents, _ in (PLANS if plans is None else plans))


def study_dir(workdir: Path) -> Path:
    """The demo's study directory."""
    return workdir / "chess-study" / "study"


def _manifest(study: Path, stage: Path) -> tuple[dict[str, Any], bool]:
    if (study / "manifest").exists():
        manifest = st.current_manifest(study, stage)  # verified, and frozen from this stage
        return {"digest": manifest.digest, "counts": manifest.document["counts"]}, True
    frozen = st.freeze(study, stage, load_design(MANIFEST_PRESET))
    return {"digest": frozen["digest"], "counts": frozen["counts"]}, False


def _authorization(study: Path) -> str:
    models = tuple(m for _, agents, _ in PLANS for m, _ in agents)
    auth = bud.Authorization(max_cells=5_000, max_tokens=10**8, max_cost_usd=1.0,
                             models=models, routes=(ROUTE,),
                             authorized_by="rungbench demo: planted agents on loopback, "
                                           "no provider spend")
    return bud.freeze_authorization(study, auth)


def demo_models(plans: tuple[Plan, ...] = PLANS) -> tuple[AgentSpec, ...]:
    """Every planted agent of ``plans`` as a spec under its label."""
    return tuple(AgentSpec(label, "planted", planted) for _, agents, _ in plans
                 for label, planted in agents)


def _models(workdir: Path, plans: tuple[Plan, ...]) -> ModelsFile:
    """The demo's models file, written beside the study (rewritten only when it differs)."""
    path = workdir / "chess-study" / "models.toml"
    text = models_toml(demo_models(plans))
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text.encode("utf-8"), overwrite=True)
    return load_models(path)


def _run(study: Path, stage: Path, binding: str, spec: AgentSpec, auth: str,
         probe: bool, shortlist_from: str | None) -> dict[str, Any]:
    result = st.run_spec(study, stage, binding, spec, route=ROUTE, authorization=auth,
                         concurrency=4, probe=probe, shortlist_from=shortlist_from)
    if not result["complete"]:
        raise InputError(f"demo run {result['run_id']} stopped ({result['stopped']}) with "
                         f"{result['final']}/{result['cells']} cells final", path=result["run"])
    return result


def _evaluate(study: Path, stage: Path, run_id: str, depth: int | None) -> dict[str, Any]:
    out = study / "evaluations" / run_id
    if out.exists():
        record = verify_evaluation(out)
        return {"evaluation": bytes_digest((out / "evaluation.json").read_bytes()),
                "evaluator": record["evaluator"]["name"], "depth": record["depth"],
                "role": record["role"], "reused": True, "searches": 0}
    gate = IdleGate(max_load=max(default_max_load(), 64.0))
    summary = evaluate_run(st.runs_dir(study) / run_id, stage, EvaluatorConfig(depth=depth),
                           StageOptions(cache=study / "evaluation-cache", out=out, workers=2),
                           gate)
    return {"evaluation": summary["evaluation"], "evaluator": summary["evaluator"],
            "depth": summary["depth"], "role": summary["role"], "reused": False,
            "searches": summary["run"]["searches"]}


def _analyze(study: Path, stage: Path, binding: str) -> dict[str, Any]:
    # published (sealed) under <study>/analyses/; kept when its bytes are the same
    return st.analyze(study, stage, binding=binding)


def run(workdir: Path, *, plans: tuple[Plan, ...] = PLANS,
        depth: int | None = None) -> StageResult:
    """Freeze, bind, authorize, run, evaluate and analyse the demo study (or verify/reuse).

    ``plans`` and ``depth`` (the evaluator's; None: registered) exist for a reduced test.
    """
    stage = workspace(workdir).stage
    study = study_dir(workdir)
    manifest, manifest_reused = _manifest(study, stage)
    auth = _authorization(study)
    models = _models(workdir, plans)
    bindings: dict[str, Any] = {}
    for preset, agents, has_probe in plans:
        bound = st.bind(study, preset, stage, models)
        runs = []
        for model, planted in agents:
            # the move-choice arms, then the self-shortlist probe (coverage C) and the choice
            # stage built from that probe run (the model chooses among its own list)
            parts: list[tuple[str, bool, str | None]] = [("cells", False, None)]
            if has_probe:
                parts += [("probe", True, None), ("choice", False, "probe")]
            ids: dict[str, str] = {}
            for part, probe, source in parts:
                result = _run(study, stage, bound["binding"], models.get(model), auth, probe,
                              ids.get(source) if source else None)
                ids[part] = result["run_id"]
                entry = {"run_id": result["run_id"], "model": model, "planted": planted,
                         "part": part, "probe": probe, "cells": result["cells"],
                         "schedule": result["schedule"],
                         "sent_before": result["previously_sent"],
                         "sent_now": result["run_spend"]["cells"] - result["previously_sent"]}
                if not probe:
                    entry["evaluation"] = _evaluate(study, stage, result["run_id"], depth)
                runs.append(entry)
        analysis = _analyze(study, stage, bound["binding"])
        reused = analysis.get("reused")
        bindings[preset] = {"binding": bound["binding"], "design": bound["design"],
                            "positions": bound["positions"], "runs": runs,
                            "analysis": _analysis_brief(analysis),
                            "analysis_reused": reused}
    summary = {"study": str(study), "manifest": manifest["digest"],
               "manifest_counts": manifest["counts"], "manifest_reused": manifest_reused,
               "authorization": auth, "route": ROUTE, "bindings": bindings,
               "cells": sum(r["cells"] for b in bindings.values() for r in b["runs"])}
    return StageResult(summary, summary)


def _analysis_brief(doc: dict[str, Any]) -> dict[str, Any]:
    """The figures of one analysis document the demo prints (the report shows them all)."""
    brief: dict[str, Any] = {k: doc[k] for k in ("design", "table", "role", "cells")
                             if k in doc}
    claims = (doc.get("a105") or {}).get("claims", [])
    if claims:
        brief["claims"] = {f"{c['model']}:{c['factor']}": c["verdict"] for c in claims}
    for stage in doc.get("stages", []):
        brief.setdefault("profiles", {})[f"{stage['model']}:{stage['split']}"] = stage["label"]
    for result in doc.get("e023", []):
        brief.setdefault("e023", {})[f"{result['model']}:{result['split']}"] = {
            name: {"mean": p["mean"], "rejected": p["rejected"]}
            for name, p in result["primaries"].items()}
    counts: dict[str, Counter[str]] = {}
    for v in doc.get("falsifiers", []):
        counts.setdefault(v["falsifier"], Counter())[v["verdict"]] += 1
    if counts:
        brief["falsifiers"] = {name: " · ".join(f"{w} {c[w]}" for w in
                                                ("holds", "fails", "inconclusive") if c[w])
                               for name, c in counts.items()}
    return brief
