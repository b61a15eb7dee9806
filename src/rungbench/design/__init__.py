"""Domain-free designs: registered presets, Latin rotation of execution ordinals,
counterbalanced presentation orders and their exposure audits, byte-matched blocks,
synthetic selectors and factorial recovery.

Nothing here knows chess or causal models; domains render cells, this layer decides
which cells exist, in what order they run and whether the design is balanced.
"""

__all__ = ["audit", "factorial", "matching", "orders", "preset_models", "presets", "quotas",
           "registry", "schema"]
