"""Validation of the reference oracle (seed 003, "Deterministic scorer" →
"Validation of the reference implementation").

Four checks, each a row of the seed's table:

1. hand cases — answers derived by hand (``data/hand_cases.json``), exact to 1e-12;
2. oracle vs the independent Monte Carlo checker (`rungbench.causal.checks.mc_check`,
   which reads only the shuffled public JSON) on 60 worlds (42 motifs + 18 random
   6-node DAGs, half with latents), ≥ 359 queries over all rungs, alarm at |z| > 5;
3. back-door (and front-door) estimates from the observed table alone vs the
   do-oracle, max |difference| ≤ 1e-12 on ≥ 80 queries;
4. non-identifiability witnesses on 40 latent-confounded worlds: ≥ 34 with a gap
   above 0.02 and a median gap ≥ 0.10;
5. oracle vs the same checker on categorical generated worlds (random 6-node DAGs whose
   variables have 2 to 4 named states, `random_dag.categorical_world`; 48 by default,
   half with latents), seven queries per world over all rungs, the same |z| > 5 alarm.
   Rung 3 is read off the SCM's own structural equations (no CPT coupling);
6. back-door (and front-door) estimates vs the do-oracle on those categorical worlds, for
   every value of X, max |difference| ≤ 1e-12;
7. witnesses on 40 categorical latent-confounded worlds
   (`motifs.categorical_latent_confounded`), the bar of row 4.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from importlib import resources
from typing import Any

import numpy as np

from rungbench.causal.scm import oracle
from rungbench.causal.scm.identify import (
    backdoor_estimate,
    find_backdoor_set,
    find_frontdoor_set,
    frontdoor_estimate,
)
from rungbench.causal.scm.joint import observed_joint
from rungbench.causal.scm.motifs import (
    Motif,
    categorical_latent_confounded,
    latent_confounded,
    motif_catalogue,
)
from rungbench.causal.scm.random_dag import DagSpec, StateRange, categorical_world, random_world
from rungbench.causal.scm.witness import WITNESS_TOL, build_witness
from rungbench.causal.scm.world import Query, World
from rungbench.errors import InputError

Z_ALARM = 5.0
"""|z| beyond which an oracle/checker disagreement is an alarm (seed 003)."""

HAND_TOL = 1e-12
"""Hand cases must match to this."""

ADJUSTMENT_TOL = 1e-12
"""Back-door/front-door estimate vs do-oracle tolerance."""

MIN_CHECKER_QUERIES = 359
"""Seed 003: 359 queries across all three rungs."""

MIN_BACKDOOR_QUERIES = 80
"""Seed 003: 80 back-door queries."""

N_WITNESS_WORLDS = 40
"""Seed 003: 40 witness worlds."""

MIN_WITNESS_PASS = 34
"""At least this many witness worlds differ by more than `WITNESS_TOL`."""

MIN_MEDIAN_GAP = 0.10
"""Required median witness gap (seed 003: the default 0.041 was too weak)."""

N_CATEGORICAL_WORLDS = 48
"""Categorical generated worlds the full validation checks (row 5)."""

CATEGORICAL_STATES: StateRange = (2, 4)
"""Fewest and most states of a variable of the categorical validation worlds."""


@dataclass(frozen=True)
class CheckRow:
    """One row of the validation table."""

    check: str
    """What is checked."""
    method: str
    """How."""
    result: str
    """The measured result in words and numbers."""
    passed: bool
    """Whether the row meets its acceptance figure."""
    figures: Mapping[str, float | int | str] = field(default_factory=dict)
    """Machine-readable figures behind ``result``."""


@dataclass(frozen=True)
class ValidationReport:
    """The full validation table."""

    rows: tuple[CheckRow, ...]
    """One row per check, in the seed's order."""
    seconds: float
    """Wall time of the whole validation."""

    @property
    def failures(self) -> list[str]:
        """Names of the failed checks."""
        return [r.check for r in self.rows if not r.passed]

    @property
    def all_pass(self) -> bool:
        """True when every row passed."""
        return not self.failures

    def to_json(self) -> dict[str, Any]:
        """JSON-ready summary."""
        return {
            "rows": [{"check": r.check, "method": r.method, "result": r.result,
                      "passed": r.passed, "figures": dict(r.figures)} for r in self.rows],
            "seconds": round(self.seconds, 3),
            "all_pass": self.all_pass,
            "failures": self.failures,
        }


