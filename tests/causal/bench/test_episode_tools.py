"""Tests for causal.bench.episode_tools: telemetry only through tools, budgeted experiments,
stages released in order, and the recomputed oracle equal to the sealed one on full evidence."""

from __future__ import annotations

import json
import pathlib

import pytest

from rungbench.causal.bench.build import build_split
from rungbench.causal.bench.episode_runs import delivered_oracle
from rungbench.causal.bench.episode_tools import (
    ANSWER,
    EXPERIMENT,
    EpisodeEnvironment,
    episode_groups,
    episode_request,
    episode_toolbox,
    probe_outcome,
    view_incident,
    view_world,
)
from rungbench.causal.bench.records import EpisodeCase, EpisodeOracle
from rungbench.causal.bench.verified import bench_episodes, open_bench


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory
          ) -> tuple[list[EpisodeCase], dict[str, EpisodeOracle]]:
    """A 3-world dev bench with every episode family."""
    root = tmp_path_factory.mktemp("ep") / "bench"
    build_split("dev", 3, 5, root, None,
                families="incident,active,revision,provenance,negative")
    return bench_episodes(open_bench(root))


def _env(cases: list[EpisodeCase], oracles: dict[str, EpisodeOracle], cell: str,
         budget: float = 2.0) -> EpisodeEnvironment:
    env = episode_toolbox(oracles)(episode_request(cell, cases, experiment_budget=budget))
    assert isinstance(env, EpisodeEnvironment)
    return env


def _probes(case: EpisodeCase) -> dict[str, float]:
    return {i.id: i.cost for i in case.permitted_interventions if i.id.startswith("probe:")}


def test_prompt_holds_no_telemetry_and_the_tools_return_exactly_the_cases(bench) -> None:
    """The prompt omits the telemetry block; logs/metrics return that block, nothing more."""
    cases, oracles = bench
    incident = [c for c in cases if c.evidence.kind == "telemetry"]
    assert incident
    for cell, group in episode_groups(incident):
        req = episode_request(cell, group)
        sent = json.dumps(req.to_json())
        assert '"tools": {"logs"' not in sent and '"metrics": {' not in sent
        env = _env(group, oracles, cell)
        for tool in ("logs", "metrics"):
            got = env.call(tool, "{}")
            assert got == {"stage": group[0].stage,
                           "telemetry": group[0].evidence.payload["tools"][tool]}
    posterior = next(c for c in cases if c.evidence.kind != "telemetry")
    env = _env([posterior], oracles, posterior.case_id)
    assert not env.offers("logs") and not env.offers(EXPERIMENT) and not env.offers(ANSWER)
    assert "error" in env.call("logs", "{}")


def test_experiments_are_charged_refused_and_replayed_deterministically(bench) -> None:
    """Unlisted, repair, repeated and over-budget runs are errors that charge nothing; a run
    charges its cost and its outcome is the same in a fresh environment (seeded by case id)."""
    cases, oracles = bench
    case = next(c for c in cases if c.item_type == "diagnosis" and c.family ==
                "root_cause_debugging" and len(_probes(c)) >= 2)
    probes = sorted(_probes(case).items(), key=lambda kv: kv[1])
    env = _env([case], oracles, case.case_id, budget=probes[0][1])
    assert "error" in env.call(EXPERIMENT, json.dumps({"intervention": "probe:nowhere"}))
    assert "repair" in env.call(EXPERIMENT, json.dumps(
        {"intervention": case.permitted_interventions[0].id}))["error"]
    assert "error" in env.call(EXPERIMENT, "not json")
    first = env.call(EXPERIMENT, json.dumps({"intervention": probes[0][0]}))
    assert first["cost"] == probes[0][1] and first["budget_left"] == pytest.approx(0.0)
    assert "already run" in env.call(EXPERIMENT, json.dumps(
        {"intervention": probes[0][0]}))["error"]
    over = env.call(EXPERIMENT, json.dumps({"intervention": probes[1][0]}))
    assert "budget left" in over["error"] and env.state.spent == probes[0][1]
    again = _env([case], oracles, case.case_id, budget=probes[0][1])
    assert again.call(EXPERIMENT, json.dumps({"intervention": probes[0][0]})) == first
    node = probes[0][0].removeprefix("probe:")
    iw = view_incident(case.model_dump(mode="json"))
    assert first["observed"] == {node: probe_outcome(
        view_world(case.model_dump(mode="json")), oracles[case.case_id].true_cause or "",
        iw.faults, node, case.case_id)}


