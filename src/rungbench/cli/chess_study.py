"""`rungbench chess study freeze|bind|authorize|run|evaluate|status|analyze|export`: the study
pipeline.

Each step is content-addressed, resumable and refuses on stale inputs
(:mod:`rungbench.chess.studies.study`). A preset is a bundled name or a TOML file of one's
own; ``bind --models FILE`` pins the agents its model labels name. ``run --model`` takes
the agent options of every command (:mod:`rungbench.cli._agents`): a label from the models
file, or a spec; a planted or reference agent is served on a loopback OpenAI-compatible
server and sent to through the real ``openai`` client. ``analyze`` publishes a binding's
analysis (:func:`rungbench.chess.studies.study.analyze`); ``export``: :mod:`.chess_export`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from rungbench.cli._agents import (
    BaseUrlOpt,
    KeyEnvOpt,
    LabelOpt,
    ModelOpt,
    ModelsOpt,
    NoKeyOpt,
    ParamOpt,
    PriceInOpt,
    PriceOutOpt,
    ProcessesOpt,
    StopAfterOpt,
    TimeoutOpt,
    agent_spec,
    retry_policy,
    stopped_message,
)
from rungbench.cli._common import (
    EXIT_ERROR,
    JSON_OPTION,
    choice,
    command_group,
    console,
    emit_json,
    err_console,
    interruptible,
    progress_bar,
    resume_command,
    run,
)
from rungbench.cli._executor import EXECUTOR_OPTION, RAY_ADDRESS_OPTION, executor_kind
from rungbench.cli.chess_export import export_cmd

STUDY_OPTION = typer.Option(..., "--study", help="Study directory.")
STAGE_OPTION = typer.Option(..., "--stage", help="Published label stage directory.")
MODELS_OPTION = typer.Option(..., "--model", help="Model covered (repeatable).")
ROUTES_OPTION = typer.Option(..., "--route", help="Route covered (repeatable).")
RUNS_OPTION = typer.Option(None, "--run", help="Run id under <study>/runs (repeatable; default: "
                          "every move-choice run not yet evaluated).")
BINDINGS_OPTION = typer.Option([], "--binding", help="Binding covered (default: any).")
PRESET_HELP = ("Preset: a bundled name (rungbench design list: a105, e020_e021, e022, e023, "
               "demo_*) or a TOML file of your own (rungbench design new).")


def register(app: typer.Typer) -> None:
    """Add the ``study`` group to the ``rungbench chess`` app."""
    study_app = command_group("Freeze, bind, authorize, run and evaluate chess studies.")
    study_app.command("freeze")(freeze_cmd)
    study_app.command("bind")(bind_cmd)
    study_app.command("authorize")(authorize_cmd)
    study_app.command("run")(run_cmd)
    study_app.command("evaluate")(evaluate_cmd)
    study_app.command("status")(status_cmd)
    study_app.command("analyze")(analyze_cmd)
    study_app.command("export")(export_cmd)
    app.add_typer(study_app, name="study")


def _show(title: str, summary: dict[str, Any]) -> None:
    table = Table(title=title, show_header=False)
    for key, value in summary.items():
        if not isinstance(value, dict | list):
            table.add_row(str(key), str(value))
    console.print(table)


def _shortfall_table(exc: Exception) -> None:
    from rungbench.errors import Refusal

    if isinstance(exc, Refusal) and any(r.code == "quota_short" for r in exc.reasons):
        table = Table(title="quota shortfall")
        for column in ("cell", "have", "quota", "short"):
            table.add_column(column)
        for r in exc.reasons:
            if r.code == "quota_short":
                table.add_row(str(r.subject), *(str(r.data[k]) for k in ("have", "quota",
                                                                          "short")))
        console.print(table)


def freeze_cmd(study: Path = STUDY_OPTION, stage: Path = STAGE_OPTION,
               preset: str = typer.Option("e020_e021", help="Preset with the [manifest] quotas "
                                          "(a bundled name or a TOML file)."),
               force: bool = typer.Option(False, "--force", help="Replace a frozen manifest."),
               as_json: bool = JSON_OPTION) -> None:
    """Freeze the final manifest by the preset's registered quotas (quota_short refuses)."""
    from rungbench.chess.studies import study as st
    from rungbench.design.registry import load_preset
    from rungbench.errors import Refusal

    def action() -> dict[str, Any]:
        try:
            return st.freeze(study, stage, load_preset(preset), force=force)
        except Refusal as exc:
            if not as_json:
                _shortfall_table(exc)
            raise

    summary = run(action, as_json=as_json)
    emit_json(summary) if as_json else _show("manifest frozen", summary)


