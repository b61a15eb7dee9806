"""Full-size causal benchmark figures, measured beside the seed 003 reference figures.

Builds dev (60 worlds), validation (200) and test (200) from one seed, runs every
reference agent on each split, audits the bench and (when the second scorer is
installed) runs the scorer agreement on 1,000 generated responses. Prints each
measured figure next to the seed's figure or the issue's target.

The episode families (issue 19): builds a 200-world split with ``--families`` for
all five, reports the records/2 build time and cases per second (render alone, and the
sealed build's extra time over the same split without them), scores every records/2
reference agent from the sealed bench (signature rate, scoring cases per second), and
prints the P2 comparison and the records/2 scorer agreement.
Usage: ``.venv/bin/python benchmarks/causal_bench.py [--seed S] [--out DIR] [--only-next]``.
"""

from __future__ import annotations

import argparse
import pathlib
import tempfile
import time

from rungbench.causal.bench.audit import audit_bench
from rungbench.causal.bench.build import build_split
from rungbench.causal.bench.episode_build import FAMILY_NAMES, build_episodes
from rungbench.causal.bench.evaluate import evaluate
from rungbench.causal.bench.protocols import p2_comparison
from rungbench.causal.bench.reference_agents import EPISODE_POLICIES, POLICIES
from rungbench.causal.checks.agreement import episode_agreement, scorer_agreement

EPISODE_WORLDS = 200
"""Worlds of the episode-family figures (issue 19: "at 200 worlds")."""

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


def run_episode_figures(seed: int, root: pathlib.Path, split: str = "test") -> None:
    """Build time, cases per second and reference-agent figures of the records/2 families."""
    _row("figure (next-stage families, records/2)", "measured", "issue 19")
    families = ",".join(FAMILY_NAMES)
    t0 = time.perf_counter()
    nb = build_episodes(split, EPISODE_WORLDS, seed, frozenset(FAMILY_NAMES.values()))
    render = time.perf_counter() - t0
    n_cases = sum(len(w.cases) for w in nb.worlds)
    _row(f"[{split}] records/2 worlds / cases / render seconds",
         f"{EPISODE_WORLDS} / {n_cases} / {render:.1f}", "200 worlds")
    _row(f"[{split}] records/2 render, cases per second", f"{n_cases / render:.1f}", "report it")
    t0 = time.perf_counter()
    build_split(split, EPISODE_WORLDS, seed, root / "plain", force=True)
    plain = time.perf_counter() - t0
    t0 = time.perf_counter()
    built = build_split(split, EPISODE_WORLDS, seed, root / "next", force=True, families=families)
    full = time.perf_counter() - t0
    block = built["records_v2"]
    _row(f"[{split}] sealed build seconds without / with --families",
         f"{plain:.1f} / {full:.1f}", "report it")
    _row(f"[{split}] extra build seconds; records/2 cases per extra second",
         f"{full - plain:.1f}; {block['n_cases'] / max(full - plain, 1e-9):.1f}", "report it")
    _row(f"[{split}] leak scan over {built['leak_scan']['files']} public files",
         "clean" if built["leak_scan"]["ok"] else "LEAK", "clean")
    lo = block["listing_order"]
    _row(f"[{split}] records/2 edge/listing agreement", f"{lo['rate']:.3f} ({lo['edges']} edges)",
         "gate <= 0.55")
    for agent in EPISODE_POLICIES:
        t0 = time.perf_counter()
        s = evaluate(root / "next", f"reference:{agent}", root / f"run_next_{agent}", force=True)
        dt = time.perf_counter() - t0
        sig = s.get("signature")
        got = f"{sig['hits']}/{sig['failed']} ({sig['rate']:.3f})" if sig else \
            f"failed {s['failed']}, invalid {s['outcomes']['invalid']}"
        _row(f"[{split}] reference:{agent} ({s['n'] / dt:.0f} cases/s scored)", got,
             "oracle: failed 0" if agent == "oracle" else "signature >= 95% of failures")
    p2 = p2_comparison(EPISODE_WORLDS, seed=seed)
    d = p2["paired_difference"]
    _row("P2: mean regret premature -> protocol",
         f"{p2['mean_regret_premature']:.2f} -> {p2['mean_regret_p2']:.2f}", "-15% or better")
    _row("P2: paired difference, 95% cluster bootstrap",
         f"{d['mean']:.2f} [{d['low']:.2f}, {d['high']:.2f}]", "excludes 0")
    _row("P2: lucky rate premature / protocol",
         f"{p2['lucky_rate']['premature']:.3f} / {p2['lucky_rate']['p2']:.3f}", "reported apart")
    agree = episode_agreement(1000, seed)
    _row("records/2 scorer agreement, hand cases",
         f"{agree['hand']['agree']}/{agree['hand']['n']}", "100%")
    _row("records/2 scorer agreement, 1,000 generated",
         f"{agree['generated']['agree']}/{agree['generated']['n']}", ">= 99%")


def main() -> None:
    """Parse arguments and run."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, default=20261003)
    parser.add_argument("--out", type=pathlib.Path, default=None)
    parser.add_argument("--only-next", action="store_true",
                        help="Only the next-stage (records/2) figures.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.out if args.out is not None else pathlib.Path(tmp)
        if not args.only_next:
            run(args.seed, root)
        run_episode_figures(args.seed, root)


if __name__ == "__main__":
    main()
