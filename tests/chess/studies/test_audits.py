"""The audit of a design by name: a105, e023, e020 (aliases e021, e020_e021) and e022."""

from __future__ import annotations

import pytest

from rungbench.chess.studies.audits import AUDITS, LADDER_PRESETS, audit_design
from rungbench.design.registry import load_design
from rungbench.errors import InputError


def test_every_audit_name_is_listed_once() -> None:
    """AUDITS names each audited design once; the ladder aliases resolve to its presets."""
    assert AUDITS == ("a105", "e023", "e020", "e022")
    assert {LADDER_PRESETS[n] for n in ("e020", "e021", "e020_e021")} == {"e020_e021"}


def test_e021_alias_audits_the_ladder_preset() -> None:
    """`e021` audits the registered e020_e021 preset (same digest as `e020`)."""
    report = audit_design("e021")
    assert report.ok and report.digest == load_design("e020_e021").digest


def test_unknown_design_names_the_audits() -> None:
    """An unknown name is an input error listing every audit."""
    with pytest.raises(InputError, match="e020, e022"):
        audit_design("e099")