# ---------------------------------------------------------------- hand cases


@dataclass(frozen=True)
class HandCase:
    """An answer derived by hand."""

    case_id: str
    """Identifier."""
    world: World
    """The world."""
    expected: Fraction
    """The hand-derived exact answer."""
    derivation: str
    """The derivation written out."""
    query: Query | None
    """The query, or None for a named quantity."""
    quantity: Mapping[str, Any] | None
    """A named quantity (pns, nde, nie, total) when there is no query."""


def load_hand_cases(text: str | None = None) -> list[HandCase]:
    """Parse ``data/hand_cases.json`` (or ``text``)."""
    if text is None:
        text = resources.files("rungbench.causal").joinpath("data/hand_cases.json").read_text()
    doc = json.loads(text)
    worlds = {k: World.from_json(v) for k, v in doc["worlds"].items()}
    out = []
    for i, c in enumerate(doc["cases"]):
        if c["world"] not in worlds:
            raise InputError(f"unknown world {c['world']!r}", field=f"cases[{i}].world")
        out.append(HandCase(
            c["id"], worlds[c["world"]], Fraction(c["expected"]), c["derivation"],
            Query.from_json(c["query"]) if "query" in c else None, c.get("quantity"),
        ))
    return out


def evaluate_hand_case(case: HandCase) -> float:
    """The oracle's value for a hand case."""
    if case.query is not None:
        return oracle.probability(case.world, case.query)
    q = dict(case.quantity or {})
    kind = q.get("kind")
    if kind == "pns":
        return oracle.pns(case.world, q["x"], q["y"])
    if kind in ("nde", "nie", "total"):
        eff = oracle.mediation(case.world, q["x"], tuple(q["mediators"]), q["y"])
        return float(getattr(eff, kind))
    raise InputError(f"unknown quantity kind {kind!r}", field=f"{case.case_id}.quantity.kind")


def check_hand_cases() -> CheckRow:
    """Row 1: every hand case equals the oracle within `HAND_TOL`."""
    cases = load_hand_cases()
    wrong = [c.case_id for c in cases
             if abs(evaluate_hand_case(c) - float(c.expected)) > HAND_TOL]
    ok = len(cases) - len(wrong)
    return CheckRow(
        "hand cases", "answers derived by hand (data/hand_cases.json), exact to 1e-12",
        f"{ok}/{len(cases)}" + (f"; wrong: {', '.join(wrong)}" if wrong else ""),
        not wrong and len(cases) >= 11, {"n": len(cases), "correct": ok},
    )


# ------------------------------------------------------ oracle vs the checker


def validation_worlds(seed: int = 3) -> list[tuple[World, str, str, Mapping[str, int]]]:
    """42 motif worlds (14 kinds × 3) and 18 random 6-node DAGs (9 with latents)."""
    rng = np.random.default_rng(seed)
    out: list[tuple[World, str, str, Mapping[str, int]]] = []
    for m in motif_catalogue(rng, repeats=3, prefix="vm"):
        out.append((m.world, m.treatment, m.outcome, m.condition))
    for k in range(18):
        spec = DagSpec(6, 0.45, latent_fraction=0.34 if k % 2 else 0.0)
        w = random_world(spec, rng, f"vr{k:04d}")
        obs = w.observed_names
        out.append((w, obs[1], obs[-1], {}))
    return out


def candidate_queries(world: World, x: str, y: str, condition: Mapping[str, int],
                      rng: np.random.Generator) -> list[Query]:
    """Seven queries per world over all three rungs (rung 3 includes PN and PS)."""
    others = [n for n in world.observed_names if n not in (x, y, *condition)]
    z = str(rng.choice(others)) if others else None
    zv = int(rng.integers(0, 2))
    extra = {z: zv} if z else {}
    xv, yv = int(rng.integers(0, 2)), int(rng.integers(0, 2))
    c = dict(condition)
    return [
        Query(1, {y: 1}, {}, {**c, x: 1}),
        Query(1, {y: yv}, {}, {**c, x: xv, **extra}),
        Query(2, {y: 1}, {x: 1}, dict(c)),
        Query(2, {y: yv}, {x: 1 - xv}, {**c, **extra}),
        Query(3, {y: 1 - yv}, {x: 1 - xv}, {x: xv, y: yv}),
        Query(3, {y: yv}, {x: xv}, {x: 1 - xv, y: 1 - yv}),
        Query(3, {y: 1}, {x: 1 - xv}, {**c, x: xv, **extra}),
    ]