def bind_cmd(preset: str = typer.Argument(..., help=PRESET_HELP),
             study: Path = STUDY_OPTION, stage: Path = STAGE_OPTION,
             models: ModelsOpt = None, as_json: bool = JSON_OPTION) -> None:
    """Bind a preset to the study's current manifest (content-addressed); with --models,
    pin the agents its model labels name."""
    from rungbench.agents.models_file import load_models
    from rungbench.chess.studies import study as st

    summary = run(lambda: st.bind(study, preset, stage,
                                  None if models is None else load_models(models)),
                  as_json=as_json)
    emit_json(summary) if as_json else _show("binding frozen", summary)


def authorize_cmd(study: Path = STUDY_OPTION,
                  max_cells: int = typer.Option(..., min=0, help="Cell ceiling."),
                  max_tokens: int = typer.Option(..., min=0, help="Token ceiling."),
                  max_cost: float = typer.Option(..., min=0.0, help="US dollar ceiling."),
                  model: list[str] = MODELS_OPTION, route: list[str] = ROUTES_OPTION,
                  by: str = typer.Option(..., "--by", help="Who authorizes the spend."),
                  binding: list[str] = BINDINGS_OPTION,
                  first_chunk: int = typer.Option(
                      1, "--first-chunk", min=1, help="Cells a run sends before it knows any "
                      "per-cell spend (recorded in the authorization)."),
                  chunk_cap: int = typer.Option(
                      256, "--chunk-cap", min=1, help="Most cells per chunk once the spend "
                      "per cell is known (recorded in the authorization)."),
                  as_json: bool = JSON_OPTION) -> None:
    """Freeze a provider-budget authorization; print its digest."""
    from rungbench.chess.studies import budget as bud

    def action() -> dict[str, Any]:
        auth = bud.Authorization(max_cells, max_tokens, max_cost, tuple(model), tuple(route),
                                 by, tuple(binding), first_chunk, chunk_cap)
        return {"authorization": bud.freeze_authorization(study, auth), **auth.to_json()}

    summary = run(action, as_json=as_json)
    emit_json(summary) if as_json else _show("budget authorized", summary)


def run_cmd(study: Path = STUDY_OPTION, stage: Path = STAGE_OPTION,
            binding: str = typer.Option(..., "--binding", help="Binding digest (or prefix)."),
            model: ModelOpt = None, models: ModelsOpt = None, base_url: BaseUrlOpt = None,
            api_key_env: KeyEnvOpt = None, no_api_key: NoKeyOpt = False,
            label: LabelOpt = None, param: ParamOpt = None, timeout: TimeoutOpt = 120.0,
            client_processes: ProcessesOpt = 0, usd_in: PriceInOpt = 0.0,
            usd_out: PriceOutOpt = 0.0,
            route: str = typer.Option("default", "--route", help="Route label."),
            authorization: str = typer.Option(..., "--authorization",
                                              help="Budget authorization digest (or prefix)."),
            seed: int = typer.Option(0, min=0, max=2**31 - 1, help="Planted agent seed."),
            probe: bool = typer.Option(False, "--probe", help="Run the shortlist probe."),
            shortlist_from: str | None = typer.Option(
                None, "--shortlist-from", help="Probe run id: run the self-shortlist choice."),
            concurrency: int = typer.Option(4, min=1, max=64, help="Cells in flight."),
            stop_after: StopAfterOpt = None,
            executor: str = EXECUTOR_OPTION,
            ray_address: str | None = RAY_ADDRESS_OPTION,
            as_json: bool = JSON_OPTION) -> None:
    """Run (or resume) one model × route of a binding through the runner, under budget."""
    from rungbench.chess.studies import study as st
    from rungbench.execute.executors import executor_for

    if probe and shortlist_from is not None:
        raise typer.BadParameter("--probe and --shortlist-from are separate runs; give one",
                                 param_hint="--shortlist-from")
    kind = executor_kind(executor, ray_address)
    spec = agent_spec(model, models, base_url=base_url, api_key_env=api_key_env,
                      no_api_key=no_api_key, params=param, client_processes=client_processes,
                      timeout=timeout, usd_in=usd_in, usd_out=usd_out, label=label, seed=seed,
                      as_json=as_json)

    def action() -> dict[str, Any]:
        with progress_bar("cells", quiet=as_json) as progress, executor_for(
                kind, address=ray_address, workers=concurrency) as pool:
            return st.run_spec(study, stage, binding, spec, route=route,
                               authorization=authorization, concurrency=concurrency,
                               progress=progress, probe=probe, shortlist_from=shortlist_from,
                               policy=retry_policy(stop_after=stop_after),
                               executor=pool)

    summary = interruptible(action, as_json=as_json)
    stopped = summary.get("stopped_detail")
    if stopped:
        summary["message"] = f"{stopped_message(stopped, spec)}; resume: {resume_command()}"
    emit_json(summary) if as_json else _show("study run", summary)
    if stopped:
        if not as_json:
            err_console.print(f"[bold red]error[/] {escape(summary['message'])}",
                              highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_ERROR)


