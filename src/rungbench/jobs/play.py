"""Recorded games: a reference agent or a real model plays and a native corpus is written.

The player is ``reference:NAME`` (scripted, random or engine; default scripted) or
``openai:MODEL`` at a base URL, whose reliability failures are retried in the identical
request under the registered policy (seed 000, "Hold the action interface still too").
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rungbench.errors import InputError

if TYPE_CHECKING:
    from rungbench.agents.protocol import Agent
    from rungbench.chess.transcripts.harness import Opponent

COLOURS = ("white", "black")
"""Colours the agent may play."""
OPPONENTS = ("random", "stockfish")
"""Opponents: a seeded random mover, or Stockfish at a fixed node budget."""


@dataclass(frozen=True)
class PlayOptions:
    """How the games are played (all but the player)."""

    games: int = 10
    """Games to play."""
    seed: int = 0
    """Seed of the opponent and of a randomized reference agent."""
    colour: str = "black"
    """The agent's colour, one of :data:`COLOURS`."""
    opponent: str = "random"
    """One of :data:`OPPONENTS`."""
    nodes: int = 1000
    """Engine node budget per move (engine agent and Stockfish opponent)."""
    max_plies: int = 80
    """Half-moves after which a game stops."""
    dispatcher: str = "llmchess-2025-08"
    """Dispatcher version of the tool grammar."""


@dataclass(frozen=True)
class ModelOptions:
    """How a real model is reached (ignored for a reference agent)."""

    base_url: str | None = None
    """OpenAI-compatible base URL."""
    api_key_env: str = "OPENAI_API_KEY"
    """Environment variable holding the key."""
    timeout_s: float = 120.0
    """Seconds per request."""
    params: tuple[str, ...] = ()
    """Extra request fields ``KEY=JSON``."""
    max_attempts: int = 4
    """Attempts per request for reliability failures."""
    backoff: str = "2,8,30"
    """Waits before attempt 2, 3, … in seconds."""


def play_games(
    out: Path, *, agent: str | None, model: str | None, options: PlayOptions,
    model_options: ModelOptions, force: bool = False,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Play ``options.games`` games into a new corpus at ``out``; return its manifest,
    the player's name and its reliability retries."""
    from rungbench.agents.protocol import close_agent
    from rungbench.chess.transcripts.dispatch import version
    from rungbench.chess.transcripts.harness import Colour, HarnessConfig, play_corpus

    if out.exists() and not out.is_dir():
        raise InputError("a file is there where the corpus folder should be", path=str(out))
    if (out / "manifest.json").exists() and not force:
        raise InputError("already holds a corpus (manifest.json); pass --force to replace it",
                         path=str(out))
    check_options(options)
    colour: Colour = "white" if options.colour == "white" else "black"
    cfg = HarnessConfig(dispatcher=version(options.dispatcher), agent_colour=colour,
                        max_plies=options.max_plies)
    player = game_agent(agent, model, options, model_options)
    try:
        with opponent(options.opponent, options.seed, options.nodes) as opp:
            manifest = play_corpus(out, player, opp, cfg, games=options.games,
                                   progress=progress)
    finally:
        close_agent(player)
    retried = getattr(player, "retried", None)
    return {**manifest, "agent": player.name,
            "reliability_retries": dict(retried) if retried is not None else None}


def check_options(options: PlayOptions) -> None:
    """Refuse an option outside its registered values, naming the option."""
    if options.colour not in COLOURS:
        raise InputError(f"--colour must be one of {COLOURS}, got {options.colour!r}",
                         field="--colour")
    if options.opponent not in OPPONENTS:
        raise InputError(f"--opponent must be one of {OPPONENTS}, got {options.opponent!r}",
                         field="--opponent")
    for name, value in (("--games", options.games), ("--max-plies", options.max_plies),
                        ("--nodes", options.nodes)):
        if value < 1:
            raise InputError(f"{name} must be at least 1, got {value}", field=name)


def game_agent(agent: str | None, model: str | None, options: PlayOptions,
               model_options: ModelOptions) -> Agent:
    """The player named by ``reference:NAME`` (default scripted) or ``openai:MODEL``."""
    from rungbench.chess.reference_agents import TASK
    from rungbench.chess.transcripts.harness import (
        REFERENCE_SCRIPT,
        RetryingAgent,
        reference_game_agent,
    )
    from rungbench.execute.policy import RetryPolicy
    from rungbench.jobs.runs import build_agent, parse_params, seconds

    if model is None:
        kind, _, name = (agent or "reference:scripted").partition(":")
        if kind != "reference" or not name:
            raise InputError(f"--agent must be reference:NAME, got {agent!r}", field="agent")
        return reference_game_agent(name, seed=options.seed, nodes=options.nodes,
                                    script=REFERENCE_SCRIPT)
    m = model_options
    provider = build_agent(TASK, agent=agent, model=model, base_url=m.base_url,
                           api_key_env=m.api_key_env, timeout_s=m.timeout_s,
                           params=parse_params(list(m.params)))
    return RetryingAgent(provider, RetryPolicy(max_attempts=m.max_attempts,
                                               backoff_s=seconds(m.backoff)))


@contextlib.contextmanager
def opponent(kind: str, seed: int, nodes: int) -> Iterator[Opponent]:
    """The opponent ``kind`` (one of :data:`OPPONENTS`), closed on exit."""
    from rungbench.chess.transcripts.harness import RandomOpponent, engine_opponent

    if kind == "stockfish":
        with engine_opponent(nodes=nodes) as engine:
            yield engine
    else:
        yield RandomOpponent(seed)
