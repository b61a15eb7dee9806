"""The registered label-engine builds: which program answers, and how its files are pinned.

Seed 002 ("Two passes, one narrow question") registers the label stage on Stockfish 18 with
"the binary hash, engine identity, options" in every cache key. Two builds are registered:

* ``stockfish-18-wasm`` — the registration: the npm package ``stockfish@18.0.8``, its
  single-threaded WebAssembly build (``bin/stockfish-18-single.js`` with the
  ``stockfish-18-single.wasm`` beside it, NNUE networks inside) run as a UCI engine under
  ``node``. ``make setup`` installs it into ``engines/stockfish18/`` (``package.json`` and
  ``package-lock.json`` pin the version and its npm integrity hash; ``npm ci
  --ignore-scripts``, never global) and checks the files against the committed
  ``engines/stockfish18/SHA256SUMS``. Nothing is downloaded at run time. This build has no
  ``bench`` command, so its identity carries no bench signature.
* ``stockfish-15-debian`` — Debian's ``stockfish`` package (15.1, ``/usr/games/stockfish``):
  the fallback where ``node`` or the npm build is missing.

:func:`default_build` is the registration where it is installed, else the fallback. Every
start of the WebAssembly build re-hashes its files and refuses (:class:`BuildError`, one
line) when they differ from ``SHA256SUMS``. ``$RUNGBENCH_ENGINES`` names the ``engines/``
folder explicitly (an installed, non-editable package has no repository above it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rungbench.errors import RungbenchError
from rungbench.evidence.canonical import digest, file_digest

ENGINES_ENV = "RUNGBENCH_ENGINES"
"""Environment variable naming the ``engines/`` folder explicitly."""
REGISTERED_BUILD = "stockfish-18-wasm"
"""The build seed 002 registers (Stockfish 18)."""
FALLBACK_BUILD = "stockfish-15-debian"
"""Debian's Stockfish 15.1: used where the registered build is not installed."""
DIGESTS_FILE = "SHA256SUMS"
"""The committed digests of a pinned build's files (``sha256sum`` format)."""
DEBIAN_STOCKFISH = Path("/usr/games/stockfish")
"""Debian's Stockfish binary."""


class EngineError(RungbenchError):
    """Raised when the engine cannot be started or answers outside the UCI contract."""


class BuildError(EngineError):
    """Raised when a registered build is missing, incomplete or differs from its pinned digests."""


@dataclass(frozen=True)
class EngineBuild:
    """One registered engine build."""

    key: str
    """Registry key, e.g. ``stockfish-18-wasm``."""
    package: str
    """Where it is installed from: ``npm:stockfish`` or ``debian:stockfish``."""
    version: str
    """Pinned package version (npm) or the upstream release the package carries (Debian)."""
    folder: str | None
    """Folder under ``engines/`` holding the pinned install; None for a system package."""
    entry: str
    """The engine file, relative to ``folder`` (or absolute for a system package)."""
    companions: tuple[str, ...] = ()
    """Files that must sit beside ``entry`` (the ``.wasm`` of a WebAssembly build)."""
    runtime: str | None = None
    """Interpreter the engine file runs under (``node``); None for a native binary."""
    has_bench: bool = True
    """Whether ``<binary> bench`` prints a node signature (native builds only)."""

    @property
    def is_registered(self) -> bool:
        """Whether this is the build seed 002 registers."""
        return self.key == REGISTERED_BUILD


BUILDS: dict[str, EngineBuild] = {
    REGISTERED_BUILD: EngineBuild(
        REGISTERED_BUILD, "npm:stockfish", "18.0.8", "stockfish18",
        "node_modules/stockfish/bin/stockfish-18-single.js",
        companions=("stockfish-18-single.wasm",), runtime="node", has_bench=False),
    FALLBACK_BUILD: EngineBuild(FALLBACK_BUILD, "debian:stockfish", "15.1", None,
                                str(DEBIAN_STOCKFISH)),
}
"""Every registered build by key."""
BUILD_KEYS = tuple(BUILDS)
"""The registered keys, the registration first."""


def build_of(key: str) -> EngineBuild:
    """Return the registered build ``key``; an unknown key is a :class:`BuildError`."""
    try:
        return BUILDS[key]
    except KeyError:
        raise BuildError(f"unknown engine build {key!r}; registered: {', '.join(BUILD_KEYS)}"
                         ) from None


def engines_dir() -> Path | None:
    """Return the ``engines/`` folder: ``$RUNGBENCH_ENGINES``, else the first ancestor of this
    module, then of the working directory, holding ``engines/*/package.json``."""
    override = os.environ.get(ENGINES_ENV)
    if override:
        return Path(override).expanduser().resolve()
    for start in (Path(__file__).resolve().parent, Path.cwd().resolve()):
        for ancestor in (start, *start.parents):
            candidate = ancestor / "engines"
            if any(candidate.glob("*/package.json")):
                return candidate
    return None


