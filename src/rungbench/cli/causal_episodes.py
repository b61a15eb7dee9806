"""`rungbench causal episodes`: the records/2 cases as tool-use episodes through the runner.

Thin: the agent options of every command (:mod:`rungbench.cli._agents`), one library call
(:func:`rungbench.causal.bench.episode_runs.run_agent`), a table or one JSON document.
"""

from __future__ import annotations

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
    agent_spec,
)
from rungbench.cli._common import JSON_OPTION, console, emit_json, run

BenchOpt = Annotated[pathlib.Path, typer.Option("--bench", help="Built bench directory.")]


def episodes_command(
    bench: BenchOpt,
    out: Annotated[pathlib.Path, typer.Option("--out", help="Folder holding runs/.")],
    model: ModelOpt = None, models: ModelsOpt = None, base_url: BaseUrlOpt = None,
    api_key_env: KeyEnvOpt = None, no_api_key: NoKeyOpt = False, param: ParamOpt = None,
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
                      no_api_key=no_api_key, params=param, as_json=as_json)

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
