"""Tests for rungbench.causal.bench.evaluate and reference_agents (must-show figures of issue 4)."""

from __future__ import annotations

import json
import pathlib

import pytest

from rungbench.causal.bench.build import build_split
from rungbench.causal.bench.evaluate import evaluate, score_responses
from rungbench.causal.bench.records import EPISODE_FAMILIES, EPISODE_OUTCOMES, OUTCOMES
from rungbench.causal.bench.reference_agents import EPISODE_SIGNATURES, SIGNATURES, reference_agent
from rungbench.causal.bench.report import build_report, to_markdown
from rungbench.causal.bench.taxonomy import TAXONOMY, TWIN_LABELS
from rungbench.causal.bench.verified import (
    bench_cases,
    bench_episodes,
    bench_oracles,
    open_bench,
    open_run,
    run_verdicts,
)
from rungbench.errors import InputError


@pytest.fixture(scope="module")
def benches(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pathlib.Path]:
    root = tmp_path_factory.mktemp("benches")
    out = {}
    for split in ("dev", "validation", "test"):
        out[split] = root / split
        build_split(split, 18, 77, out[split], twins=True)
    return out


@pytest.mark.parametrize("split", ["dev", "validation", "test"])
def test_oracle_agent_scores_100_percent(
    benches: dict[str, pathlib.Path], tmp_path: pathlib.Path, split: str
) -> None:
    """The oracle reference agent is right on every case of every split."""
    s = evaluate(benches[split], "reference:oracle", tmp_path / "run")
    o = s["outcomes"]
    assert o["correct"] + o["correct_non_id"] == s["n"] > 0
    assert o["correct_non_id"] > 0


@pytest.mark.parametrize("split", ["dev", "validation", "test"])
def test_always_abstain_fills_exactly_the_abstention_cells(
    benches: dict[str, pathlib.Path], tmp_path: pathlib.Path, split: str
) -> None:
    """always-abstain lands every case in the abstain cell of its truth row and nowhere else."""
    run = tmp_path / "run"
    s = evaluate(benches[split], "reference:always_abstain", run)
    assert s["outcomes"]["abstain"] == s["n"] > 0
    assert sum(s["outcomes"].values()) == s["n"]
    assert s["labels"] == {}
    oracles = bench_oracles(open_bench(benches[split]))
    table = build_report(run)["identification"]
    n_non_id = sum(not o.identifiable for o in oracles.values())
    assert n_non_id > 0
    empty = {**dict.fromkeys(OUTCOMES, 0), "missing": 0}
    assert table["identifiable"] == {**empty, "abstain": len(oracles) - n_non_id}
    assert table["not_identifiable"] == {**empty, "abstain": n_non_id}
    rows = run_verdicts(open_run(run))
    assert all(r["verdict"]["brier"] is None for r in rows)


@pytest.mark.parametrize("split", ["dev", "validation", "test"])
@pytest.mark.parametrize("agent", sorted(SIGNATURES))
def test_confused_agents_get_their_signature(
    benches: dict[str, pathlib.Path], tmp_path: pathlib.Path, agent: str, split: str
) -> None:
    """Each confused reference agent carries its signature label on >= 95% of its failures."""
    s = evaluate(benches[split], f"reference:{agent}", tmp_path / "run")
    sig = s["signature"]
    assert sig["label"] == SIGNATURES[agent]
    assert sig["failed"] > 0
    assert sig["rate"] >= 0.95
    assert s["outcomes"]["invalid"] == 0


