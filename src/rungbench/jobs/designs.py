"""The outcome-blind audit of a registered design, by name.

``design`` is domain-free and may not import ``chess``; the A105 audit renders chess
panels, so the choice of audit by name is made here, above both.
"""

from __future__ import annotations

from pathlib import Path

from rungbench.design.audit import AuditReport, order_audit
from rungbench.design.presets import arms_design, factorial_design
from rungbench.design.registry import load_design_file
from rungbench.errors import InputError

AUDITS = ("a105", "e023")
"""Designs that have an audit."""


def audit_design(name: str, path: Path | None = None) -> AuditReport:
    """Run the audit of design ``name`` (``a105`` or ``e023``), optionally on the preset
    in ``path`` instead of the registered one."""
    reg = load_design_file(path) if path is not None else None
    if name == "a105":
        from rungbench.chess.studies.panels import a105_audit  # the A105 panels are chess-specific

        return a105_audit(factorial_design(reg))
    if name == "e023":
        return order_audit(arms_design(reg))
    raise InputError(f"no audit for design {name!r}; audits: {', '.join(AUDITS)}",
                     field="design")
