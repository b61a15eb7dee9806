"""`chess analyze`: a verified cell table → one JSON document and a Markdown section per design.

Before any estimate: the evaluator family against the labeller's (``evaluator_same_family``
unless the proxy sensitivity is requested by name, ``proxy="stockfish"``; every output is
then labelled "internal proxy"), and the table's design digest against the registered
preset (``manifest_mismatch``). Bad input the reader counted (unknown or duplicate cells)
is reported verbatim and blocks every headline. Every number in the document sits next to
the ``source`` digest of the rows it came from; the Markdown prints a short form of it.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from rungbench.chess.studies.analysis import FACTOR_ESTIMANDS, Settings, analyze_a105
from rungbench.chess.studies.arms_analysis import analyze_e023, falsifier_profile, stage_profile
from rungbench.chess.studies.cells import CellTable
from rungbench.chess.studies.falsifiers import design_verdicts
from rungbench.chess.studies.gates import evaluate_gates
from rungbench.chess.studies.ladder_audit import cells_statement
from rungbench.chess.studies.plan import BUNDLED, plan_of
from rungbench.chess.studies.wording import DOES_NOT_PROVE, word
from rungbench.design.endpoint_validity import endpoint_validity as validity_of
from rungbench.design.presets import FactorialDesign, arms_design, factorial_design
from rungbench.design.registry import RegisteredDesign, load_design
from rungbench.errors import InputError, Reason, Refusal
from rungbench.evidence.canonical import canonical_bytes
from rungbench.evidence.sealed import publish_dir

ANALYSIS_KIND = "rungbench.chess.analysis"
"""Seal kind of a published analysis directory."""
DOCUMENT_SCHEMA = "rungbench.chess.analysis/1"
"""Schema name and version of the analysis document."""
GATE = "chess analysis"
"""Gate name of refusals."""
PROXY_LABEL = "internal proxy (same family as the labeller)"
"""Label of every output of the proxy sensitivity."""
PRIMARY_LABEL = "different-family evaluator"
"""Label of every output of a different-family evaluation."""


def check_evaluator(table: CellTable, proxy: str | None) -> str:
    """Refuse a labeller-family evaluation unless the proxy is requested by name; return the
    role label."""
    h = table.header
    same = h.evaluator_family == h.labeller_family
    if proxy is not None and proxy != "stockfish":
        raise InputError(f"the only proxy sensitivity is 'stockfish', got {proxy!r}",
                         field="proxy")
    if same and proxy is None:
        raise Refusal([Reason("evaluator_same_family", f"the evaluation's family "
                              f"({h.evaluator_family}) is the labeller's; request the proxy "
                              "sensitivity by name (--proxy stockfish)", "evaluator_family",
                              {"family": h.evaluator_family})], gate=GATE)
    if proxy is not None and not same:
        raise InputError(f"--proxy stockfish names the labeller's family; this evaluation is "
                         f"{h.evaluator_family}", field="proxy")
    if h.evaluator_proxy != same:
        raise Refusal([Reason("manifest_mismatch", "evaluator_proxy disagrees with the "
                              "evaluator and labeller families", "evaluator_proxy")], gate=GATE)
    return PROXY_LABEL if same else PRIMARY_LABEL


def _check_design(table: CellTable, preset: RegisteredDesign | None) -> RegisteredDesign:
    """The preset the table was produced under (the bound one, else the bundled one of its
    design ID), refused when the table's design digest is another's."""
    h = table.header
    if preset is None:
        if h.design_id not in BUNDLED:
            raise InputError(f"no registered preset for {h.design_id}", field="design_id")
        preset = load_design(BUNDLED[h.design_id])
    if h.design_digest != preset.digest:
        raise Refusal([Reason("manifest_mismatch", f"the table's {h.design_id} digest is not "
                              "the registered preset's", "design_digest",
                              {"table": h.design_digest, "registered": preset.digest})],
                      gate=GATE)
    return preset


def analyze_table(table: CellTable, settings: Settings | None = None, *,
                  proxy: str | None = None, design: FactorialDesign | None = None,
                  preset: RegisteredDesign | None = None,
                  endpoint_validity: dict[str, Any] | None = None) -> dict[str, Any]:
    """The whole analysis document of ``table`` (see the module docstring).

    ``preset`` is the preset the study bound (e.g. a reduced-size variant): the table's
    design digest must equal its digest instead of the registered preset's, and A105 reads
    its gate rules and ``[analysis.material]`` from it. ``endpoint_validity`` is an E023
    binding's block (its regret profile recomputed from the bound positions, and its
    warnings); without it E023's is the preset's synthetic audit on the registered profile.
    Its warnings are stated beside the distractor falsifier's verdict.
    """
    settings = settings or Settings()
    role = check_evaluator(table, proxy)
    bound = _check_design(table, preset)
    registered = bound.digest
    settings = replace(settings, plan=plan_of(bound))
    if design is None and table.header.design_id == "A105":
        design = factorial_design(bound)
    h = table.header
    bad = table.anomaly_counts()
    doc: dict[str, Any] = {
        "schema": DOCUMENT_SCHEMA, "design": h.design_id, "table": table.digest,
        "study": h.study_digest, "design_digest": h.design_digest,
        "registered_design_digest": registered, "evaluation": h.evaluation_digest,
        "evaluator_family": h.evaluator_family, "labeller_family": h.labeller_family,
        "role": role, "cells": len(table.rows), "plan": settings.registered.to_json(),
        "bad_input": {**bad, "rows": list(table.anomalies)}}
    if h.design_id == "A105":
        assert design is not None
        doc["a105"] = _a105(table, settings, design, role, bad)
    elif h.design_id == "E023":
        doc["e023"] = [analyze_e023(table, m, s, settings).to_json()
                       for m, s in _model_splits(table)]
        validity = endpoint_validity or _registered_validity(bound)
        doc["endpoint_validity"] = validity
        doc["falsifiers"] = design_verdicts(
            table.rows, settings, doc["e023"],
            [str(w["message"]) for w in validity.get("warnings", [])])
    elif h.design_id == "E022":
        doc["stages"] = [falsifier_profile(table, m, s, settings).to_json()
                         for m, s in _model_splits(table)]
        doc["falsifiers"] = design_verdicts(table.rows, settings, doc["stages"])
    else:
        doc["stages"] = [stage_profile(table, m, s, settings).to_json()
                         for m, s in _model_splits(table)]
        doc["cells_statement"] = cells_statement(bound)
        doc["falsifiers"] = design_verdicts(table.rows, settings, doc["stages"])
    return doc


def _registered_validity(preset: RegisteredDesign) -> dict[str, Any]:
    """E023's endpoint validity on the preset's registered regret profile (outcome-blind)."""
    v = validity_of(arms_design(preset))
    return {"profile": v.profile.to_json(), "warnings": [w.to_json() for w in v.warnings]}


def _model_splits(table: CellTable) -> list[tuple[str, str]]:
    return sorted({(r.model, r.split) for r in table.rows})


def _a105(table: CellTable, settings: Settings, design: FactorialDesign, role: str,
          bad: dict[str, int]) -> dict[str, Any]:
    analysis = analyze_a105(table, settings)
    claims = []
    for model in sorted({r.model for r in table.rows}):
        for factor in FACTOR_ESTIMANDS:
            gates = evaluate_gates(analysis, table, model, factor,
                                   split=design.gate.primary_split)
            wording = word(gates, analysis, design, model, factor, bad_input=bad,
                           proxy=role == PROXY_LABEL)
            claims.append({**wording.to_json(), "gates": [g.to_json() for g in gates]})
    return {**analysis.to_json(), "claims": claims, "pooled_headline": _pooled_headline(
        analysis.to_json()["pooled_across_models"], claims)}


def _pooled_headline(pooled: dict[str, Any], claims: list[dict[str, Any]]) -> dict[str, Any]:
    """A pooled effect is never a claim: name the models for which gate 7 fails."""
    out: dict[str, Any] = {}
    for factor in FACTOR_ESTIMANDS:
        est = pooled.get(factor)
        if est is None:
            continue
        failing = [c["model"] for c in claims if c["factor"] == factor
                   and not next(g for g in c["gates"] if g["gate"] == 7)["passed"]]
        out[factor] = {"pooled_mean": est["mean"], "low": est["low"], "high": est["high"],
                       "source": est["source"], "verdict": "blocked" if failing else
                       "not a claim (see the model-specific claims)",
                       "blocked_by": 7 if failing else None, "gate7_fails_for": failing}
    return out


def publish_analysis(doc: dict[str, Any], target: Path, *, force: bool = False) -> Path:
    """Publish ``analysis.json`` (canonical) and ``analysis.md`` as one sealed directory."""
    with publish_dir(target, kind=ANALYSIS_KIND, force=force) as temp:
        (temp / "analysis.json").write_bytes(canonical_bytes(doc) + b"\n")
        (temp / "analysis.md").write_text(markdown(doc), encoding="utf-8")
    return target


# ---------------------------------------------------------------------------- Markdown


def short(d: str | None) -> str:
    """A digest's printable short form."""
    return "—" if not d else d.removeprefix("sha256:")[:12]


