"""The report's sections, each a pure function of verified :class:`~.inputs.Inputs` → HTML.

Every number is printed beside a link to the digest of the object it came from (the
object inventory at the end of the page) or, for analysis estimates, the digest of the
exact rows it was computed from. A section whose inputs are absent says so.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

from rungbench.causal.bench.report import NOT_BUILT, label_rows
from rungbench.chess.studies.falsifiers import DESIGN_FALSIFIERS, FALSIFIERS
from rungbench.chess.studies.wording import DOES_NOT_PROVE
from rungbench.report import provenance
from rungbench.report.html import absent, esc, interval, num, paragraph, ref, sub, table, verdict
from rungbench.report.inputs import Inputs, Source
from rungbench.report.plots import Point, coverage_selection, forest

Section = tuple[str, str, Callable[[Inputs], str]]
"""(anchor, title, renderer)."""


def _from(source: Source) -> str:
    return f'<p class="note">From {esc(source.key)} {ref(source.digest)}.</p>'


# ----------------------------------------------------------------------------- reading


def reading(inputs: Inputs) -> str:
    """What was measured and how to read the page."""
    parts = [paragraph(
        "rungbench measures agents by controlled intervention, not by score alone. This page "
        "collects one study's verified outputs. Each number links to the digest of the "
        "object it came from; the inventory at the end lists every object, where it was read "
        "from and how it was verified before this page was written."),
        paragraph(
        "The chess study answers two questions of the seeds: did revealing the board or the "
        "legal-move list change WDL regret (A105, a byte-matched 2×2 factorial, read through "
        "seven claim gates), and is an agent short of ideas or of vision (E020/E021 coverage × "
        "conditional selection, E023 distractor arms at fixed width). The causal benchmark "
        "asks whether an agent answers each rung's question (observation, intervention, "
        "counterfactual) or correctly declines it, and the C0–C5 control matrix asks whether "
        "the instrument itself can see a present edge before any graph number is read."),
        provenance.reading_note(inputs)]
    kinds: dict[str, list[Source]] = defaultdict(list)
    for source in inputs.all():
        kinds[source.key.split(":", 1)[0]].append(source)
    rows = [[esc(kind), num(len(found)), " ".join(ref(s.digest) for s in found[:6])
             + (" …" if len(found) > 6 else ""), esc(found[0].verified)]
            for kind, found in kinds.items()]
    parts.append(table(["input", "objects", "digests", "verified by"], rows,
                       numeric=(1,), table_id="inputs"))
    return "\n".join(parts)


# -------------------------------------------------------------------------------- A104


def a104(inputs: Inputs) -> str:
    """The A104 transition table: the pooled corpus in full, every other census in brief."""
    if not inputs.census:
        return absent("no A104 census (rungbench chess census) was run")
    parts = [paragraph(
        "A104 replays the historical dispatcher over frozen transcripts and counts what "
        "followed each same-position tool call. The agent chose when to call its tools, so "
        "these rates describe a policy's chronology; they are not effects of the tools.")]
    main = next((s for s in inputs.census if s.key == "census:corpus"), inputs.census[0])
    doc = main.document
    counts = doc["counts"]
    rows = [[esc(r["prior"]), num(r["transitions"]), num(r["accepted"]),
             num(r["rate"], ".4f"), interval(r.get("ci"), ".4f"), ref(main.digest)]
            for r in doc["transition_table"]]
    parts.append(f"<h3>{esc(main.key.removeprefix('census:'))}</h3>")
    parts.append(table(["prior response", "same-position transitions",
                        "next accepted legal command", "rate", "95% interval", "source"],
                       rows, numeric=(1, 2, 3), table_id="a104"))
    parts.append(f'<p class="note">{num(counts["eligible_attempts"])} eligible attempts, '
                 f'{num(counts["position_chains"])} position chains, '
                 f'{num(counts["source_games"])} source games; census digest '
                 f'{sub(doc.get("digest"), main.digest)}.</p>')
    others = [s for s in inputs.census if s is not main]
    if others:
        priors = [r["prior"] for r in doc["transition_table"]]
        brief = []
        for source in others:
            by_prior = {r["prior"]: r for r in source.document["transition_table"]}
            cells = [f"{num(by_prior[p]['accepted'])}/{num(by_prior[p]['transitions'])}"
                     if p in by_prior else "—" for p in priors]
            brief.append([esc(source.key.removeprefix("census:")),
                          num(source.document["counts"]["eligible_attempts"]), *cells,
                          ref(source.digest)])
        parts.append("<h3>Each census (accepted / transitions)</h3>")
        parts.append(table(["corpus", "eligible attempts", *priors, "source"], brief,
                           numeric=tuple(range(1, len(priors) + 2)), table_id="a104-each"))
    boundary = doc.get("claim_boundary")
    if boundary:
        parts.append(f'<p class="null">{esc(boundary)}</p>')
    return "\n".join(parts)


# -------------------------------------------------------------------------------- A105


def _a105_docs(inputs: Inputs) -> list[Source]:
    return [s for s in inputs.analyses if "a105" in s.document]


def a105(inputs: Inputs) -> str:
    """A105 effects, the claim-gate table and the narrow wording."""
    docs = _a105_docs(inputs)
    if not docs:
        return absent("no A105 analysis (bind A105, run, evaluate, analyse)")
    parts = [paragraph(
        "Effects are benefits: positive means WDL regret fell when the panel's true content "
        "was revealed. Board main effect = ½([R(0,0) − R(1,0)] + [R(0,1) − R(1,1)]); "
        "intervals come from a cluster bootstrap at the registered cluster unit; only the "
        "registered primary split supports primary claims.")]
    for source in docs:
        a = source.document["a105"]
        parts.append(f'<p class="note">{esc(source.document.get("role", ""))}; cell table '
                     f'{sub(source.document.get("table"), source.digest)}; analysis '
                     f"{ref(source.digest)}. {esc(plan_note(source.document))}</p>")
        parts.append(_claims(a, source.digest))
        bars = []
        for r in a["results"]:
            rows = []
            for name, e in r["primary"].items():
                rows.append([esc(name), num(e["mean"], "+.4f"), interval([e["low"], e["high"]],
                                                                         "+.4f"),
                             num(e["p"], ".4f"), num(e["n_positions"]), num(e["n_games"]),
                             sub(e["source"], source.digest)])
                if name in ("main_b", "main_l", "interaction"):
                    bars.append((f"{r['model']} · {r['split']} · {name}", e["mean"], e["low"],
                                 e["high"]))
            parts.append(f"<h3>{esc(r['model'])} · {esc(r['split'])}</h3>")
            parts.append(table(["estimand", "benefit", "95% interval", "p", "positions",
                                "games", "source"], rows, numeric=(1, 3, 4, 5),
                               table_id=f"a105-{r['model']}-{r['split']}"))
            parts.append(_cell_means(r, source.digest))
        parts.append(forest(bars, xlabel="benefit (regret fall), 95% interval"))
    return "\n".join(parts)


def _cell_means(r: dict[str, Any], parent: str) -> str:
    rows = []
    for c, m in r["cell_means"].items():
        legal = r.get("legal_only", {}).get("cells", {}).get(c, {})
        cat = r.get("catastrophic", {}).get(c, {}).get("all", {})
        rows.append([esc(c), num(m["mean_regret"], ".4f"), num(legal.get("mean_regret"), ".4f"),
                     num(cat.get("rate"), ".4f"), sub(m.get("source"), parent)])
    return table(["condition", "mean regret, all requests",
                  "legal submissions only (not randomized)", "catastrophic rate", "source"],
                 rows, numeric=(1, 2, 3))


def _claims(a: dict[str, Any], parent: str) -> str:
    parts = ["<h3>Claim gates</h3>"]
    gate_rows = []
    for c in a["claims"]:
        cells = {g["gate"]: verdict(bool(g["passed"])) for g in c["gates"]}
        gate_rows.append([esc(c["model"]), esc(c["factor"]), *[cells.get(n, "—")
                                                              for n in range(1, 8)],
                          esc(c["verdict"])])
    parts.append(table(["model", "factor", *[f"gate {n}" for n in range(1, 8)], "verdict"],
                       gate_rows, table_id="claim-gates"))
    parts.append('<p class="note">Gates (seed 000): 1 held-out main effect survives Holm in '
                 "the beneficial direction; 2 both simple effects agree; 3 no material "
                 "reversal across order, route, weighting, clusters or attrition bounds; 4 "
                 "prompt bytes differ only at registered offsets; 5 one tool schema and one "
                 "action universe; 6 legal-only and all-request results shown together; 7 "
                 "the effect exists for the named model on held-out positions.</p>")
    for c in a["claims"]:
        css = {"claim": "claim", "blocked": "blocked"}.get(c["verdict"], "null")
        caveats = ""
        if c["verdict"] == "claim":
            caveats = "<br>It does not prove:<ul>" + "".join(
                f"<li>{esc(x)}</li>" for x in DOES_NOT_PROVE) + "</ul>"
        parts.append(f'<div class="{css}"><strong>{esc(c["model"])} · {esc(c["factor"])}: '
                     f'{esc(c["verdict"])}</strong><br>{esc(c["text"])}{caveats}</div>')
    for factor, p in a.get("pooled_headline", {}).items():
        parts.append(f'<p class="note">Pooled {esc(factor)} {num(p["pooled_mean"], "+.4f")} '
                     f'{interval([p["low"], p["high"]], "+.4f")} {sub(p["source"], parent)}: '
                     f'{esc(p["verdict"])} (a pooled cross-model average is never a claim).</p>')
    return "\n".join(parts)


# ------------------------------------------------------------------- coverage × selection


def _profiles(inputs: Inputs) -> list[tuple[Source, dict[str, Any]]]:
    """E020/E021 stage profiles (E022's falsifier profiles are read by the falsifier
    section)."""
    return [(s, p) for s in inputs.analyses if s.document.get("design") == "E020_E021"
            for p in s.document.get("stages", [])]


def coverage(inputs: Inputs) -> str:
    """E020/E021: coverage × conditional selection, with seed 001's 31.5% example."""
    parts = [paragraph(
        "Seed 001: two agents find the best move 31.5% of the time. One proposes it in 35% of "
        "its shortlists and picks it 90% of the time when shown (ideas-limited); the other "
        "proposes it 90% of the time and picks it 35% (vision-limited). 0.35 × 0.90 = 0.90 × "
        "0.35 = 0.315: the score alone cannot tell them apart. The ladder measures the two "
        "stages separately: coverage C from the agent's own shortlist, selection S from "
        "oracle lists that guarantee the best move is shown.")]
    profiles = _profiles(inputs)
    points = []
    rows = []
    for source, p in profiles:
        f = p["figures"]
        cov = f.get("coverage")
        sel = f.get("selection:oracle_top5") or next(
            (v for k, v in f.items() if k.startswith("selection:")), None)
        if cov and sel and cov.get("estimate") is not None and sel.get("estimate") is not None:
            points.append(Point(f"{p['model']} · {p['split']}", cov["estimate"],
                                (cov["low"], cov["high"]), sel["estimate"],
                                (sel["low"], sel["high"])))
        for name, fig in f.items():
            shown = fig if "low" in fig else (fig.get("proportion_interval") or {})
            pair = [shown["low"], shown["high"]] if "low" in shown else None
            rows.append([esc(p["model"]), esc(p["split"]), esc(name),
                         num(fig.get("estimate"), ".3f"), interval(pair),
                         sub(fig.get("source"), source.digest)])
    if not profiles:
        return "\n".join([absent("no E020/E021 analysis; the plot shows the seed's example "
                                 "only"), *parts, coverage_selection(points)])
    parts.append(coverage_selection(points))
    confidence = {f"{100 * (1 - s.document['plan']['alpha']):g}%" for s, _ in profiles}
    parts.append(table(["model", "split", "figure", "estimate",
                        f"{'/'.join(sorted(confidence))} interval", "source"], rows,
                       numeric=(3,), table_id="coverage-selection"))
    for source, p in profiles:
        parts.append(f"<p><strong>{esc(p['model'])} · {esc(p['split'])}: {esc(p['label'])}"
                     f"</strong> — {esc(p.get('label_meaning', ''))} ({ref(source.digest)})</p>")
    for source in {id(s): s for s, _ in profiles}.values():
        c = source.document.get("cells_statement")
        cells = (f" Cells: this preset produces {c['produced']:,}; the registered E020/E021 "
                 f"preset {c['registered']:,}; the seed states {c['seed']:,}. "
                 f"{c['explanation']}") if c else ""
        parts.append(f'<p class="note">{ref(source.digest)}: '
                     f"{esc(plan_note(source.document) + cells)}</p>")
    return "\n".join(parts)


