"""`rungbench demo`: the stages run on the bundled data and the command ends on the report.

The full demo (every stage, the whole chess study) is `make demo`'s job; here the CLI runs
two quick stages (the seed figures and the C0–C5 audit) through the same code path and is
checked for the report path, the reuse of its folder and its one-line errors.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rungbench.cli import app
from rungbench.demo import STAGES, run_demo

QUICK = tuple(s for s in STAGES if s.key in ("stats", "instrument"))
"""Stages that finish in seconds."""


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run only the quick stages through the CLI."""
    module = sys.modules["rungbench.cli.demo"]  # the package re-exports the command's name
    monkeypatch.setattr(module, "run_demo", functools.partial(run_demo, stages=QUICK))


def test_demo_ends_on_the_report_and_reuses_its_folder(tmp_path: Path, quick: None) -> None:
    """Every stage is ok, the report's path is printed last, and a second run of the same
    folder gives the same report bytes."""
    out = tmp_path / "demo"
    result = CliRunner().invoke(app, ["demo", "--out", str(out)])
    assert result.exit_code == 0, result.output
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("report: ") and last.endswith("index.html")
    page = out / "report" / "index.html"
    first = page.read_bytes()
    again = CliRunner().invoke(app, ["demo", "--json", "--out", str(out)])
    assert again.exit_code == 0, again.output
    document = json.loads(again.stdout)
    assert document["ok"] is True and len(document["stages"]) == len(QUICK)
    assert all(stage["ok"] for stage in document["stages"].values())
    assert document["report"]["report"] == str(page.resolve())
    assert document["report"]["sections"]["controls"] == "present"
    assert document["report"]["sections"]["a104"] == "absent"
    assert page.read_bytes() == first


def test_demo_defaults_to_rungbench_demo_here(tmp_path: Path, quick: None,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --out the demo writes ./rungbench-demo (no temporary folder)."""
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["demo", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["workdir"] == str(tmp_path.resolve() / "rungbench-demo")
    assert (tmp_path / "rungbench-demo" / "report" / "index.html").is_file()


def test_workdir_that_is_a_file_or_under_one_is_one_line(tmp_path: Path) -> None:
    """--out FILE or FILE/sub: exit 1, one line naming the file, nothing run."""
    file = tmp_path / "file"
    file.write_text("x")
    for workdir in (file, file / "sub"):
        result = CliRunner().invoke(app, ["demo", "--out", str(workdir)])
        assert result.exit_code == 1, result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and str(file) in " ".join(result.output.split())
