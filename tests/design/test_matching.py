"""Byte-matched blocks (seed 000, claim-gate condition 4)."""

from __future__ import annotations

import pytest

from rungbench.design.matching import Render, check_block, differing_offsets, stray_offsets
from rungbench.errors import InputError


def test_differences_inside_spans_are_matched() -> None:
    """Renders differing only inside registered spans pass with zero stray offsets."""
    a = Render(b"A:xx B:xxx", ((2, 4), (7, 10)))
    b = Render(b"A:e4 B:xxx", ((2, 4), (7, 10)))
    check = check_block({"masked": a, "board": b})
    assert check.matched and check.stray_offsets == 0
    assert differing_offsets(a.data, b.data) == [2, 3]


def test_difference_outside_spans_is_stray() -> None:
    """A changed label byte is reported as a stray offset."""
    a = Render(b"A:xx B:xxx", ((2, 4), (7, 10)))
    b = Render(b"a:xx B:xxx", ((2, 4), (7, 10)))
    assert stray_offsets(a, b) == [0]
    assert not check_block({"a": a, "b": b}).matched


def test_length_and_span_mismatches_counted() -> None:
    """A longer render and a render with moved spans are each counted."""
    a = Render(b"A:xx", ((2, 4),))
    check = check_block({"a": a, "b": Render(b"A:xxx", ((2, 5),)),
                         "c": Render(b"A:xx", ((1, 3),))})
    assert check.length_mismatches == 1 and check.span_mismatches == 2


def test_bad_spans_raise() -> None:
    """Overlapping or out-of-range spans raise InputError."""
    with pytest.raises(InputError, match="span"):
        Render(b"abc", ((0, 2), (1, 3)))
    with pytest.raises(InputError, match="span"):
        Render(b"abc", ((0, 4),))