# -------------------------------------------------------------------------------- E023


def e023(inputs: Inputs) -> str:
    """E023 contrasts and the rank × slot exposure balance of its bound orders."""
    results = [(s, r) for s in inputs.analyses for r in s.document.get("e023", [])]
    bindings = [b for b in inputs.bindings if b.document.get("design", {}).get("id") == "E023"]
    if not results and not bindings:
        return absent("no E023 binding or analysis")
    parts = [paragraph(
        "E023 holds proposer rank 1 and width five fixed and varies only the strength of the "
        "other four candidates; the primary contrast and the secondaries, their level and "
        "their adjustment are the preset's (below each analysis).")]
    parts += [f'<p class="note">{ref(s.digest)}: {esc(plan_note(s.document))}</p>'
              for s in {id(s): s for s, _ in results}.values()]
    rows = []
    for source, r in results:
        for name, p in r["primaries"].items():
            rows.append([esc(r["model"]), esc(r["split"]), esc(f"{name}:{p['contrast']}"),
                         num(p["mean"], "+.4f"), interval([p["low"], p["high"]], "+.4f"),
                         num(p["p"], ".4f"),
                         esc(f"primary: {'rejected' if p['rejected'] else 'not rejected'}"),
                         sub(p["source"], source.digest)])
        for name, s in r["secondaries"].items():
            rows.append([esc(r["model"]), esc(r["split"]), esc(name), num(s["mean"], "+.4f"),
                         interval([s["low"], s["high"]], "+.4f"), num(s["adjusted_p"], ".4f"),
                         esc("secondary (BH q)"), sub(s["source"], source.digest)])
    for source in {id(s): s for s, _ in results}.values():
        validity = source.document.get("endpoint_validity") or {}
        for w in validity.get("warnings", []):
            parts.append(f'<p class="warning"><strong>{esc(w["code"])}</strong>: '
                         f'{esc(w["message"])} ({ref(source.digest)}). Read the E023 '
                         "primary contrasts below with this in mind.</p>")
    if rows:
        parts.append(table(["model", "split", "contrast", "estimate", "95% interval", "p / q",
                            "verdict", "source"], rows, numeric=(3, 5), table_id="e023"))
    else:
        parts.append(absent("no E023 analysis"))
    for b in bindings:
        parts.append(_exposure(b))
    return "\n".join(parts)


