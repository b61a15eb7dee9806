"""Corruption sweep (issue 11 "Must show"): every bench and run file, flipped, cut, deleted.

For every file a built bench and a scored run contain, one flipped byte, a truncation
and a deletion are each detected by the next command that reads it, which exits 1
naming the file.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from rungbench.causal.bench.requests import causal_schedule
from rungbench.cli.causal_bench import register
from rungbench.errors import RungbenchError

app = typer.Typer()
register(app)

BENCH_FILES = (
    "SEAL.json", "public/cases.jsonl", "public/manifest.json",
    "public/schemas/public_case.schema.json", "public/schemas/private_oracle.schema.json",
    "public/schemas/agent_response.schema.json", "public/schemas/tool_event.schema.json",
    "public/schemas/run_manifest.schema.json", "public/schemas/verdict.schema.json",
    "private/oracle.jsonl", "private/worlds.jsonl", "private/manifest.json",
)
"""Every file of a built bench."""
RUN_FILES = ("SEAL.json", "responses.jsonl", "run_manifest.json", "summary.json",
             "private/verdicts.jsonl", "private/score.json")
"""Every file of a scored run."""


def flip(path: Path) -> None:
    """Flip the lowest bit of the byte in the middle of ``path``."""
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def truncate(path: Path) -> None:
    """Cut ``path`` to half its length."""
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def delete(path: Path) -> None:
    """Remove ``path``."""
    path.unlink()


DAMAGE: dict[str, Callable[[Path], None]] = {"flip": flip, "truncate": truncate,
                                             "delete": delete}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A one-world bench, the oracle agent's scored run, and that run's responses."""
    root = tmp_path_factory.mktemp("corruption")
    bench, run = root / "bench", root / "run"
    for args in (["build", "--split", "dev", "--worlds", "1", "--seed", "6", "--out",
                  str(bench)],
                 ["eval", "--bench", str(bench), "--agent", "reference:oracle", "--out",
                  str(run)]):
        assert CliRunner().invoke(app, [*args, "--json"]).exit_code == 0
    responses = root / "responses.jsonl"
    shutil.copy(run / "responses.jsonl", responses)
    return bench, run, responses


def _damaged(src: Path, dst: Path, name: str, damage: str) -> Path:
    shutil.copytree(src, dst)
    path = dst / name
    os.chmod(path, 0o600)
    DAMAGE[damage](path)
    return path


def _fails_naming(args: list[str], path: Path) -> None:
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 1, (args, result.output)
    doc: dict[str, Any] = json.loads(result.stdout)
    assert doc["ok"] is False and str(path) in doc["message"], doc["message"]


def test_the_sweep_covers_every_file(pristine: tuple[Path, Path, Path]) -> None:
    """The sweep lists exactly the files a built bench and a scored run contain."""
    bench, run, _ = pristine
    for root, names in ((bench, BENCH_FILES), (run, RUN_FILES)):
        found = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
        assert found == set(names)


@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.parametrize("name", BENCH_FILES)
def test_damaged_bench_file_is_named_by_every_reader(
    pristine: tuple[Path, Path, Path], tmp_path: Path, name: str, damage: str
) -> None:
    """eval, score, audit and the run schedule each exit 1 naming the damaged bench file."""
    bench, _, responses = pristine
    broken = tmp_path / "bench"
    path = _damaged(bench, broken, name, damage)
    _fails_naming(["eval", "--bench", str(broken), "--agent", "reference:oracle", "--out",
                   str(tmp_path / "r1")], path)
    _fails_naming(["score", "--bench", str(broken), "--responses", str(responses), "--out",
                   str(tmp_path / "r2")], path)
    _fails_naming(["audit", "--bench", str(broken)], path)
    with pytest.raises(RungbenchError, match=re.escape(str(path))):
        causal_schedule(broken)
    assert not (tmp_path / "r1").exists() and not (tmp_path / "r2").exists()


@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.parametrize("name", RUN_FILES)
def test_damaged_run_file_is_named_by_report_and_audit(
    pristine: tuple[Path, Path, Path], tmp_path: Path, name: str, damage: str
) -> None:
    """report and audit --run each exit 1 naming the damaged run file."""
    bench, run, _ = pristine
    broken = tmp_path / "run"
    path = _damaged(run, broken, name, damage)
    _fails_naming(["report", "--run", str(broken)], path)
    _fails_naming(["audit", "--bench", str(bench), "--run", str(broken)], path)
