"""The install is the committed lock: ``make setup`` gives exactly ``uv.lock``, on any day.

``uv.lock`` is universal (every platform and Python the project allows); what one machine
should hold is the part reached from ``rungbench[test]`` through the dependency markers that
hold here. That part is computed from the lock alone and compared with what
``importlib.metadata`` finds installed, both ways.
"""

from __future__ import annotations

import os
import site
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
LOCK = tomllib.loads((ROOT / "uv.lock").read_text(encoding="utf-8"))
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = "rungbench"
EXTRA = "test"
"""The extra ``make setup`` installs (``uv sync --extra test``)."""


def _packages() -> dict[tuple[str, str], dict[str, Any]]:
    """Every locked package by (name, version): a forked resolution locks one name twice."""
    return {(p["name"], p["version"]): p for p in LOCK["package"]}


def _holds(entry: dict[str, Any]) -> bool:
    marker = entry.get("marker")
    return marker is None or Marker(marker).evaluate({"extra": ""})


def _pick(entry: dict[str, Any], by_name: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    candidates = by_name[entry["name"]]
    if "version" in entry:
        candidates = [p for p in candidates if p["version"] == entry["version"]]
    assert len(candidates) == 1, f"lock entry {entry} is ambiguous: {candidates}"
    return candidates[0]


def wanted_here() -> dict[str, str]:
    """Name -> version of every locked package this interpreter and platform should hold."""
    by_name: dict[str, list[dict[str, Any]]] = {}
    for package in LOCK["package"]:
        by_name.setdefault(package["name"], []).append(package)
    root = by_name[PROJECT][0]
    todo: list[tuple[dict[str, Any], tuple[str, ...]]] = [(root, (EXTRA,))]
    seen: set[tuple[str, str, tuple[str, ...]]] = set()
    wanted: dict[str, str] = {}
    while todo:
        package, extras = todo.pop()
        key = (package["name"], package["version"], extras)
        if key in seen:
            continue
        seen.add(key)
        assert wanted.setdefault(package["name"], package["version"]) == package["version"]
        entries = list(package.get("dependencies", []))
        for extra in extras:
            entries += package.get("optional-dependencies", {}).get(extra, [])
        todo += [(_pick(e, by_name), tuple(e.get("extra", ()))) for e in entries if _holds(e)]
    return wanted


def installed() -> dict[str, str]:
    """Name -> version of every distribution installed in this interpreter's site-packages
    (not what a library vendors onto ``sys.path`` at import: Ray adds its
    ``thirdparty_files``, colorama among them, once a test has imported it)."""
    return {canonicalize_name(d.metadata["Name"]): d.version
            for d in metadata.distributions(path=site.getsitepackages())}


def test_every_locked_package_is_installed_at_its_locked_version() -> None:
    """Each package the lock gives this machine is installed, at exactly the locked version,
    and nothing else is installed (``uv sync`` removes what the lock does not list)."""
    wanted, have = wanted_here(), installed()
    assert {n: (v, have.get(n)) for n, v in wanted.items() if have.get(n) != v} == {}
    assert sorted(set(have) - set(wanted)) == []
    assert {"openai", "pgmpy", "ray", "inspect-ai", "pyarrow", "pytest"} <= set(wanted)


def test_the_walk_finds_a_fork_by_python_version() -> None:
    """The lock forks some packages by Python version (numpy, scipy); the walk takes the
    one whose marker holds here (the comparison above can fail on a wrong fork)."""
    numpy = [p["version"] for p in LOCK["package"] if p["name"] == "numpy"]
    assert len(numpy) >= 1 and wanted_here()["numpy"] in numpy
    assert wanted_here()["numpy"] == metadata.version("numpy")


def _declared() -> set[tuple[str, tuple[str, ...], str, str | None]]:
    project = PYPROJECT["project"]
    rows = [(r, None) for r in project["dependencies"]]
    rows += [(r, extra) for extra, reqs in project["optional-dependencies"].items()
             for r in reqs]
    out = set()
    for text, extra in rows:
        req = Requirement(text)
        out.add((canonicalize_name(req.name), tuple(sorted(req.extras)),
                 str(SpecifierSet(str(req.specifier))),
                 None if extra is None else f"extra == '{extra}'"))
    return out


def _locked_requirements() -> set[tuple[str, tuple[str, ...], str, str | None]]:
    root = next(p for p in LOCK["package"] if p["name"] == PROJECT)
    return {(r["name"], tuple(sorted(r.get("extras", ()))),
             str(SpecifierSet(r.get("specifier", ""))), r.get("marker"))
            for r in root["metadata"]["requires-dist"]}


def test_the_lock_was_resolved_from_this_pyproject() -> None:
    """Every requirement and extra of ``pyproject.toml`` is the one the lock was resolved
    from: a bound edited without ``make lock`` fails here (``uv sync --locked`` refuses it
    too, before any install)."""
    assert _declared() == _locked_requirements()
    root = next(p for p in LOCK["package"] if p["name"] == PROJECT)
    assert set(root["metadata"]["provides-extras"]) == set(PYPROJECT["project"]
                                                          ["optional-dependencies"])


def _files(package: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if "sdist" in package:
        yield package["sdist"]
    yield from package.get("wheels", [])


def test_every_locked_file_carries_a_sha256() -> None:
    """Every file the lock can install is pinned by its sha256, so the same commit installs
    the same bytes, and a registry serving other bytes under the same version fails."""
    registry = [p for p in LOCK["package"] if "registry" in p["source"]]
    assert len(registry) > 100
    for package in registry:
        files = list(_files(package))
        assert files, package["name"]
        assert all(f.get("hash", "").startswith("sha256:") for f in files), package["name"]


def test_the_uv_pin_carries_hashes() -> None:
    """``requirements-uv.txt`` pins one uv version, every file of it by sha256 (pip installs
    it with ``--require-hashes``)."""
    lines = (ROOT / "requirements-uv.txt").read_text(encoding="utf-8").splitlines()
    pins = [line for line in lines if line.startswith("uv==")]
    hashes = [line for line in lines if "--hash=sha256:" in line]
    assert len(pins) == 1 and len(hashes) >= 10


def _check(python: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), "setup", "-n",
                           f"PYTHON={python}"], capture_output=True, text=True,
                          env={**os.environ, "MAKEFLAGS": ""}, timeout=60)


