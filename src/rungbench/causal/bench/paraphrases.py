"""Paraphrase templates: the same question, worded anew (seed 003 "Research synthesis").

Corr2Cause's fine-tuned models broke under paraphrase; seed 003 takes that collapse as the
reason every item needs semantic mutation variants. A paraphrase variant of an item is a
new public case over the same world, evidence, query and answer whose question text comes
from this table instead of the original one (``skins.TEMPLATES``). No model writes them:
each template below is fixed, registered under :data:`PARAPHRASE_TABLE`, and fills the
same slots as the original wording of its kind, so it names the same events and nothing
else. The table is versioned: a changed or added template is a new table version, and a
bench records the version it was built with (``Mutation.table``).

:func:`is_original_wording` tells the original wording from a paraphrase by its text
alone; the planted reference agent ``original_wording`` (``reference_agents``) uses it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from rungbench.causal.bench.skins import TEMPLATES

__all__ = [
    "MAX_PARAPHRASES",
    "PARAPHRASES",
    "PARAPHRASE_TABLE",
    "is_original_wording",
    "render_paraphrase",
    "slots",
]

PARAPHRASE_TABLE = "rungbench.causal.paraphrases/1"
"""Version of :data:`PARAPHRASES`; bump it with any change to a template."""

PARAPHRASES: dict[str, tuple[str, ...]] = {
    "rung1": (
        "Restricting attention to observed cases in which {evidence}, what fraction have "
        "{target}?",
        "In the observational data, conditional on {evidence}, what is the probability "
        "that {target}?",
        "Of all observed records showing {evidence}, what share also show {target}?",
    ),
    "rung1_marginal": (
        "Across all observed cases, what is the probability that {target}?",
        "Without intervening on anything, what fraction of observed cases have {target}?",
        "What share of the observed population shows {target}?",
    ),
    "rung2": (
        "If {do} is imposed by intervention{given}, what is the probability of {target}?",
        "An external intervention fixes {do}{given}. How likely is {target} then?",
        "What is P({target}) when {do} is set by hand rather than observed{given}?",
    ),
    "rung3": (
        "One episode showed {evidence}. In that very episode, had {do} been imposed "
        "instead, what is the probability of {target}?",
        "Consider a single episode in which {evidence} was observed. Counterfactually, if "
        "{do} had been set, how probable is {target} in that episode?",
        "Given the factual episode {evidence}, what is P({target}) in the counterfactual "
        "world where {do} was forced?",
    ),
    "bounds": (
        "One episode showed {evidence}. Had {do} been imposed in that episode, would "
        "{target} have held? Report the tightest interval [lo, hi] for this probability "
        "that the data permit.",
        "Consider the episode where {evidence} was observed. For the counterfactual in "
        "which {do} was forced, bound the probability of {target}: give the narrowest "
        "[lo, hi] the evidence supports.",
        "In the episode with {evidence}, what are the sharpest bounds [lo, hi] on the "
        "probability that {target} would have held had {do} been set?",
    ),
    "discovery": (
        "Assuming what is stated, which directed edges among the observed variables does "
        "the joint distribution support? Give them as a list.",
        "From the joint distribution and the stated assumptions, identify the causal graph "
        "over the observed variables (as far as the data determine it) and list its "
        "directed edges.",
        "Which causal structure over the observed variables is consistent with the data "
        "under the stated assumptions? Answer with a list of directed edges.",
    ),
    "mediation": (
        "Force {do}, but hold {mediators} at the values they would take under {inner}. "
        "What is P({target})?",
        "Let {mediators} keep the values they would have had under {inner}, while {do} is "
        "set by intervention. What is the probability of {target}?",
        "With {do} imposed and {mediators} fixed at their values under {inner}, how likely "
        "is {target}?",
    ),
    "decision": (
        "Every time {bad} occurs, it costs {loss} units. Counting each action's own cost, "
        "which action gives the lowest expected loss? Options: {options}.",
        "A loss of {loss} units is incurred whenever {bad}. Choose the action with the "
        "smallest expected loss including its cost. Options: {options}.",
        "Options: {options}. If each occurrence of {bad} costs {loss} units, which option "
        "minimizes the expected total loss, cost included?",
    ),
}
"""Paraphrase templates keyed by question kind (the keys of ``skins.TEMPLATES``)."""

MAX_PARAPHRASES = min(len(t) for t in PARAPHRASES.values())
"""Most paraphrase variants an item can get, each from a different template."""

_SLOT = re.compile(r"\{(\w+)\}")


def slots(template: str) -> frozenset[str]:
    """The placeholder names a template fills (``{target}`` → ``target``)."""
    return frozenset(_SLOT.findall(template))


def render_paraphrase(kind: str, index: int, fields: Mapping[str, str]) -> str:
    """Template ``index`` of ``kind`` filled with ``fields`` (rendered, skinned events)."""
    return PARAPHRASES[kind][index].format(**fields)


def _pattern(template: str) -> str:
    """A template as a regular expression: literal text, each placeholder any text."""
    parts = _SLOT.split(template)
    return "".join(re.escape(p) if i % 2 == 0 else ".*?" for i, p in enumerate(parts))


_ORIGINAL = re.compile("|".join(f"(?:{_pattern(t)})" for ts in TEMPLATES.values() for t in ts),
                       re.DOTALL)


def is_original_wording(question: str) -> bool:
    """Whether ``question`` is worded by an original template (``skins.TEMPLATES``)."""
    return _ORIGINAL.fullmatch(question) is not None
