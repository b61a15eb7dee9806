"""Registered arm presets: the seed's matrix, digests, and refusals of bad arms."""

from __future__ import annotations

from pathlib import Path

import pytest

from rungbench.causal.ablations.arms import load_matrix
from rungbench.errors import InputError

SEED_ARMS = {"A0", "A1", "A2", "A3", "A5", "A9", "A10", "A11", "A11-query", "A11-calc",
             "A11-identify", "A11-protocol"}


def test_registered_matrix_holds_the_seed_arms() -> None:
    """The preset ships A0, A1, A2, A3, A5, A9, A10, A11 and every A11−k, with the table."""
    m = load_matrix()
    assert set(m.arms) == SEED_ARMS
    assert m.arm("A9").facts == "text" and m.arm("A10").facts == "graph"
    assert m.arm("A9").content == m.arm("A10").content == "oracle"
    assert m.arm("A2").query == "naive" and m.arm("A5").query == "fixed"
    assert "Worker protocol" in m.arm("A11").system_prompt
    assert "Worker protocol" not in m.arm("A11-protocol").system_prompt
    pairs = {(c.a, c.b) for c in m.comparisons}
    assert {("A10", "A9"), ("A9", "A3"), ("A2", "A3"), ("A1", "A0")} <= pairs
    assert [q.id for q in m.questions] == ["Q1", "Q2", "Q3"]


def test_arm_digest_changes_with_any_registered_constant() -> None:
    """Arms that differ only in budget have different digests; the same arm is stable."""
    m = load_matrix()
    assert m.arm("A10").digest() == load_matrix().arm("A10").digest()
    assert m.arm("A11").digest() != m.arm("A11-calc").digest()


def _write(tmp_path: Path, arm: str) -> Path:
    text = (
        "[design]\nid = 'x'\nversion = 1\nseed = '003_dc4fcca8b2a6b04f'\n"
        "kind = 'ablation_matrix'\n[defaults]\nsamples = 1\nitems_per_world = 2\n"
        "production_keep = 0.5\nmax_tool_calls = 3\nmax_tokens = 100\n"
        "[prompts]\np = 'answer'\n" + arm)
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
])
def test_bad_arm_is_input_error_naming_the_field(tmp_path: Path, arm: str, field: str) -> None:
    """A graph arm without causal(), an unknown tool, prompt or content each name the field."""
    with pytest.raises(InputError) as exc:
        load_matrix(_write(tmp_path, arm))
    assert exc.value.field == field