def _f(x: float | None, fmt: str = "+.4f") -> str:
    return "—" if x is None else format(x, fmt)


def markdown(doc: dict[str, Any]) -> str:
    """The Markdown section of one analysis document."""
    lines = [f"## {doc['design']} analysis", "",
             f"Cell table `{short(doc['table'])}` · study `{short(doc['study'])}` · design "
             f"`{short(doc['design_digest'])}` · evaluation `{short(doc['evaluation'])}` · "
             f"evaluator {doc['evaluator_family']} ({doc['role']}) · labeller "
             f"{doc['labeller_family']} · {doc['cells']} cells", "",
             f"Bad input: unknown cells {doc['bad_input']['unknown_cell']}, duplicate cells "
             f"{doc['bad_input']['duplicate_cell']}.", ""]
    if doc.get("models_not_run"):
        lines += [f"Design not complete: no run of {', '.join(doc['models_not_run'])} (the "
                  "models it registers that have not run); every figure below is of the "
                  "models that ran.", ""]
    lines += _md_inputs(doc.get("inputs"))
    if "a105" in doc:
        lines += _md_a105(doc["a105"])
    if doc.get("cells_statement"):
        c = doc["cells_statement"]
        lines += [f"Cells: this preset produces {c['produced']:,}; the registered E020/E021 "
                  f"preset {c['registered']:,}; the seed states {c['seed']:,}. "
                  f"{c['explanation']}", ""]
    for stage in doc.get("stages", []):
        lines += _md_stage(stage, 1.0 - doc["plan"]["alpha"])
    for result in doc.get("e023", []):
        lines += _md_e023(result)
    validity = doc.get("endpoint_validity")
    if validity:
        source = validity.get("profile", {}).get("source", "registered")
        lines += [f"Endpoint validity ({source} regret profile, outcome-blind synthetic "
                  "selectors): " + ("; ".join(f"**{w['code']}**: {w['message']}"
                                              for w in validity["warnings"])
                                    or "every primary endpoint moves the declared way."), ""]
    lines += _md_falsifiers(doc.get("falsifiers", []))
    return "\n".join(lines) + "\n"


