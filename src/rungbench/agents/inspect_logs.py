"""Reading inspect_ai evaluation logs (the optional ``inspect`` extra).

Shared by the chess study's and the causal benchmark's inspect bridges, which may not import
each other.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rungbench.errors import InputError, missing_extra, require_extra


def inspect_available() -> str | None:
    """None when the ``inspect`` extra is installed, else why not (for skips and usage errors)."""
    return missing_extra("inspect_ai", "inspect")


def require_inspect() -> None:
    """Raise ExtraMissing (field ``inspect``) unless inspect_ai is installed."""
    require_extra("inspect_ai", "inspect", field="inspect")


def read_log(path: Path) -> Any:
    """Read an inspect log (``.eval`` or ``.json``); InputError when missing or unreadable."""
    require_inspect()
    from inspect_ai.log import read_eval_log

    if not path.is_file():
        raise InputError("inspect log not found", path=str(path))
    try:
        return read_eval_log(str(path))
    except Exception as exc:  # inspect raises many kinds for a damaged log
        raise InputError(f"not a readable inspect log: {exc}", path=str(path)) from None
