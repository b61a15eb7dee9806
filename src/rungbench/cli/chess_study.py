"""`rungbench chess study freeze|bind|authorize|run|evaluate|status`: the study pipeline.

Each step is content-addressed, resumable and refuses on stale inputs
(:mod:`rungbench.chess.studies.study`). ``run --planted NAME`` serves a planted-mechanism
agent on a loopback OpenAI-compatible server and sends through the real ``openai``
client; without it the run goes to ``--base-url`` with the key in ``--api-key-env``.
``analyze`` belongs to the analysis stage and is not part of this module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from rungbench.cli._common import JSON_OPTION, choice, console, emit_json, progress_bar, run

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
    study_app = typer.Typer(help="Freeze, bind, authorize, run and evaluate chess studies.",
                            no_args_is_help=True)
    study_app.command("freeze")(freeze_cmd)
    study_app.command("bind")(bind_cmd)
    study_app.command("authorize")(authorize_cmd)
    study_app.command("run")(run_cmd)
    study_app.command("evaluate")(evaluate_cmd)
    study_app.command("status")(status_cmd)
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
            concurrency: int = typer.Option(4, min=1, max=64, help="Cells in flight."),
            as_json: bool = JSON_OPTION) -> None:
    """Run (or resume) one model × route of a binding through the runner, under budget."""
    from rungbench.agents.openai_provider import OpenAIProvider
    from rungbench.chess.studies import study as st
    from rungbench.chess.studies.bindings import load_binding
    from rungbench.chess.studies.ladder import schedule_for
    from rungbench.chess.studies.planted import loopback_provider, planted_agent

    if planted is None and base_url is None:
        raise typer.BadParameter("give --base-url (a provider) or --planted (loopback)",
                                 param_hint="--base-url")

    def action() -> dict[str, Any]:
        with progress_bar("cells", quiet=as_json) as progress:
            if planted is None:
                assert base_url is not None
                provider = OpenAIProvider(model, base_url=base_url, api_key_env=api_key_env)
                return st.run_study(study, stage, binding, model=model, route=route,
                                    agent=provider, authorization=authorization,
                                    concurrency=concurrency, probe=probe, progress=progress)
            manifest = st.current_manifest(study, stage)
            schedule = schedule_for(load_binding(study, binding, manifest), manifest, model,
                                    route, probe=probe)
            with loopback_provider(planted_agent(planted, seed=seed),
                                   [c.request for c in schedule], model=model) as provider:
                return st.run_study(study, stage, binding, model=model, route=route,
                                    agent=provider, authorization=authorization,
                                    concurrency=concurrency, probe=probe, progress=progress)

    summary = run(action, as_json=as_json)
    emit_json(summary) if as_json else _show("study run", summary)


def evaluate_cmd(study: Path = STUDY_OPTION, stage: Path = STAGE_OPTION,
                 run_id: str = typer.Option(..., "--run", help="Run id under <study>/runs."),
                 depth: int | None = typer.Option(None, min=1, max=40,
                                                  help="Depth (default: registered)."),
                 workers: int = typer.Option(1, min=1, max=2, help="Evaluator processes."),
                 force: bool = typer.Option(False, "--force", help="Replace an evaluation."),
                 as_json: bool = JSON_OPTION) -> None:
    """Score a study run with the different-family evaluator (Ethereal)."""
    from rungbench.chess.labels.idle import IdleGate
    from rungbench.chess.studies import study as st
    from rungbench.chess.studies.evaluation import StageOptions, evaluate_run
    from rungbench.chess.studies.evaluator import EvaluatorConfig

    def action() -> dict[str, Any]:
        st.current_manifest(study, stage)
        options = StageOptions(cache=study / "evaluation-cache",
                               out=study / "evaluations" / run_id, workers=workers, force=force)
        return evaluate_run(st.runs_dir(study) / run_id, stage, EvaluatorConfig(depth=depth),
                            options, IdleGate())

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
