"""Incident simulator: the oracle reproduces the hand-derived numbers of data/episode_hand_cases."""

from __future__ import annotations

import json
import math
from importlib.resources import files

import numpy as np
import pytest

from rungbench.causal.bench.incidents import (
    Diagnosis,
    IncidentWorld,
    draw_incident,
    draw_incident_world,
    draw_interaction_world,
    interaction_outage,
)
from rungbench.causal.scm import mechanisms
from rungbench.causal.scm.world import Variable, World


def _hand_world() -> IncidentWorld:
    """World h1 of the hand cases: faults a (0.2), b (0.1); s0 := a|b, s1 := a, s2 := a|b."""
    v = [
        Variable("a", (), mechanisms.root(0.2)), Variable("b", (), mechanisms.root(0.1)),
        Variable("s0", ("a", "b"), mechanisms.noisy_or([1.0, 1.0], 0.0)),
        Variable("s1", ("a",), mechanisms.noisy_or([1.0], 0.0)),
        Variable("s2", ("a", "b"), mechanisms.noisy_or([1.0, 1.0], 0.0)),
        Variable("outage", ("a", "b"), mechanisms.deterministic(lambda x: int(any(x)), 2)),
    ]
    return IncidentWorld(World("h1", tuple(v)), ("a", "b"), ("s0", "s1", "s2"),
                         {"s0": "logs", "s1": "metrics", "s2": "logs"},
                         {"s0": 0.1, "s1": 0.5, "s2": 0.2}, {"a": 1.0, "b": 2.0})


def test_hand_world_posterior_losses_and_eig() -> None:
    """Posterior 9/13 vs 4/13, E[L], EIG(s1) = H(9/13) and the decision values match the key."""
    d = Diagnosis(_hand_world(), {"outage": 1, "s0": 1})
    assert d.posterior["a"] == pytest.approx(9 / 13) and d.identified_set == ["a", "b"]
    assert d.expected_loss["repair:a"] == pytest.approx(1 + 40 / 13)
    assert d.expected_loss["repair:b"] == pytest.approx(2 + 90 / 13)
    assert d.expected_loss["leave_alone"] == pytest.approx(10.0)
    h = (9 / 13) * math.log2(13 / 9) + (4 / 13) * math.log2(13 / 4)
    assert d.eig_bits["s1"] == pytest.approx(h) and d.eig_bits["s2"] == pytest.approx(0.0)
    assert d.experiment_loss["s1"] == pytest.approx(0.5 + 17 / 13)
    assert d.experiment_loss["act_now"] == pytest.approx(1 + 40 / 13)
    assert d.discriminating == ["s1"]


def test_hand_world_unique_after_probe() -> None:
    """With s1 = 1 delivered only fault a remains (b cannot raise s1)."""
    d = Diagnosis(_hand_world(), {"outage": 1, "s0": 1, "s1": 1})
    assert d.identified_set == ["a"] and d.expected_loss["repair:b"] == pytest.approx(12.0)


def test_true_fault_always_in_identified_set() -> None:
    """The sampled fault is never excluded by its own telemetry (no false exclusions)."""
    rng = np.random.default_rng(7)
    for i in range(40):
        inc = draw_incident(draw_incident_world(rng, f"w{i}"), rng)
        d = inc.diagnosis()
        assert inc.fault in d.identified_set
        assert sum(d.posterior.values()) == pytest.approx(1.0)
        assert all(v >= -1e-12 for v in d.eig_bits.values())


def _joint_world() -> IncidentWorld:
    """Hand world j1: a (0.5), b (0.4), c (0.1); outage := c | (a & b); s0 := a, s1 := c."""
    v = [
        Variable("a", (), mechanisms.root(0.5)), Variable("b", (), mechanisms.root(0.4)),
        Variable("c", (), mechanisms.root(0.1)),
        Variable("s0", ("a",), mechanisms.noisy_or([1.0], 0.0)),
        Variable("s1", ("c",), mechanisms.noisy_or([1.0], 0.0)),
        Variable("outage", ("a", "b", "c"), interaction_outage(3, (0, 1))),
    ]
    return IncidentWorld(World("j1", tuple(v)), ("a", "b", "c"), ("s0", "s1"),
                         {"s0": "logs", "s1": "metrics"}, {"s0": 0.4, "s1": 0.6},
                         {"a": 1.0, "b": 1.5, "c": 2.0}, joint={"a+b": ("a", "b")})


def _hand_oracle(name: str) -> dict[str, object]:
    doc = json.loads((files("rungbench.causal") / "data" / "episode_hand_cases.json").read_text())
    oracle: dict[str, object] = doc["oracles"][name]
    return oracle


@pytest.mark.parametrize(("name", "evidence"), [("joint_two", {"outage": 1}),
                                                ("joint_unique", {"outage": 1, "s0": 1})])
def test_interaction_hand_world_matches_the_key(name: str, evidence: dict[str, int]) -> None:
    """The oracle reproduces the hand-derived set, losses, EIG and decision values of j1."""
    d = Diagnosis(_joint_world(), evidence)
    key = _hand_oracle(name)
    assert d.identified_set == key["identified_set"]
    probe = {x: f"probe:{x}" for x in d.probes} | {"act_now": "act_now"}
    for ours, theirs in ((d.expected_loss, key["expected_loss"]),
                         ({probe[k]: v for k, v in d.eig_bits.items()}, key["eig_bits"]),
                         ({probe[k]: v for k, v in d.experiment_loss.items()},
                          key["experiment_loss"])):
        assert isinstance(theirs, dict) and set(ours) == set(theirs)
        assert all(ours[k] == pytest.approx(theirs[k], abs=1e-12) for k in ours)
    assert [probe[x] for x in d.discriminating] == key["discriminating"]


def test_interaction_prior_excludes_lone_components() -> None:
    """Given the outage, a lone component of the joint cause has posterior 0; a+b has 6/7."""
    d = Diagnosis(_joint_world(), {"outage": 1})
    assert d.posterior["a"] == d.posterior["b"] == 0.0
    assert d.posterior["a+b"] == pytest.approx(6 / 7)


def test_interaction_episodes_sample_a_possible_cause() -> None:
    """In drawn interaction worlds the sampled cause produces the outage and stays identified."""
    rng = np.random.default_rng(3)
    joint = 0
    for i in range(30):
        iw = draw_interaction_world(rng, f"j{i}")
        inc = draw_incident(iw, rng)
        assert inc.fault in inc.diagnosis().identified_set
        joint += inc.fault in iw.joint
    assert 10 <= joint < 30
