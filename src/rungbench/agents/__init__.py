"""Agents: the protocol every evaluated system implements, and providers behind it."""

from rungbench.agents.protocol import Agent, Message, Request, Response, ToolCall, Usage

__all__ = ["Agent", "Message", "Request", "Response", "ToolCall", "Usage"]
