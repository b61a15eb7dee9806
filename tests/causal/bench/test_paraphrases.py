"""Tests for causal.bench.paraphrases: the registered, versioned paraphrase table."""

from __future__ import annotations

import pytest

from rungbench.causal.bench.paraphrases import (
    MAX_PARAPHRASES,
    PARAPHRASE_TABLE,
    PARAPHRASES,
    is_original_wording,
    render_paraphrase,
    slots,
)
from rungbench.causal.bench.skins import TEMPLATES

FILLS = {"target": "blorp=1", "do": "quix=0", "evidence": "zarn=1, fenk=0",
         "given": ", among cases with wib=1", "mediators": "trolm", "inner": "quix=1",
         "bad": "snerk=1", "loss": "10", "options": "leave_alone (cost 0), do(quix=1) (cost 1.2)"}
"""Sample slot values, as ``build.question_slots`` renders them."""


def test_every_question_kind_has_three_paraphrases_and_nothing_else() -> None:
    """The table covers exactly the original template kinds, with at least three distinct
    wordings each, none of them an original wording; the table is versioned."""
    assert set(PARAPHRASES) == set(TEMPLATES)
    for kind, wordings in PARAPHRASES.items():
        assert len(wordings) >= 3, kind
        assert len(set(wordings)) == len(wordings), kind
        assert not set(wordings) & set(TEMPLATES[kind]), kind
    assert MAX_PARAPHRASES == 3
    assert PARAPHRASE_TABLE == "rungbench.causal.paraphrases/1"


@pytest.mark.parametrize("kind", sorted(TEMPLATES))
def test_a_paraphrase_fills_the_same_slots_as_the_original_wording(kind: str) -> None:
    """Every wording of a kind, original or paraphrase, names the same events (the same
    placeholders), so a paraphrase asks about exactly what the original asks about."""
    wanted = {slots(t) for t in TEMPLATES[kind]}
    assert len(wanted) == 1, kind
    assert {slots(t) for t in PARAPHRASES[kind]} == wanted


@pytest.mark.parametrize("kind", sorted(TEMPLATES))
def test_original_wording_is_told_from_a_paraphrase_by_its_text(kind: str) -> None:
    """Every original template, filled, reads as original wording; no paraphrase does."""
    for template in TEMPLATES[kind]:
        assert is_original_wording(template.format(**FILLS)), template
    for i in range(len(PARAPHRASES[kind])):
        text = render_paraphrase(kind, i, FILLS)
        assert not is_original_wording(text), text
        assert "{" not in text
    assert not is_original_wording("What is the weather today?")
