"""`rungbench chess study freeze|bind|authorize|run|evaluate|status|analyze`: the study pipeline.

Each step is content-addressed, resumable and refuses on stale inputs
(:mod:`rungbench.chess.studies.study`). ``run --planted NAME`` serves a planted-mechanism
agent on a loopback OpenAI-compatible server and sends through the real ``openai``
client; without it the run goes to ``--base-url`` with the key in ``--api-key-env``.
``analyze`` joins a binding's runs and evaluations into its cell table and publishes the
analysis (:func:`rungbench.chess.studies.study.analyze`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from rungbench.cli._common import (
    JSON_OPTION,
    choice,
    command_group,
    console,
    emit_json,
    progress_bar,
    run,
)
from rungbench.cli._executor import EXECUTOR_OPTION, RAY_ADDRESS_OPTION, executor_kind

STUDY_OPTION = typer.Option(..., "--study", help="Study directory.")
STAGE_OPTION = typer.Option(..., "--stage", help="Published label stage directory.")
MODELS_OPTION = typer.Option(..., "--model", help="Model covered (repeatable).")
ROUTES_OPTION = typer.Option(..., "--route", help="Route covered (repeatable).")
BINDINGS_OPTION = typer.Option([], "--binding", help="Binding covered (default: any).")
PLANTED = ("a105:board_limited", "a105:list_limited", "a105:substitutable",
           "a105:complementary", "a105:null", "e020:ideas_limited", "e020:vision_limited",
           "e023:sharp", "e023:diffuse", "e023:primacy")
"""Planted agents (:data:`rungbench.chess.studies.planted.PLANTED_NAMES`)."""


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
               preset: str = typer.Option("e020_e021", help="Preset with the [manifest] quotas."),
               force: bool = typer.Option(False, "--force", help="Replace a frozen manifest."),
               as_json: bool = JSON_OPTION) -> None:
    """Freeze the final manifest by the preset's registered quotas (quota_short refuses)."""
    from rungbench.chess.studies import study as st
    from rungbench.design.registry import load_design
    from rungbench.errors import Refusal

    def action() -> dict[str, Any]:
        try:
            return st.freeze(study, stage, load_design(preset), force=force)
        except Refusal as exc:
            if not as_json:
                _shortfall_table(exc)
            raise

    summary = run(action, as_json=as_json)
    emit_json(summary) if as_json else _show("manifest frozen", summary)


def bind_cmd(preset: str = typer.Argument(..., help="Registered preset: a105, e023, "
                                          "e020_e021, e022."),
             study: Path = STUDY_OPTION, stage: Path = STAGE_OPTION,
             as_json: bool = JSON_OPTION) -> None:
    """Bind a registered design to the study's current manifest (content-addressed)."""
    from rungbench.chess.studies import study as st

    summary = run(lambda: st.bind(study, preset, stage), as_json=as_json)
    emit_json(summary) if as_json else _show("binding frozen", summary)


def authorize_cmd(study: Path = STUDY_OPTION,
                  max_cells: int = typer.Option(..., min=0, help="Cell ceiling."),
                  max_tokens: int = typer.Option(..., min=0, help="Token ceiling."),
                  max_cost: float = typer.Option(..., min=0.0, help="US dollar ceiling."),
                  model: list[str] = MODELS_OPTION, route: list[str] = ROUTES_OPTION,
                  by: str = typer.Option(..., "--by", help="Who authorizes the spend."),
                  binding: list[str] = BINDINGS_OPTION,
                  as_json: bool = JSON_OPTION) -> None:
    """Freeze a provider-budget authorization; print its digest."""
    from rungbench.chess.studies import budget as bud

    def action() -> dict[str, Any]:
        auth = bud.Authorization(max_cells, max_tokens, max_cost, tuple(model), tuple(route),
                                 by, tuple(binding))
        return {"authorization": bud.freeze_authorization(study, auth), **auth.to_json()}

    summary = run(action, as_json=as_json)
    emit_json(summary) if as_json else _show("budget authorized", summary)


