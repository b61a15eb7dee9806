"""Ship the bundled data (``data/``) inside the package as ``rungbench/data/``.

Everything else is configured in ``pyproject.toml``. ``data/`` sits beside ``src/`` (the
public copies with their ``SOURCES.md``), so it is not a package directory that
``[tool.setuptools.package-data]`` could name; this build step copies it into the built
package, where :func:`rungbench.evidence.paths.shared_data_dir` finds it (the first
ancestor of the module holding ``data/SOURCES.md``) with no environment variable. An
editable install needs no copy: the checkout's own ``data/`` is that ancestor.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

DATA = Path(__file__).resolve().parent / "data"
"""The repository's bundled data."""


class BuildWithData(build_py):
    """``build_py`` that also copies ``data/`` to ``<build>/rungbench/data``."""

    def run(self) -> None:
        """Build the package, then copy the data tree (verbatim) into it."""
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "rungbench" / "data"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(DATA, target)


setup(cmdclass={"build_py": BuildWithData})