def test_never_abstain_fails_exactly_the_non_identifiable_items(
    benches: dict[str, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    """never-abstain is right on identifiable items and answers a value on every non-ID item."""
    s = evaluate(benches["test"], "reference:never_abstain", tmp_path / "run")
    oracles = bench_oracles(open_bench(benches["test"]))
    n_non_id = sum(not o.identifiable for o in oracles.values())
    assert s["outcomes"]["false_answer_on_non_id"] == n_non_id == s["failed"] > 0
    assert s["outcomes"]["correct"] == s["n"] - n_non_id
    assert s["signature"]["hits"] == n_non_id


def test_run_manifest_and_verdicts_written(
    benches: dict[str, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    """A run writes responses, verdicts with world clusters, and a run_manifest naming the split."""
    run = tmp_path / "run"
    evaluate(benches["dev"], "reference:rung1", run)
    manifest = json.loads((run / "run_manifest.json").read_text())
    assert manifest["split"] == "dev" and manifest["arm"] == "reference:rung1"
    assert manifest["scorer_hash"].startswith("sha256:")
    rows = run_verdicts(open_run(run))
    assert all(r["world_id"] for r in rows)


def test_bad_response_lines_are_counted_invalid(
    benches: dict[str, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    """A file with bad lines is still scored; bad lines are invalid, missing cases counted.

    The denominator is the bench's cases: the four cases no line names are missing, and
    the four bad lines (unparseable, or naming a case already answered or no bench case)
    are invalid lines outside the per-case outcomes.
    """
    run = tmp_path / "run"
    evaluate(benches["dev"], "reference:oracle", run)
    lines = (run / "responses.jsonl").read_text().splitlines()
    good = len(lines) - 4
    first = json.loads(lines[0])
    bad = [
        "{broken",
        json.dumps({k: v for k, v in first.items() if k != "status"}),
        json.dumps({**first, "case_id": "nope"}),
        json.dumps({**first, "value": 1.5}),
    ]
    mine = tmp_path / "mine.jsonl"
    mine.write_text("\n".join(lines[:good] + bad) + "\n")
    s = score_responses(benches["dev"], mine, tmp_path / "scored", "external")
    assert s["outcomes"]["invalid"] == 0
    assert s["n"] == len(lines)
    assert s["missing"] == 4
    errors = [b["error"] for b in s["invalid_lines"]]
    assert f":{good + 1}: malformed JSON" in errors[0]
    assert f":{good + 2}: Field required" in errors[1] and "'status'" in errors[1]
    assert f":{good + 3}: unknown case id 'nope'" in errors[2]
    assert f":{good + 4}: value 1.5 outside [0, 1]" in errors[3]
    right = s["outcomes"]["correct"] + s["outcomes"]["correct_non_id"]
    assert right == good
    assert [b["line"] for b in s["invalid_lines"]] == list(range(good + 1, good + 5))


def test_unknown_agent_is_an_input_error() -> None:
    """An unknown agent spec names the known reference agents."""
    with pytest.raises(InputError, match="reference:oracle"):
        reference_agent("reference:psychic", {})


def test_responses_that_are_not_utf8_are_an_input_error(
    benches: dict[str, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    """A response file that is not UTF-8 is a clear InputError naming the caller's file."""
    mine = tmp_path / "mine.jsonl"
    mine.write_bytes(b'{"case_id": "\xff"}\n')
    with pytest.raises(InputError, match=r"mine\.jsonl: not UTF-8 at byte 13"):
        score_responses(benches["dev"], mine, tmp_path / "run", "external")


# --- episode families (records/2) in a sealed bench, scored end to end (issue 19) ---

_ALL_FAMILIES = "incident,active,revision,provenance,negative"


@pytest.fixture(scope="module")
def episode_bench(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """A test bench of 12 worlds with every episode family (held-out structure included)."""
    out = tmp_path_factory.mktemp("episodes") / "bench"
    build_split("test", 12, 21, out, families=_ALL_FAMILIES)
    return out


def test_oracle_scores_100_percent_with_episode_families(episode_bench: pathlib.Path,
                                                         tmp_path: pathlib.Path) -> None:
    """The oracle agent is right on every records/1 and records/2 case of the bench."""
    s = evaluate(episode_bench, "reference:oracle", tmp_path / "run")
    assert set(s["outcomes"]) == set(EPISODE_OUTCOMES) and s["failed"] == 0
    rep = build_report(tmp_path / "run")
    assert rep["overall"]["accuracy"] == 1.0
    assert set(EPISODE_FAMILIES) <= set(rep["by_family"])
    assert all(rep["by_family"][f]["accuracy"] == 1.0 for f in EPISODE_FAMILIES)
    rev = rep["next_stage"]["revision"]
    assert rev["revision_accuracy"] == 1.0 and rev["stale"] == rev["retracted"] == 0
    assert "## Next-stage families (records/2)" in to_markdown(rep)


ISSUE_AGENTS = {
    "premature_commitment": "experiment_avoidance",
    "experiment_avoidance": "experiment_avoidance",
    "costly_irrelevant": "costly_irrelevant_experiment",
    "double_count": "source_duplication",
    "stale_mechanism": "stale_mechanism",
    "omitted_joint_cause": "omitted_joint_cause",
}
"""Issue 19 item 7's reference agents (plus omitted joint cause) and their taxonomy labels."""


def test_issue_agents_are_registered_with_their_labels() -> None:
    """Every signature-failure agent of issue 19 exists with the taxonomy label it must carry."""
    assert {k: EPISODE_SIGNATURES[k] for k in ISSUE_AGENTS} == ISSUE_AGENTS


@pytest.mark.parametrize("name", sorted(EPISODE_SIGNATURES))
def test_episode_agent_signature_on_the_sealed_bench(episode_bench: pathlib.Path,
                                                     tmp_path: pathlib.Path, name: str) -> None:
    """Scored from the sealed bench, each agent fails and carries its label on ≥ 95% of failures."""
    s = evaluate(episode_bench, f"reference:{name}", tmp_path / "run")
    sig = s["signature"]
    assert s["outcomes"]["invalid"] == 0  # an invalid answer would hide a failure
    assert sig["label"] == EPISODE_SIGNATURES[name] and sig["failed"] >= 3
    assert sig["hits"] / sig["failed"] >= 0.95


def test_external_responses_with_v2_lines(episode_bench: pathlib.Path,
                                          tmp_path: pathlib.Path) -> None:
    """v2 answers in a response file are scored: a bad line is invalid, an unnamed case missing."""
    evaluate(episode_bench, "reference:premature_commitment", tmp_path / "ref")
    lines = (tmp_path / "ref" / "responses.jsonl").read_text().splitlines()
    episode_lines = [i for i, t in enumerate(lines) if json.loads(t)["case_id"].startswith("x")]
    bad = json.loads(lines[episode_lines[0]])
    bad["action"] = "reboot_the_moon"
    lines[episode_lines[0]] = json.dumps(bad)
    del lines[episode_lines[1]]
    path = tmp_path / "responses.jsonl"
    path.write_text("\n".join(lines) + "\n")
    s = score_responses(episode_bench, path, tmp_path / "run", "external")
    assert s["missing"] == 1 and len(s["invalid_lines"]) == 1
    assert s["outcomes"]["invalid"] == 1 and s["outcomes"]["lucky"] > 0
    assert "next_stage" in s and s["next_stage"]["families"]["root_cause_debugging"]["missing"]


def test_public_summary_holds_no_per_case_v2_field(episode_bench: pathlib.Path,
                                                   tmp_path: pathlib.Path) -> None:
    """summary.json of a v2 run has aggregates only: no case id, identified set or true cause."""
    evaluate(episode_bench, "reference:stale_mechanism", tmp_path / "run")
    text = (tmp_path / "run" / "summary.json").read_text()
    _, oracles = bench_episodes(open_bench(episode_bench))
    assert not any(cid in text for cid in oracles)
    assert "identified_set" not in text and "true_cause" not in text
    rows = run_verdicts(open_run(tmp_path / "run"))
    assert sum(r.get("version") == "rungbench.records/2" for r in rows) == len(oracles)


def test_episode_only_agent_on_a_plain_bench_is_refused(benches: dict[str, pathlib.Path],
                                                        tmp_path: pathlib.Path) -> None:
    """A records/2 agent on a bench without episode families is an InputError saying so."""
    with pytest.raises(InputError, match="--families"):
        evaluate(benches["dev"], "reference:omitted_joint_cause", tmp_path / "run")


TWIN_AGENTS = {name: label for name, label in SIGNATURES.items() if label in TWIN_LABELS}
"""The planted agents of the six twin-licensed labels."""


@pytest.mark.parametrize("agent", sorted(TWIN_AGENTS))
def test_planted_twin_agents_get_exactly_their_label(
    benches: dict[str, pathlib.Path], tmp_path: pathlib.Path, agent: str
) -> None:
    """Each planted twin agent fails somewhere, and every failure carries its label alone,
    on a case of its own diagnostic pairs."""
    run = tmp_path / "run"
    s = evaluate(benches["test"], f"reference:{agent}", run)
    oracles = bench_oracles(open_bench(benches["test"]))
    failed = [r for r in run_verdicts(open_run(run)) if r["labels"]]
    assert failed and s["outcomes"]["wrong"] == len(failed) == s["failed"]
    assert all(r["labels"] == [TWIN_AGENTS[agent]] for r in failed)
    for r in failed:
        variant = oracles[r["verdict"]["case_id"]].variant
        assert variant is not None and variant.label == TWIN_AGENTS[agent]


def test_twins_share_their_parent_worlds_cluster(
    benches: dict[str, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    """Twin cases are public worlds of their own, but their rows carry the parent's world, so
    every clustered interval counts the generated worlds only."""
    bench = open_bench(benches["dev"])
    oracles = bench_oracles(bench)
    public_worlds = {c.world_id for c in bench_cases(bench)}
    twins = [o for o in oracles.values() if o.variant is not None and o.variant.kind != "item"]
    assert twins and all(o.world_id == oracles[o.variant.parent].world_id for o in twins
                         if o.variant is not None)
    run = tmp_path / "run"
    evaluate(benches["dev"], "reference:rung1", run)
    report = build_report(run)
    assert report["overall"]["n_worlds"] == 18 < len(public_worlds)
    assert {r["world_id"] for r in run_verdicts(open_run(run))} == \
        {o.world_id for o in oracles.values()}


def test_overconfident_agent_gets_exactly_unsupported_certainty(
    benches: dict[str, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    """A wrong value that is no confused reading, stated at 0.95: unsupported certainty alone
    on every failure (never unexplained, never a rung or twin label)."""
    run = tmp_path / "run"
    s = evaluate(benches["dev"], "reference:overconfident", run)
    failed = [r for r in run_verdicts(open_run(run)) if r["labels"]]
    assert failed and len(failed) == s["outcomes"]["wrong"]
    assert all(r["labels"] == ["unsupported_certainty"] for r in failed)


PLANTED_ELSEWHERE = {
    "mechanism_fabrication": "episode policy 'fabricating' (test_episode_runs)",
    "graph_retrieval_failure": "instrument query 'naive' (tests/causal/instrument/test_controls)",
    "scorer_harness_failure": "instrument scorer 'lenient' (tests/causal/instrument/"
                              "test_controls)",
    "routing_bypass": "ablation agent 'planted:bypass' (tests/causal/ablations/test_labels)",
    "oracle_leakage": "ablation agent WorldIdEcho (tests/causal/ablations/test_labels)",
}
"""Labels whose planted instrument is not a reference agent of the bench, and where it is."""


def test_every_seed_label_has_an_assigner_and_a_planted_instrument() -> None:
    """Each of the 22 labels is some planted agent's signature or is planted in another
    module's tests, and its registry entry names where it is assigned (none says 'not
    assigned')."""
    planted = set(SIGNATURES.values()) | set(EPISODE_SIGNATURES.values()) | set(PLANTED_ELSEWHERE)
    assert len(TAXONOMY) == 22
    for f in TAXONOMY:
        assert f.name in planted, f.name
        assert f.assigned_by and "not assigned" not in f.assigned_by, f.name
