"""Byte-matched blocks: renders of one unit under every condition may differ only inside
registered content spans (seed 000, "The control cannot merely be a shorter prompt" and
claim-gate condition 4, "Complete rendered-prompt bytes differ only at registered content
offsets").

A render is bytes plus the half-open spans ``[start, end)`` where condition-dependent
content sits. Within a matched block every render has the same length and the same
spans, and every differing byte falls inside a span.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rungbench.errors import InputError

Span = tuple[int, int]
"""Half-open byte range ``[start, end)``."""


@dataclass(frozen=True)
class Render:
    """Rendered bytes and the registered spans where content may differ."""

    data: bytes
    """The complete rendered bytes."""
    spans: tuple[Span, ...]
    """Registered content spans, sorted and non-overlapping."""

    def __post_init__(self) -> None:
        end = 0
        for start, stop in self.spans:
            if not end <= start <= stop <= len(self.data):
                raise InputError(f"span {(start, stop)} overlaps, is unsorted or exceeds "
                                 f"{len(self.data)} bytes", field="spans")
            end = stop

    def content_mask(self) -> np.ndarray:
        """Boolean array over the bytes: True inside a registered span."""
        mask = np.zeros(len(self.data), dtype=bool)
        for start, stop in self.spans:
            mask[start:stop] = True
        return mask

    def contents(self) -> list[bytes]:
        """The bytes of every span, in order."""
        return [self.data[a:b] for a, b in self.spans]


@dataclass(frozen=True)
class BlockCheck:
    """Result of matching every render of one block against the first one."""

    lengths: dict[str, int]
    """Byte length of each condition's render."""
    length_mismatches: int
    """Conditions whose length differs from the reference condition's."""
    span_mismatches: int
    """Conditions whose registered spans differ from the reference condition's."""
    stray_offsets: int
    """Differing byte offsets outside every registered span, summed over conditions."""

    @property
    def matched(self) -> bool:
        """Whether the block is byte-matched outside its registered content."""
        return not (self.length_mismatches or self.span_mismatches or self.stray_offsets)

    def to_json(self) -> dict[str, Any]:
        """Return the check as a JSON-ready mapping."""
        return {"lengths": dict(self.lengths), "length_mismatches": self.length_mismatches,
                "span_mismatches": self.span_mismatches, "stray_offsets": self.stray_offsets,
                "matched": self.matched}


def differing_offsets(a: bytes, b: bytes) -> list[int]:
    """Offsets where two equal-length byte strings differ."""
    if len(a) != len(b):
        raise InputError(f"cannot diff {len(a)} bytes against {len(b)}", field="data")
    left = np.frombuffer(a, dtype=np.uint8)
    right = np.frombuffer(b, dtype=np.uint8)
    return [int(i) for i in np.flatnonzero(left != right)]


def stray_offsets(a: Render, b: Render) -> list[int]:
    """Offsets where ``a`` and ``b`` differ outside ``a``'s registered spans."""
    mask = a.content_mask()
    return [i for i in differing_offsets(a.data, b.data) if not mask[i]]


def check_block(renders: Mapping[str, Render]) -> BlockCheck:
    """Match every render of a block against the first; count each kind of mismatch."""
    if not renders:
        raise InputError("a block needs at least one render", field="renders")
    names: Sequence[str] = list(renders)
    ref = renders[names[0]]
    lengths = {n: len(r.data) for n, r in renders.items()}
    length_bad = sum(1 for n in names[1:] if lengths[n] != len(ref.data))
    span_bad = sum(1 for n in names[1:] if renders[n].spans != ref.spans)
    stray = sum(len(stray_offsets(ref, renders[n])) for n in names[1:]
                if lengths[n] == len(ref.data))
    return BlockCheck(lengths, length_bad, span_bad, stray)
