"""The demo's label stage, built once per test process for the labels and study stage tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from rungbench.demo import StageResult
from rungbench.demo.labels import run


@pytest.fixture(scope="session")
def labelled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, StageResult]:
    """A demo folder whose label stage ran once: (folder, the first run's result)."""
    workdir = tmp_path_factory.mktemp("demo")
    return workdir, run(workdir)
