"""Tests of the test tooling itself: what `make test` relies on from pytest and its plugins."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

GROUPED = '''
import os
import pytest

pytestmark = pytest.mark.xdist_group("together")


@pytest.mark.parametrize("k", range(6))
def test_worker(k):
    with open(os.path.join(os.environ["GROUP_OUT"], str(k)), "w") as fh:
        fh.write(os.environ["PYTEST_XDIST_WORKER"])
'''


def test_loadgroup_sends_a_group_to_one_worker(tmp_path: Path) -> None:
    """Under ``-n 2 --dist loadgroup`` (the Makefile's arguments) every test of one
    ``xdist_group`` runs on the same worker: the Ray tests share one cluster and the costly
    study fixtures are built once only because of it. pytest 9.2 broke this silently with
    pytest-xdist 3.8 (both workers took tests of one group)."""
    (tmp_path / "test_grouped.py").write_text(GROUPED, encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2",
         "--dist", "loadgroup", "-q", "--rootdir", str(tmp_path), str(tmp_path)],
        capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path,
        env={**os.environ, "GROUP_OUT": str(out)})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    workers = [p.read_text() for p in sorted(out.iterdir())]
    assert len(workers) == 6
    assert len(set(workers)) == 1, workers
