"""`rungbench causal episodes`: the records/2 cases as tool-use episodes through the runner;
`rungbench causal decisions`: question 3's endpoint from two episode runs.

Thin: the agent options of every command (:mod:`rungbench.cli._agents`), one library call
(:func:`rungbench.causal.bench.episode_runs.run_agent`), a table or one JSON document.
"""

from __future__ import annotations

import json
import pathlib
from typing import Annotated, Any

import typer
from rich.table import Table

from rungbench.cli._agents import (
    BaseUrlOpt,
    KeyEnvOpt,
    ModelOpt,
    ModelsOpt,
    NoKeyOpt,
    ParamOpt,
    PriceInOpt,
    PriceOutOpt,
    agent_spec,
)
from rungbench.cli._common import JSON_OPTION, console, emit_json, run
from rungbench.errors import InputError

BenchOpt = Annotated[pathlib.Path, typer.Option("--bench", help="Built bench directory.")]


def episodes_command(
    bench: BenchOpt,
    out: Annotated[pathlib.Path, typer.Option("--out", help="Folder holding runs/.")],
    model: ModelOpt = None, models: ModelsOpt = None, base_url: BaseUrlOpt = None,
    api_key_env: KeyEnvOpt = None, no_api_key: NoKeyOpt = False, param: ParamOpt = None,
    usd_in: PriceInOpt = 0.0, usd_out: PriceOutOpt = 0.0,
    worlds: Annotated[int | None, typer.Option("--worlds", min=1, max=2000,
                                               help="First N records/2 worlds.")] = None,
    families: Annotated[str | None, typer.Option(
        "--families", help="Only these: incident,active,revision,provenance,negative.")] = None,
    budget: Annotated[float | None, typer.Option("--budget", min=0.0, max=1000.0,
                                                 help="Experiment budget per episode.")] = None,
    resume: Annotated[pathlib.Path | None, typer.Option("--resume", help="Run to resume.")] = None,
    as_json: bool = JSON_OPTION,
) -> None:
    """Run an agent on the records/2 cases as tool-use episodes: an episode policy
    (reference:p2_protocol, reference:premature_commitment) served on loopback, or a model.

    Telemetry comes only from the logs/metrics tools, experiments from run_experiment; every
    call is a tool_call record of the run, and each answer is scored on the evidence the
    episode actually obtained.
    """
    from rungbench.causal.bench.episode_build import parse_families
    from rungbench.causal.bench.episode_runs import run_agent
    from rungbench.causal.bench.subcapabilities import metric_text

    spec = agent_spec(model, models, base_url=base_url, api_key_env=api_key_env,
                      no_api_key=no_api_key, params=param, usd_in=usd_in, usd_out=usd_out,
                      as_json=as_json)

    def go() -> dict[str, Any]:
        chosen = parse_families(families) if families is not None else None
        return run_agent(bench, out, spec, resume=resume, worlds=worlds, families=chosen,
                         experiment_budget=budget)

    result = run(go, as_json=as_json)
    result.pop("rows")
    if as_json:
        emit_json(result)
        return
    table = Table(title=f"{result['agent']} episodes → {result['run']}")
    for col in ("family", "n", "outcomes", "lucky", "decision regret", "experiments"):
        table.add_column(col)
    for fam, b in result["scored"]["families"].items():
        regret = b.get("mean_decision_regret")
        table.add_row(fam, str(b["n"]), ", ".join(f"{k} {v}" for k, v in b["outcomes"].items()),
                      f"{b['lucky_rate']:.2f}", "-" if regret is None else f"{regret:.3f}",
                      f"{b['mean_experiments']:.2f}")
    console.print(table)
    for row in result["subcapabilities"]:
        console.print(f"{row['subcapability']}: "
                      + "; ".join(metric_text(m) for m in row["metrics"]),
                      markup=False, highlight=False, soft_wrap=True)


def decisions_command(
    bench: BenchOpt,
    run_a: Annotated[pathlib.Path, typer.Argument(help="Candidate episode run (a).")],
    run_b: Annotated[pathlib.Path, typer.Argument(help="Baseline episode run (b).")],
    out: Annotated[pathlib.Path | None, typer.Option(
        "--out", help="Write the decisions JSON here (what weekly-report --decisions "
        "reads).")] = None,
    cost_ceiling: Annotated[float, typer.Option(
        "--cost-ceiling", min=0.0, max=100.0,
        help="Largest accepted rise in dollars per incident (0.25 = +25%).")] = 0.25,
    seed: Annotated[int, typer.Option("--seed", min=0, help="Bootstrap seed.")] = 20261003,
    force: bool = typer.Option(False, "--force", help="Replace an existing --out."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Question 3 from two episode runs on the same incidents: expected repair loss (a − b,
    clustered-bootstrap interval over worlds), sandbox repair success per dollar, cost.

    Both runs must verify, be finished and cover the same incidents of --bench; an agent
    without registered prices (--usd-per-mtok-in/out, or its models file) gets no_prices.
    """
    from rungbench.causal.bench.decisions import decisions_document
    from rungbench.causal.instrument.weekly import answer_decisions
    from rungbench.evidence.store import write_atomic

    def go() -> dict[str, Any]:
        if out is not None and out.exists() and not force:
            raise InputError("refusing to overwrite an existing file (use --force)",
                             path=str(out))
        doc = decisions_document(bench, run_a, run_b, cost_ceiling=cost_ceiling, seed=seed)
        if out is not None:
            text = json.dumps(doc, indent=2, sort_keys=True) + "\n"
            write_atomic(out, text.encode("utf-8"), overwrite=force)
        return {**doc, "answer": answer_decisions(doc)}

    doc = run(go, as_json=as_json)
    if as_json:
        emit_json(doc)
        return
    for key in ("a", "b"):
        r = doc["runs"][key]
        o = r["outcomes"]
        usd = o["usd_per_incident"]
        console.print(f"{key} {r['agent']} ({r['run']}): {o['n']} incidents, mean expected "
                      f"loss {o['mean_expected_loss']:.3f}, success {o['success_rate']:.3f}, "
                      f"$/incident {usd if isinstance(usd, str) else f'{usd:.6f}'}, success/$ "
                      f"{_num(o['success_per_usd'])}", highlight=False, markup=False)
    d = doc["paired"]["delta"]
    console.print(f"expected loss a − b {d['mean']:+.3f} (95% {d['low']:.3f} to {d['high']:.3f},"
                  f" {d['n']} incidents, {d['n_clusters']} worlds)", highlight=False,
                  markup=False)
    spd = doc["success_per_usd"]["delta"]
    console.print("success per $ a − b " + (spd if isinstance(spd, str) else
                  f"{spd['mean']:+.3f} (95% {spd['low']:.3f} to {spd['high']:.3f})"),
                  highlight=False, markup=False)
    q = doc["answer"]
    console.print(f"question 3: {q['answer']} ({q['why']})", highlight=False, markup=False)
    if out is not None:
        console.print(f"wrote {out}", highlight=False, markup=False)


def _num(x: Any) -> str:
    return x if isinstance(x, str) else "-" if x is None else f"{x:.3f}"
