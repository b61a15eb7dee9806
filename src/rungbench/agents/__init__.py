"""Agents: the protocol every evaluated system implements, and providers behind it.

The OpenAI-compatible provider (:mod:`rungbench.agents.openai_provider`) and the
loopback server (:mod:`rungbench.agents.loopback`) are imported from their modules,
so that importing the protocol stays cheap.
"""

from rungbench.agents.outcomes import CallFailure, Classification, Outcome, classify
from rungbench.agents.protocol import Agent, Message, Request, Response, ToolCall, Usage

__all__ = [
    "Agent",
    "CallFailure",
    "Classification",
    "Message",
    "Outcome",
    "Request",
    "Response",
    "ToolCall",
    "Usage",
    "classify",
    "inspect_logs",
    "loopback",
    "models_check",
    "models_file",
    "openai_provider",
    "outcomes",
    "protocol",
    "providers",
    "spec",
]
