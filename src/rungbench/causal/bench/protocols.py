"""Seed 003 P2 ("worker debugging protocol") evaluated on simulated incidents.

Two policies answer the same incidents (paired by world): **premature commitment**
names the first plausible cause (the first live cause in listing order) and repairs
it at once; the **P2 protocol** records the two most probable live causes and, when
two or more are live and a check separates them, runs the one discriminating check
with the largest EIG, then repairs the cause with the least expected loss given
its result. Endpoint: decision regret = the policy's expected loss (probe cost
included, averaged over the check's outcome under the posterior) minus the best
strategy's (act now, or probe one node then act), all from the exact oracle. The
paired difference premature − P2 gets a cluster-bootstrap interval over worlds;
the realized diagnosis outcome of each policy (after the sampled check result)
gives the "lucky" and justified-correct rates, reported separately.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rungbench.causal.bench.incidents import ACT_NOW, draw_incident, draw_incident_world
from rungbench.stats.paired import paired_cluster_bootstrap


def _outcome(label: str, fault: str, live: list[str]) -> str:
    if label == fault:
        return "correct" if len(live) == 1 else "lucky"
    return "consistent_unjustified" if label in live else "wrong"


def p2_incident(world_seed: int) -> dict[str, Any]:
    """Both policies on one simulated incident of world ``world_seed``."""
    rng = np.random.default_rng(world_seed)
    iw = draw_incident_world(rng, f"p2w{world_seed}")
    inc = draw_incident(iw, rng)
    d = inc.diagnosis()
    best = min(d.experiment_loss.values())
    live = d.identified_set
    first = live[0]
    premature_loss = d.expected_loss[f"repair:{first}"]
    check = None
    if len(live) >= 2 and d.discriminating:
        # Two competing causes are live; every probe in ``discriminating`` has EIG > 0
        # over the live set, so it separates them; run the most informative one.
        check = max(sorted(d.discriminating), key=lambda x: d.eig_bits[x])
    if check is None:
        p2_action = min(sorted(d.expected_loss), key=lambda a: d.expected_loss[a])
        p2_loss, after = d.expected_loss[p2_action], d
    else:
        p2_loss = d.experiment_loss[check]
        after = inc.diagnosis([check])
        p2_action = min(sorted(after.expected_loss), key=lambda a: after.expected_loss[a])
    p2_label = p2_action.removeprefix("repair:")
    return {
        "world": world_seed, "fault": inc.fault, "n_live": len(live), "check": check,
        "premature_regret": premature_loss - best, "p2_regret": p2_loss - best,
        "premature_outcome": _outcome(first, inc.fault, live),
        "p2_outcome": _outcome(p2_label, inc.fault, after.identified_set),
        "best_is_act_now": d.experiment_loss[ACT_NOW] <= best + 1e-12,
    }


def p2_comparison(n_incidents: int = 200, seed: int = 20261003,
                  n_boot: int = 2000) -> dict[str, Any]:
    """Premature commitment vs the P2 protocol on ``n_incidents`` incidents, one per world."""
    rng = np.random.default_rng(seed)
    rows = [p2_incident(int(s)) for s in rng.integers(1 << 40, 1 << 41, size=n_incidents)]
    a = [r["premature_regret"] for r in rows]
    b = [r["p2_regret"] for r in rows]
    delta = paired_cluster_bootstrap(a, b, [r["world"] for r in rows], n_boot=n_boot,
                                     rng=seed)

    def rate(key: str, outcome: str) -> float:
        return float(sum(r[key] == outcome for r in rows)) / len(rows)

    return {
        "n": len(rows), "mean_regret_premature": float(np.mean(a)),
        "mean_regret_p2": float(np.mean(b)), "paired_difference": delta.to_json(),
        "relative_reduction": 1 - float(np.mean(b)) / float(np.mean(a)) if np.mean(a) else None,
        "lucky_rate": {"premature": rate("premature_outcome", "lucky"),
                       "p2": rate("p2_outcome", "lucky")},
        "justified_correct_rate": {"premature": rate("premature_outcome", "correct"),
                                   "p2": rate("p2_outcome", "correct")},
        "share_with_two_live": sum(r["n_live"] >= 2 for r in rows) / len(rows),
    }