@pytest.mark.parametrize("version", ["3.10.14", "3.9.2"])
def test_setup_refuses_an_older_python_in_one_line(tmp_path: Path, version: str) -> None:
    """``make setup`` with a Python older than 3.11 stops before any recipe runs, with one
    line naming the interpreter and its version."""
    fake = tmp_path / "python3"
    major, minor = (int(x) for x in version.split(".")[:2])
    fake.write_text(f"#!/bin/sh\n[ \"$1\" = -V ] && echo 'Python {version}' && exit 0\n"
                    f"exec {sys.executable} -c 'print(({major}, {minor}) >= (3, 11))'\n")
    fake.chmod(0o755)
    done = _check(str(fake))
    assert done.returncode != 0 and done.stdout == ""
    assert done.stderr.endswith(f"rungbench needs Python 3.11 or newer; {fake} is "
                                f"Python {version}.  Stop.\n")
    assert len(done.stderr.splitlines()) == 1


def test_setup_names_a_missing_python() -> None:
    """A ``PYTHON`` that does not exist is named as not found, in the same one line."""
    done = _check("/nonexistent/python3")
    assert done.returncode != 0 and len(done.stderr.splitlines()) == 1
    assert "/nonexistent/python3 is not found" in done.stderr


def test_setup_accepts_this_python() -> None:
    """The interpreter the suite runs on passes the same check (the refusal is not
    unconditional): ``make -n setup`` lists its recipes and says nothing on stderr."""
    done = _check(sys.executable)
    assert done.returncode == 0 and done.stderr == "" and "uv" in done.stdout
