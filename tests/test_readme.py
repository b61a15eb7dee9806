"""README's figures that the code can know are the truth: its two commands come first, its
test count is the suite's (to the nearest hundred), and every demo cell count it quotes is
the demo's."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from rungbench.demo.study import planned_cells

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def test_the_two_commands_come_first() -> None:
    """The first block of README is `make demo` then `make test`, and nothing else."""
    block = re.search(r"```\n(.*?)```", README, re.S)
    assert block is not None and README.index("```") < README.index("\n## ")
    commands = [line.split("#")[0].strip() for line in block.group(1).splitlines()]
    assert commands == ["make demo", "make test"]


def test_the_test_count_is_the_suites() -> None:
    """"about N tests" is the number pytest collects, rounded to the nearest hundred."""
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p",
                           "no:cacheprovider", str(ROOT / "tests")], capture_output=True,
                          text=True, cwd=ROOT, timeout=600)
    found = re.search(r"^(\d+) tests? collected", done.stdout, re.M)
    assert found is not None, done.stdout[-2000:] + done.stderr[-2000:]
    collected = int(found.group(1))
    quoted = [_number(n) for n in re.findall(r"about ([\d,]+) tests", README)]
    assert quoted and all(n == round(collected, -2) for n in quoted), (quoted, collected)


def test_every_demo_cell_count_is_the_demos() -> None:
    """Every "N study cells" in README is the number the demo's study stage sends."""
    quoted = [_number(n) for n in re.findall(r"([\d,]+) study cells", README)]
    assert quoted and set(quoted) == {planned_cells()}
