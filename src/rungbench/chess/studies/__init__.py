"""Move-choice studies (seeds 000–001): A105 panels, E020/E021 ladder, E023, the evaluator.

``panels`` renders the A105 byte-matched board / legal-list panels; ``move_choice`` turns
positions into frozen ``submit_move`` schedules. Studies read the published label stage,
so they may import ``chess.labels`` (read side), the ``chess`` top level and every lower
layer; never ``chess.transcripts`` or ``causal``.

The evaluator (seed 002, "The labeling engine cannot grade its own exam"): ``evaluator``
holds the engine family table, the registered evaluators (Ethereal primary, Toga II
secondary, Stockfish only as the labelled internal proxy), their contract (fixed depth,
one thread, ``ucinewgame``, a timeout on every call) and identity with its reference
signature; ``wdl_model`` the named, versioned cp → WDL logistic and its fit; ``regret``
the pure WDL-regret and outcome-class rules; ``evaluation`` the resumable,
content-addressed, all-or-nothing stage behind ``rungbench chess evaluate``.

Analysis (seeds 000–001, "An effect must survive attempts to explain it away"): ``cells``
is the versioned per-cell table every analysis reads; ``analysis`` the A105 estimands,
sensitivities and attrition bounds; ``arms_analysis`` the E020/E021 coverage × selection
and E023 contrasts; ``falsifiers`` seed 001's six falsifiers ("Outcomes that can prove us
wrong"), each a named analysis with a verdict; ``strata`` the strata and cost columns of a
cell; ``gates`` the seven claim gates; ``wording`` the narrow claim sentence,
the null's MDE envelope or the blocking gate; ``analysis_report`` the document behind
``rungbench chess analyze``; ``cell_export`` its cell table as CSV, Parquet or JSON
Lines; ``planted_tables`` seeded planted agents that validate it.

Study binding (seeds 000–002, "the final 600-position manifest"): ``manifest`` freezes the
quota-stratified manifest from a verified label stage; ``bindings`` binds a registered
design to it as a content-addressed object; ``budget`` holds the frozen provider-budget
authorization a run must be covered by; ``ladder`` renders every design's cells (the
self-shortlist choice stage from a verified probe run included) and the E020/E021
estimands; ``ladder_audit`` the outcome-blind E020/E021 and E022 rendering audit behind
``rungbench design audit e020|e022``; ``planted`` the planted-mechanism agents served on loopback;
``study`` the freeze → bind → run → evaluate → status chain; ``study_presets`` the key schemas
of the ladder and falsifier presets and ``plan`` the analysis each preset registers.
"""

__all__ = [
    "analysis", "analysis_report", "audits", "bindings", "budget", "cell_export", "cells",
    "evaluation", "evaluator", "falsifiers", "ladder", "manifest", "move_choice", "plan",
    "planted", "preset_copy", "strata", "study", "study_presets", "successor_records",
    "wdl_model", "wording"
]
