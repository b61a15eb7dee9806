"""Scorer agreement: the first scorer against the independently written second one.

Seed 003 "Validate the oracle and scorer before using them": "A second,
independently written scorer … The two must agree on 100% of the hand cases and
on ≥ 99% of 1,000 generated cases; every disagreement is examined." Two hand
sets carry their expected verdicts, and both scorers must match each expected
verdict: scorer 1's (``data/response_cases.json``) and scorer 2's
(``data/second_scorer_cases.json``, written with the second scorer). Generated
responses perturb reference answers of a freshly built dev split in every way
the outcome rules distinguish. Verdicts are compared field by field (CONTRACTS
§3), numbers within 1e-9.
"""

from __future__ import annotations

import importlib
import json
import math
import pathlib
import tempfile
from collections.abc import Callable, Mapping
from importlib import resources
from typing import Any

import numpy as np

from rungbench.causal.bench.build import build_split
from rungbench.causal.bench.networks import NETWORK_FAMILY
from rungbench.causal.bench.scorer import score_dict
from rungbench.causal.bench.verified import bench_oracles, open_bench
from rungbench.errors import InputError

ScoreFn = Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]

COMPARED = ("case_id", "outcome", "abs_error", "brier", "decision_regret", "info_regret",
            "structure")
"""Verdict fields both scorers must agree on (``error`` text is free-form)."""


HAND_SETS = ("response_cases", "second_scorer_cases")
"""Names of the hand-case sets, after their files in ``rungbench/causal/data``."""

_EMPTY_RESPONSE: dict[str, Any] = {
    "arm": "hand", "status": "answer", "value": None, "bounds": None, "label": None,
    "confidence": None, "experiment": None, "action": None, "edges": None, "claim_text": "",
    "t": "2026-10-03T14:02:11Z",
}


def _data(name: str) -> Any:
    text = resources.files("rungbench.causal").joinpath(f"data/{name}.json").read_text()
    return json.loads(text)


def hand_cases() -> list[dict[str, Any]]:
    """Scorer 1's hand-written response cases with their expected verdicts."""
    cases: list[dict[str, Any]] = _data("response_cases")["cases"]
    return cases


def second_scorer_hand_cases() -> list[dict[str, Any]]:
    """Scorer 2's hand cases as full ``{"note", "oracle", "response", "expected"}`` cases.

    The file names a shared oracle per case, gives only the response fields that
    differ from an empty ``answer`` and only the non-null expected verdict fields.
    """
    doc = _data("second_scorer_cases")
    out = []
    for case in doc["cases"]:
        oracle = doc["oracles"][case["oracle"]]
        response = {"case_id": oracle["case_id"], **_EMPTY_RESPONSE, **case["response"]}
        expected = {**dict.fromkeys(COMPARED), "case_id": oracle["case_id"], **case["expected"]}
        out.append({"note": case["name"], "oracle": oracle, "response": response,
                    "expected": expected})
    return out


def hand_sets() -> dict[str, list[dict[str, Any]]]:
    """Both hand-case sets keyed by :data:`HAND_SETS` name."""
    return {"response_cases": hand_cases(), "second_scorer_cases": second_scorer_hand_cases()}


def same_value(a: Any, b: Any) -> bool:
    """Equal, with floats compared within 1e-9 and mappings compared key by key."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(float(a), float(b), rel_tol=0.0, abs_tol=1e-9)
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    return bool(a == b)


def verdicts_agree(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two verdicts agree on every compared field."""
    return all(same_value(a.get(k), b.get(k)) for k in COMPARED)


