"""Run creation is atomic: a kill while a large schedule is stored leaves no half run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rungbench.agents.spec import parse_agent
from rungbench.chess.reference_agents import move_choice_request
from rungbench.errors import InputError
from rungbench.execute.runner import TEMP_MARK, create_run, load_run
from rungbench.execute.schedule import Schedule
from rungbench.jobs.runs import start_or_resume

FEN = "8/8/8/4k3/8/8/4P3/4K3 w - - 0 1"
CREATE = """
import sys
from pathlib import Path
from rungbench.chess.reference_agents import move_choice_request
from rungbench.execute.runner import create_run
from rungbench.execute.schedule import Schedule
cells = [move_choice_request(f"c{i:06d}", sys.argv[2]) for i in range(int(sys.argv[3]))]
create_run(Path(sys.argv[1]), Schedule.of("chess.move_choice/1", "big", cells), {"name": "x"},
           run_id="big-run")
"""


def _temps(runs: Path) -> list[Path]:
    return sorted(runs.glob(f".*{TEMP_MARK}*")) if runs.is_dir() else []


def test_sigkill_during_creation_leaves_no_visible_run_and_is_cleared(tmp_path: Path) -> None:
    """SIGKILL while a 20,000-cell schedule is being stored: runs/ shows no run (only a hidden
    temporary folder); --resume names the killed creation and removes it, and a new run is
    created cleanly afterwards."""
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-c", CREATE, str(out), FEN, "20000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        temps = _temps(out / "runs")
        if temps and len(list(temps[0].rglob("*"))) > 200:
            break
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
    runs = out / "runs"
    assert [p.name for p in runs.iterdir() if not p.name.startswith(".")] == []
    assert len(_temps(runs)) == 1
    with pytest.raises(InputError, match="creation was killed"):
        start_or_resume(source=None, out=out, resume="big-run",
                        spec=parse_agent("reference:random"))
    assert _temps(runs) == []
    schedule = Schedule.of("chess.move_choice/1", "small", [move_choice_request("a", FEN)])
    run_dir = create_run(out, schedule, {"name": "x"}, run_id="big-run")
    assert load_run(run_dir)[1].digest() == schedule.digest()


def test_leftover_of_a_dead_creator_is_removed_by_the_next_creation(tmp_path: Path) -> None:
    """A temporary run folder whose process is gone is removed when the next run is created;
    one whose process lives is left alone."""
    runs = tmp_path / "runs"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (runs / f".old{TEMP_MARK}{dead}" / "objects").mkdir(parents=True)
    (runs / f".busy{TEMP_MARK}{os.getpid()}").mkdir()
    schedule = Schedule.of("chess.move_choice/1", "small", [move_choice_request("a", FEN)])
    create_run(tmp_path, schedule, {"name": "x"})
    assert [p.name for p in _temps(runs)] == [f".busy{TEMP_MARK}{os.getpid()}"]
