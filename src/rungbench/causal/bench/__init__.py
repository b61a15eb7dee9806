"""The causal benchmark (seed 003, "Benchmark" and "Scoring").

``items`` turns worlds into public cases and private oracle records (``records``, with
JSON Schema), ``skins`` renders them, ``splits`` keeps families apart, ``build`` writes a
bench and ``leaks`` scans it; ``requests`` serves cases to agents through the runner;
``scorer`` is the first scorer, ``taxonomy`` labels failures, ``evaluate``, ``audit`` and
``report`` summarize, ``reference_agents`` are the calibrating agents. May import
``causal.scm`` and the lower layers; never ``causal.checks``.
"""
