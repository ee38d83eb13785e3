"""Who an MCP request answers for and which SDK request runs the current tool, without the SDK.

Registry tools read them (tools/commerce.py) in every worker, while the SDK (~18 MB) loads only at
the first MCP request (http_facade/routes/mcp_on_demand.py). ``RegistryMCPServer.call_tool`` binds
the SDK's request ``Context`` for the duration of a call (``running``); the endpoint binds the caller
of an OAuth access token (``CALLER``, http_facade/routes/mcp.py). Outside an MCP request
``current()`` is ``None`` and ``CALLER`` is anonymous.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from agent_server.capabilities.context import ANONYMOUS, Principal

CALLER: ContextVar[Principal] = ContextVar("mcp_caller", default=ANONYMOUS)
# The SDK's ``Context`` (mcp.server.mcpserver.Context) of the request running the current tool.
_current: ContextVar[Any] = ContextVar("agentgate_mcp_exchange", default=None)


def current() -> Any:
    """The SDK's context of the MCP request running the current tool, if any."""
    return _current.get()


@contextmanager
def running(context: Any) -> Iterator[None]:
    token = _current.set(context)
    try:
        yield
    finally:
        _current.reset(token)
