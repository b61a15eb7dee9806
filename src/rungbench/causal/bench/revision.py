"""Sequential revision episodes and their metrics (seed 003 "Revision items (multi-stage)").

One incident, three stages within one episode (state kept within it, reset between
episodes): stage 1 delivers one telemetry node under the stated mechanism; stage 2
adds more telemetry; stage 3 announces a corrected mechanism (one symptom's wiring
was wrong: it hangs off a different fault) and delivers one more node. Each stage
is scored against the evidence available at that stage: its identified set is
computed under the mechanism announced so far. The telemetry is drawn from the
corrected (true) mechanism, conditioned on every earlier stage being possible
under the mechanism stated then. The ``stale_mechanism`` causes are the
identified set of stage 3 computed with the superseded mechanism; episodes are
kept only when that set holds a cause the corrected mechanism excludes, and each
stage leaves at least one telemetry node to probe.

Metrics over an episode's consecutive stages (k−1 → k), with the agent's named
causes a_{k−1}, a_k (None when it abstained), the identified sets I_k and the
reference answer r_k (the single member of I_k, or None):

- revision accuracy: among transitions where r_k ≠ r_{k−1}, the share with a_k = r_k;
- stale-belief rate: among transitions where a_{k−1} is a cause outside I_k
  (refuted), the share with a_k = a_{k−1};
- collateral-retraction rate: among transitions where a_{k−1} is still in I_k,
  the share with a_k ≠ a_{k−1}.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from rungbench.causal.bench.incidents import Diagnosis, Incident, IncidentWorld, draw_incident
from rungbench.causal.scm import mechanisms
from rungbench.causal.scm.world import Variable, World

N_STAGES = 3
"""Stages per revision episode."""


@dataclass(frozen=True)
class RevisionStage:
    """One stage: the mechanism believed at that stage and the evidence delivered so far."""

    stage: int
    """1-based stage number."""
    diagnosis: Diagnosis
    """Oracle quantities under the stage's mechanism and evidence."""
    revised: str | None
    """The symptom whose mechanism this stage corrects (stage 3), else None."""
    stale: Diagnosis | None
    """Stage 3: the same evidence under the superseded mechanism."""
    fault: str = ""
    """The episode's true fault (shared by every stage)."""


def rewire(iw: IncidentWorld, symptom: str, fault: str) -> IncidentWorld:
    """The incident world with ``symptom`` made a deterministic symptom of ``fault`` alone."""
    vs = tuple(Variable(v.name, (fault,), mechanisms.noisy_or([1.0], 0.0), v.observed)
               if v.name == symptom else v for v in iw.world.variables)
    return replace(iw, world=World(iw.world.world_id, vs))


def draw_revision(stated: IncidentWorld, rng: np.random.Generator,
                  tries: int = 20) -> list[RevisionStage] | None:
    """Draw a 3-stage revision episode over ``stated``; None when no draw is consistent."""
    for _ in range(tries):
        symptom = stated.symptoms[int(rng.integers(len(stated.symptoms)))]
        parents = stated.world.var(symptom).parents
        options = [f for f in stated.faults if f not in parents]
        if not options:
            continue
        true_iw = rewire(stated, symptom, options[int(rng.integers(len(options)))])
        inc = draw_incident(true_iw, rng, n_shown=len(stated.symptoms))
        order = [s for s in inc.shown if s != symptom]
        rng.shuffle(order)
        if len(order) < 3:
            continue
        k2 = int(rng.integers(2, len(order)))
        stages = _stages(stated, true_iw, inc, order[:1], order[:k2], [*order[:k2], symptom],
                         symptom)
        if stages is not None:
            return stages
    return None


def _stages(stated: IncidentWorld, true_iw: IncidentWorld, inc: Incident, s1: list[str],
            s2: list[str], s3: list[str], symptom: str) -> list[RevisionStage] | None:
    def diag(iw: IncidentWorld, shown: list[str]) -> Diagnosis:
        return Diagnosis(iw, Incident(iw, inc.fault, inc.telemetry, tuple(shown)).evidence())

    d1, d2, d3 = diag(stated, s1), diag(stated, s2), diag(true_iw, s3)
    stale = diag(stated, s3)
    if not (d1.identified_set and d2.identified_set and d3.identified_set):
        return None
    if not set(stale.identified_set) - set(d3.identified_set):
        return None
    f = inc.fault
    return [RevisionStage(1, d1, None, None, f), RevisionStage(2, d2, None, None, f),
            RevisionStage(3, d3, symptom, stale, f)]


def reference_answer(identified: Sequence[str]) -> str | None:
    """The cause a stage's evidence identifies, or None when several remain."""
    return identified[0] if len(identified) == 1 else None


def revision_metrics(stages: Sequence[tuple[Sequence[str], str | None]]) -> dict[str, Any]:
    """Counts and rates over one or more episodes' transitions.

    ``stages`` lists (identified set, agent's named cause or None) per stage of one
    episode in stage order; pass episodes one at a time and add the counts, or use
    :func:`pooled_revision_metrics`.
    """
    counts = {"should_change": 0, "revised_right": 0, "refuted": 0, "stale": 0,
              "supported": 0, "retracted": 0}
    for (prev_set, prev_a), (cur_set, cur_a) in itertools.pairwise(stages):
        if reference_answer(cur_set) != reference_answer(prev_set):
            counts["should_change"] += 1
            counts["revised_right"] += int(cur_a == reference_answer(cur_set))
        if prev_a is not None and prev_a not in cur_set:
            counts["refuted"] += 1
            counts["stale"] += int(cur_a == prev_a)
        if prev_a is not None and prev_a in cur_set:
            counts["supported"] += 1
            counts["retracted"] += int(cur_a != prev_a)
    return counts


def pooled_revision_metrics(episodes: Sequence[Sequence[tuple[Sequence[str], str | None]]]
                            ) -> dict[str, Any]:
    """Pooled counts and the three rates (None when a rate's denominator is 0)."""
    total = dict.fromkeys(("should_change", "revised_right", "refuted", "stale", "supported",
                           "retracted"), 0)
    for ep in episodes:
        for k, v in revision_metrics(ep).items():
            total[k] += v

    def rate(num: str, den: str) -> float | None:
        return total[num] / total[den] if total[den] else None

    return {**total,
            "revision_accuracy": rate("revised_right", "should_change"),
            "stale_belief_rate": rate("stale", "refuted"),
            "collateral_retraction_rate": rate("retracted", "supported")}
