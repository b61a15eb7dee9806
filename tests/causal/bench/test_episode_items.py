"""Episode-family items: oracle agent 100%, signature labels ≥ 95%, twins, revision metrics."""

from __future__ import annotations

from collections import Counter

import pytest

from rungbench.causal.bench.episode_items import build_episode_world
from rungbench.causal.bench.episode_scorer import score_episode_case
from rungbench.causal.bench.records import EPISODE_FAMILIES, EpisodeOracle
from rungbench.causal.bench.reference_agents import (
    EPISODE_POLICIES,
    EPISODE_SIGNATURES,
    episode_answer,
)
from rungbench.causal.bench.revision import pooled_revision_metrics
from rungbench.causal.bench.taxonomy import episode_failure_labels


@pytest.fixture(scope="module")
def oracles() -> list[EpisodeOracle]:
    """Oracle records of 40 generated worlds."""
    return [o for s in range(40) for o in build_episode_world("dev", 900 + s)[1]]


def test_every_family_built(oracles: list[EpisodeOracle]) -> None:
    """All five episode families yield items, each with a nonsense-skin twin."""
    assert set(Counter(o.family for o in oracles)) == set(EPISODE_FAMILIES)
    by_id = {o.case_id: o for o in oracles}
    for o in oracles:
        twin = by_id[o.cf_link or ""]
        assert twin.skin == "nonsense" or o.skin == "nonsense"
        assert (twin.value, len(twin.identified_set or [])) == (o.value,
                                                                len(o.identified_set or []))


def test_deterministic() -> None:
    """The same world seed gives identical records."""
    assert build_episode_world("dev", 5)[1] == build_episode_world("dev", 5)[1]


def test_oracle_agent_scores_all_right(oracles: list[EpisodeOracle]) -> None:
    """The oracle agent is correct or justified-abstaining on every item."""
    outcomes = Counter(score_episode_case(o, episode_answer("oracle", o)).outcome for o in oracles)
    assert set(outcomes) <= {"correct", "justified_abstain"}


@pytest.mark.parametrize("name", sorted(EPISODE_SIGNATURES))
def test_signature_label_on_95_percent(name: str, oracles: list[EpisodeOracle]) -> None:
    """Each confused reference agent fails, and carries its label on ≥ 95% of its failures."""
    labelled = []
    for o in oracles:
        r = episode_answer(name, o)
        labels = episode_failure_labels(o, r, score_episode_case(o, r))
        if labels:
            labelled.append(EPISODE_SIGNATURES[name] in labels)
    assert len(labelled) >= 10
    assert sum(labelled) / len(labelled) >= 0.95


def test_stale_agent_revision_metrics(oracles: list[EpisodeOracle]) -> None:
    """The oracle revises on every changed reference; the stale agent keeps refuted beliefs."""
    episodes: dict[str, list[EpisodeOracle]] = {}
    for o in oracles:
        if o.family == "sequential_revision":
            episodes.setdefault(o.episode_id, []).append(o)
    assert len(episodes) >= 10 and all(len(v) == 3 for v in episodes.values())

    def metrics(name: str) -> dict[str, object]:
        eps = []
        for stages in episodes.values():
            rows = []
            for o in sorted(stages, key=lambda x: x.stage):
                r = episode_answer(name, o)
                rows.append((o.identified_set or [], r.label if r.status == "answer" else None))
            eps.append(rows)
        return pooled_revision_metrics(eps)

    ok = metrics("oracle")
    assert ok["revision_accuracy"] == 1.0 and ok["stale"] == 0 and ok["retracted"] == 0
    premature = metrics("premature_commitment")
    assert isinstance(premature["refuted"], int) and premature["refuted"] > 0


def test_all_policies_known() -> None:
    """Every signature belongs to a policy."""
    assert set(EPISODE_SIGNATURES) <= set(EPISODE_POLICIES)


def test_names_symptom_agent_gets_exactly_symptom_root_cause_confusion(
        oracles: list[EpisodeOracle]) -> None:
    """Naming a node downstream of an identified cause is wrong and carries the symptom /
    root-cause label alone (the agent commits only where one cause is live)."""
    failed = []
    for o in oracles:
        r = episode_answer("names_symptom", o)
        labels = episode_failure_labels(o, r, score_episode_case(o, r))
        if labels:
            failed.append(labels)
            assert r.label in (o.descendants or [])
    assert len(failed) >= 5
    assert all(labels == ["symptom_root_cause_confusion"] for labels in failed)