def _exposure(binding: Source) -> str:
    counts: dict[str, dict[tuple[int, int], int]] = defaultdict(lambda: defaultdict(int))
    for arm, per_position in binding.document.get("ranks_by_slot", {}).items():
        for presentations in per_position:
            for ranks in presentations:
                for slot, rank in enumerate(ranks):
                    counts[arm][(int(rank), slot)] += 1
    rows = []
    for arm, cells in counts.items():
        values = list(cells.values())
        ranks = sorted({r for r, _ in cells})
        slots = sorted({s for _, s in cells})
        full = [cells.get((r, s), 0) for r in ranks for s in slots]
        rows.append([esc(arm), num(len(ranks)), num(len(slots)), num(min(full)), num(max(full)),
                     num(max(full) - min(full)), num(sum(values)), ref(binding.digest)])
    return ("<h3>Exposure balance of the bound orders</h3>" + table(
        ["arm", "ranks", "slots", "min rank×slot count", "max", "imbalance", "exposures",
         "source"], rows, numeric=(1, 2, 3, 4, 5, 6), table_id="e023-exposure"))


# -------------------------------------------------------------------------- falsifiers


def falsifiers(inputs: Inputs) -> str:
    """One row per seed-001 falsifier verdict of every chess analysis; a falsifier no
    analysis of this report computes is listed as not run, never left out."""
    parts = [paragraph(
        "Seed 001 names the outcomes that can prove its hypotheses wrong. Each is a named "
        "analysis (chess/studies/falsifiers.py) with a verdict on the claim it puts at risk: "
        "holds or fails when the interval at the registered level lies wholly on one side, "
        "inconclusive when it straddles. No preset registers an equivalence margin, so a "
        "'does not' is never read from a null. A reversal is reported as the result.")]
    found = [(s, v) for s in inputs.analyses for v in s.document.get("falsifiers", [])]
    if not found:
        return absent("no E020/E021, E022 or E023 analysis: no falsifier was computed")
    rows = []
    for name, (seed_text, _) in FALSIFIERS.items():
        mine = [(s, v) for s, v in found if v["falsifier"] == name]
        if not mine:
            designs = " / ".join(d for d, fs in DESIGN_FALSIFIERS.items() if name in fs)
            rows.append([esc(name), esc(seed_text), "—", "—", "—", esc("not run"),
                         esc(f"no {designs} analysis in this report"), "—"])
        for source, v in mine:
            figure = (interval([v["low"], v["high"]], "+.4f")
                      if v["low"] is not None else "—")
            rows.append([esc(name), esc(seed_text), esc(f"{v['model']} · {v['split']}"),
                         num(v["estimate"], "+.4f"), figure, _verdict_mark(v["verdict"]),
                         esc(v["wording"]), sub(v["source"], source.digest)])
    parts.append(table(["falsifier", "seed 001", "model · split", "estimate", "interval",
                        "verdict", "wording", "source"], rows, numeric=(3,),
                       table_id="falsifiers"))
    return "\n".join(parts)


