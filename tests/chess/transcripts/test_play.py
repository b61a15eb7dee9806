"""rungbench.chess.transcripts.play: recorded games and the options that shape them."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from rungbench.agents.spec import parse_agent
from rungbench.chess.transcripts.play import PlayOptions, check_options, play_games
from rungbench.cli import app
from rungbench.errors import InputError


@pytest.mark.parametrize(("options", "field"), [
    (PlayOptions(colour="purple"), "colour"),
    (PlayOptions(opponent="bogus"), "opponent"),
    (PlayOptions(max_plies=-5), "max_plies"),
    (PlayOptions(games=0), "games"),
])
def test_out_of_range_options_are_refused_by_name(options: PlayOptions, field: str) -> None:
    """A colour, opponent or count outside its registered values is an error naming it."""
    with pytest.raises(InputError) as caught:
        check_options(options)
    assert caught.value.field == field


@pytest.mark.parametrize("args", [["--colour", "purple"], ["--opponent", "bogus"],
                                  ["--max-plies", "-5"], ["--games", "0"]])
def test_cli_makes_bad_choices_usage_errors(tmp_path: Path, args: list[str]) -> None:
    """`chess play` exits 2 (usage) naming the option, and writes nothing."""
    result = CliRunner().invoke(app, ["chess", "play", str(tmp_path / "c"), *args])
    assert result.exit_code == 2
    assert args[0] in result.output
    assert not (tmp_path / "c").exists()


def test_white_plays_white(tmp_path: Path) -> None:
    """--colour white records the agent as white in every game."""
    manifest = play_games(tmp_path / "c", spec=parse_agent("reference:random"),
                          options=PlayOptions(games=2, colour="white", max_plies=6))
    assert manifest["agent"]
    games = (tmp_path / "c" / "games.jsonl").read_text(encoding="utf-8")
    assert '"agent_colour":"white"' in games.replace(" ", "")
