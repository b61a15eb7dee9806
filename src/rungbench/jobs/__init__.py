"""Jobs: the library behind commands that compose several layers without naming a domain.

``runs`` builds the schedule a source names (through the task registry,
:mod:`rungbench.execute.tasks`) and starts or resumes a run with the agent a spec names.
Above ``chess`` and ``causal`` in the layers, it reaches them only through the registry.
"""

__all__ = ["runs"]
