"""Registered arm presets: the seed's matrix, digests, and refusals of bad arms."""

from __future__ import annotations

from pathlib import Path

import pytest

from rungbench.causal.ablations.arms import load_matrix
from rungbench.errors import InputError

SEED_ARMS = {"A0", "A1", "A2", "A3", "A4", "A5", "A6", "A7", "A8", "A9", "A10", "A11",
             "A11-query", "A11-calc", "A11-identify", "A11-protocol"}
SEED_TABLE = {("A1", "A0"), ("A2", "A1"), ("A2", "A3"), ("A10", "A9"), ("A9", "A3"),
              ("A10", "A5"), ("A5", "A2"), ("A6", "A5"), ("A7", "A2")}
"""Seed 003 "What each comparison isolates", rows other than A11 − A11−k."""


def _differences(a: dict[str, object], b: dict[str, object]) -> set[str]:
    skip = {"name", "label"}
    return {k for k in a if k not in skip and a[k] != b[k]}


def test_registered_matrix_holds_the_seed_arms() -> None:
    """The preset ships A0 … A11 and every A11−k, with every row of the seed's table."""
    m = load_matrix()
    assert set(m.arms) == SEED_ARMS
    pairs = [(c.a, c.b) for c in m.comparisons]
    assert set(pairs) >= SEED_TABLE
    assert {b for a, b in pairs if a == "A11"} == {n for n in m.arms if n.startswith("A11-")}
    assert m.arm("A9").facts == "text" and m.arm("A10").facts == "graph"
    assert m.arm("A9").content == m.arm("A10").content == "oracle"
    assert m.arm("A2").query == "naive" and m.arm("A5").query == "fixed"
    assert "Worker protocol" in m.arm("A11").system_prompt
    assert "Worker protocol" not in m.arm("A11-protocol").system_prompt
    pairs = {(c.a, c.b) for c in m.comparisons}
    assert {("A10", "A9"), ("A9", "A3"), ("A2", "A3"), ("A1", "A0")} <= pairs
    assert [q.id for q in m.questions] == ["Q1", "Q2", "Q3"]


def test_new_arms_differ_from_their_comparator_in_one_component() -> None:
    """A4 is A2 without the counterfactual module; A6 is A5 with the routing gate; A7 is A2
    with the P2 worker protocol (in its prompt); A8 is A5 with typed edges."""
    m = load_matrix()
    js = {n: a.to_json() for n, a in m.arms.items()}
    assert _differences(js["A2"], js["A4"]) == {"tools"}
    assert set(m.arm("A2").tools) - set(m.arm("A4").tools) == {"counterfactual"}
    assert _differences(js["A6"], js["A5"]) == {"gate"} and m.arm("A6").gate is not None
    assert _differences(js["A7"], js["A2"]) == {"system_prompt", "protocol"}
    assert "at least two competing causal" in m.arm("A7").system_prompt
    assert _differences(js["A8"], js["A5"]) == {"edges"}
    assert (m.arm("A8").edges, m.arm("A5").edges) == ("typed", "untyped")


def test_arm_digest_changes_with_any_registered_constant() -> None:
    """Arms that differ only in budget have different digests; the same arm is stable."""
    m = load_matrix()
    assert m.arm("A10").digest() == load_matrix().arm("A10").digest()
    assert m.arm("A11").digest() != m.arm("A11-calc").digest()


def _write(tmp_path: Path, arm: str) -> Path:
    text = (
        "[design]\nid = 'x'\nversion = 1\nseed = '003_dc4fcca8b2a6b04f'\n"
        "kind = 'ablation_matrix'\n[defaults]\nsamples = 1\nitems_per_world = 2\n"
        "production_keep = 0.5\nproduction_associations = 0.5\nmax_tool_calls = 3\n"
        "max_tokens = 100\n"
        "[analysis]\nmin_valid_answers = 5\nmin_valid_share = 0.5\n[prompts]\np = 'answer'\n" + arm)
    path = tmp_path / "arms.toml"
    path.write_text(text)
    return path


def test_user_adds_an_arm_by_writing_toml(tmp_path: Path) -> None:
    """A user's TOML file with one new arm loads; budgets default from [defaults]."""
    path = _write(tmp_path, "[[arms]]\nname = 'B1'\nprompt = 'p'\nfacts = 'graph'\n"
                            "content = 'oracle'\nquery = 'fixed'\ntools = ['causal', 'calc']\n"
                            "max_tool_calls = 7\n")
    arm = load_matrix(path).arm("B1")
    assert (arm.max_tool_calls, arm.max_tokens, arm.tools) == (7, 100, ("causal", "calc"))


@pytest.mark.parametrize(("arm", "field"), [
    ("[[arms]]\nname = 'B'\nprompt = 'p'\nfacts = 'graph'\ncontent = 'oracle'\n"
     "query = 'fixed'\ntools = []\n", "arms[0].tools"),
    ("[[arms]]\nname = 'B'\nprompt = 'p'\nfacts = 'text'\ncontent = 'oracle'\n"
     "tools = ['search']\n", "arms[0].tools[0]"),
    ("[[arms]]\nname = 'B'\nprompt = 'q'\nfacts = 'public'\ntools = []\n", "arms[0].prompt"),
    ("[[arms]]\nname = 'B'\nprompt = 'p'\nfacts = 'text'\ncontent = 'future'\ntools = []\n",
     "arms[0].content"),
    ("[[arms]]\nname = 'B'\nprompt = 'p'\nfacts = 'text'\ncontent = 'oracle'\n"
     "tools = ['counterfactual']\n", "arms[0].tools"),
    ("[[arms]]\nname = 'B'\nprompt = 'p'\nfacts = 'public'\nedges = 'typed'\ntools = []\n",
     "arms[0].edges"),
    ("[[arms]]\nname = 'B'\nprompt = 'p'\nfacts = 'text'\ncontent = 'oracle'\n"
     "gate = 'detector_classifier_v1'\ntools = []\n", "arms[0].gate"),
    ("[[arms]]\nname = 'B'\nprompt = 'p'\nfacts = 'graph'\ncontent = 'oracle'\n"
     "query = 'fixed'\ngate = 'regex_only'\ntools = ['causal']\n", "arms[0].gate"),
])
def test_bad_arm_is_input_error_naming_the_field(tmp_path: Path, arm: str, field: str) -> None:
    """A graph arm without causal(), an unknown tool, prompt or content, the counterfactual
    module without a graph, typed edges without facts, a gate without causal() or an unknown
    detector each name the field."""
    with pytest.raises(InputError) as exc:
        load_matrix(_write(tmp_path, arm))
    assert exc.value.field == field
