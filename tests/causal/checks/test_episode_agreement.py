"""Scorer agreement on the episode families: hand cases, hand episodes, 1,000 generated."""

from __future__ import annotations

import ast
import pathlib

from rungbench.causal.checks import second_scorer
from rungbench.causal.checks.agreement import episode_agreement, episode_hand_cases


def test_hand_cases_cover_every_family() -> None:
    """At least five hand cases per episode family."""
    cases = episode_hand_cases()
    fams: dict[str, int] = {}
    for c in cases:
        fams[c["oracle"]["family"]] = fams.get(c["oracle"]["family"], 0) + 1
    assert len(fams) == 5 and min(fams.values()) >= 5


def test_agreement_hand_100_generated_99() -> None:
    """Both scorers match every hand verdict and episode and agree on ≥ 99% of 1,000."""
    r = episode_agreement(1000, 20261003)
    assert r["hand"]["rate"] == 1.0, r["hand"]["disagreements"][:3]
    assert all(e["agree"] for e in r["episodes"])
    assert r["generated"]["n"] == 1000 and r["generated"]["rate"] >= 0.99
    assert r["pass"]


def test_second_scorer_imports_nothing_from_scm_or_bench() -> None:
    """The second scorer stays independent of causal.scm and causal.bench."""
    tree = ast.parse(pathlib.Path(second_scorer.__file__).read_text())
    names = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    names += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not any(m.startswith(("rungbench.causal.scm", "rungbench.causal.bench"))
                   for m in names)
