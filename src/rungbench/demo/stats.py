"""Demo stage: recompute the seeds' statistical figures (``detail``: the figure list)."""

from __future__ import annotations

from pathlib import Path

from rungbench.demo import StageResult
from rungbench.stats.seeds import seed_figure_list


def run(workdir: Path) -> StageResult:
    """Recompute every seed figure; fail when one does not reproduce at the seed's precision."""
    del workdir  # pure computation: nothing to write
    figures = seed_figure_list()
    mismatched = [f"{f.key}: printed {f.printed:g}, computed {f.computed:.6g}"
                  for f in figures if not f.match]
    summary = {
        "figures": {f.key: f.to_json() for f in figures},
        "matched": sum(f.match for f in figures),
        "total": len(figures),
        "all_match": all(f.match for f in figures),
    }
    failure = "seed figures not reproduced: " + "; ".join(mismatched) if mismatched else None
    return StageResult(summary, figures, failure)
