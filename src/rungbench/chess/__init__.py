"""Chess domain: positions, the engine-blind pool, cohorts, the leakage gate and labelling."""