def build_folder(build: EngineBuild) -> Path | None:
    """Return the folder of a pinned build (``engines/<folder>``), None when not found."""
    root = engines_dir()
    return None if build.folder is None or root is None else root / build.folder


def default_path(build: EngineBuild) -> Path:
    """Return the engine file of ``build`` as installed (a path that may not exist)."""
    if build.folder is None:
        return Path(build.entry)
    folder = build_folder(build)
    return (folder if folder is not None else Path("engines") / build.folder) / build.entry


def build_files(build: EngineBuild, path: Path) -> dict[str, Path]:
    """Return every file of the build whose bytes define the engine, by file name."""
    files = {path.name: path}
    files.update({name: path.parent / name for name in build.companions})
    return files


def runtime_path(build: EngineBuild) -> str | None:
    """Return the interpreter's path on ``PATH`` (None when missing or not needed)."""
    return None if build.runtime is None else shutil.which(build.runtime)


def is_installed(build: EngineBuild) -> bool:
    """Whether the build's files (and its interpreter) are present at its default path."""
    if build.runtime is not None and runtime_path(build) is None:
        return False
    return all(p.is_file() for p in build_files(build, default_path(build)).values())


def default_build() -> str:
    """The registered build where installed (``stockfish-18-wasm``), else Debian's 15.1."""
    return REGISTERED_BUILD if is_installed(BUILDS[REGISTERED_BUILD]) else FALLBACK_BUILD


def command(build: EngineBuild, path: Path) -> list[str]:
    """Return the command line that starts the engine (``node <file>`` for WebAssembly)."""
    if build.runtime is None:
        return [str(path)]
    runtime = runtime_path(build)
    if runtime is None:
        raise BuildError(f"{build.key} runs under {build.runtime!r}, which is not on PATH "
                         "(make setup installs it)")
    return [runtime, str(path)]


def pinned_digests(build: EngineBuild) -> dict[str, str] | None:
    """Return the committed ``SHA256SUMS`` of a pinned build by file name (None: unpinned)."""
    folder = build_folder(build)
    if build.folder is None:
        return None
    if folder is None or not (folder / DIGESTS_FILE).is_file():
        raise BuildError(f"{build.key}: no engines/{build.folder}/{DIGESTS_FILE} found "
                         f"(set ${ENGINES_ENV} to the repository's engines folder)")
    out: dict[str, str] = {}
    for line in (folder / DIGESTS_FILE).read_text(encoding="utf-8").splitlines():
        hexdigest, _, name = line.partition("  ")
        if line.strip():
            out[Path(name).name] = "sha256:" + hexdigest.strip()
    return out


def file_digests(build: EngineBuild, path: Path) -> dict[str, str]:
    """Return ``sha256:`` of every file of the build, by file name; a pinned build's files
    must equal its committed digests (:class:`BuildError` otherwise, one line)."""
    files = build_files(build, path)
    missing = [str(p) for p in files.values() if not p.is_file()]
    if missing:
        raise BuildError(f"{build.key}: engine file {missing[0]} does not exist"
                         + (" (make setup installs it)" if build.folder else ""))
    digests = {name: file_digest(str(p)) for name, p in sorted(files.items())}
    pinned = pinned_digests(build)
    if pinned is not None and digests != {n: pinned.get(n) for n in digests}:
        wrong = sorted(n for n in digests if digests[n] != pinned.get(n))
        raise BuildError(f"{build.key}: {', '.join(wrong)} under {path.parent} differ from "
                         f"engines/{build.folder}/{DIGESTS_FILE} (reinstall: make setup)")
    return digests


def files_digest(digests: dict[str, str]) -> str:
    """The one digest of a build's files: the file's own for a single binary (the sha256 a
    native engine has always been identified by), else the digest of the name → digest map."""
    if len(digests) == 1:
        return next(iter(digests.values()))
    return digest(digests)


def installed_version(build: EngineBuild, path: Path) -> str:
    """The version of the installed package: npm's ``package.json`` beside the install, the
    ``dpkg`` version for Debian's binary; the registered version where neither is readable."""
    if build.folder is not None:
        manifest = path.parent.parent / "package.json"
        try:
            return str(json.loads(manifest.read_text(encoding="utf-8"))["version"])
        except (OSError, KeyError, TypeError, ValueError):
            return build.version
    if path != DEBIAN_STOCKFISH or shutil.which("dpkg-query") is None:
        return build.version
    done = subprocess.run(["dpkg-query", "-W", "-f=${Version}", build.package.split(":")[1]],
                          capture_output=True, text=True, check=False, timeout=30)
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else build.version


NETWORK_OPTIONS = ("EvalFile", "EvalFileSmall")
"""UCI options whose defaults name the engine's NNUE networks."""


def networks(declared_defaults: dict[str, Any]) -> list[str]:
    """The NNUE network file names the engine declares (defaults of ``EvalFile*``)."""
    return [str(declared_defaults[o]) for o in NETWORK_OPTIONS
            if declared_defaults.get(o) not in (None, "")]