def _evidence_mass(world: World, q: Query) -> float:
    ev = Query(1, q.evidence, {}, {}) if q.rung != 2 else Query(2, q.evidence, q.do, {})
    return oracle.probability(world, ev) if q.evidence else 1.0


@dataclass(frozen=True)
class CheckerComparison:
    """One oracle/checker pair."""

    world_id: str
    """World."""
    query: Query
    """Query."""
    exact: float
    """Oracle value."""
    estimate: float
    """Checker value."""
    n_accepted: int
    """Draws the checker accepted (evidence held)."""
    z: float
    """(estimate - exact) / sqrt(exact (1 - exact) / n_accepted)."""


def z_score(exact: float, estimate: float, n_accepted: int) -> float:
    """Binomial z of a Monte Carlo estimate against the exact value (inf when impossible)."""
    if n_accepted <= 0:
        return math.inf
    var = exact * (1.0 - exact) / n_accepted
    if var <= 0.0:
        return 0.0 if abs(estimate - exact) < 1e-12 else math.inf
    return (estimate - exact) / math.sqrt(var)


CheckerFn = Callable[..., Sequence[Any]]
"""``check_queries(world_json, queries, *, draws, rng) -> list[McEstimate]``."""


def compare_with_checker(check_queries: CheckerFn, *, draws: int = 200_000, seed: int = 3,
                         min_evidence: float = 0.01) -> list[CheckerComparison]:
    """Run the independent checker on the validation worlds; pair each estimate with the oracle."""
    rng = np.random.default_rng(seed)
    out = []
    for world, x, y, cond in validation_worlds(seed):
        queries = [q for q in candidate_queries(world, x, y, cond, rng)
                   if _evidence_mass(world, q) >= min_evidence]
        world_json = world.to_json(seed=int(rng.integers(2**31)))
        estimates = check_queries(world_json, [q.to_json() for q in queries], draws=draws,
                                  rng=np.random.default_rng(int(rng.integers(2**31))))
        for q, est in zip(queries, estimates, strict=True):
            exact = oracle.probability(world, q)
            out.append(CheckerComparison(world.world_id, q, exact, float(est.p),
                                         int(est.n_accepted),
                                         z_score(exact, float(est.p), int(est.n_accepted))))
    return out


def check_against_checker(check_queries: CheckerFn, *, draws: int = 200_000,
                          seed: int = 3) -> CheckRow:
    """Row 2: oracle vs the independent Monte Carlo checker."""
    rows = compare_with_checker(check_queries, draws=draws, seed=seed)
    zs = np.array([abs(r.z) for r in rows])
    alarms = int(np.sum(zs > Z_ALARM))
    worlds = len({r.world_id for r in rows})
    rungs = {q: sum(1 for r in rows if r.query.rung == q) for q in (1, 2, 3)}
    max_z = float(zs.max()) if len(zs) else math.inf
    passed = alarms == 0 and len(rows) >= MIN_CHECKER_QUERIES and worlds >= 60
    return CheckRow(
        "oracle vs independent checker",
        f"Monte Carlo twin network, {draws:,} draws, separate code reading only the "
        f"shuffled public JSON; {worlds} worlds (42 motifs + 18 random 6-node DAGs)",
        f"{len(rows)} queries (rung 1/2/3: {rungs[1]}/{rungs[2]}/{rungs[3]}); "
        f"max |z| = {max_z:.2f}, {alarms} beyond the {Z_ALARM:g}σ alarm",
        passed,
        {"queries": len(rows), "worlds": worlds, "max_abs_z": round(max_z, 3),
         "alarms": alarms, "rung1": rungs[1], "rung2": rungs[2], "rung3": rungs[3]},
    )


# --------------------------------------------- categorical worlds vs the checker


def categorical_validation_worlds(seed: int = 3, n_worlds: int = N_CATEGORICAL_WORLDS
                                  ) -> list[tuple[World, str, str]]:
    """``n_worlds`` random 6-node categorical DAGs (odd ones with latents), each with the
    (treatment, outcome) its queries ask about; drawn from their own stream (``seed + 2000``),
    so the binary rows' worlds do not depend on ``n_worlds``."""
    if n_worlds < 1:
        raise InputError(f"categorical worlds must be >= 1, got {n_worlds}",
                         field="categorical_worlds")
    rng = np.random.default_rng(seed + 2000)
    out = []
    for k in range(n_worlds):
        spec = DagSpec(6, 0.45, latent_fraction=0.34 if k % 2 else 0.0)
        w = categorical_world(spec, rng, f"vc{k:04d}", states=CATEGORICAL_STATES)
        obs = w.observed_names
        out.append((w, obs[1], obs[-1]))
    return out


