"""`rungbench chess census` and `rungbench chess play`: A104 transcript census and game harness.

``play`` takes the agent options of ``rungbench run``: ``--agent reference:NAME`` (the
scripted, random or engine reference agent) or ``--model openai:MODEL --base-url URL``
(a real model through :class:`~rungbench.agents.openai_provider.OpenAIProvider`, its
reliability failures retried in the identical request under ``--max-attempts``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from rungbench.chess.transcripts.dispatch import VERSIONS
from rungbench.cli._common import (
    JSON_OPTION,
    SEED_MAX,
    choice,
    console,
    emit_json,
    progress_bar,
    run,
)
from rungbench.cli.run import (
    BACKOFF_HELP,
    BASE_URL_OPTION,
    PARAM_OPTION,
    TIMEOUT_HELP,
    check_backoff,
    positive_seconds,
)
from rungbench.jobs.play import COLOURS, OPPONENTS
from rungbench.jobs.runs import DEFAULT_API_KEY_ENV

if TYPE_CHECKING:  # census and harness load only when a command runs (fast start-up)
    pass

def llm_chess_data() -> Path:
    """Return the bundled public LLM Chess logs: ``data/llm_chess`` under the data dir."""
    from rungbench.evidence.paths import shared_data_dir

    return shared_data_dir() / "llm_chess"

def register(app: typer.Typer) -> None:
    """Add ``census`` and ``play`` to the ``rungbench chess`` app."""
    app.command("census")(census_cmd)
    app.command("play")(play_cmd)


def census_cmd(
    corpus: Annotated[Path, typer.Argument(help="Native corpus folder, an LLM Chess run "
                                           "folder, or a folder of run folders.")],
    alpha: float = typer.Option(0.05, help="Clopper–Pearson interval level (1 - alpha)."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Verify a transcript corpus and print the A104 transition census."""
    from rungbench.chess.transcripts.census import census_path

    doc = run(lambda: census_path(corpus, alpha=alpha), as_json=as_json)
    if as_json:
        emit_json(doc)
    else:
        print_census(doc)


AGENT_HELP = "reference:NAME (scripted, random or engine); default reference:scripted."


def play_cmd(
    out: Annotated[Path, typer.Argument(help="Folder to write the native corpus into.")],
    games: int = typer.Option(10, min=1, help="Games to play."),
    seed: int = typer.Option(0, min=0, max=SEED_MAX,
                            help="Seed of the opponent and of the reference agent."),
    colour: str = typer.Option("black", callback=choice(COLOURS), help="white or black."),
    opponent: str = typer.Option("random", callback=choice(OPPONENTS),
                                 help="random, or stockfish (fixed node budget)."),
    nodes: int = typer.Option(1000, min=1, help="Engine node budget per move."),
    max_plies: int = typer.Option(80, min=1, help="Half-moves after which a game stops."),
    dispatcher: str = typer.Option("llmchess-2025-08", callback=choice(tuple(sorted(VERSIONS))),
                                   help=f"One of {sorted(VERSIONS)}."),
    force: bool = typer.Option(False, "--force", help="Replace a corpus already in OUT."),
    agent: str | None = typer.Option(None, "--agent", help=AGENT_HELP),
    model: str | None = typer.Option(None, "--model", help="openai:MODEL (a real model)."),
    base_url: str | None = BASE_URL_OPTION,
    api_key_env: str = typer.Option(
        DEFAULT_API_KEY_ENV, "--api-key-env", help="Environment variable holding the API key."
    ),
    timeout: float = typer.Option(120.0, "--timeout", callback=positive_seconds,
                                  help=TIMEOUT_HELP),
    param: list[str] = PARAM_OPTION,
    max_attempts: int = typer.Option(
        4, "--max-attempts", min=1, help="Attempts per model request (reliability failures)."
    ),
    backoff: str = typer.Option("2,8,30", "--backoff", callback=check_backoff,
                                help=BACKOFF_HELP),
    as_json: bool = JSON_OPTION,
) -> None:
    """Play games with a reference agent or a real model and write a native corpus."""
    from rungbench.jobs.play import ModelOptions, PlayOptions, play_games

    options = PlayOptions(games=games, seed=seed, colour=colour, opponent=opponent, nodes=nodes,
                          max_plies=max_plies, dispatcher=dispatcher)
    model_options = ModelOptions(base_url=base_url, api_key_env=api_key_env, timeout_s=timeout,
                                 params=tuple(param), max_attempts=max_attempts, backoff=backoff)

    def action() -> dict[str, Any]:
        with progress_bar("playing", quiet=as_json, total=games) as tick:
            return play_games(out, agent=agent, model=model, options=options,
                              model_options=model_options, force=force, progress=tick)

    manifest = run(action, as_json=as_json)
    files: dict[str, Any] = {f["path"]: {"digest": f["digest"], "lines": f["lines"]}
                             for f in manifest["files"]}
    summary = {"corpus": str(out), "files": files, "agent": manifest["agent"],
               "reliability_retries": manifest["reliability_retries"]}
    if as_json:
        emit_json(summary)
    else:
        console.print(f"agent {summary['agent']}")
        for name, info in files.items():
            console.print(f"{name}: {info['lines']} lines, {info['digest']}")
        if summary["reliability_retries"]:
            console.print(f"retried reliability failures: {summary['reliability_retries']}")


def print_census(doc: dict[str, Any]) -> None:
    """Print a census document as Rich tables."""
    counts = doc["counts"]
    console.print(
        f"eligible attempts {counts['eligible_attempts']}, same-position transitions "
        f"{counts['same_position_transitions']}, position chains {counts['position_chains']}, "
        f"source games {counts['source_games']}, run groups {counts['run_groups']}")
    table = Table(title="A104 transitions: next response contains an accepted legal command")
    for col in ("prior response", "transitions", "accepted", "rate", f"{1 - doc['alpha']:.0%} CI"):
        table.add_column(col)
    for row in doc["transition_table"]:
        rate = "—" if row["rate"] is None else f"{row['rate']:.2%}"
        ci = "—" if row["ci"] is None else f"[{row['ci'][0]:.4f}, {row['ci'][1]:.4f}]"
        table.add_row(row["prior"], str(row["transitions"]), str(row["accepted"]), rate, ci)
    console.print(table)
    console.print(f"board → list escalations by variant: {doc['board_to_list_escalations']}")
    chrono = doc["chronology"]
    console.print(f"chronology reconciled: {chrono['reconciled']} "
                  f"({chrono['board_displays']}/{chrono['board_queries']} board displays, "
                  f"{chrono['uci_lists']}/{chrono['list_queries']} UCI lists)")
    for rep in doc["replay"]:
        console.print(f"replay {rep['folder']}: {rep['games']} games "
                      f"({rep['complete_games']} complete, {rep['games_with_json']} with a JSON), "
                      f"{rep['checks']} checks, {rep['disagreements']} disagreements")
    console.print(f"[italic]{doc['claim_boundary']}[/]")
    console.print(f"digest {doc['digest']}")
