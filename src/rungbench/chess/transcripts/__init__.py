"""Transcripts and the A104 transition census (seed 000, "A104").

Reads LLM Chess transcripts through a versioned replay of their dispatcher
(``llmchess``, ``console``, ``dispatch``, ``llmchess_checks``), keeps the project's own
native corpus (``corpus``, written by the game ``harness``) and counts same-position
transitions with exact intervals (``census``). May import the ``chess`` top level and the
lower layers; never ``chess.labels``, ``chess.studies`` or ``causal``.
"""

__all__ = ["census", "corpus", "dispatch", "frozen", "harness", "play"]