def _two_values(k: int, rng: np.random.Generator) -> tuple[int, int]:
    """Two different values of a ``k``-state variable, uniformly."""
    a = int(rng.integers(0, k))
    return a, (a + 1 + int(rng.integers(0, k - 1))) % k


def categorical_queries(world: World, x: str, y: str, rng: np.random.Generator) -> list[Query]:
    """Seven queries over all three rungs with values drawn over each variable's states (the
    categorical twin of :func:`candidate_queries`; rung 3 asks about other values of X and Y
    than the factual ones)."""
    others = [n for n in world.observed_names if n not in (x, y)]
    z = str(rng.choice(others)) if others else None
    extra = {z: int(rng.integers(0, world.card(z)))} if z else {}
    xv, xw = _two_values(world.card(x), rng)
    yv, yw = _two_values(world.card(y), rng)
    top = world.card(y) - 1
    return [
        Query(1, {y: top}, {}, {x: xv}),
        Query(1, {y: yv}, {}, {x: xw, **extra}),
        Query(2, {y: top}, {x: xv}, {}),
        Query(2, {y: yv}, {x: xw}, dict(extra)),
        Query(3, {y: yw}, {x: xw}, {x: xv, y: yv}),
        Query(3, {y: yv}, {x: xv}, {x: xw, y: yw}),
        Query(3, {y: top}, {x: xw}, {x: xv, **extra}),
    ]


ExactFn = Callable[[World, Query], float]
"""The exact answer the checker is compared with (the oracle's ``probability``)."""


def compare_categorical_with_checker(check_queries: CheckerFn, *, draws: int = 200_000,
                                     seed: int = 3, n_worlds: int = N_CATEGORICAL_WORLDS,
                                     exact: ExactFn = oracle.probability,
                                     min_evidence: float = 0.01) -> list[CheckerComparison]:
    """Run the checker on the categorical validation worlds; pair each estimate with
    ``exact`` (the oracle unless a test perturbs it)."""
    rng = np.random.default_rng(seed + 3000)
    out = []
    for world, x, y in categorical_validation_worlds(seed, n_worlds):
        queries = [q for q in categorical_queries(world, x, y, rng)
                   if _evidence_mass(world, q) >= min_evidence]
        world_json = world.to_json(seed=int(rng.integers(2**31)))
        estimates = check_queries(world_json, [q.to_json() for q in queries], draws=draws,
                                  rng=np.random.default_rng(int(rng.integers(2**31))))
        for q, est in zip(queries, estimates, strict=True):
            value = exact(world, q)
            out.append(CheckerComparison(world.world_id, q, value, float(est.p),
                                         int(est.n_accepted),
                                         z_score(value, float(est.p), int(est.n_accepted))))
    return out


def check_categorical_against_checker(check_queries: CheckerFn, *, draws: int = 200_000,
                                      seed: int = 3, n_worlds: int = N_CATEGORICAL_WORLDS,
                                      exact: ExactFn = oracle.probability) -> CheckRow:
    """Row 5: oracle vs the independent Monte Carlo checker on categorical generated worlds."""
    rows = compare_categorical_with_checker(check_queries, draws=draws, seed=seed,
                                            n_worlds=n_worlds, exact=exact)
    zs = np.array([abs(r.z) for r in rows])
    alarms = int(np.sum(zs > Z_ALARM))
    worlds = len({r.world_id for r in rows})
    rungs = {q: sum(1 for r in rows if r.query.rung == q) for q in (1, 2, 3)}
    max_z = float(zs.max()) if len(zs) else math.inf
    lo, hi = CATEGORICAL_STATES
    return CheckRow(
        "categorical worlds vs independent checker",
        f"the same checker and alarm, {draws:,} draws, on random 6-node DAGs with {lo}-{hi} "
        "named states per variable (half with latents); structural equations "
        "V := t_U(parents), so rung 3 needs no coupling",
        f"{worlds} categorical worlds, {len(rows)} queries (rung 1/2/3: "
        f"{rungs[1]}/{rungs[2]}/{rungs[3]}); max |z| = {max_z:.2f}, {alarms} beyond the "
        f"{Z_ALARM:g}σ alarm",
        alarms == 0 and worlds == n_worlds and all(rungs[q] > 0 for q in (1, 2, 3)),
        {"queries": len(rows), "worlds": worlds, "max_abs_z": round(max_z, 3),
         "alarms": alarms, "rung1": rungs[1], "rung2": rungs[2], "rung3": rungs[3],
         "min_states": lo, "max_states": hi},
    )


