"""Positions sampled along the bundled PGN games (the opt-in ``pgn_plies`` source kind)."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rungbench.chess.labels.pool import (
    PlySampling,
    PoolConfig,
    PoolSource,
    build_pool,
    bundled_data_dir,
    freeze_pool,
    read_pgn_jsonl,
    read_pgn_plies,
    stale_sources,
)
from rungbench.chess.position import board_from_fen
from rungbench.chess.workspace import Workspace
from rungbench.cli.chess import app as chess_app
from rungbench.errors import InputError
from rungbench.evidence.canonical import digest, file_digest

DATA = bundled_data_dir()
GAMES = DATA / "kaggle_chess_positions" / "filtered_chess_positions.jsonl"
PUZZLES = DATA / "lichess_puzzles" / "puzzles.csv"
PINNED = "sha256:837cca4f2e051a020e2d9a59ed2ab58f54cb84474f60ba8cf131f7d072583eaf"
"""Digest of the pool below, its sources' absolute ``path`` fields left out (they name the
checkout), built by pool.py as committed before ``pgn_plies`` existed."""


def test_existing_pool_digest_unchanged() -> None:
    """A pool of the pre-existing kinds hashes exactly as before the new kind was added."""
    sources = [PoolSource("lichess_puzzles", PUZZLES, 50), PoolSource("pgn_jsonl", GAMES)]
    document = build_pool(sources, PoolConfig(reserve=0))
    located = {**document, "sources": [{k: v for k, v in s.items() if k != "path"}
                                       for s in document["sources"]]}
    assert digest(located) == PINNED
    assert all("sampling" not in s for s in document["sources"])


def test_plies_follow_the_registered_rule() -> None:
    """Every sampled ply is at full move >= from_move, on the stride, in the line's game."""
    source = PoolSource("pgn_plies", GAMES, 5, sampling=PlySampling(from_move=8, stride=2))
    plies = list(read_pgn_plies(source, file_digest(str(GAMES))))
    finals = list(read_pgn_jsonl(PoolSource("pgn_jsonl", GAMES, 5), file_digest(str(GAMES))))
    assert plies and {p.lineage.kind for p in plies} == {"game_ply"}
    assert all(board_from_fen(p.fen).fullmove_number >= 8 for p in plies)
    by_line: dict[str, list[int]] = {}
    for p in plies:
        line, _, ply = p.lineage.locator.rpartition(" ply ")
        by_line.setdefault(line, []).append(int(ply))
    for ply_list in by_line.values():
        assert all(b - a == 2 for a, b in itertools.pairwise(ply_list))
    assert {p.lineage.game for p in plies} <= {f.lineage.game for f in finals}


def test_plies_reach_the_manifest_size() -> None:
    """The bundled data along games gives thousands of width >= 10 positions, families once."""
    sources = [PoolSource("lichess_puzzles", PUZZLES),
               PoolSource("pgn_plies", GAMES, sampling=PlySampling(from_move=8))]
    document = build_pool(sources, PoolConfig(reserve=0))
    assert len(document["positions"]) == 7657
    assert all(p["width"] >= 10 for p in document["positions"])
    assert len({p["family"] for p in document["positions"]}) == len(document["positions"])
    plies = next(s for s in document["sources"] if s["kind"] == "pgn_plies")
    assert plies["sampling"] == {"from_move": 8, "stride": 1}
    games: dict[str, set[str]] = {}
    for p in document["positions"]:
        games.setdefault(p["lineage"]["game"], set()).add(p["split"])
    assert all(len(splits) == 1 for splits in games.values())


@pytest.mark.parametrize("bad", [{"from_move": 0}, {"stride": 0}, {"stride": True}])
def test_bad_sampling_rule_is_an_input_error(bad: dict[str, int]) -> None:
    """A non-positive or non-integer sampling constant names its field."""
    with pytest.raises(InputError) as err:
        PlySampling(**bad)
    assert err.value.field in bad


def test_cli_plies_freeze_equals_the_library_freeze(tmp_path: Path) -> None:
    """`pool freeze --source-kind pgn_plies --from-move 10 --stride 2` = freeze_pool, bytes."""
    args = ["pool", "freeze", "--work", str(tmp_path / "cli"), "--puzzle-limit", "20",
            "--games-limit", "6", "--reserve", "0", "--source-kind", "pgn_plies",
            "--from-move", "10", "--stride", "2", "--json"]
    result = CliRunner().invoke(chess_app, args)
    assert result.exit_code == 0, result.output
    sources = [PoolSource("lichess_puzzles", PUZZLES, 20),
               PoolSource("pgn_plies", GAMES, 6, sampling=PlySampling(from_move=10, stride=2))]
    summary = freeze_pool(Workspace(tmp_path / "lib"), sources, PoolConfig(reserve=0))
    cli_pool = Workspace(tmp_path / "cli").pool.read_bytes()
    assert cli_pool == Workspace(tmp_path / "lib").pool.read_bytes()
    assert json.loads(result.stdout)["digest"] == summary["digest"]
    assert b'"sampling":{"from_move":10,"stride":2}' in cli_pool


@pytest.mark.parametrize(("args", "names"), [
    (["--source-kind", "pgn_plies", "--from-move", "0"], "--from-move"),
    (["--source-kind", "pgn_plies", "--stride", "-1"], "--stride"),
    (["--source-kind", "pgn_plies", "--stride", "two"], "--stride"),
    (["--source-kind", "plies"], "--source-kind"),
    (["--stride", "2"], "--source-kind"),
])
def test_bad_plies_options_are_one_line_usage_errors(tmp_path: Path, args: list[str],
                                                     names: str) -> None:
    """A bad pgn_plies option exits 2 in one line naming it, before anything is written."""
    done = subprocess.run([sys.executable, "-c", "from rungbench.cli import main; main()",
                           "chess", "pool", "freeze", "--work", str(tmp_path / "ws"), *args],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and names in lines[0], lines
    assert not (tmp_path / "ws").exists()


def test_pool_document_does_not_depend_on_where_the_data_lives(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same bundled files in two different checkouts freeze to the same pool document:
    sources are named ``data:<relative path>``, and the stale check resolves that name."""
    from rungbench.evidence.paths import resolve_portable

    documents = []
    for where in ("a", "b/deeper"):
        root = tmp_path / where / "data"
        for src in (GAMES, PUZZLES):
            target = root / src.relative_to(DATA)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(src.read_bytes())
        monkeypatch.setenv("RUNGBENCH_DATA", str(root))
        sources = [PoolSource("lichess_puzzles", root / PUZZLES.relative_to(DATA), 20),
                   PoolSource("pgn_jsonl", root / GAMES.relative_to(DATA), 20)]
        document = build_pool(sources, PoolConfig(reserve=0))
        assert [s["path"] for s in document["sources"]] == [
            "data:" + PUZZLES.relative_to(DATA).as_posix(),
            "data:" + GAMES.relative_to(DATA).as_posix()]
        assert resolve_portable(document["sources"][1]["path"]) == sources[1].path
        assert stale_sources(document) == []
        documents.append(digest(document))
    assert documents[0] == documents[1]


def test_a_data_path_that_climbs_out_is_refused() -> None:
    """A frozen ``data:`` name with ``..`` is refused rather than read outside the data dir."""
    from rungbench.evidence.paths import resolve_portable

    with pytest.raises(InputError, match="leaves the data directory"):
        resolve_portable("data:../../etc/passwd")
