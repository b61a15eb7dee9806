"""Instrument controls of the causal benchmark (seed 003, "Controls"): the C0–C5 audit.

Empty until the instrument audit lands. May import ``causal.scm``, ``causal.bench`` and
the lower layers.
"""
