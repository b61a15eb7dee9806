"""`rungbench demo`: every finished capability runs as a stage on the bundled data."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from rungbench.cli import app

EXPECTED_LAYERS = ("(evidence)", "(stats)", "(causal)", "(chess)", "(execute)", "(design)")


def test_demo_runs_every_stage_green(tmp_path: Path) -> None:
    """The demo prints one JSON document in which every stage, of every layer, is ok."""
    result = CliRunner().invoke(app, ["demo", "--json", "--workdir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["ok"] is True
    stages = document["stages"]
    assert len(stages) == 10
    assert all(stage["ok"] for stage in stages.values()), stages
    for layer in EXPECTED_LAYERS:
        assert any(name.endswith(layer) for name in stages), layer
    assert any(tmp_path.iterdir())


def test_workdir_that_is_a_file_or_under_one_is_one_line(tmp_path: Path) -> None:
    """--workdir FILE or FILE/sub: exit 1, one line naming the file, nothing run."""
    file = tmp_path / "file"
    file.write_text("x")
    for workdir in (file, file / "sub"):
        result = CliRunner().invoke(app, ["demo", "--workdir", str(workdir)])
        assert result.exit_code == 1, result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and str(file) in " ".join(result.output.split())
