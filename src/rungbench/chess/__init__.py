"""Chess domain (seeds 000, 001, 002): one sub-package per seed system.

The top level holds what every system shares: normalized positions (``position``), UCI
engine identity and search (``engine``, used by the labeller and the evaluator), the
registered label-engine builds and their pinned files (``engine_builds``), the
study workspace (``workspace``) and the reference move-choice agents
(``reference_agents``). The sub-packages are ``transcripts`` (seed 000, A104 census),
``labels`` (seed 002, the label stage) and ``studies`` (seeds 000–001, A105, E020/E021,
E023 and the evaluator). ``chess`` may import every lower layer (``evidence``, ``stats``,
``design``, ``agents``, ``execute``) and never ``causal``, ``demo`` or ``cli``.
"""

__all__ = [
    "engine", "engine_builds", "labels", "position", "reference_agents", "studies", "tasks",
    "transcripts", "workspace"
]
