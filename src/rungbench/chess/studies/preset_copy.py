"""A bundled preset copied for one's own models (``rungbench design new NAME --model LABEL``).

A chess preset registers its models by label, and some registered figures follow from how
many there are: A105's ``planned_cells``, its family size and primary tests (one board and
one legal-list test per model); E020/E021's and E022's ``[cells]`` counts. The seed's printed
figures (``[seed_figures]``) describe the registered size, so a copy for another number of
models drops them. Copying a preset
for other labels rewrites exactly those lines — each figure scaled from the preset's own
per-model count, never typed anew — and leaves every other byte, comment included, as
registered. The copy parses back to the labels given (checked here), and is then checked
like any preset when it is bound.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Sequence
from typing import Any

from rungbench.agents.spec import check_label
from rungbench.errors import InputError


def _line(text: str, key: str, value: Any, source: str) -> str:
    """``text`` with the one ``key = ...`` line set to ``value`` (TOML)."""
    pattern = re.compile(rf"^{re.escape(key)} = .*$", re.M)
    if len(pattern.findall(text)) != 1:
        raise InputError(f"the preset does not hold exactly one {key!r} line to rewrite",
                         path=source, field=key)
    return pattern.sub(lambda _: f"{key} = {json.dumps(value)}", text)


def for_models(text: str, labels: Sequence[str], *, source: str) -> str:
    """The preset TOML ``text`` registered for ``labels`` instead of its own models."""
    for label in labels:
        check_label(label)
    if not labels or len(set(labels)) != len(labels):
        raise InputError("give one or more distinct model labels", field="model")
    document = tomllib.loads(text)
    schedule = document.get("schedule", {})
    old = schedule.get("models")
    if not isinstance(old, list) or not old:
        raise InputError("this preset registers no models to replace (any label runs it)",
                         path=source, field="schedule.models")
    out = _line(text, "models", list(labels), source)
    per = len(labels) / len(old)
    if "planned_cells" in schedule:
        out = _line(out, "planned_cells", round(schedule["planned_cells"] * per), source)
    analysis = document.get("analysis", {})
    if "primary_tests" in analysis:
        factors = sorted({t.split(":", 1)[1] for t in analysis["primary_tests"]},
                         key=[t.split(":", 1)[1] for t in analysis["primary_tests"]].index)
        tests = [f"{label}:{factor}" for label in labels for factor in factors]
        out = _line(out, "primary_tests", tests, source)
        if "family_size" in analysis:
            out = _line(out, "family_size", len(tests), source)
    cells = document.get("cells", {})
    for key in ("move_choice", "probes", "choice", "total"):
        if key in cells:
            out = _line(out, key, round(cells[key] * per), source)
    if per != 1 and "seed_figures" in document:
        out = _without_table(out, "seed_figures")
    if tomllib.loads(out).get("schedule", {}).get("models") != list(labels):
        raise InputError("the copy does not register the labels given", path=source,
                         field="schedule.models")
    return out


def _without_table(text: str, table: str) -> str:
    """``text`` less the ``[table]`` section (up to the next table or the end), replaced by
    a comment saying why: the seed's figures describe the registered size, not the copy's."""
    pattern = re.compile(rf"^\[{re.escape(table)}\]\n(?:(?!\[).*\n?)*", re.M)
    note = (f"# [{table}] of the bundled preset removed: the seed's printed figures are\n"
            "# for its registered size, and this copy registers another number of models.\n")
    return pattern.sub(note, text, count=1)
