"""`rungbench causal arms|ablate|prereg …`: registered arms, ablation runs, preregistration.

Thin: parse, call one library function, print (Rich tables or one JSON document). One agent
serves every arm, named by the agent options of every command (:mod:`rungbench.cli._agents`):
a planted agent served on loopback (``--model planted:reader``), a label from ``--models``,
or any OpenAI-compatible endpoint (``--model openai:MODEL --base-url URL``).
"""

from __future__ import annotations

import contextlib
import pathlib
from collections.abc import Iterator
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
from rungbench.cli._common import command_group, console, emit_json, progress_bar, run
from rungbench.errors import InputError

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document instead of tables.")]
PresetOpt = Annotated[str, typer.Option("--arms-preset",
                                        help="Registered preset name or a TOML file of arms.")]
ConcOpt = Annotated[int, typer.Option("--concurrency", min=1, max=64,
                                      help="Cells in flight at once.")]
DirOpt = Annotated[pathlib.Path, typer.Option("--dir", help="Preregistration directory.")]

prereg_app = command_group("Preregistration: pilot → commit margins → validate once.")


@contextlib.contextmanager
def _agent(spec: Any) -> Iterator[Any]:
    """The one agent every arm of the command uses (a planted one served on loopback)."""
    from rungbench.causal.ablations.cells import ABLATION_TASK
    from rungbench.execute.tasks import open_agent

    with open_agent(spec, ABLATION_TASK, serve=True) as agent:
        yield agent


def _spec(model: list[str] | None, models: pathlib.Path | None, base_url: str | None,
          api_key_env: str | None, no_api_key: bool, params: list[str] | None,
          prices: tuple[float, float] = (0.0, 0.0), *, as_json: bool) -> Any:
    return agent_spec(model, models, base_url=base_url, api_key_env=api_key_env,
                      no_api_key=no_api_key, params=params, usd_in=prices[0],
                      usd_out=prices[1], as_json=as_json)


def _matrix(preset: str) -> Any:
    from rungbench.causal.ablations.arms import load_matrix

    return load_matrix(pathlib.Path(preset) if preset.endswith(".toml") else preset)


def arms_command(preset: PresetOpt = "causal_arms", as_json: JsonOpt = False) -> None:
    """List the registered arms with their digests and the isolation table."""
    matrix = run(lambda: _matrix(preset), as_json=as_json)
    if as_json:
        emit_json({"matrix": matrix.name, "digest": matrix.digest,
                   "arms": {n: {**a.to_json(), "digest": a.digest()}
                            for n, a in matrix.arms.items()},
                   "comparisons": [c.__dict__ for c in matrix.comparisons]})
        return
    table = Table(title=f"{matrix.name} ({matrix.digest[:19]}…)")
    for col in ("arm", "label", "facts", "content", "query", "tools", "protocol", "digest"):
        table.add_column(col)
    for n, a in matrix.arms.items():
        table.add_row(n, a.label, a.facts, a.content or "—", a.query or "—",
                      ",".join(a.tools) or "—", a.protocol or "—", a.digest()[7:19])
    console.print(table)