def _verdict_mark(word: str) -> str:
    css = {"holds": "pass", "fails": "fail"}.get(word)
    return f'<span class="{css}">{esc(word)}</span>' if css else esc(word)


# -------------------------------------------------------------------------- label flow


def _label_engine(flow: dict[str, Any]) -> tuple[str, str | None]:
    """The paragraph naming the engine that labelled the stage, and the caption each label
    table carries when it is not seed 002's registered build (None when it is)."""
    engine = flow.get("engine")
    if not isinstance(engine, dict):
        return ('<p class="note">This flow report does not name its engine (published before '
                "engines were recorded): it may not be seed 002's registered Stockfish 18.</p>",
                "Engine not recorded: possibly not seed 002's registered Stockfish 18.")
    what = (f"{esc(engine['name'])} (build <code>{esc(engine['build'])}</code>, "
            f"{esc(engine['package'])} {esc(engine['version'])}, network "
            f"{esc(', '.join(engine['network']))}; files <code title=\"{esc(engine['sha256'])}\">"
            f"{esc(engine['sha256'].removeprefix('sha256:')[:12])}</code>)")
    if engine["is_registered"]:
        return f"<p>Labelled by {what}: seed 002's registered engine.</p>", None
    caption = (f"Not the registered engine: labelled by {esc(engine['name'])} "
               f"({esc(engine['build'])}); seed 002 registers "
               f"{esc(engine['registered_build'])}.")
    return (f'<p class="note">Labelled by {what}, which is <strong>not</strong> seed 002\'s '
            f"registered engine (<code>{esc(engine['registered_build'])}</code>): every "
            "class, candidate list and exclusion below is that engine's.</p>", caption)


