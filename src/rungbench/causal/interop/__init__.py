"""Interoperability with external causal benchmarks and tools (seed 003, "Research synthesis").

``cladder`` imports CLadder's models and questions and re-grades them exactly;
``bif`` reads BIF networks (2..64 states per variable, names kept) at full double
precision; ``imports`` writes sealed import directories that carry the CPT encoding and
its coupling caveat;
``export`` writes result tables as CSV, Parquet or JSON with a documented schema;
``inspect_bridge`` exports benches as inspect_ai tasks and imports inspect logs back.
Sits beside ``causal.bench``: may import ``causal.scm`` and ``causal.bench``, never
``causal.checks`` or ``causal.instrument``.
"""

__all__ = ["bif", "cladder", "cladder_inspect", "export", "imports", "inspect_bridge"]