def _md_falsifiers(verdicts: list[dict[str, Any]]) -> list[str]:
    """One row per falsifier verdict (seed 001, "Outcomes that can prove us wrong")."""
    if not verdicts:
        return []
    out = ["### Falsifiers (seed 001, \"Outcomes that can prove us wrong\")", "",
           "| falsifier | model · split | estimate [interval] | verdict | in the seed's words "
           "| source |", "|---|---|---|---|---|---|"]
    for v in verdicts:
        figure = "—" if v["estimate"] is None else (
            f"{_f(v['estimate'])} [{_f(v['low'])}, {_f(v['high'])}]")
        out.append(f"| {v['falsifier']} | {v['model']} · {v['split']} | {figure} | "
                   f"{v['verdict']} | {v['wording'].replace('|', '/')} | "
                   f"`{short(v['source'])}` |")
    return [*out, ""]


def _md_inputs(inputs: dict[str, Any] | None) -> list[str]:
    """The runs a study analysis joined, each with its manifest and evaluation digests."""
    if not inputs:
        return []
    out = [f"Binding `{short(inputs['binding'])}` · manifest `{short(inputs['manifest'])}` · "
           f"label stage `{short(inputs['label_stage'])}`", "",
           "| run | model | route | part | cells | terminal provider failures | run manifest | "
           "evaluation |", "|---|---|---|---|---|---|---|---|"]
    out += [f"| {r['run_id']} | {r['model']} | {r['route']} | {r['part']} | {r['cells']} | "
            f"{r.get('terminal_provider_failures', 0)} | `{short(r['manifest'])}` | "
            f"`{short(r['evaluation'])}` |" for r in inputs["runs"]]
    return [*out, ""]


