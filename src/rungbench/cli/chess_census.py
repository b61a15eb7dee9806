"""`rungbench chess census` and `rungbench chess play`: A104 transcript census and game harness."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.progress import Progress
from rich.table import Table

from rungbench.chess.dispatch import VERSIONS, version
from rungbench.cli._common import JSON_OPTION, console, emit_json, run
from rungbench.errors import InputError

if TYPE_CHECKING:  # census and harness load only when a command runs (fast start-up)
    from rungbench.chess.harness import Opponent

DATA = Path(os.environ.get(
    "RUNGBENCH_LLM_CHESS_DATA",
    Path(__file__).resolve().parents[3].parent / "shared" / "data" / "llm_chess"))
"""Bundled public LLM Chess logs (``shared/data/llm_chess``; override with the env variable)."""

DEMO_SCRIPT = (("board", "move"), ("list", "move"), ("junk", "move"), ("board", "list", "move"),
               ("illegal", "toolcall", "move"), ("think",), ("reflect", "junk", "move"))
"""The reference script of the demo and of ``play``: every row of the census is exercised."""


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
    from rungbench.chess.census import census_path

    doc = run(lambda: census_path(corpus, alpha=alpha), as_json=as_json)
    if as_json:
        emit_json(doc)
    else:
        print_census(doc)


def play_cmd(
    out: Annotated[Path, typer.Argument(help="Folder to write the native corpus into.")],
    games: int = typer.Option(10, help="Games to play."),
    seed: int = typer.Option(0, help="Seed of the opponent and of the scripted agent."),
    colour: str = typer.Option("black", help="Colour of the agent: white or black."),
    opponent: str = typer.Option("random", help="random, or stockfish (fixed node budget)."),
    nodes: int = typer.Option(1000, help="Engine node budget per move."),
    max_plies: int = typer.Option(80, help="Half-moves after which a game stops."),
    dispatcher: str = typer.Option("llmchess-2025-08", help=f"One of {sorted(VERSIONS)}."),
    force: bool = typer.Option(False, "--force", help="Replace a corpus already in OUT."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Play games with the reference scripted agent and write a native corpus."""
    from rungbench.chess.harness import HarnessConfig, ScriptedAgent, play_corpus

    def action() -> dict[str, Any]:
        if (out / "manifest.json").exists() and not force:
            raise InputError("already holds a corpus (manifest.json); pass --force to replace "
                             "it", path=str(out))
        cfg = HarnessConfig(dispatcher=version(dispatcher),
                            agent_colour="white" if colour == "white" else "black",
                            max_plies=max_plies)
        agent = ScriptedAgent(DEMO_SCRIPT, seed=seed)
        with _opponent(opponent, seed, nodes) as opp, _progress(games, as_json) as tick:
            return play_corpus(out, agent, opp, cfg, games=games, progress=tick)

    manifest = run(action, as_json=as_json)
    files: dict[str, Any] = {f["path"]: {"digest": f["digest"], "lines": f["lines"]}
                             for f in manifest["files"]}
    summary = {"corpus": str(out), "files": files}
    if as_json:
        emit_json(summary)
    else:
        for name, info in files.items():
            console.print(f"{name}: {info['lines']} lines, {info['digest']}")


@contextlib.contextmanager
def _opponent(kind: str, seed: int, nodes: int) -> Iterator[Opponent]:
    from rungbench.chess.harness import RandomOpponent, engine_opponent

    if kind == "stockfish":
        with engine_opponent(nodes=nodes) as engine:
            yield engine
    else:
        yield RandomOpponent(seed)


@contextlib.contextmanager
def _progress(total: int, quiet: bool) -> Iterator[Any]:
    if quiet or not console.is_terminal:
        yield None
        return
    with Progress(console=console) as progress:
        task = progress.add_task("playing", total=total)
        yield lambda done: progress.update(task, completed=done)


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


def demo_stage(workdir: Path, as_json: bool) -> dict[str, Any]:
    """Census both bundled LLM Chess runs and a small scripted-agent harness corpus."""
    from rungbench.chess.census import census_path
    from rungbench.chess.harness import HarnessConfig, RandomOpponent, ScriptedAgent, play_corpus

    out: dict[str, Any] = {}
    for folder in sorted(p for p in DATA.iterdir() if p.is_dir()):
        doc = census_path(folder)
        out[folder.name] = _brief(doc)
        if not as_json:
            console.rule(folder.name)
            print_census(doc)
    corpus = workdir / "chess_census_harness"
    shutil.rmtree(corpus, ignore_errors=True)
    cfg = HarnessConfig(dispatcher=version("llmchess-2025-08"), max_plies=40)
    play_corpus(corpus, ScriptedAgent(DEMO_SCRIPT, seed=0), RandomOpponent(0), cfg, games=6)
    doc = census_path(corpus)
    out["harness"] = _brief(doc)
    if not as_json:
        console.rule("harness (scripted agent vs random mover)")
        print_census(doc)
    return out


def _brief(doc: dict[str, Any]) -> dict[str, Any]:
    return {
        "eligible_attempts": doc["counts"]["eligible_attempts"],
        "transitions": doc["counts"]["same_position_transitions"],
        "table": {r["prior"]: [r["accepted"], r["transitions"]] for r in doc["transition_table"]},
        "replay_disagreements": sum(r["disagreements"] for r in doc["replay"]),
        "digest": doc["digest"],
    }
