"""Where the bundled data lives, and the digests its SOURCES.md records.

The repository bundles verbatim copies of the public data in ``data/`` (with
``data/SOURCES.md``). A workplace checkout may also sit at ``X/main`` beside
``X/shared/data``. ``RUNGBENCH_DATA`` overrides both.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from rungbench.errors import InputError
from rungbench.evidence.canonical import DIGEST_PREFIX

DATA_ENV = "RUNGBENCH_DATA"
"""Environment variable naming the data directory explicitly."""
DATA_PREFIX = "data:"
"""How a frozen document names a file inside the bundled data directory."""


def shared_data_dir() -> Path:
    """Return the bundled data directory; raise :class:`InputError` when none is found.

    Order: ``$RUNGBENCH_DATA`` (must be a directory), then, for each ancestor of
    this module and then of the working directory, its ``data/`` holding a
    ``SOURCES.md`` (the repository's bundled copy) or its ``shared/data``.
    """
    override = os.environ.get(DATA_ENV)
    if override:
        path = Path(override).expanduser()
        if not path.is_dir():
            raise InputError(f"${DATA_ENV} is not a directory", path=str(path))
        return path.resolve()
    starts = (Path(__file__).resolve().parent, Path.cwd().resolve())
    found = _first_data_dir(starts)
    if found is None:
        raise InputError(
            f"no data/ or shared/data directory above {starts[0]} or {starts[1]}; set ${DATA_ENV}"
        )
    return found


def portable_path(path: Path) -> str:
    """How a frozen document names source file ``path``: ``data:<relative path>`` when it
    lies in the bundled data directory, so the document (and every digest that binds it)
    does not depend on where the repository is checked out; otherwise the path as given."""
    try:
        root = shared_data_dir()
        relative = path.resolve().relative_to(root)
    except (InputError, ValueError):
        return str(path)
    return DATA_PREFIX + relative.as_posix()


def resolve_portable(text: str) -> Path:
    """The file a frozen document's ``path`` names (:func:`portable_path`'s inverse); a
    ``data:`` name that climbs out of the data directory is refused."""
    if not text.startswith(DATA_PREFIX):
        return Path(text)
    relative = Path(text[len(DATA_PREFIX):])
    if relative.is_absolute() or ".." in relative.parts:
        raise InputError(f"data path {text!r} leaves the data directory", field="path")
    return shared_data_dir() / relative


def _first_data_dir(starts: Iterable[Path]) -> Path | None:
    for start in starts:
        for ancestor in (start, *start.parents):
            bundled = ancestor / "data"
            if (bundled / "SOURCES.md").is_file():
                return bundled
            candidate = ancestor / "shared" / "data"
            if candidate.is_dir():
                return candidate
    return None


_HEX64 = re.compile(r"^[0-9a-f]{64}$")


def recorded_digests(data_dir: Path | None = None) -> dict[str, str]:
    """Return relative path → ``sha256:<hex>`` from every table in ``SOURCES.md``.

    A table counts when its header has a ``file …`` column and a ``sha256``
    column; cells may be wrapped in backticks. Raises :class:`InputError` naming
    the file and line when a listed digest is malformed or a file is listed twice.
    """
    root = data_dir if data_dir is not None else shared_data_dir()
    path = root / "SOURCES.md"
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=str(path)) from exc
    found: dict[str, str] = {}
    columns: tuple[int, int] | None = None
    for number, line in enumerate(lines, start=1):
        cells = _cells(line)
        if cells is None:
            columns = None
        elif columns is None:
            columns = _header_columns(cells)
        elif not set(cells[0]) <= set("-: "):
            if len(cells) <= max(columns):
                raise InputError(f"table row has {len(cells)} cells", path=str(path), line=number)
            name, value = cells[columns[0]], cells[columns[1]]
            _add_recorded(found, name, value, path=str(path), line=number)
    return found


def _cells(line: str) -> list[str] | None:
    text = line.strip()
    if not (text.startswith("|") and text.endswith("|")):
        return None
    return [c.strip().strip("`") for c in text[1:-1].split("|")]


def _header_columns(cells: list[str]) -> tuple[int, int] | None:
    names = [c.lower() for c in cells]
    file_col = next((i for i, n in enumerate(names) if n.startswith("file")), None)
    sha_col = next((i for i, n in enumerate(names) if n == "sha256"), None)
    return None if file_col is None or sha_col is None else (file_col, sha_col)


def _add_recorded(found: dict[str, str], name: str, value: str, *, path: str, line: int) -> None:
    if not _HEX64.match(value):
        raise InputError(f"sha256 {value!r} is not 64 lowercase hex", path=path, line=line)
    if name in found:
        raise InputError(f"file {name!r} listed twice", path=path, line=line)
    found[name] = DIGEST_PREFIX + value