def evaluate_cmd(study: Path = STUDY_OPTION, stage: Path = STAGE_OPTION,
                 run_ids: list[str] | None = RUNS_OPTION,
                 depth: int | None = typer.Option(None, min=1, max=40,
                                                  help="Depth (default: registered)."),
                 workers: int = typer.Option(1, min=1, max=2, help="Evaluator processes."),
                 force: bool = typer.Option(False, "--force", help="Replace an evaluation."),
                 max_load: float | None = typer.Option(None, min=0.0,
                                                       help="Idle gate: max 1-minute load."),
                 executor: str = EXECUTOR_OPTION,
                 ray_address: str | None = RAY_ADDRESS_OPTION,
                 as_json: bool = JSON_OPTION) -> None:
    """Score a study run with the different-family evaluator (Ethereal)."""
    from rungbench.chess.labels.idle import IdleGate, default_max_load
    from rungbench.chess.studies import study as st
    from rungbench.chess.studies.evaluation import StageOptions, evaluate_run
    from rungbench.chess.studies.evaluator import EvaluatorConfig
    from rungbench.execute.executors import executor_for

    kind = executor_kind(executor, ray_address)

    def one(run_id: str, pool: Any) -> dict[str, Any]:
        options = StageOptions(cache=study / "evaluation-cache",
                               out=study / "evaluations" / run_id, workers=workers, force=force)
        return evaluate_run(st.runs_dir(study) / run_id, stage, EvaluatorConfig(depth=depth),
                            options, IdleGate(max_load=default_max_load() if max_load is None
                                              else max_load), executor=pool)

    def action() -> dict[str, Any]:
        st.current_manifest(study, stage)
        chosen = run_ids or st.unevaluated_runs(study)
        with executor_for(kind, address=ray_address, workers=workers) as pool:
            done = [one(r, pool) for r in chosen]
        return done[0] if run_ids and len(done) == 1 else {"evaluations": done}

    summary = run(action, as_json=as_json)
    if as_json:
        emit_json(summary)
    for one_summary in summary.get("evaluations", [summary]) if not as_json else []:
        _show("evaluation published", one_summary)


def status_cmd(study: Path = STUDY_OPTION, as_json: bool = JSON_OPTION) -> None:
    """Show where a study stands: manifest, bindings, budget spend, runs, evaluations."""
    from rungbench.chess.studies import study as st

    summary = run(lambda: st.status(study), as_json=as_json)
    if as_json:
        emit_json(summary)
        return
    _show("study", {"study": summary["study"],
                    "manifest": (summary["manifest"] or {}).get("digest")})
    for key in ("bindings", "authorizations", "runs"):
        table = Table(title=key)
        rows = summary[key]
        for column in (rows[0] if rows else {}):
            table.add_column(column)
        for row in rows:
            table.add_row(*(str(v) for v in row.values()))
        console.print(table)


def analyze_cmd(study: Path = STUDY_OPTION, stage: Path = STAGE_OPTION,
                binding: str | None = typer.Option(None, "--binding", help="Binding digest "
                                                   "or prefix (default: every with runs)."),
                proxy: str | None = typer.Option(None, "--proxy", callback=lambda v: v and
                                                 choice(("stockfish",))(v),
                                                 help="stockfish: the labelled internal proxy."),
                n_boot: int = typer.Option(2000, "--n-boot", min=100, max=100_000,
                                           help="Cluster-bootstrap resamples."),
                force: bool = typer.Option(False, "--force", help="Replace an analysis."),
                as_json: bool = JSON_OPTION) -> None:
    """Join runs and evaluations into the cell table, analyse it, publish it and print it."""
    from rungbench.chess.studies import study as st
    from rungbench.chess.studies.analysis import Settings

    doc = run(lambda: st.analyze(study, stage, binding=binding, proxy=proxy,
                                 settings=Settings(n_boot=n_boot), force=force),
              as_json=as_json)
    if as_json:
        emit_json(doc)
        return
    for one in doc.get("analyses", [doc]):
        console.print((Path(one["out"]) / "analysis.md").read_text(encoding="utf-8"),
                      markup=False, highlight=False, soft_wrap=True)