def _perturb(o: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    """One response to oracle record ``o`` exercising a random outcome rule."""
    r: dict[str, Any] = {"case_id": o["case_id"], "arm": "generated", "status": "answer",
                         "claim_text": "", "t": "2026-10-03T00:00:00Z"}
    kind = int(rng.integers(10))
    if kind == 0:
        r["status"] = str(rng.choice(["abstain", "need_info", "not_identifiable"]))
    elif o["cpdag"] is not None:
        edges = [list(e) for e in o["true_edges"]]
        r["edges"] = [e[::-1] if rng.random() < 0.3 * (kind % 3) else e for e in edges]
        if kind == 9:
            r["edges"] = r["edges"][1:]
    elif o["expected_loss"] is not None:
        actions = sorted(o["expected_loss"])
        r["action"] = actions[kind % len(actions)] if kind < 8 else "reboot_everything"
        if kind == 9:
            r["value"] = 0.5
    elif o["bounds"] is not None:
        lo, hi = o["bounds"]
        if kind == 9:
            r["value"] = (lo + hi) / 2
        else:
            d = 0.04 * rng.standard_normal(2) * (kind % 3)
            r["bounds"] = sorted(float(np.clip(v, 0, 1)) for v in (lo + d[0], hi + d[1]))
    else:
        ref = o["value"] if o["value"] is not None else float(rng.random())
        step = 0.02 * float(rng.choice([-1.0, 1.0]))
        options: list[float | None] = [
            ref, ref + step, ref + 0.0199, ref + 0.0201, ref + 0.05 * float(rng.standard_normal()),
            float(rng.random()), 1.0 + float(rng.random()), -float(rng.random()), None,
        ]
        r["value"] = options[kind - 1]
    if rng.random() < 0.6:
        r["confidence"] = float(np.round(rng.random(), 3)) if rng.random() < 0.95 else 1.2
    if rng.random() < 0.05:
        # Malformed bounds on any item under any status (CONTRACTS §3 convention 5).
        r["bounds"] = [0.7, 0.3] if rng.random() < 0.5 else [-0.1, 0.5]
    return r


def generated_responses(n: int, seed: int) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """``n`` (oracle, response) pairs from a small dev build perturbed at random."""
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "bench"
        build_split("dev", 14, seed, out)
        oracles = [o.model_dump(mode="json") for o in bench_oracles(open_bench(out)).values()]
    return _perturbed_pairs(oracles, n, seed)


def network_responses(n: int, seed: int, networks: str
                      ) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """``n`` (oracle, response) pairs over the network family of a dev build with
    ``networks`` (``causal build --networks``), perturbed at random as generated ones are."""
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "bench"
        build_split("dev", 1, seed, out, networks=networks)
        oracles = [o.model_dump(mode="json") for o in bench_oracles(open_bench(out)).values()
                   if o.family == NETWORK_FAMILY]
    return _perturbed_pairs(oracles, n, seed)


def _perturbed_pairs(oracles: list[dict[str, Any]], n: int, seed: int
                     ) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """``n`` oracle records drawn at random, each with a randomly perturbed response."""
    rng = np.random.default_rng(seed)
    pairs = []
    for _ in range(n):
        o = oracles[int(rng.integers(len(oracles)))]
        pairs.append((o, _perturb(o, rng)))
    return pairs


def compare(
    pairs: list[tuple[dict[str, Any], dict[str, Any]]],
    first: ScoreFn,
    second: ScoreFn,
    expected: list[dict[str, Any]] | None = None,
    notes: list[str] | None = None,
) -> dict[str, Any]:
    """Score every pair with both scorers; list every disagreement with both verdicts.

    With ``expected``, a pair agrees only when both verdicts also match its
    expected verdict; ``notes`` label disagreement rows (hand cases share case ids).
    """
    disagreements = []
    agree = 0
    for i, (o, r) in enumerate(pairs):
        a, b = first(o, r), second(o, r)
        ok = verdicts_agree(a, b)
        if expected is not None:
            ok = ok and verdicts_agree(a, expected[i]) and verdicts_agree(b, expected[i])
        agree += ok
        if not ok:
            row = {"case_id": o["case_id"], "response": r, "first": _compared(a),
                   "second": _compared(b)}
            if notes is not None:
                row["note"] = notes[i]
            if expected is not None:
                row["expected"] = expected[i]
            disagreements.append(row)
    n = len(pairs)
    return {"n": n, "agree": agree, "rate": agree / n if n else None,
            "disagreements": disagreements}


def _compared(v: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v.get(k) for k in COMPARED}


def _second_scorer() -> ScoreFn:
    """Import the independently written scorer (only here; never shared with the first)."""
    module = importlib.import_module("rungbench.causal.checks.second_scorer")
    fn: ScoreFn = module.score
    return fn


def compare_hand(first: ScoreFn, second: ScoreFn) -> dict[str, Any]:
    """Compare both scorers on every hand set against its expected verdicts.

    Returns the pooled ``n``/``agree``/``rate``, every disagreement tagged with
    its ``set``, and per-set ``sets[name] = {"n", "agree", "rate"}``.
    """
    sets: dict[str, dict[str, Any]] = {}
    disagreements: list[dict[str, Any]] = []
    for name, cases in hand_sets().items():
        result = compare([(c["oracle"], c["response"]) for c in cases], first, second,
                         expected=[c["expected"] for c in cases],
                         notes=[c["note"] for c in cases])
        sets[name] = {k: result[k] for k in ("n", "agree", "rate")}
        disagreements += [{"set": name, **d} for d in result["disagreements"]]
    n = sum(r["n"] for r in sets.values())
    agree = sum(r["agree"] for r in sets.values())
    return {"n": n, "agree": agree, "rate": agree / n if n else None,
            "disagreements": disagreements, "sets": sets}


MAX_GENERATED = 1_000_000
"""Most generated responses one agreement run compares (``--n``)."""


def episode_hand_cases() -> list[dict[str, Any]]:
    """Hand cases of the episode families (``data/episode_hand_cases.json``, records/2)."""
    doc = _data("episode_hand_cases")
    out = []
    for case in doc["cases"]:
        oracle = doc["oracles"][case["oracle"]]
        response = {"case_id": oracle["case_id"], **_EMPTY_RESPONSE, **case["response"]}
        expected = {**dict.fromkeys(EPISODE_COMPARED), "case_id": oracle["case_id"],
                    **case["expected"]}
        out.append({"note": case["name"], "oracle": oracle, "response": response,
                    "expected": expected})
    return out


def hand_revision_episodes() -> list[dict[str, Any]]:
    """Hand revision episodes: (identified set, named cause) per stage with expected counts."""
    episodes: list[dict[str, Any]] = _data("episode_hand_cases")["episodes"]
    return episodes


EPISODE_COMPARED = (*COMPARED, "experiment_regret")
"""Verdict fields compared on records/2 items (adds the experiment's decision regret)."""


def _perturb_episode(o: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    """One response to a records/2 oracle exercising a random outcome rule."""
    r: dict[str, Any] = {"case_id": o["case_id"], "arm": "generated", "status": "answer",
                         "claim_text": "", "t": "2026-10-03T00:00:00Z"}
    kind = int(rng.integers(10))
    if kind == 0:
        r["status"] = str(rng.choice(["abstain", "need_info", "not_identifiable"]))
    names = list(o.get("hypotheses") or []) + list(o.get("descendants") or []) + ["nobody"]
    if o["item_type"] == "diagnosis" and kind != 9:
        r["label"] = str(rng.choice(names))
    if o["item_type"] == "posterior" and kind != 9:
        ref = float(o["value"])
        r["value"] = [ref, ref + 0.0199, ref - 0.0201, float(rng.random()), 1.3,
                      ref + 0.05 * float(rng.standard_normal())][kind % 6]
    menu = [*sorted(o.get("expected_loss") or {}), "reboot_everything"]
    if rng.random() < 0.6:
        r["action"] = str(rng.choice(menu))
    probes = [*sorted(o.get("eig_bits") or {}), "probe:nowhere"]
    if (o["item_type"] == "experiment" and kind != 9) or rng.random() < 0.3:
        r["experiment"] = str(rng.choice(probes))
    if rng.random() < 0.6:
        r["confidence"] = float(np.round(rng.random(), 3)) if rng.random() < 0.95 else 1.2
    if rng.random() < 0.03:
        r["value"] = "0.5"
    return r


def generated_episode_responses(n: int, seed: int) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """``n`` (oracle, response) pairs over the episode families of 20 generated worlds."""
    from rungbench.causal.bench.episode_items import build_episode_world

    oracles = [o.model_dump(mode="json") for s in range(20)
               for o in build_episode_world("dev", seed + s)[1]]
    rng = np.random.default_rng(seed)
    pairs = []
    for _ in range(n):
        o = oracles[int(rng.integers(len(oracles)))]
        pairs.append((o, _perturb_episode(o, rng)))
    return pairs


def episode_agreement(n_generated: int = 1000, seed: int = 20261003) -> dict[str, Any]:
    """Both scorers on the episode-family hand cases, hand episodes and generated responses."""
    from rungbench.causal.bench.episode_scorer import score_episode_dict
    from rungbench.causal.bench.revision import revision_metrics

    module = importlib.import_module("rungbench.causal.checks.second_scorer")
    second: ScoreFn = module.score
    cases = episode_hand_cases()
    hand = _compare_fields(
        [(c["oracle"], c["response"]) for c in cases], score_episode_dict, second,
        [c["expected"] for c in cases], [c["note"] for c in cases])
    ep_rows = []
    for ep in hand_revision_episodes():
        stages = [(list(s), a) for s, a in ep["stages"]]
        first = revision_metrics(stages)
        pairs = [({"stage": i + 1, "identified_set": s},
                  {"status": "answer" if a is not None else "abstain", "label": a})
                 for i, (s, a) in enumerate(stages)]
        second_counts = module.revision_rates(pairs)
        ok = first == second_counts == ep["expected"]
        ep_rows.append({"name": ep["name"], "agree": ok, "first": first,
                        "second": second_counts, "expected": ep["expected"]})
    generated = _compare_fields(generated_episode_responses(n_generated, seed),
                                score_episode_dict, second)
    passed = hand["rate"] == 1.0 and all(r["agree"] for r in ep_rows) \
        and (generated["rate"] or 0.0) >= 0.99
    return {"hand": hand, "episodes": ep_rows, "generated": generated, "pass": passed}


def _compare_fields(pairs: list[tuple[dict[str, Any], dict[str, Any]]], first: ScoreFn,
                    second: ScoreFn, expected: list[dict[str, Any]] | None = None,
                    notes: list[str] | None = None) -> dict[str, Any]:
    """:func:`compare` over the records/2 verdict fields."""
    disagreements = []
    agree = 0
    for i, (o, r) in enumerate(pairs):
        a, b = first(o, r), second(o, r)
        ok = all(same_value(a.get(k), b.get(k)) for k in EPISODE_COMPARED)
        if expected is not None:
            ok = ok and all(same_value(a.get(k), expected[i].get(k)) and
                            same_value(b.get(k), expected[i].get(k)) for k in EPISODE_COMPARED)
        agree += ok
        if not ok:
            disagreements.append({"case_id": o["case_id"], "response": r,
                                  "note": notes[i] if notes else None,
                                  "first": {k: a.get(k) for k in EPISODE_COMPARED},
                                  "second": {k: b.get(k) for k in EPISODE_COMPARED}})
    n = len(pairs)
    return {"n": n, "agree": agree, "rate": agree / n if n else None,
            "disagreements": disagreements}


def scorer_agreement(n_generated: int = 1000, seed: int = 20261003, *,
                     networks: str | None = None) -> dict[str, Any]:
    """Run both scorers on both hand sets and on ``n_generated`` generated responses.

    ``n_generated`` must lie in [1, :data:`MAX_GENERATED`] (InputError naming ``--n``).
    With ``networks`` (``--networks``), ``n_generated`` more responses over the network
    family of those imported networks are compared too (``networks`` in the result, held
    to the generated threshold); without it the result is what it always was.
    """
    if not 1 <= n_generated <= MAX_GENERATED:
        raise InputError(f"must be in [1, {MAX_GENERATED}], got {n_generated}", field="n")
    second = _second_scorer()
    hand = compare_hand(score_dict, second)
    generated = compare(generated_responses(n_generated, seed), score_dict, second)
    episodes = episode_agreement(n_generated, seed)
    passed = all(r["rate"] == 1.0 for r in hand["sets"].values()) \
        and (generated["rate"] or 0.0) >= 0.99 and episodes["pass"]
    # ``next_families``: the key this report has always carried for the episode families.
    out = {"hand": hand, "generated": generated, "next_families": episodes, "pass": passed,
           "thresholds": {"hand": 1.0, "generated": 0.99}}
    if networks is not None:
        nets = compare(network_responses(n_generated, seed, networks), score_dict, second)
        out["networks"] = nets
        out["pass"] = passed and (nets["rate"] or 0.0) >= 0.99
    return out