# ------------------------------------------------------------------ back-door


def adjustment_differences(seed: int = 3) -> tuple[list[float], list[float]]:
    """|estimate - do-oracle| for every back-door and every front-door identified query.

    Worlds: the validation worlds; every ordered observed pair (X, Y) with Y a
    descendant of X and x, y in {0, 1}.
    """
    back, front = [], []
    for world, _, _, _ in validation_worlds(seed):
        joint = observed_joint(world)
        for x in world.observed_names:
            for y in sorted(world.descendants([x]) & set(world.observed_names) - {x}):
                z = find_backdoor_set(world, x, y)
                m = find_frontdoor_set(world, x, y) if z is None else None
                for xv in (0, 1):
                    truth = oracle.probability(world, Query(2, {y: 1}, {x: xv}, {}))
                    if z is not None:
                        est = backdoor_estimate(joint, x, y, z, xv, 1)
                        if est is not None:
                            back.append(abs(est - truth))
                    elif m is not None:
                        est = frontdoor_estimate(joint, x, y, m, xv, 1)
                        if est is not None:
                            front.append(abs(est - truth))
    return back, front


def check_adjustment(seed: int = 3) -> CheckRow:
    """Row 3: adjustment from the observed table vs the do-oracle."""
    back, front = adjustment_differences(seed)
    max_back = max(back) if back else math.inf
    max_front = max(front) if front else 0.0
    passed = (len(back) >= MIN_BACKDOOR_QUERIES and max_back <= ADJUSTMENT_TOL
              and max_front <= ADJUSTMENT_TOL)
    return CheckRow(
        "back-door adjustment from observed joint",
        "computed only from the observed table (latents summed out), compared with the "
        "do-oracle; front-door where no back-door set exists",
        f"{len(back)} back-door queries, max difference {max_back:.1e}; "
        f"{len(front)} front-door queries, max difference {max_front:.1e}",
        passed,
        {"backdoor_queries": len(back), "backdoor_max_diff": max_back,
         "frontdoor_queries": len(front), "frontdoor_max_diff": max_front},
    )


# ------------------------------------------------------------------ witnesses


def witness_gaps(seed: int = 3) -> list[float]:
    """Witness gaps on `N_WITNESS_WORLDS` latent-confounded worlds (no filtering by gap)."""
    rng = np.random.default_rng(seed + 1000)
    gaps = []
    for i in range(N_WITNESS_WORLDS):
        m: Motif = latent_confounded(rng, f"vw{i:04d}")
        w = build_witness(m.world, m.treatment, m.outcome)
        if w is None:
            raise InputError(f"no witness for {m.world.world_id}", field="witness")
        gaps.append(w.gap)
    return gaps


def check_witnesses(seed: int = 3) -> CheckRow:
    """Row 4: witnesses with the same observed joint differ in P(y | do x)."""
    return _witness_row("non-identifiability witnesses",
                        "same observed joint (checked to 1e-9), latent-free model inside the "
                        "graph", witness_gaps(seed))


def _witness_row(name: str, criterion: str, gaps: list[float]) -> CheckRow:
    """A witness row: enough gaps above tolerance and a median gap large enough."""
    above = sum(g > WITNESS_TOL for g in gaps)
    median = float(np.median(gaps))
    return CheckRow(
        name, criterion,
        f"{above}/{len(gaps)} worlds differ in P(Y|do X) by > {WITNESS_TOL}; "
        f"median gap {median:.3f}",
        above >= MIN_WITNESS_PASS and median >= MIN_MEDIAN_GAP,
        {"worlds": len(gaps), "above_tol": above, "median_gap": round(median, 4),
         "min_gap": round(min(gaps), 4)},
    )


# ----------------------------------- categorical adjustment and witnesses


