"""The causal instrument (seed 003): prove the measurement before measuring anyone.

Instrument audit ("Instrument audit", "Matched controls", "Control-matrix demonstration"):
``graph_store`` is the typed SQLite graph store (DDL also valid PostgreSQL); ``query``
holds the ``causal()`` protocol with the ``naive`` and ``fixed`` implementations and the
``module:function`` and loopback HTTP adapters (``http_contract``); ``scorers`` are the
lenient and strict scorers and ``strict_check`` an independently written strict scorer
(stdlib only, no shared code); ``cases``, ``controls`` (C0–C5), ``probes``, ``census``
(graph validity sample, Cohen's κ, leakage scan) and ``report`` make the control matrix.

Runtime instrumentation ("Runtime instrumentation", "Shadow evaluation and weekly report"):
``claims`` holds the append-only hash-chained tables, ``logger`` the process that alone owns
them behind an insert-only Unix socket (``client``), ``detector`` the frozen opportunity
detector, ``weekly`` the derived numbers and the weekly report.

May import ``causal.scm``, ``causal.bench`` and the lower layers; never ``causal.checks``.
"""

__all__ = [
    "cases", "census", "claims", "client", "controls", "detector", "graph_store", "logger",
    "query", "report", "scorers", "weekly"
]
