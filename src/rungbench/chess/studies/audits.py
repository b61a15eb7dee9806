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
from rungbench.chess.studies.study_presets import study_preset
from rungbench.design.audit import AuditReport, order_audit
from rungbench.design.presets import arms_design, factorial_design
from rungbench.design.registry import load_design, load_design_file, registered_names
from rungbench.errors import InputError

LADDER_PRESETS = {"e020": "e020_e021", "e022": "e022", "e021": "e020_e021",
                  "e020_e021": "e020_e021"}
"""Audit names of the ladder presets → the registered preset each audits (``e021`` and
``e020_e021`` are aliases of ``e020``)."""
AUDITS = ("a105", "e023", "e020", "e022")
"""Designs that have an audit (one name each)."""


KIND_AUDITS = {"factorial_2x2": "a105", "counterbalanced_arms": "e023",
               "intervention_ladder": "e020", "falsifier_arms": "e022"}
"""The audit of each chess study kind."""


def audit_design(name: str, path: Path | None = None) -> AuditReport:
    """Run the audit of design ``name`` (one of :data:`AUDITS`, or any bundled preset by
    its name: ``demo_a105`` is audited as A105), optionally on the preset in ``path``
    instead of the registered one. The preset is checked against its kind's key schema
    first (an unknown key or value refuses before any work)."""
    reg = load_design_file(path) if path is not None else None
    if reg is None and name not in AUDITS and name not in LADDER_PRESETS \
            and name in registered_names():
        reg = load_design(name)
    if reg is not None and name not in AUDITS and name not in LADDER_PRESETS:
        name = KIND_AUDITS.get(str(reg.document.get("design", {}).get("kind")), name)
    if name not in AUDITS and name not in LADDER_PRESETS:
        raise InputError(f"no audit for design {name!r}; audits: {', '.join(AUDITS)} or a "
                         f"bundled preset ({', '.join(registered_names())})", field="design")
    reg = reg or load_design({"a105": "a105", "e023": "e023"}.get(name)
                             or LADDER_PRESETS[name])
    kind = study_preset(reg).design.kind
    if KIND_AUDITS[kind] != {"e021": "e020", "e020_e021": "e020"}.get(name, name):
        raise InputError(f"{reg.source} is a {kind} preset, audited as "
                         f"{KIND_AUDITS[kind]}, not {name}", path=reg.source,
                         field="design.kind")
    if kind == "factorial_2x2":
        return a105_audit(factorial_design(reg))
    if kind == "counterbalanced_arms":
        return order_audit(arms_design(reg))
    return ladder_audit(reg)
