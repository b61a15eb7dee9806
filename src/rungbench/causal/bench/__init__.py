"""The causal benchmark (seed 003, "Benchmark" and "Scoring").

``items`` turns worlds into public cases and private oracle records (``records``, with
JSON Schema), ``skins`` renders them, ``paraphrases`` holds the versioned table of
rewordings the paraphrase variants are worded by, ``splits`` keeps families apart,
``build`` writes a bench and ``leaks`` scans it; ``requests`` serves cases to agents
through the runner; ``scorer`` is the first scorer, ``taxonomy`` labels failures (all 22
of seed 003, the twin-licensed ones from the matched diagnostic pairs ``variants``
derives); ``evaluate``, ``audit`` and ``report`` summarize, ``subcapabilities`` is seed
003's sub-capability table; ``reference_agents`` are the calibrating agents, ``verified``
is the one verified reader of sealed benches and runs. Episode families (records/2, in
the sealed build with ``--families``): ``incidents`` (root-cause debugging, active
experiments, interaction worlds), ``revision``, ``provenance`` (source dependence and
negative evidence), rendered by ``episode_items``, written by ``episode_build``, scored
by ``episode_scorer``, compared by ``protocols`` (P2); ``repair_outcomes`` and
``decisions`` compute question 3's endpoint (repair loss and sandbox success per dollar)
from two episode runs. Imported bnlearn networks (``--networks``): items in
``networks``, rendered by ``network_build``. May import ``causal.scm``, the BIF reader
``causal.interop.bif`` and the lower layers; never ``causal.checks``.
"""

__all__ = [
    "audit", "build", "decisions", "episode_agents", "episode_build", "episode_items",
    "episode_runs", "episode_scorer", "episode_tools", "evaluate", "leaks", "network_build",
    "networks", "paraphrases", "protocols", "records", "reference_agents", "repair_outcomes",
    "report", "requests", "revision", "scorer", "subcapabilities", "taxonomy", "variants",
    "verified"
]
