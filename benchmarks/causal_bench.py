"""Full-size causal benchmark figures, measured beside the seed 003 reference figures.

Builds dev (60 worlds), validation (200) and test (200) from one seed, runs every
reference agent on each split, audits the bench and (when the second scorer is
installed) runs the scorer agreement on 1,000 generated responses. Prints each
measured figure next to the seed's figure or the issue's target.
Usage: ``.venv/bin/python benchmarks/causal_bench.py [--seed S] [--out DIR]``.
"""

from __future__ import annotations

import argparse
import pathlib
import tempfile
import time

from rungbench.causal.bench.audit import audit_bench
from rungbench.causal.bench.build import build_split
from rungbench.causal.bench.evaluate import evaluate
from rungbench.causal.bench.reference_agents import POLICIES
from rungbench.causal.checks.agreement import scorer_agreement

SIZES = {"dev": 60, "validation": 200, "test": 200}
"""Worlds per split (seed 003 "Staged implementation prompt", stage 3)."""


def _row(name: str, measured: str, reference: str) -> None:
    print(f"{name:<52} {measured:>22}   {reference}")


def run(seed: int, root: pathlib.Path) -> None:
    """Build, evaluate, audit and print the figures."""
    _row("figure", "measured", "seed 003 / issue 4")
    for split, n in SIZES.items():
        t0 = time.perf_counter()
        built = build_split(split, n, seed, root / split, force=True)  # regenerate figures
        dt = time.perf_counter() - t0
        _row(f"[{split}] worlds / cases / build seconds",
             f"{n} / {built['n_cases']} / {dt:.1f}", "60 dev, 200 val, 200 test worlds")
        gaps = built["witness_gaps"]
        for kind, g in gaps.items():
            med = "—" if g["median"] is None else f"{g['median']:.3f}"
            _row(f"[{split}] {kind} non-ID items, median witness gap", f"{g['n']}, {med}",
                 "median >= 0.10 (default generator: 0.041)")
        _row(f"[{split}] leak scan", "clean" if built["leak_scan"]["ok"] else "LEAK", "clean")
        audit = audit_bench(root / split)
        lo = audit["listing_order"]
        _row(f"[{split}] edge/listing agreement before -> after",
             f"{lo['before']['rate']:.3f} -> {lo['after']['rate']:.3f}",
             "1.00 -> 0.49; gate <= 0.55")
        sk = audit["skin_structure"]
        _row(f"[{split}] nonsense-skin twins differing", f"{sk['mismatched']}/{sk['pairs']}", "0")
        v = audit["varsortability"]
        _row(f"[{split}] varsortability raw / standardized",
             f"{v['varsortability_raw']:.3f} / {v['varsortability_standardized']:.3f}",
             "report it; 0.5 = uninformative")
        _row(f"[{split}] sort-by-variance baseline raw / std",
             f"{v['sort_by_variance_accuracy_raw']:.3f} / "
             f"{v['sort_by_variance_accuracy_standardized']:.3f}", "report it")
        _row(f"[{split}] sort-by-variance, best direction, raw",
             f"{v['sort_by_variance_best_direction_raw']:.3f}", "0.5 = no variance cue")
        for agent in POLICIES:
            s = evaluate(root / split, f"reference:{agent}", root / f"run_{split}_{agent}",
                         force=True)
            o = s["outcomes"]
            acc = (o["correct"] + o["correct_non_id"]) / s["n"]
            sig = s.get("signature")
            extra = f", signature {sig['hits']}/{sig['failed']}" if sig else ""
            target = {"oracle": "1.000", "always_abstain": f"abstain = {s['n']}"}.get(
                agent, "signature >= 95% of failures")
            _row(f"[{split}] reference:{agent}",
                 f"{acc:.3f}{extra}" if agent != "always_abstain" else f"abstain {o['abstain']}",
                 target)
    try:
        agreement = scorer_agreement(1000, seed)
    except ModuleNotFoundError as exc:
        _row("scorer agreement", "second scorer absent", str(exc))
        return
    _row("scorer agreement, hand cases",
         f"{agreement['hand']['agree']}/{agreement['hand']['n']}", "100%")
    _row("scorer agreement, 1,000 generated",
         f"{agreement['generated']['agree']}/{agreement['generated']['n']}", ">= 99%")


def main() -> None:
    """Parse arguments and run."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, default=20261003)
    parser.add_argument("--out", type=pathlib.Path, default=None)
    args = parser.parse_args()
    if args.out is not None:
        run(args.seed, args.out)
        return
    with tempfile.TemporaryDirectory() as tmp:
        run(args.seed, pathlib.Path(tmp))


if __name__ == "__main__":
    main()