def label_flow(inputs: Inputs) -> str:
    """The engine, then pool → two-pass labels → exclusions → the frozen manifest."""
    if inputs.flow is None and inputs.manifest is None:
        return absent("no label stage or frozen manifest")
    parts = []
    caption: str | None = None
    if inputs.flow is not None:
        f = inputs.flow.document
        d = inputs.flow.digest
        named, caption = _label_engine(f)
        parts.append(named)
        parts.append(table(["planned positions", "planned passes", "labelled", "excluded",
                            "source"], [[num(f["planned_positions"]), num(f["planned_passes"]),
                                         num(f["labelled"]), num(f["excluded"]), ref(d)]],
                           caption=caption, numeric=(0, 1, 2, 3), table_id="label-flow"))
        parts.append(table(["class", "positions", "source"],
                           [[esc(k), num(v), ref(d)] for k, v in f["labels"].items()],
                           caption=caption, numeric=(1,)))
        parts.append(table(["exclusion reason", "positions", "source"],
                           [[esc(k), num(v), ref(d)] for k, v in f["exclusions"].items()],
                           caption=caption, numeric=(1,), table_id="exclusions"))
        parts.append('<p class="note">Disagreement between the two cleared-hash passes is '
                     "exclusion, never a third pass (seed 002).</p>")
    else:
        parts.append(absent("the label stage's flow report (pass --stage)"))
    if inputs.manifest is not None:
        m = inputs.manifest.document
        rows = [[esc(q["cell"]), num(q["available"]), num(q["quota"]), num(q["short"]),
                 ref(inputs.manifest.digest)] for q in m.get("quota_table", [])]
        parts.append("<h3>Frozen manifest quotas</h3>")
        parts.append(table(["partition / class / colour", "available", "quota", "short",
                            "source"], rows, caption=caption, numeric=(1, 2, 3),
                           table_id="quotas"))
    return "\n".join(parts)


# ----------------------------------------------------------------------- causal: rungs


def rungs(inputs: Inputs) -> str:
    """Causal benchmark accuracy per rung, with per-case and over-worlds intervals."""
    if not inputs.causal:
        return absent("no causal benchmark run report")
    parts = [paragraph(
        "Rung 1 asks what seeing X says about Y, rung 2 what setting X does, rung 3 what "
        "would have happened in this episode. Intervals: Clopper–Pearson per case, and a "
        "cluster bootstrap resampling whole worlds (a world's items move together).")]
    rows = []
    for s in inputs.causal:
        agent = s.key.removeprefix("causal:")
        for rung, a in s.document["by_rung"].items():
            rows.append([esc(agent), esc(rung), f"{num(a['k'])}/{num(a['n'])}",
                         num(a["n_worlds"]), num(a["accuracy"]), interval(a["ci95"]),
                         interval(a["ci95_cluster_bootstrap"]), ref(s.digest)])
    parts.append(table(["agent", "rung", "right / cases", "worlds", "accuracy",
                        "95% per case", "95% over worlds", "source"], rows, numeric=(3, 4),
                       table_id="rung-accuracy"))
    return "\n".join(parts)