def ablate_command(
    bench: Annotated[pathlib.Path, typer.Option("--bench", help="Built bench directory.")],
    out: Annotated[pathlib.Path, typer.Option("--out", help="Folder for the arm runs.")],
    arms: Annotated[str, typer.Option("--arms", help="Comma-separated arm names.")],
    model: ModelOpt = None, models: ModelsOpt = None, base_url: BaseUrlOpt = None,
    api_key_env: KeyEnvOpt = None, no_api_key: NoKeyOpt = False, param: ParamOpt = None,
    samples: Annotated[int | None, typer.Option("--samples", min=1, max=100,
                                                help="Repeated samples per case.")] = None,
    per_world: Annotated[int | None, typer.Option("--per-world", min=1, max=50,
                                                  help="Cases per world.")] = None,
    concurrency: ConcOpt = 1, preset: PresetOpt = "causal_arms",
    usd_in: PriceInOpt = 0.0, usd_out: PriceOutOpt = 0.0,
    seed: Annotated[int, typer.Option("--seed", min=0, max=2**32 - 1,
                                      help="Bootstrap seed.")] = 0,
    prereg_dir: Annotated[pathlib.Path | None, typer.Option(
        "--prereg", help="Preregistration directory whose committed equivalence margin "
        "applies; without it no difference is called equivalent.")] = None,
    leak_cohort: Annotated[pathlib.Path | None, typer.Option(
        "--leak-cohort", help="Validation bench whose world ids, and variable names no "
        "--bench case uses, are also searched for in what the agent wrote (oracle_leakage). "
        "The --bench world ids are always searched.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Run arms on a bench with one agent; print endpoints, isolation table, three questions
    and the failure labels per arm."""
    from rungbench.causal.ablations import contamination, prereg
    from rungbench.causal.ablations.analysis import ablation_report, to_markdown
    from rungbench.causal.ablations.runs import run_arms

    spec = _spec(model, models, base_url, api_key_env, no_api_key, param, (usd_in, usd_out),
                 as_json=as_json)

    def action() -> dict[str, Any]:
        matrix = _matrix(preset)
        margin = None if prereg_dir is None else prereg.committed_equivalence(
            prereg.committed_margins(prereg_dir)[0])
        cohort = None if leak_cohort is None else contamination.needles(leak_cohort, bench)
        names = [a.strip() for a in arms.split(",") if a.strip()]
        for n in names:
            if n not in matrix.arms:
                raise InputError(f"unknown arm {n!r}; known: {', '.join(matrix.arms)}",
                                 field="--arms")
        with _agent(spec) as provider, \
                progress_bar("ablation arms", quiet=as_json) as tick:
            hook = None if tick is None else (lambda arm, done, total: tick(done, total))
            runs = run_arms(matrix, names, bench, out, provider, samples=samples,
                            per_world=per_world, concurrency=concurrency, progress=hook,
                            cohort=cohort)
        report = ablation_report(matrix, {r.arm: r.rows for r in runs}, seed=seed,
                                 margin=margin)
        report["runs"] = {r.arm: str(r.run_dir) for r in runs}
        return report

    report = run(action, as_json=as_json)
    if as_json:
        emit_json(report)
    else:
        console.print(to_markdown(report), markup=False, highlight=False, soft_wrap=True)


@prereg_app.command("pilot")
def pilot_command(
    directory: DirOpt,
    bench: Annotated[pathlib.Path, typer.Option("--bench", help="Dev bench (60 worlds).")],
    model: ModelOpt = None, models: ModelsOpt = None, base_url: BaseUrlOpt = None,
    api_key_env: KeyEnvOpt = None, no_api_key: NoKeyOpt = False, param: ParamOpt = None,
    concurrency: ConcOpt = 1, preset: PresetOpt = "causal_arms", as_json: JsonOpt = False,
) -> None:
    """Pilot: A0, A2, A9 on the dev worlds, two samples each; per-endpoint variance."""
    from rungbench.causal.ablations import prereg

    spec = _spec(model, models, base_url, api_key_env, no_api_key, param, as_json=as_json)

    def action() -> dict[str, Any]:
        with _agent(spec) as provider:
            return prereg.pilot(directory, _matrix(preset), bench, provider,
                                concurrency=concurrency)

    doc = run(action, as_json=as_json)
    if as_json:
        emit_json(doc)
        return
    console.print(f"pilot: {doc['cells']} cells, digest {doc['digest']}")
    for name, endpoints in doc["arms"].items():
        acc = endpoints["accuracy"]
        console.print(f"  {name}: accuracy {acc['mean']:.3f} (var {acc['variance'] or 0:.4f}, "
                      f"n {acc['n']})")


@prereg_app.command("commit")
def commit_command(
    directory: DirOpt, preset: PresetOpt = "causal_arms",
    equivalence_margin: Annotated[float | None, typer.Option(
        "--equivalence-margin", min=0.0, max=1.0,
        help="Margin (absolute, 0-1 endpoints) inside which a difference is called "
        "equivalent; without it nothing is.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Freeze the margins file (the seed's starting margins; sample size from the pilot)."""
    from rungbench.causal.ablations import prereg

    doc = run(lambda: prereg.commit(directory, _matrix(preset),
                                    equivalence_margin=equivalence_margin), as_json=as_json)
    if as_json:
        emit_json(doc)
    else:
        console.print(f"margins committed: {doc['digest']}")


@prereg_app.command("validate")
def validate_command(
    candidate: Annotated[str, typer.Argument(help="Candidate arm name.")],
    directory: DirOpt,
    bench: Annotated[pathlib.Path, typer.Option("--bench", help="Validation (cohort) bench.")],
    comparator: Annotated[str, typer.Option("--comparator", help="Arm compared against.")] = "A2",
    kind: Annotated[str, typer.Option("--type", help="Candidate type in the margins file.")
                    ] = "reasoning_aid",
    dev_bench: Annotated[pathlib.Path | None, typer.Option(
        "--dev-bench", help="Dev bench (variable names there are not unique).")] = None,
    memory: Annotated[pathlib.Path | None, typer.Option(
        "--memory", help="The agent side's memory directory to scan.")] = None,
    final_release: Annotated[str | None, typer.Option(
        "--final-release", help="Run the once-per-release final test (test split).")] = None,
    model: ModelOpt = None, models: ModelsOpt = None, base_url: BaseUrlOpt = None,
    api_key_env: KeyEnvOpt = None, no_api_key: NoKeyOpt = False, param: ParamOpt = None,
    concurrency: ConcOpt = 1, preset: PresetOpt = "causal_arms", as_json: JsonOpt = False,
) -> None:
    """One look at the cohort for CANDIDATE: judged on the committed margins, then scanned."""
    from rungbench.causal.ablations import prereg

    spec = _spec(model, models, base_url, api_key_env, no_api_key, param, as_json=as_json)

    def action() -> dict[str, Any]:
        with _agent(spec) as provider:
            return prereg.validate(directory, _matrix(preset), candidate, bench, provider,
                                   comparator=comparator, kind=kind, dev_bench=dev_bench,
                                   memory=memory, final_release=final_release,
                                   concurrency=concurrency)

    doc = run(action, as_json=as_json)
    if as_json:
        emit_json(doc)
        return
    p = doc["primary"]
    ci = p["ci95"]
    mean = "—" if p["mean"] is None else f"{p['mean']:.3f}"
    console.print(f"{candidate} − {comparator} on {p['endpoint']}: {mean} "
                  + (f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "(no interval)")
                  + f" → {doc['decision']}; contamination hits {doc['contamination']['hits']}"
                  + ("; cohort retired" if doc["cohort_retired"] else ""), markup=False)


def register(app: typer.Typer) -> None:
    """Add the ablation and preregistration commands to the ``rungbench causal`` app."""
    app.command("arms")(arms_command)
    app.command("ablate")(ablate_command)
    app.add_typer(prereg_app, name="prereg")