def test_probe_outcomes_are_certain_where_the_mechanism_makes_them_so(bench) -> None:
    """A symptom none of the true hypothesis's faults feeds reads 0 in every draw (no leak)."""
    cases, oracles = bench
    checked = 0
    for c in cases:
        if c.family != "root_cause_debugging" or c.item_type != "diagnosis":
            continue
        view = c.model_dump(mode="json")
        world, iw = view_world(view), view_incident(view)
        active = set((oracles[c.case_id].true_cause or "").split("+"))
        for node in iw.symptoms:
            if not set(world.var(node).parents) & active:
                assert probe_outcome(world, "+".join(sorted(active)), iw.faults, node,
                                     c.case_id) == 0
                checked += 1
    assert checked > 0


def test_revision_stages_are_released_in_order_and_state_resets(bench) -> None:
    """The answer tool is a tool before the last stage (it releases the next); a fresh
    environment starts at stage 1 with nothing spent."""
    cases, oracles = bench
    cell, group = next((k, g) for k, g in episode_groups(cases) if len(g) == 3)
    env = _env(group, oracles, cell)
    assert [c.stage for c in group] == [1, 2, 3]
    assert "error" in env.call(ANSWER, json.dumps({"status": "answer", "confidence": 7}))
    assert "error" in env.call(ANSWER, json.dumps({"bogus": 1}))
    for stage in (2, 3):
        assert env.offers(ANSWER)
        reply = env.call(ANSWER, json.dumps({"status": "need_info"}))
        assert reply["accepted"] and reply["next_stage"] == stage
        assert f"Stage {stage}." in reply["release"]
        assert env.call("logs", "{}")["stage"] == stage
    assert not env.offers(ANSWER)
    fresh = _env(group, oracles, cell)
    assert fresh.state.stage == 0 and fresh.state.spent == 0.0 and not fresh.state.outcomes


def test_a_probe_of_a_node_a_later_stage_delivers_returns_that_stages_value(bench) -> None:
    """Within an episode an experiment agrees with the telemetry later stages release."""
    cases, oracles = bench
    checked = 0
    for cell, group in episode_groups(cases):
        if len(group) < 2:
            continue
        early = {k for t in group[0].evidence.payload["tools"].values() for k in t}
        later = {k: v for c in group[1:] for t in c.evidence.payload["tools"].values()
                 for k, v in t.items() if k not in early}
        for node, value in later.items():
            if f"probe:{node}" in _probes(group[0]):
                env = _env(group, oracles, cell, budget=100.0)
                got = env.call(EXPERIMENT, json.dumps({"intervention": f"probe:{node}"}))
                assert got["observed"] == {node: value}
                checked += 1
    assert checked > 0


def test_full_telemetry_recomputes_the_sealed_oracle(bench) -> None:
    """With every delivered node observed and no experiment, the recomputed oracle record
    equals the sealed one (identified set, losses, EIG, decision value); with the outage
    alone the identified set only grows."""
    cases, oracles = bench
    n = 0
    for c in cases:
        if c.evidence.kind != "telemetry":
            continue
        sealed = oracles[c.case_id]
        seen = {k: v for t in c.evidence.payload["tools"].values() for k, v in t.items()}
        got = delivered_oracle(c, sealed, seen)
        assert got.identified_set == sealed.identified_set
        assert got.discriminating == sealed.discriminating
        for name in ("expected_loss", "eig_bits", "experiment_loss"):
            a, b = getattr(got, name), getattr(sealed, name)
            assert (a is None) == (b is None)
            if a is not None:
                assert a.keys() == b.keys()
                assert all(a[k] == pytest.approx(b[k], abs=1e-12) for k in a)
        bare = delivered_oracle(c, sealed, {})
        assert set(sealed.identified_set or []) <= set(bare.identified_set or [])
        n += 1
    assert n > 10


def test_a_mechanism_already_naming_the_outage_node_is_refused(tmp_path: pathlib.Path) -> None:
    """A view whose skinned outage differs from a node literally named outage is an input
    error, not a silently merged node."""
    from rungbench.errors import InputError

    view = {"evidence": {"payload": {"outage": {"down": 1}, "mechanism": {
        "schema": "x", "world_id": "w", "variables": [{"name": "outage", "parents": []}]}}}}
    with pytest.raises(InputError):
        view_world(view)