def transfer(inputs: Inputs) -> str:
    """Accuracy per rung on each semantic mutation and its gap to the original cases."""
    if not inputs.causal:
        return absent("no causal benchmark run report")
    parts = [paragraph(
        "Each mutation asks an original case's question again with one thing changed: the "
        "domain skin, the nonsense skin, the names, or the wording (a paraphrase). The gap "
        "is mutation minus original accuracy; its interval resamples whole worlds. A "
        "mutation the bench does not hold is 'not built', not an accuracy of 0.")]
    rows = []
    for s in inputs.causal:
        agent = s.key.removeprefix("causal:")
        for rung, block in s.document.get("transfer", {}).items():
            for mutation, a in block.items():
                if not a["built"]:
                    rows.append([esc(agent), esc(rung), esc(mutation), NOT_BUILT, "—",
                                 NOT_BUILT, "—", "—", ref(s.digest)])
                    continue
                gap = num(a["gap"]) if "gap" in a else "—"
                ci = a.get("ci95_cluster_bootstrap")
                rows.append([esc(agent), esc(rung), esc(mutation),
                             f"{num(a['k'])}/{num(a['n'])}", num(a["n_worlds"]),
                             num(a["accuracy"]), gap, interval(ci),
                             ref(s.digest)])
    parts.append(table(["agent", "rung", "mutation", "right / cases", "worlds", "accuracy",
                        "gap vs original", "95% over worlds", "source"], rows,
                       numeric=(4, 5, 6), table_id="mutation-transfer"))
    return "\n".join(parts)


def identification(inputs: Inputs) -> str:
    """The three-way identification table (truth × response) per agent."""
    if not inputs.causal:
        return absent("no causal benchmark run report")
    parts = [paragraph(
        "Each response falls in exactly one cell. Answering a witness-backed "
        "non-identifiable item with a value is a false answer, however plausible.")]
    for s in inputs.causal:
        ident = s.document["identification"]
        columns = list(next(iter(ident.values()))) if ident else []
        rows = [[esc(truth), *[num(cells[c]) for c in columns], ref(s.digest)]
                for truth, cells in ident.items()]
        parts.append(f"<h3>{esc(s.key.removeprefix('causal:'))}</h3>")
        parts.append(table(["truth \\ response", *columns, "source"], rows,
                           numeric=tuple(range(1, len(columns) + 1)),
                           table_id=f"identification-{s.key}"))
    return "\n".join(parts)


def failure_labels(inputs: Inputs) -> str:
    """Every failure label of seed 003's taxonomy with its evidence rule, counted per agent."""
    if not inputs.causal:
        return absent("no causal benchmark run report")
    parts = [paragraph(
        "A label is given only when a matched diagnostic variant, a mechanical match to a "
        "confused value, or a traced operation shows the mechanism; any other failure is "
        "'unexplained'. Every label is listed: a zero is a result.")]
    agents = [s.key.removeprefix("causal:") for s in inputs.causal]
    counts = [s.document.get("failure_labels", {}) for s in inputs.causal]
    rows = [[esc(name), esc(evidence), *[num(c.get(name, 0)) for c in counts]]
            for name, evidence, _ in label_rows(_union(counts))]
    parts.append(table(["label", "evidence that licenses it", *map(esc, agents)], rows,
                       numeric=tuple(range(2, 2 + len(agents))), table_id="failure-labels"))
    return "\n".join(parts)


def subcapabilities(inputs: Inputs) -> str:
    """Seed 003's sub-capabilities per agent: each primary metric with n, worlds, interval
    over worlds and the families that fed it, or 'not exercised'."""
    if not inputs.causal:
        return absent("no causal benchmark run report")
    parts = [paragraph(
        "One row per sub-capability of seed 003, each with the metric the seed names, "
        "computed from the scored cases of the families that ask for it. A metric no family "
        "of the run asks for is 'not exercised', never 0. Intervals resample whole worlds.")]
    for s in inputs.causal:
        rows = [_subcapability_row(row, s.digest) for row in s.document.get("subcapabilities", [])]
        parts.append(f"<h3>{esc(s.key.removeprefix('causal:'))}</h3>")
        parts.append(table(["sub-capability", "primary metric (seed)", "measured as", "value",
                            "95% over worlds", "n", "worlds", "families", "source"], rows,
                           table_id=f"subcapabilities-{s.key}"))
    return "\n".join(parts)


