"""Recorded games (seed 000, A104): an agent plays and a native corpus is written.

The player is an :class:`~rungbench.agents.spec.AgentSpec`: ``reference:NAME`` (scripted,
random or engine; default scripted) or an endpoint, whose reliability failures are retried
in the identical request under the registered policy (seed 000, "Hold the action interface
still too").
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
    from rungbench.agents.spec import AgentSpec
    from rungbench.chess.transcripts.harness import Opponent
    from rungbench.execute.policy import RetryPolicy

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


def play_games(
    out: Path, *, spec: AgentSpec | None, options: PlayOptions,
    policy: RetryPolicy | None = None, force: bool = False,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Play ``options.games`` games into a new corpus at ``out`` with the agent ``spec``
    names (default ``reference:scripted``); ``policy`` retries an endpoint's reliability
    failures. Return the corpus manifest, the player's name and its reliability retries."""
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
    player = game_agent(spec, options, policy)
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
        raise InputError(f"colour must be one of {COLOURS}, got {options.colour!r}",
                         field="colour")
    if options.opponent not in OPPONENTS:
        raise InputError(f"opponent must be one of {OPPONENTS}, got {options.opponent!r}",
                         field="opponent")
    for name, value in (("games", options.games), ("max_plies", options.max_plies),
                        ("nodes", options.nodes)):
        if value < 1:
            raise InputError(f"{name} must be at least 1, got {value}", field=name)


def game_agent(spec: AgentSpec | None, options: PlayOptions,
               policy: RetryPolicy | None = None) -> Agent:
    """The player ``spec`` names (default ``reference:scripted``): a game reference agent,
    or an endpoint's provider retried under ``policy``."""
    from rungbench.agents.providers import open_provider
    from rungbench.chess.transcripts.harness import (
        REFERENCE_SCRIPT,
        RetryingAgent,
        reference_game_agent,
    )
    from rungbench.execute.policy import RetryPolicy

    if spec is None or spec.kind == "reference":
        return reference_game_agent("scripted" if spec is None else spec.model,
                                    seed=options.seed, nodes=options.nodes,
                                    script=REFERENCE_SCRIPT)
    if spec.kind != "openai":
        raise InputError(f"{spec.kind}:{spec.model} cannot play a game; give a game "
                         "reference agent or an endpoint", field="model")
    return RetryingAgent(open_provider(spec), policy or RetryPolicy())


@contextlib.contextmanager
def opponent(kind: str, seed: int, nodes: int) -> Iterator[Opponent]:
    """The opponent ``kind`` (one of :data:`OPPONENTS`), closed on exit."""
    from rungbench.chess.transcripts.harness import RandomOpponent, engine_opponent

    if kind == "stockfish":
        with engine_opponent(nodes=nodes) as engine:
            yield engine
    else:
        yield RandomOpponent(seed)
