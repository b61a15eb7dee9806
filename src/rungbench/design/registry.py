"""Registered designs: TOML presets in ``rungbench/designs/`` (docs/ARCHITECTURE.md,
"Presets and studies").

A preset is parsed with :mod:`tomllib`; its identity is the digest of the parsed
document as canonical JSON, so comments and key order do not change it but any
registered constant does. A run records that digest.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from rungbench.errors import InputError
from rungbench.evidence.canonical import digest

_TOML_LINE = re.compile(r"at line (\d+)")

DESIGN_PACKAGE = "rungbench.designs"
"""Package that holds the registered ``*.toml`` presets."""


@dataclass(frozen=True)
class RegisteredDesign:
    """One parsed design preset and its digest."""

    name: str
    """Preset name: the file stem (``a105``, ``e023``)."""
    source: str
    """Where the TOML was read from."""
    document: dict[str, Any]
    """The parsed TOML document."""
    digest: str
    """``sha256:<hex>`` of the document's canonical JSON."""

    @property
    def bundled(self) -> bool:
        """Whether this is a preset shipped in :data:`DESIGN_PACKAGE` (not a user's file)."""
        return self.source.startswith(f"{DESIGN_PACKAGE}/")

    def section(self, key: str) -> dict[str, Any]:
        """Return the top-level table ``key``; raise :class:`InputError` when absent."""
        value = self.document.get(key)
        if not isinstance(value, dict):
            raise InputError(f"design {self.name!r} has no [{key}] table", path=self.source,
                             field=key)
        return value

    def table_list(self, key: str) -> list[dict[str, Any]]:
        """Return the array of tables ``[[key]]``; raise :class:`InputError` when absent."""
        value = self.document.get(key)
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise InputError(f"design {self.name!r} has no [[{key}]] tables", path=self.source,
                             field=key)
        return value


def registered_names() -> list[str]:
    """Return the names of every bundled preset, sorted."""
    root = resources.files(DESIGN_PACKAGE)
    return sorted(p.name[: -len(".toml")] for p in root.iterdir() if p.name.endswith(".toml"))


def load_design(name: str) -> RegisteredDesign:
    """Return the bundled preset ``name``; raise :class:`InputError` for an unknown one."""
    known = registered_names()
    if name not in known:
        raise InputError(f"unknown design {name!r}; registered: {', '.join(known)}",
                         field="design")
    resource = resources.files(DESIGN_PACKAGE) / f"{name}.toml"
    return parse_design(resource.read_text(encoding="utf-8"), name=name,
                        source=f"{DESIGN_PACKAGE}/{name}.toml")


def load_preset(name_or_path: str | Path) -> RegisteredDesign:
    """A bundled preset by name, or a preset file of one's own by path (a ``.toml`` file, or
    any name holding a path separator); a user's preset is read and checked exactly like a
    bundled one by whatever uses it."""
    text = str(name_or_path)
    if isinstance(name_or_path, Path) or text.endswith(".toml") or "/" in text:
        return load_design_file(Path(text))
    return load_design(text)


def bundled_text(name: str) -> str:
    """The TOML text of bundled preset ``name`` (what ``rungbench design new`` copies)."""
    load_design(name)  # an unknown name is refused listing the known ones
    return (resources.files(DESIGN_PACKAGE) / f"{name}.toml").read_text(encoding="utf-8")


def load_design_file(path: Path) -> RegisteredDesign:
    """Return the preset in the TOML file ``path``."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read design: {exc.strerror}", path=str(path)) from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", path=str(path)) from exc
    return parse_design(text, name=path.stem, source=str(path))


def parse_design(text: str, *, name: str, source: str) -> RegisteredDesign:
    """Parse TOML ``text``; raise :class:`InputError` naming ``source`` and the line."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = _TOML_LINE.search(str(exc))
        raise InputError(f"invalid TOML: {exc}", path=source,
                         line=int(found.group(1)) if found else None) from exc
    try:
        value = digest(document)
    except InputError as exc:  # e.g. TOML datetimes have no canonical JSON form
        raise InputError(f"design is not canonical-JSON representable: {exc}",
                         path=source) from exc
    return RegisteredDesign(name=name, source=source, document=document, digest=value)


def require(table: dict[str, Any], key: str, kind: type | tuple[type, ...], *,
            source: str, prefix: str) -> Any:
    """Return ``table[key]`` when it has type ``kind``; else raise :class:`InputError`."""
    value = table.get(key)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind in (int, float)):
        raise InputError(f"expected {_kind_name(kind)}, got {value!r}", path=source,
                         field=f"{prefix}.{key}")
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(k.__name__ for k in kinds)
