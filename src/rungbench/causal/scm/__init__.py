"""Causal worlds and the exact oracle (seed 003, "Worlds" and "The oracle").

``world`` (``World``, ``Variable``, ``Response``, ``Query``) holds SCMs over variables of
2..64 states (binary ones as `rungbench.world/1`); ``mechanisms``, ``motifs`` and
``random_dag`` make SCMs (binary, or categorical with named states); ``enumeration`` and
``elimination`` are the two exact engines behind ``oracle`` (rungs 1–3, PN/PS/PNS, NDE/NIE)
and ``joint`` (the observed distribution); ``cpts`` builds worlds from Bayesian-network CPTs
and decides which queries their unspecified cross-row coupling can change; ``estimands``
gives ATE, ETT, NDE and NIE by either engine; ``identify`` (back-door, front-door),
``witness`` (alternative SCMs with the same observed joint) and ``structure`` (CPDAG, mixed
graphs) answer the graph questions. May import the lower layers only: never
``causal.bench``, ``causal.checks`` or ``causal.instrument``.
"""

__all__ = [
    "cpts", "elimination", "enumeration", "estimands", "identify", "joint", "mechanisms", "motifs",
    "oracle", "random_dag", "structure", "witness", "world"
]
