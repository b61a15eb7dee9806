"""The outcome-blind audit of a registered design, by name (seeds 000, 001: "Falsify the
instrument before measuring the models").

``design`` is domain-free and may not import ``chess``; the A105, E020/E021 and E022
audits render chess prompts, so the choice of audit by name is made here, in the chess
studies that register those designs.
"""

from __future__ import annotations

from pathlib import Path

from rungbench.chess.studies.ladder_audit import ladder_audit
from rungbench.chess.studies.panels import a105_audit
from rungbench.design.audit import AuditReport, order_audit
from rungbench.design.presets import arms_design, factorial_design
from rungbench.design.registry import load_design, load_design_file
from rungbench.errors import InputError

LADDER_PRESETS = {"e020": "e020_e021", "e022": "e022", "e021": "e020_e021",
                  "e020_e021": "e020_e021"}
"""Audit names of the ladder presets → the registered preset each audits (``e021`` and
``e020_e021`` are aliases of ``e020``)."""
AUDITS = ("a105", "e023", "e020", "e022")
"""Designs that have an audit (one name each)."""


def audit_design(name: str, path: Path | None = None) -> AuditReport:
    """Run the audit of design ``name`` (one of :data:`AUDITS`), optionally on the preset
    in ``path`` instead of the registered one."""
    reg = load_design_file(path) if path is not None else None
    if name == "a105":
        return a105_audit(factorial_design(reg))
    if name == "e023":
        return order_audit(arms_design(reg))
    if name in LADDER_PRESETS:
        return ladder_audit(reg or load_design(LADDER_PRESETS[name]))
    raise InputError(f"no audit for design {name!r}; audits: {', '.join(AUDITS)}",
                     field="design")
