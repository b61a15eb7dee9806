"""Independent checks of the causal instrument (seed 003, "Independent checks").

``mc_check`` (a Monte Carlo checker, with its own reader of the public JSON, ``mc_world``)
and ``second_scorer`` are written from the contracts alone: they import nothing from
``causal.scm`` or ``causal.bench`` (a test parses their imports). ``validate`` (oracle vs
checker) and ``agreement`` (scorer 1 vs scorer 2) are the comparisons, so they alone may
import both sides.
"""

__all__ = ["agreement", "validate"]
