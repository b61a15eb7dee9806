"""The Agent protocol's helpers: optional closing of agents that hold resources."""

from __future__ import annotations

from rungbench.agents.protocol import close_agent


class _Holder:
    def __init__(self) -> None:
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


class _NoClose:
    close = "not callable"


def test_close_agent_closes_an_agent_that_holds_a_resource() -> None:
    """An agent with close() is closed exactly once per call."""
    holder = _Holder()
    close_agent(holder)
    assert holder.closed == 1


def test_close_agent_leaves_agents_without_a_callable_close_alone() -> None:
    """No close attribute, or a non-callable one, is not an error and calls nothing."""
    close_agent(object())
    odd = _NoClose()
    close_agent(odd)
    assert odd.close == "not callable"
