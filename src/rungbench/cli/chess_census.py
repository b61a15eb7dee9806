"""`rungbench chess census` and `rungbench chess play`: A104 transcript census and game harness.

``play`` takes the agent options of ``rungbench run``: ``--agent reference:NAME`` (the
scripted, random or engine reference agent) or ``--model openai:MODEL --base-url URL``
(a real model through :class:`~rungbench.agents.openai_provider.OpenAIProvider`, its
reliability failures retried in the identical request under ``--max-attempts``).
"""

from __future__ import annotations

from collections.abc import Callable
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

def _optional_choice(values: tuple[str, ...]) -> Callable[[str | None], str | None]:
    """A typer callback accepting None or one of ``values`` (a usage error names the option)."""
    check = choice(values)

    def callback(value: str | None) -> str | None:
        return None if value is None else check(value)

    return callback


def register(app: typer.Typer) -> None:
    """Add ``census`` and ``play`` to the ``rungbench chess`` app."""
    app.command("census")(census_cmd)
    app.command("play")(play_cmd)


def census_cmd(
    corpus: Annotated[Path, typer.Argument(help="Native corpus folder, an LLM Chess run "
                                           "folder, or a folder of run folders (frozen by "
                                           "its corpus_manifest.json when it has one).")],
    alpha: float = typer.Option(0.05, min=1e-9, max=0.5,
                                help="Clopper–Pearson interval level (1 - alpha)."),
    strict: bool = typer.Option(False, "--strict",
                                help="Refuse the whole census if any game is excluded."),
    dispatcher: str | None = typer.Option(
        None, "--dispatcher", callback=_optional_choice(tuple(sorted(VERSIONS))),
        help=f"Replay every run with this program version instead of the detected one: "
             f"{sorted(VERSIONS)}."),
    freeze: bool = typer.Option(False, "--freeze", help="First write corpus_manifest.json "
                                "(every run file's sha256) into a folder of runs."),
    force: bool = typer.Option(False, "--force", help="With --freeze, replace a manifest."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Verify a transcript corpus game by game and print the A104 transition census."""
    from rungbench.chess.transcripts.census import census_path
    from rungbench.chess.transcripts.frozen import freeze as freeze_corpus

    def action() -> dict[str, Any]:
        if freeze:
            freeze_corpus(corpus, description=f"LLM Chess runs under {corpus.name}",
                          force=force)
        return census_path(corpus, alpha=alpha, strict=strict, dispatcher=dispatcher)

    doc = run(action, as_json=as_json)
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
    runs = Table(title="runs: games eligible / excluded, attempts, transitions")
    for col in ("run", "version", "eligible games", "excluded (by reason)", "attempts",
                "transitions", "chronology"):
        runs.add_column(col)
    for row in doc.get("runs", []):
        excluded = ", ".join(f"{k} {v}" for k, v in row.get("excluded_games", {}).items())
        runs.add_row(row["run_group"], str(row.get("dispatcher", "—")),
                     f"{row.get('eligible_games', '—')}/{row.get('games', '—')}",
                     excluded or "—", str(row["eligible_attempts"]),
                     str(row["same_position_transitions"]),
                     "reconciled" if row["chronology"]["reconciled"] else "NOT reconciled")
    console.print(runs)
    if doc.get("exclusions"):
        table = Table(title="excluded games (the census counts eligible games only)")
        for col in ("run", "game", "line", "reason", "what did not match"):
            table.add_column(col)
        for row in doc["exclusions"]:
            table.add_row(row["run"], row["game"].rsplit("/", 1)[-1], str(row["line"]),
                          row["reason"], row["detail"])
        console.print(table)
    console.print(f"[italic]{doc['claim_boundary']}[/]")
    console.print(f"digest {doc['digest']}")