def _md_a105(a: dict[str, Any]) -> list[str]:
    out = []
    for r in a["results"]:
        out += [f"### {r['model']} · {r['split']}", "",
                "| estimand | benefit | 95% interval | p | positions | games | source |",
                "|---|---|---|---|---|---|---|"]
        for name, e in r["primary"].items():
            out.append(f"| {name} | {_f(e['mean'])} | [{_f(e['low'])}, {_f(e['high'])}] | "
                       f"{e['p']:.4f} | {e['n_positions']} | {e['n_games']} | "
                       f"`{short(e['source'])}` |")
        out += ["", "| condition | all requests | source | legal only (not randomized) | "
                "source | catastrophic rate | source |", "|---|---|---|---|---|---|---|"]
        for c, m in r["cell_means"].items():
            legal = r["legal_only"]["cells"][c]
            cat = r["catastrophic"][c]
            out.append(f"| {c} | {_f(m['mean_regret'], '.4f')} | `{short(m['source'])}` | "
                       f"{_f(legal['mean_regret'], '.4f')} | `{short(legal['source'])}` | "
                       f"{_f(cat['all']['rate'], '.4f')} | `{short(cat['source'])}` |")
        out += ["", "| sensitivity | estimand | benefit | 95% interval | positions | source |",
                "|---|---|---|---|---|---|"]
        for analysis, estimates in r["sensitivities"].items():
            for name in ("main_b", "main_l", "interaction"):
                e = estimates.get(name)
                if e is not None:
                    out.append(f"| {analysis} | {name} | {_f(e['mean'])} | [{_f(e['low'])}, "
                               f"{_f(e['high'])}] | {e['n_positions']} | "
                               f"`{short(e['source'])}` |")
        att = r["attrition"]
        out += ["", f"Attrition: {att['missing']}/{att['cells']} cells missing; condition "
                f"hazards {', '.join(f'{k} {v:.3f}' for k, v in att['condition_hazards'].items())}"
                f" (cells `{short(att['source'])}`)"
                f"; chi-square p {att['homogeneity_p']:.4f}; differential "
                f"{'yes' if att['differential'] else 'no'}; complete positions "
                f"{att['support']['complete_positions']} in {att['support']['complete_games']}"
                " games.", ""]
    out += ["### Claims", ""]
    for c in a["claims"]:
        gates = " ".join(f"{g['gate']}{'✓' if g['passed'] else '✗'}" for g in c["gates"])
        out += [f"**{c['model']} · {c['factor']}: {c['verdict']}** (gates {gates})", "",
                c["text"], ""]
        out += [f"- gate {g['gate']} {'passed' if g['passed'] else 'FAILED'}: {g['name']}"
                + _gate_source(g) for g in c["gates"]] + [""]
        if c["verdict"] == "claim":
            out += ["It does not prove:", *[f"- {x}" for x in DOES_NOT_PROVE], ""]
    for factor, p in a["pooled_headline"].items():
        out += [f"Pooled {factor} (not a substitute for model-specific evidence): "
                f"{_f(p['pooled_mean'])} [{_f(p['low'])}, {_f(p['high'])}] "
                f"`{short(p['source'])}` — {p['verdict']}"
                + (f" at gate 7 for {', '.join(p['gate7_fails_for'])}"
                   if p['gate7_fails_for'] else ""), ""]
    return out


def _gate_source(g: dict[str, Any]) -> str:
    """A gate line's evidence figure and the digest it came from."""
    ev = g["evidence"]
    bits = []
    for key in ("mean", "adjusted_p", "low"):
        if isinstance(ev.get(key), float):
            bits.append(f"{key} {ev[key]:+.4f}")
    if ev.get("reversed_under"):
        bits.append(f"reversed under {', '.join(ev['reversed_under'])}")
    if ev.get("differential_attrition"):
        bits.append("differential attrition")
    if ev.get("reason"):
        bits.append(str(ev["reason"]))
    source = ev.get("source")
    return (f" ({'; '.join(bits)})" if bits else "") + (f" `{short(source)}`" if source else "")


def _md_stage(s: dict[str, Any], confidence: float) -> list[str]:
    out = [f"### {s['model']} · {s['split']}: {s['label']}", "", s["label_meaning"], "",
           f"| figure | estimate | {100 * confidence:g}% interval | source |",
           "|---|---|---|---|"]
    for name, f in s["figures"].items():
        shown = f if "low" in f else (f.get("proportion_interval") or {})
        low, high = shown.get("low"), shown.get("high")
        out.append(f"| {name} | {_f(f['estimate'], '.4f')} | [{_f(low, '.4f')}, "
                   f"{_f(high, '.4f')}] | `{short(f['source'])}` |")
    for arm, c in s["paired_regret_contrasts"].items():
        out.append(f"\n{arm}: benefit {_f(c['mean'])} [{_f(c['low'])}, "
                   f"{_f(c['high'])}], {c['method']} p {c['adjusted_p']:.4f} "
                   f"`{short(c['source'])}`")
    return [*out, ""]


def _md_e023(r: dict[str, Any]) -> list[str]:
    out = [f"### {r['model']} · {r['split']}", ""]
    for name, p in r["primaries"].items():
        out.append(f"Primary {name}, {p['contrast']}: {_f(p['mean'])} [{_f(p['low'])}, "
                   f"{_f(p['high'])}], p {p['p']:.4f} (two-sided alpha {p['alpha']}) — "
                   f"{'rejected' if p['rejected'] else 'not rejected'} `{short(p['source'])}`")
    out.append("")
    for k, s in r["secondaries"].items():
        out.append(f"- {k}: {_f(s['mean'])} [{_f(s['low'])}, {_f(s['high'])}], "
                   f"{s['method']} p {s['adjusted_p']:.4f} `{short(s['source'])}`")
    for k, why in r.get("not_estimable", {}).items():
        out.append(f"- {k}: not estimable ({why})")
    return [*out, ""]
