"""The static HTML report of a study or a demo directory (``rungbench report DIR``).

:func:`render_report` reads and verifies every input first (:mod:`.inputs`; anything
that does not verify raises and nothing is written), renders the sections of
:mod:`.sections` and writes one self-contained ``report/index.html``: inline style and
inline SVG plots, no script, no network, no external file. The page holds no time and no
absolute path of the machine it was made on, so the same inputs give the same bytes.

``report`` sits above both domains (it reads chess and causal outputs) and below ``demo``
and ``cli``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rungbench.errors import InputError
from rungbench.evidence.canonical import bytes_digest
from rungbench.evidence.sealed import SEAL_NAME
from rungbench.evidence.store import write_atomic
from rungbench.report.html import absent, esc, page
from rungbench.report.inputs import Inputs, collect
from rungbench.report.sections import SECTIONS

REPORT_DIR = "report"
"""Folder the page is written into, inside the report's root by default."""
PAGE = "index.html"
"""The page's file name."""


def render(inputs: Inputs) -> tuple[str, dict[str, str]]:
    """The page for verified ``inputs``, and each section's state (present/absent)."""
    toc = "".join(f'<li><a href="#{key}">{esc(title)}</a></li>' for key, title, _ in SECTIONS)
    body = [f"<h1>rungbench report: {esc(inputs.root.resolve().name)}</h1>",
            f"<nav><ol>{toc}</ol></nav>"]
    states: dict[str, str] = {}
    for key, title, section in SECTIONS:
        html = section(inputs)
        states[key] = "absent" if html.startswith('<p class="absent">') else "present"
        body.append(f'<section id="{key}"><h2>{esc(title)}</h2>\n{html}\n</section>')
    return page(f"rungbench report: {inputs.root.resolve().name}", "\n".join(body)), states


def default_out(root: Path) -> Path:
    """``root/report``, or beside ``root`` when ``root`` is sealed (a file added inside a
    sealed directory would make it fail its next verification)."""
    if (root / SEAL_NAME).is_file():
        return root.parent / f"{root.name}.{REPORT_DIR}"
    return root / REPORT_DIR


def render_report(root: Path, *, out: Path | None = None,
                  stage: Path | None = None) -> dict[str, Any]:
    """Verify ``root``'s inputs, write ``out/index.html`` (default :func:`default_out`)."""
    inputs = collect(root, stage=stage)
    if not inputs.all():
        raise InputError("no report input here: not a demo folder (report-inputs.json), a "
                         "study (manifest/), a scored causal run (run_manifest.json) or a "
                         "transcript corpus (manifest.json, corpus_manifest.json)",
                         path=str(root))
    html, states = render(inputs)
    target = (out or default_out(root)) / PAGE
    target.parent.mkdir(parents=True, exist_ok=True)
    data = html.encode("utf-8")
    write_atomic(target, data, overwrite=True)  # derived from verified inputs, not frozen
    return {"report": str(target), "digest": bytes_digest(data), "inputs": len(inputs.all()),
            "sections": states}


__all__ = [
    "PAGE", "REPORT_DIR", "absent", "collect", "default_out", "inputs", "render",
    "render_report",
]
