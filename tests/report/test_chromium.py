"""The report as a person sees it: rendered by headless Debian Chromium, no console errors,
the key tables in the rendered DOM, and a screenshot kept as a test artefact."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from tests.conftest import skip_unless_ci
from tests.report.report_fixtures import small_demo_dir

from rungbench.report import render_report

CHROMIUM = Path("/usr/bin/chromium")
"""Debian's chromium (installed by ``make test``)."""
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0", "--hide-scrollbars")
"""No network, no profile, console messages on stderr."""
CONSOLE = re.compile(r":(?:INFO|WARNING|ERROR):CONSOLE[^\]]*\] (.*)")
"""A page's console message as Chromium logs it on stderr."""
KEY_TABLES = ("a104", "claim-gates", "coverage-selection", "e023",
              "rung-accuracy", "controls-fixed-strict", "objects")
"""Tables a reader must find."""
ARTEFACTS = os.environ.get("RUNGBENCH_TEST_ARTEFACTS")
"""Folder the screenshot is also copied into, when set (CI keeps it)."""


def _chromium(tmp: Path, page: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    if not CHROMIUM.is_file():
        skip_unless_ci(f"{CHROMIUM} is missing (apt-get install chromium)")
    return subprocess.run([str(CHROMIUM), *FLAGS, f"--user-data-dir={tmp / 'profile'}",
                           *extra, page.resolve().as_uri()], capture_output=True, text=True,
                          timeout=120, check=False)


def console_messages(stderr: str) -> list[str]:
    """The page's console messages in Chromium's stderr log."""
    return [m.group(1) for m in map(CONSOLE.search, stderr.splitlines()) if m]


def test_the_console_scan_sees_a_broken_page(tmp_path: Path) -> None:
    """A page that logs an error and throws is caught by the scan (so a clean scan means it)."""
    bad = tmp_path / "bad.html"
    bad.write_text('<html><body><script>console.error("bad");throw new Error("boom")'
                   "</script></body></html>")
    messages = console_messages(_chromium(tmp_path, bad, "--dump-dom").stderr)
    assert any("Uncaught Error: boom" in m for m in messages), messages


def test_report_renders_clean_with_its_tables_and_a_screenshot(tmp_path: Path) -> None:
    """Chromium loads the page with no console message, finds the tables, screenshots it."""
    page = Path(render_report(small_demo_dir(tmp_path / "demo"))["report"])
    html = page.read_text(encoding="utf-8")
    assert not re.search(r"""(?:src|href)=["']?https?:""", html)  # nothing to fetch
    assert "default-src 'none'" in html  # and a CSP that forbids any fetch
    dumped = _chromium(tmp_path, page, "--dump-dom")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    assert console_messages(dumped.stderr) == []
    for table_id in KEY_TABLES:
        assert f'id="{table_id}"' in dumped.stdout, table_id
    assert dumped.stdout.count("<svg") >= 2  # the coverage × selection plane and a forest
    shot = tmp_path / "report.png"
    taken = _chromium(tmp_path, page, "--window-size=1280,2000", f"--screenshot={shot}")
    assert taken.returncode == 0 and console_messages(taken.stderr) == []
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 50_000
    if ARTEFACTS:
        Path(ARTEFACTS).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, Path(ARTEFACTS) / "report-screenshot.png")