def _subcapability_row(row: dict[str, Any], digest: str) -> list[str]:
    metrics = row["metrics"]

    def cells(render: Callable[[dict[str, Any]], str]) -> str:
        return "<br>".join(render(m) for m in metrics)

    def value(m: dict[str, Any]) -> str:
        return esc(m["status"]) if m["value"] is None else num(m["value"])

    def count(m: dict[str, Any]) -> str:
        if not m["cases"]:
            return "—"
        k = f"{num(m['k'])}/" if "k" in m and m["n"] else ""
        return f"{k}{num(m['n'])} of {num(m['cases'])} {esc(m['unit'])}"

    return [esc(row["subcapability"]), esc(row["primary_metric"]),
            cells(lambda m: esc(m["title"])), cells(value),
            cells(lambda m: interval(m["ci95_cluster_bootstrap"])), cells(count),
            cells(lambda m: num(m["n_worlds"]) if m["n"] else "—"),
            esc(", ".join(row["families"]) or "—"), ref(digest)]


def _union(counts: list[dict[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in counts:
        for k, n in c.items():
            out[k] = out.get(k, 0) + int(n)
    return out


def controls(inputs: Inputs) -> str:
    """The C0–C5 control matrix per case tag, for each query × scorer."""
    s = inputs.instrument
    if s is None:
        return absent("no C0–C5 instrument audit")
    doc = s.document
    parts = [paragraph(
        "Each condition changes only the graph's contents; query, harness and scorer are "
        "byte-identical. C1–C3 must recover every target and C4/C5 must accept nothing, or "
        "the C0 number measures the instrument, not the graph."),
        f'<p class="null">{esc(doc.get("verdict", ""))}</p>']
    for row in doc["rows"]:
        per_tag = row.get("per_tag", {})
        conditions = list(next(iter(per_tag.values()))) if per_tag else []
        rows = [[esc(tag), *[esc(v) for v in values.values()], ref(s.digest)]
                for tag, values in per_tag.items()]
        parts.append(f"<h3>{esc(row['query'])} query × {esc(row['scorer'])} scorer: "
                     f"{'valid' if row.get('instrument_valid') else 'not valid'}</h3>")
        parts.append(table(["tag", *conditions, "source"], rows,
                           table_id=f"controls-{row['query']}-{row['scorer']}"))
    return "\n".join(parts)


# ------------------------------------------------------------------------- ablations


def ablations(inputs: Inputs) -> str:
    """The causal ablation matrix: valid answers and accuracy per arm, what each comparison
    isolates (paired by world, world-cluster intervals), and the three questions."""
    s = inputs.ablations
    if s is None:
        return absent("no causal ablation matrix")
    doc = s.document
    margin = doc.get("margin")
    parts = [paragraph(
        f"Every arm ran with one agent ({doc.get('agent') or 'unnamed'}) on the same worlds. "
        "An arm below the registered validity floor gives no verdict; equivalence needs a "
        "preregistered margin (" + ("none committed" if margin is None else f"±{margin:g}")
        + "), so an interval around 0 is inconclusive.")]
    arms = [[esc(name), esc(a["label"]), num(a["cells"]),
             esc(f"{a['valid']['valid']}/{a['valid']['total']}")
             + ("" if a["valid"]["sufficient"] else " (below floor)"),
             num(a["endpoints"]["accuracy"]["mean"]), ref(s.digest)]
            for name, a in doc["arms"].items()]
    parts.append(table(["arm", "label", "cells", "valid", "accuracy", "source"], arms,
                       table_id="ablation-arms"))
    rows = [[esc(f"{r['a']} − {r['b']}"), esc(r["isolates"]), num(r.get("mean")),
             interval(r.get("ci95")), esc(r["verdict"]), ref(s.digest)]
            for r in doc["isolation"]]
    parts.append(table(["comparison", "isolates", "delta", "95% CI (world clusters)",
                        "verdict", "source"], rows, table_id="ablation-isolation"))
    questions = [[esc(f"{q['id']} {q['question']}"), esc(q["answer"]),
                  esc(f"{q['endpoint']} ({q['a']} − {q['b']})"), num(q.get("mean")),
                  interval(q.get("ci95")), ref(s.digest)] for q in doc["questions"]]
    parts.append(table(["question", "answer", "endpoint", "delta", "95% CI", "source"],
                       questions, table_id="ablation-questions"))
    return "\n".join(parts)


# --------------------------------------------------------------------------- hazards


def hazards(inputs: Inputs) -> str:
    """Reliability outcomes: condition × route failure hazards of every evaluated run."""
    if not inputs.evaluations:
        return absent("no published evaluation")
    parts = [paragraph(
        "Provider and network failures are reliability outcomes: missing observations, "
        "retried only in the identical frozen cell; illegal, malformed and refused answers "
        "are model failures and carry maximal regret.")]
    rows = []
    for s in inputs.evaluations:
        summary = s.document["summary"]
        classes = summary.get("classes", {})
        model_failures = sum(classes.get(k, 0) for k in ("illegal", "malformed", "refusal",
                                                         "missing"))
        for h in summary.get("hazard", []):
            rows.append([esc(s.key.removeprefix("evaluation:")), esc(h.get("condition")),
                         esc(h.get("route")), num(h.get("cells")), num(h.get("missing")),
                         num(h.get("hazard"), ".3f"), num(model_failures), ref(s.digest)])
    parts.append(table(["run", "condition / arm", "route", "cells", "reliability missing",
                        "hazard", "model failures in run", "source"], rows,
                       numeric=(3, 4, 5, 6), table_id="hazards"))
    for source in _a105_docs(inputs):
        for r in source.document["a105"]["results"]:
            att = r["attrition"]
            parts.append(f'<p class="note">A105 {esc(r["model"])} · {esc(r["split"])}: '
                         f'{num(att["missing"])}/{num(att["cells"])} cells missing; '
                         f'differential attrition {esc("yes" if att["differential"] else "no")}'
                         f' ({ref(source.digest)}).</p>')
    return "\n".join(parts)


def inventory(inputs: Inputs) -> str:
    """Every object this page's numbers came from, with its full digest (the link targets)."""
    rows = [[f'<span id="obj-{esc(s.digest.removeprefix("sha256:"))}"><code>'
             f"{esc(s.digest)}</code></span>", esc(s.key), f"<code>{esc(s.path)}</code>",
             esc(s.verified)] for s in inputs.all()]
    return table(["digest", "object", "read from", "verified by"], rows, table_id="objects")


SECTIONS: tuple[Section, ...] = (
    ("reading", "What was measured and how to read it", reading),
    ("agents", "Agents: who answered", provenance.section),
    ("a104", "A104: transitions after the agent's own tool calls", a104),
    ("a105", "A105: board and legal-list effects, claim gates, wording", a105),
    ("coverage", "Coverage × selection (E020/E021)", coverage),
    ("e023", "E023: distractor contrasts and exposure balance", e023),
    ("falsifiers", "Seed 001's falsifiers: verdicts", falsifiers),
    ("labels", "Label flow and exclusion reasons", label_flow),
    ("rungs", "Rung accuracy with cluster intervals", rungs),
    ("transfer", "Transfer across mutations (skin, names, wording) per rung", transfer),
    ("identification", "Identification table", identification),
    ("failure_labels", "Failure labels (seed 003's 22 and the project's)", failure_labels),
    ("subcapabilities", "Sub-capabilities (seed 003) with their primary metrics",
     subcapabilities),
    ("controls", "C0–C5 control matrix per tag", controls),
    ("ablations", "Causal ablations: what each comparison isolates", ablations),
    ("hazards", "Reliability hazards", hazards),
    ("objects", "Objects", inventory),
)
"""The report's sections, in page order."""


def plan_note(doc: dict[str, Any]) -> str:
    """What an analysis document's registered plan was, and how many cells its runs lost to
    the registered retry cap (terminal provider failures: missing observations)."""
    plan = doc.get("plan") or {}
    parts = []
    if plan:
        parts.append(f"Registered analysis: two-sided α {plan['alpha']:g} "
                     f"({100 * (1 - plan['alpha']):g}% intervals), {plan['interval']} "
                     f"intervals for proportions, clusters by {plan['cluster']}, "
                     f"{plan['multiplicity']} adjustment, catastrophic blunder at regret ≥ "
                     f"{plan['catastrophic_regret']:g}, best moves by {plan['best_set']}.")
    runs = (doc.get("inputs") or {}).get("runs") or []
    lost = sum(int(r.get("terminal_provider_failures", 0)) for r in runs)
    if runs:
        parts.append(f"Terminal provider failures (retry cap reached): {lost} cells.")
    return " ".join(parts)
