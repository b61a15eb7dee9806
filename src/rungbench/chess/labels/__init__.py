"""The label stage (seed 002): engine-blind pool, leakage gate, two-pass labels, publication.

``pool`` freezes the engine-blind pool, ``cohort`` the terminal cohorts, ``qualify`` is the
leakage gate that refuses before any engine starts; ``label`` runs the two fixed-node
Stockfish passes through the revalidated ``cache`` under the ``idle`` gate; ``stability``
holds the seed's stability and class rules; ``publish`` writes the stage all or nothing
(``stage_records`` reads it back). The run's settings are in ``config``. May import the
``chess`` top level and the lower layers; never ``chess.transcripts``, ``chess.studies``
or ``causal``.
"""

__all__ = ["cohort", "config", "idle", "label", "pool", "qualify", "stability", "stage_records"]
