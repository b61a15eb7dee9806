"""Causal domain (seed 003): one sub-package per system.

``scm`` holds binary structural causal models and the exact oracle for all three rungs;
``bench`` builds, serves and scores the benchmark (first scorer); ``checks`` holds the
independent checks (Monte Carlo checker, second scorer) and the comparisons that run
them against ``scm`` and ``bench``; ``instrument`` will hold the instrument controls.
``causal`` may import every lower layer and never ``chess``, ``demo`` or ``cli``.
"""

__all__ = ["ablations", "bench", "checks", "instrument", "interop", "scm", "tasks"]
