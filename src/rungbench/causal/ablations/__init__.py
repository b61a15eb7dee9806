"""Causal ablations under preregistration (seed 003, "Baseline and ablation matrix",
"Acceptance, regression and contamination", staged prompt stages 3–4).

``arms`` parses the registered arm presets (``designs/causal_arms.toml``); ``facts`` turns a
world's edges into sentences or graph-store rows; ``tools`` holds ``causal``,
``counterfactual``, ``calc`` and ``identify`` over a per-attempt scratch graph store;
``cells`` makes arm × case × sample runner cells and scores finished runs; ``labels`` adds
routing bypass and oracle leakage to a scored cell's failure labels; ``runs`` drives
the resumable runner (one run per arm, one agent for all); ``planted`` holds deterministic
reference agents that follow the tool protocol; ``analysis`` pairs arms by world with
cluster-bootstrap intervals, gives no verdict below the registered validity floor, claims
equivalence only inside a preregistered margin, and answers the three questions; ``prereg``
runs pilot → commit → validate with every look counted; ``contamination`` scans what the
agent side wrote after each validation run.

May import ``causal.bench``, ``causal.instrument`` and the lower layers; never
``causal.checks`` or ``causal.scm`` directly.
"""

__all__ = ["analysis", "arms", "cells", "contamination", "labels", "planted", "prereg", "runs",
           "tools"]
