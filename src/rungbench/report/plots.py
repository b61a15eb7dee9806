"""Inline SVG plots of the report (no image files, no plotting library, no network).

:func:`coverage_selection` draws seed 001's aliasing example: the curve C × S = 0.315 on
which the ideas-limited (C 0.35, S 0.90) and vision-limited (C 0.90, S 0.35) agents sit
with one and the same headline rate, and every measured profile as a point with its two
intervals. :func:`forest` draws estimates with intervals around zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rungbench.report.html import esc

SEED_PRODUCT = 0.315
"""Seed 001: both agents find Stockfish's preferred move 31.5% of the time."""
SEED_AGENTS = (("ideas-limited (seed)", 0.35, 0.90), ("vision-limited (seed)", 0.90, 0.35))
"""Seed 001's two agents: (label, coverage C, conditional selection S)."""


@dataclass(frozen=True)
class Point:
    """One measured profile."""

    label: str
    """What the point is (model · split)."""
    coverage: float
    """Estimated coverage C."""
    coverage_interval: tuple[float, float]
    """Its interval."""
    selection: float
    """Estimated conditional selection S."""
    selection_interval: tuple[float, float]
    """Its interval."""


W, H, PAD = 460, 400, 52
"""Canvas size and margin (pixels)."""


def _x(c: float) -> float:
    return PAD + c * (W - 2 * PAD)


def _y(s: float) -> float:
    return H - PAD - s * (H - 2 * PAD)


def _axes(xlabel: str, ylabel: str) -> list[str]:
    out = [f'<line x1="{PAD}" y1="{H - PAD}" x2="{W - PAD}" y2="{H - PAD}" stroke="#333"/>',
           f'<line x1="{PAD}" y1="{PAD}" x2="{PAD}" y2="{H - PAD}" stroke="#333"/>']
    for t in (0.0, 0.25, 0.5, 0.75, 1.0):
        out.append(f'<text x="{_x(t):.1f}" y="{H - PAD + 16}" font-size="11" '
                   f'text-anchor="middle">{t:g}</text>')
        out.append(f'<text x="{PAD - 8}" y="{_y(t) + 4:.1f}" font-size="11" '
                   f'text-anchor="end">{t:g}</text>')
    out.append(f'<text x="{W / 2}" y="{H - 12}" font-size="12" text-anchor="middle">'
               f"{esc(xlabel)}</text>")
    out.append(f'<text x="14" y="{H / 2}" font-size="12" text-anchor="middle" '
               f'transform="rotate(-90 14 {H / 2})">{esc(ylabel)}</text>')
    return out


def coverage_selection(points: Sequence[Point]) -> str:
    """The C × S plane with the 0.315 curve, the seed's two agents and ``points``."""
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
             f'viewBox="0 0 {W} {H}" role="img" aria-label="coverage times selection">',
             f"<title>coverage × conditional selection; the curve is C × S = "
             f"{SEED_PRODUCT}</title>",
             *_axes("coverage C (best move in the agent's own shortlist)",
                    "selection S (best chosen when shown)")]
    curve = [(c / 100, SEED_PRODUCT / (c / 100)) for c in range(32, 101)]
    path = " ".join(f"{'M' if i == 0 else 'L'}{_x(c):.1f},{_y(s):.1f}"
                    for i, (c, s) in enumerate(curve) if s <= 1.0)
    parts.append(f'<path d="{path}" fill="none" stroke="#9a6700" stroke-width="2" '
                 'stroke-dasharray="6 4"/>')
    parts.append(f'<text x="{_x(0.62):.1f}" y="{_y(0.56):.1f}" font-size="11" '
                 f'fill="#9a6700">C × S = {SEED_PRODUCT}</text>')
    for label, c, s in SEED_AGENTS:
        parts.append(f'<circle cx="{_x(c):.1f}" cy="{_y(s):.1f}" r="6" fill="none" '
                     f'stroke="#9a6700" stroke-width="2"><title>{esc(label)}: C {c}, S {s}'
                     "</title></circle>")
        parts.append(f'<text x="{_x(c) + 8:.1f}" y="{_y(s) - 8:.1f}" font-size="11" '
                     f'fill="#9a6700">{esc(label)}</text>')
    colours = ("#0969da", "#cf222e", "#1a7f37", "#8250df")
    for i, p in enumerate(points):
        colour = colours[i % len(colours)]
        (c0, c1), (s0, s1) = p.coverage_interval, p.selection_interval
        parts.append(f'<line x1="{_x(c0):.1f}" y1="{_y(p.selection):.1f}" x2="{_x(c1):.1f}" '
                     f'y2="{_y(p.selection):.1f}" stroke="{colour}" stroke-width="2"/>')
        parts.append(f'<line x1="{_x(p.coverage):.1f}" y1="{_y(s0):.1f}" '
                     f'x2="{_x(p.coverage):.1f}" y2="{_y(s1):.1f}" stroke="{colour}" '
                     'stroke-width="2"/>')
        parts.append(f'<circle cx="{_x(p.coverage):.1f}" cy="{_y(p.selection):.1f}" r="5" '
                     f'fill="{colour}"><title>{esc(p.label)}: C {p.coverage:.3f}, '
                     f"S {p.selection:.3f}</title></circle>")
        parts.append(f'<text x="{_x(p.coverage) + 7:.1f}" y="{_y(p.selection) + 14:.1f}" '
                     f'font-size="11" fill="{colour}">{esc(p.label)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def forest(rows: Sequence[tuple[str, float, float, float]], *, xlabel: str) -> str:
    """Estimates with intervals as horizontal bars around zero: (label, mean, low, high)."""
    if not rows:
        return ""
    left, right, top, step = 230, 40, 20, 22
    height = top + step * len(rows) + 40
    span = max(0.05, *(max(abs(lo), abs(hi)) for _, _, lo, hi in rows)) * 1.1
    width = 640

    def x(v: float) -> float:
        return left + (v + span) / (2 * span) * (width - left - right)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="{esc(xlabel)}">',
             f'<line x1="{x(0):.1f}" y1="{top - 8}" x2="{x(0):.1f}" '
             f'y2="{top + step * len(rows)}" stroke="#888" stroke-dasharray="3 3"/>']
    for i, (label, mean, low, high) in enumerate(rows):
        y = top + step * i + 8
        parts.append(f'<text x="{left - 8}" y="{y + 4}" font-size="11" text-anchor="end">'
                     f"{esc(label)}</text>")
        parts.append(f'<line x1="{x(low):.1f}" y1="{y}" x2="{x(high):.1f}" y2="{y}" '
                     'stroke="#0969da" stroke-width="2"/>')
        parts.append(f'<circle cx="{x(mean):.1f}" cy="{y}" r="4" fill="#0969da">'
                     f"<title>{esc(label)}: {mean:+.4f} [{low:+.4f}, {high:+.4f}]</title>"
                     "</circle>")
    base = top + step * len(rows) + 16
    for t in (-span, 0.0, span):
        parts.append(f'<text x="{x(t):.1f}" y="{base}" font-size="11" '
                     f'text-anchor="middle">{t:+.2f}</text>')
    parts.append(f'<text x="{(left + width) / 2:.1f}" y="{base + 18}" font-size="12" '
                 f'text-anchor="middle">{esc(xlabel)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)
