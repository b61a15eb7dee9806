"""`rungbench chess census` and `rungbench chess play`: A104 transcript census and game harness.

``play`` takes the agent options of every command (:mod:`rungbench.cli._agents`):
``--model reference:NAME`` (the scripted, random or engine reference agent), a label from
``--models FILE``, or ``--model openai:MODEL --base-url URL`` (its reliability failures
retried in the identical request under ``--max-attempts``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from rungbench.chess.transcripts.dispatch import VERSIONS
from rungbench.chess.transcripts.play import COLOURS, OPPONENTS
from rungbench.cli._agents import (
    BackoffOpt,
    BaseUrlOpt,
    KeyEnvOpt,
    LabelOpt,
    MaxAttemptsOpt,
    ModelOpt,
    ModelsOpt,
    NoKeyOpt,
    ParamOpt,
    PriceInOpt,
    PriceOutOpt,
    TimeoutOpt,
    agent_spec,
)
from rungbench.cli._common import (
    JSON_OPTION,
    SEED_MAX,
    choice,
    console,
    emit_json,
    progress_bar,
    run,
)


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
    model: ModelOpt = None,
    models: ModelsOpt = None,
    base_url: BaseUrlOpt = None,
    api_key_env: KeyEnvOpt = None,
    no_api_key: NoKeyOpt = False,
    label: LabelOpt = None,
    timeout: TimeoutOpt = 120.0,
    param: ParamOpt = None,
    usd_in: PriceInOpt = 0.0,
    usd_out: PriceOutOpt = 0.0,
    max_attempts: MaxAttemptsOpt = 4,
    backoff: BackoffOpt = "2,8,30",
    as_json: bool = JSON_OPTION,
) -> None:
    """Play games with a reference agent (default reference:scripted) or a model of your own
    and write a native corpus."""
    from rungbench.chess.transcripts.play import PlayOptions, play_games
    from rungbench.execute.policy import RetryPolicy
    from rungbench.jobs.runs import seconds

    options = PlayOptions(games=games, seed=seed, colour=colour, opponent=opponent, nodes=nodes,
                          max_plies=max_plies, dispatcher=dispatcher)
    spec = agent_spec(model, models, base_url=base_url, api_key_env=api_key_env,
                      no_api_key=no_api_key, params=param, timeout=timeout, usd_in=usd_in,
                      usd_out=usd_out, label=label, seed=seed, default="reference:scripted",
                      as_json=as_json)
    policy = RetryPolicy(max_attempts=max_attempts, backoff_s=seconds(backoff))

    def action() -> dict[str, Any]:
        with progress_bar("playing", quiet=as_json, total=games) as tick:
            return play_games(out, spec=spec, options=options, policy=policy, force=force,
                              progress=tick)

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