def categorical_adjustment_differences(seed: int = 3, n_worlds: int = N_CATEGORICAL_WORLDS
                                       ) -> tuple[list[float], list[float]]:
    """|estimate - do-oracle| for every back-door and front-door identified P(Y=top |
    do(X=x)) on the categorical validation worlds: every ordered observed pair (X, Y) with Y
    a descendant of X, every value x of X, Y's last state."""
    back, front = [], []
    for world, _, _ in categorical_validation_worlds(seed, n_worlds):
        joint = observed_joint(world)
        for x in world.observed_names:
            for y in sorted(world.descendants([x]) & set(world.observed_names) - {x}):
                z = find_backdoor_set(world, x, y)
                m = find_frontdoor_set(world, x, y) if z is None else None
                top = world.card(y) - 1
                for xv in range(world.card(x)):
                    truth = oracle.probability(world, Query(2, {y: top}, {x: xv}, {}))
                    if z is not None:
                        est = backdoor_estimate(joint, x, y, z, xv, top)
                        if est is not None:
                            back.append(abs(est - truth))
                    elif m is not None:
                        est = frontdoor_estimate(joint, x, y, m, xv, top)
                        if est is not None:
                            front.append(abs(est - truth))
    return back, front


def check_categorical_adjustment(seed: int = 3, n_worlds: int = N_CATEGORICAL_WORLDS
                                 ) -> CheckRow:
    """Row 6: adjustment from the observed table vs the do-oracle on categorical worlds."""
    back, front = categorical_adjustment_differences(seed, n_worlds)
    max_back = max(back) if back else math.inf
    max_front = max(front) if front else 0.0
    front_text = (f"{len(front)} front-door queries, max difference {max_front:.1e}" if front
                  else "no front-door query in these worlds (front-door not exercised)")
    return CheckRow(
        "categorical back-door adjustment",
        "as row 3, on the categorical worlds of the checker row, every value of X",
        f"{len(back)} back-door queries, max difference {max_back:.1e}; {front_text}",
        max_back <= ADJUSTMENT_TOL and max_front <= ADJUSTMENT_TOL,
        {"backdoor_queries": len(back), "backdoor_max_diff": max_back,
         "frontdoor_queries": len(front), "frontdoor_max_diff": max_front},
    )


def categorical_witness_gaps(seed: int = 3) -> list[float]:
    """Witness gaps for P(Y=last | do(X=last)) on `N_WITNESS_WORLDS` categorical
    latent-confounded worlds (no filtering by gap)."""
    rng = np.random.default_rng(seed + 4000)
    gaps = []
    for i in range(N_WITNESS_WORLDS):
        m = categorical_latent_confounded(rng, f"vcw{i:04d}", states=CATEGORICAL_STATES)
        world = m.world
        w = build_witness(world, m.treatment, m.outcome, x_val=world.card(m.treatment) - 1,
                          y_val=world.card(m.outcome) - 1)
        if w is None:
            raise InputError(f"no witness for {world.world_id}", field="witness")
        gaps.append(w.gap)
    return gaps


def check_categorical_witnesses(seed: int = 3) -> CheckRow:
    """Row 7: categorical witnesses with the same observed joint differ in P(y | do x)."""
    lo, hi = CATEGORICAL_STATES
    return _witness_row("categorical non-identifiability witnesses",
                        f"as row 4, on latent-confounded worlds of {lo}-{hi} named states per "
                        "variable", categorical_witness_gaps(seed))


def run_validation(*, draws: int = 200_000, seed: int = 3,
                   check_queries: CheckerFn | None = None,
                   categorical_worlds: int = N_CATEGORICAL_WORLDS) -> ValidationReport:
    """Run all seven checks; the checker defaults to `rungbench.causal.checks.mc_check`;
    ``categorical_worlds`` sizes rows 5 and 6."""
    start = time.perf_counter()
    if check_queries is None:
        from rungbench.causal.checks.mc_check import check_queries as default_checker

        check_queries = default_checker
    rows = (
        check_hand_cases(),
        check_against_checker(check_queries, draws=draws, seed=seed),
        check_adjustment(seed),
        check_witnesses(seed),
        check_categorical_against_checker(check_queries, draws=draws, seed=seed,
                                          n_worlds=categorical_worlds),
        check_categorical_adjustment(seed, categorical_worlds),
        check_categorical_witnesses(seed),
    )
    return ValidationReport(rows, time.perf_counter() - start)
