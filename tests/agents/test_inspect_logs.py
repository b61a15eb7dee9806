"""The one inspect-log reader the chess and causal bridges share."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import skip_unless_ci

from rungbench.agents import inspect_logs
from rungbench.errors import InputError


def test_missing_or_damaged_log_is_one_input_error(tmp_path: Path) -> None:
    """A missing log and a file that is not an inspect log each raise InputError naming it."""
    if inspect_logs.inspect_available() is not None:
        skip_unless_ci("inspect_ai is not installed")
    with pytest.raises(InputError, match="inspect log not found") as missing:
        inspect_logs.read_log(tmp_path / "absent.eval")
    assert "absent.eval" in str(missing.value)
    junk = tmp_path / "junk.json"
    junk.write_text("{not json")
    with pytest.raises(InputError, match="not a readable inspect log"):
        inspect_logs.read_log(junk)
