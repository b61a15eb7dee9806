"""The causal benchmark (seed 003, "Benchmark" and "Scoring").

``items`` turns worlds into public cases and private oracle records (``records``, with
JSON Schema), ``skins`` renders them, ``paraphrases`` holds the versioned table of
rewordings the paraphrase variants are worded by, ``splits`` keeps families apart,
``build`` writes a bench and ``leaks`` scans it; ``requests`` serves cases to agents
through the runner; ``scorer`` is the first scorer, ``taxonomy`` labels failures (all 22
of seed 003, the twin-licensed ones from the matched diagnostic pairs ``variants``
derives), ``evaluate``, ``audit`` and ``report`` summarize, ``reference_agents`` are the
calibrating agents, ``verified`` is the one verified reader of sealed benches and runs.
Episode families (records/2, in the sealed build with ``--families``): ``incidents``
(root-cause debugging, active experiments, interaction worlds), ``revision``,
``provenance`` (source dependence and negative evidence), rendered by ``episode_items``,
written by ``episode_build``, scored by ``episode_scorer``, compared by ``protocols``
(P2). May import ``causal.scm`` and the lower layers; never ``causal.checks``.
"""

__all__ = [
    "audit", "build", "episode_agents", "episode_build", "episode_items", "episode_runs",
    "episode_scorer", "episode_tools", "evaluate", "leaks", "paraphrases", "protocols",
    "records",
    "reference_agents", "report", "requests", "revision", "scorer", "taxonomy", "variants",
    "verified"
]