def run_cmd(study: Path = STUDY_OPTION, stage: Path = STAGE_OPTION,
            binding: str = typer.Option(..., "--binding", help="Binding digest (or prefix)."),
            model: str = typer.Option(..., "--model", help="Model label (as registered)."),
            route: str = typer.Option("default", "--route", help="Route label."),
            authorization: str = typer.Option(..., "--authorization",
                                              help="Budget authorization digest (or prefix)."),
            base_url: str | None = typer.Option(None, "--base-url", help="Provider base URL."),
            api_key_env: str = typer.Option("OPENAI_API_KEY", "--api-key-env",
                                            help="Environment variable holding the key."),
            planted: str | None = typer.Option(None, "--planted", callback=lambda v: v and
                                               choice(PLANTED)(v),
                                               help="Serve a planted agent on loopback."),
            seed: int = typer.Option(0, min=0, max=2**31 - 1, help="Planted agent seed."),
            probe: bool = typer.Option(False, "--probe", help="Run the shortlist probe."),
            shortlist_from: str | None = typer.Option(
                None, "--shortlist-from", help="Probe run id: run the self-shortlist choice."),
            concurrency: int = typer.Option(4, min=1, max=64, help="Cells in flight."),
            executor: str = EXECUTOR_OPTION,
            ray_address: str | None = RAY_ADDRESS_OPTION,
            as_json: bool = JSON_OPTION) -> None:
    """Run (or resume) one model × route of a binding through the runner, under budget."""
    from functools import partial

    from rungbench.agents.openai_provider import OpenAIProvider
    from rungbench.chess.studies import study as st
    from rungbench.chess.studies.bindings import load_binding
    from rungbench.chess.studies.ladder import schedule_for
    from rungbench.chess.studies.planted import LOOPBACK_KEY_ENV, loopback_provider, planted_agent
    from rungbench.execute.executors import WorkerAgent, executor_for

    if planted is None and base_url is None:
        raise typer.BadParameter("give --base-url (a provider) or --planted (loopback)",
                                 param_hint="--base-url")
    if probe and shortlist_from is not None:
        raise typer.BadParameter("--probe and --shortlist-from are separate runs; give one",
                                 param_hint="--shortlist-from")
    kind = executor_kind(executor, ray_address)
    key = "loopback-planted"  # the loopback server's own key (public, not a secret)

    def send(provider: OpenAIProvider, pool: Any, progress: Any) -> dict[str, Any]:
        environ = None if planted is None else {LOOPBACK_KEY_ENV: key}
        recipe = partial(OpenAIProvider, model, base_url=provider.base_url,
                         api_key_env=provider.api_key_env, environ=environ)
        return st.run_study(study, stage, binding, model=model, route=route,
                            agent=provider if pool is None else WorkerAgent(provider, recipe),
                            authorization=authorization, concurrency=concurrency,
                            progress=progress, probe=probe, shortlist_from=shortlist_from,
                            executor=pool)

    def action() -> dict[str, Any]:
        with progress_bar("cells", quiet=as_json) as progress, executor_for(
                kind, address=ray_address, workers=concurrency) as pool:
            if planted is None:
                assert base_url is not None
                return send(OpenAIProvider(model, base_url=base_url, api_key_env=api_key_env),
                            pool, progress)
            manifest = st.current_manifest(study, stage)
            schedule = schedule_for(load_binding(study, binding, manifest), manifest, model,
                                    route, probe=probe, shortlist_from=None if shortlist_from
                                    is None else st.runs_dir(study) / shortlist_from)
            with loopback_provider(planted_agent(planted, seed=seed),
                                   [c.request for c in schedule], model=model,
                                   key=key) as provider:
                return send(provider, pool, progress)

    summary = run(action, as_json=as_json)
    emit_json(summary) if as_json else _show("study run", summary)


def evaluate_cmd(study: Path = STUDY_OPTION, stage: Path = STAGE_OPTION,
                 run_id: str = typer.Option(..., "--run", help="Run id under <study>/runs."),
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

    def action() -> dict[str, Any]:
        st.current_manifest(study, stage)
        options = StageOptions(cache=study / "evaluation-cache",
                               out=study / "evaluations" / run_id, workers=workers, force=force)
        with executor_for(kind, address=ray_address, workers=workers) as pool:
            return evaluate_run(st.runs_dir(study) / run_id, stage,
                                EvaluatorConfig(depth=depth), options,
                                IdleGate(max_load=default_max_load() if max_load is None
                                         else max_load), executor=pool)

    summary = run(action, as_json=as_json)
    emit_json(summary) if as_json else _show("evaluation published", summary)


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
                binding: str | None = typer.Option(None, "--binding",
                                                   help="Binding digest or prefix (default: "
                                                   "every binding with runs)."),
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
