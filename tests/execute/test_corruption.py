"""Corruption sweep: every file a run directory or a played corpus holds, one byte flipped,
truncated or deleted, is detected by the next command that reads it, naming the file."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from rungbench.agents.spec import parse_agent
from rungbench.chess.reference_agents import RandomMover, move_choice_request, validate_move
from rungbench.chess.transcripts.census import census_path
from rungbench.chess.transcripts.play import PlayOptions, play_games
from rungbench.errors import RungbenchError
from rungbench.evidence.store import ObjectStore
from rungbench.execute.events import read_events
from rungbench.execute.policy import RetryPolicy
from rungbench.execute.runner import (
    create_run,
    describe_agent,
    execute_run,
    load_run,
    verify_run,
)
from rungbench.execute.schedule import Schedule

FENS = ["8/8/8/4k3/8/8/4P3/4K3 w - - 0 1",
        "r5k1/pp3p1p/2b2qp1/3pr3/8/4P2P/R1PN1PP1/Q3K2R w K - 0 19"]


def flip(path: Path) -> None:
    """Flip the lowest bit of the middle byte."""
    os.chmod(path, 0o644)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def truncate(path: Path) -> None:
    """Keep the first half of the bytes."""
    os.chmod(path, 0o644)
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])


def delete(path: Path) -> None:
    """Remove the file."""
    path.unlink()


DAMAGE: dict[str, Callable[[Path], None]] = {"flip": flip, "truncate": truncate,
                                              "delete": delete}
RUN_FILES = ("manifest", "events", "schedule object", "request object", "response object")


def _run(tmp_path: Path) -> Path:
    schedule = Schedule.of("chess.move_choice/1", "sweep",
                           [move_choice_request(f"c{i}", FENS[i % 2]) for i in range(4)])
    agent = RandomMover(seed=5)
    run_dir = create_run(tmp_path, schedule, describe_agent(agent),
                         policy=RetryPolicy(max_attempts=2, backoff_s=(0.0,)))
    execute_run(run_dir, agent, validator=validate_move)
    assert verify_run(run_dir, validate_move).ok
    return run_dir


def _run_file(run_dir: Path, which: str) -> Path:
    manifest, schedule = load_run(run_dir)
    store = ObjectStore(run_dir)
    finals = [e for e in read_events(run_dir / "events.jsonl") if e["kind"] == "final"]
    return {
        "manifest": run_dir / "manifest.json",
        "events": run_dir / "events.jsonl",
        "schedule object": store.path_for(str(manifest["schedule"])),
        "request object": store.path_for(schedule.cells[1].request_digest),
        "response object": store.path_for(str(finals[2]["response"])),
    }[which]


def _error_naming(action: Callable[[], object], path: Path, *, full: bool = True) -> None:
    with pytest.raises(RungbenchError) as caught:
        action()
    named = str(path) if full else path.name
    assert named in str(caught.value), (path, str(caught.value))
    assert full or str(path.parent) in str(caught.value), (path, str(caught.value))


@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.parametrize("which", RUN_FILES)
def test_damaged_run_file_is_named_by_verify_and_resume(tmp_path: Path, which: str,
                                                        damage: str) -> None:
    """verify_run and a resume each fail naming the damaged run file (a log cut in half: the
    torn line and the cells it lost are named as problems; a resume treats it as a crash)."""
    run_dir = _run(tmp_path)
    path = _run_file(run_dir, which)
    DAMAGE[damage](path)
    if (which, damage) == ("events", "truncate"):
        check = verify_run(run_dir, validate_move)
        assert not check.ok and str(path) in check.problems[0], check.problems
        return
    _error_naming(lambda: verify_run(run_dir, validate_move), path)
    _error_naming(lambda: execute_run(run_dir, RandomMover(seed=5), validator=validate_move),
                  path)


CORPUS_FILES = ("games.jsonl", "transcript.txt", "attempts.jsonl", "manifest.json")

@pytest.fixture(scope="module")
def corpus_bytes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The files of a two-game corpus written by ``chess play`` (played once per module)."""
    folder = tmp_path_factory.mktemp("corpus") / "c"
    play_games(folder, spec=parse_agent("reference:random"),
               options=PlayOptions(games=2, max_plies=8))
    return {name: (folder / name).read_bytes() for name in CORPUS_FILES}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.parametrize("name", CORPUS_FILES)
def test_damaged_corpus_file_is_named_by_census(tmp_path: Path, corpus_bytes: dict[str, bytes],
                                                name: str, damage: str) -> None:
    """`chess census` on a played corpus with one damaged file fails naming that file (a
    deleted manifest by its name, in the folder named)."""
    folder = tmp_path / "c"
    folder.mkdir()
    for file, data in corpus_bytes.items():
        (folder / file).write_bytes(data)
    census_path(folder)  # the intact corpus is read
    DAMAGE[damage](folder / name)
    _error_naming(lambda: census_path(folder), folder / name,
                  full=(name, damage) != ("manifest.json", "delete"))


def test_flipped_byte_in_the_corpus_manifest_description_is_named(
    tmp_path: Path, corpus_bytes: dict[str, bytes]
) -> None:
    """A byte flipped inside the corpus manifest's description is detected by census."""
    folder = tmp_path / "c"
    folder.mkdir()
    for file, data in corpus_bytes.items():
        (folder / file).write_bytes(data)
    data = bytearray(corpus_bytes["manifest.json"])
    data[data.index(b"harness: ") + 3] ^= 0x01
    (folder / "manifest.json").write_bytes(bytes(data))
    _error_naming(lambda: census_path(folder), folder / "manifest.json")
