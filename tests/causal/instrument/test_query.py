"""The causal() protocol: section D unit checks on fixed and naive, errors, loopback rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from rungbench.causal.instrument.probes import _unit_specs, unit_checks
from rungbench.causal.instrument.query import check_loopback, fixed, load_tool, naive, parse_query
from rungbench.errors import InputError

UNIT_NAMES = [name for name, _, _ in _unit_specs()]


@pytest.mark.parametrize("check", UNIT_NAMES)
def test_fixed_passes_each_section_d_unit_case(check: str, tmp_path: Path) -> None:
    """Each seed section D behaviour holds for the fixed query."""
    result = {r.check: r for r in unit_checks(fixed, tmp_path)}[check]
    assert result.passed, result.detail


def test_naive_fails_the_cases_the_seed_says_it_fails(tmp_path: Path) -> None:
    """naive finds intact direct edges but fails reversal, alias, 2-hop, sign, condition."""
    passed = {r.check for r in unit_checks(naive, tmp_path) if r.passed}
    assert passed == {UNIT_NAMES[0], UNIT_NAMES[1], UNIT_NAMES[8], UNIT_NAMES[9]}


def test_parse_query_reads_the_three_forms() -> None:
    """The three wordings parse; text that is neither is malformed."""
    assert parse_query("does disk full cause oom kill?").effect == "oom kill"
    assert parse_query("What does disk full cause?").form == "effects"
    assert parse_query("what causes oom kill").form == "causes"


def test_http_urls_must_be_loopback_unless_allowed() -> None:
    """A non-loopback URL is refused by name unless --allow-remote is given."""
    assert check_loopback("http://127.0.0.1:9/causal", allow_remote=False)
    with pytest.raises(InputError, match="allow-remote"):
        check_loopback("http://10.1.2.3:80/", allow_remote=False)
    assert check_loopback("http://10.1.2.3:80/", allow_remote=True)
    with pytest.raises(InputError, match="module:function"):
        load_tool("not-a-spec")
