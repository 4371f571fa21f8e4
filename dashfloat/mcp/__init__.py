"""The MCP host process: the official SDK's client for the configured MCP servers (ADR 0086).

The executor starts it (``python -m dashfloat.mcp``) only when servers are configured; nothing of it (asyncio, the
SDK, pydantic, httpx) is imported on any process's idle path otherwise. Exports load on first use
(``dashfloat/_startup/lazy.py``).
"""

from typing import TYPE_CHECKING

from dashfloat._startup.lazy import lazy_exports

if TYPE_CHECKING:
    from dashfloat.mcp._host import MCP_PROCESS_NAME, MCP_START_TIMEOUT_S, serve
    from dashfloat.mcp._results import MCP_RESULT_HEAD_BYTES, MCP_RESULT_MAX_BYTES, capped, result_of, search

__all__ = [
    "MCP_PROCESS_NAME",
    "MCP_RESULT_HEAD_BYTES",
    "MCP_RESULT_MAX_BYTES",
    "MCP_START_TIMEOUT_S",
    "capped",
    "result_of",
    "search",
    "serve",
]

__getattr__ = lazy_exports(
    __name__,
    {
        "MCP_PROCESS_NAME": "_host",
        "MCP_START_TIMEOUT_S": "_host",
        "serve": "_host",
        "MCP_RESULT_HEAD_BYTES": "_results",
        "MCP_RESULT_MAX_BYTES": "_results",
        "capped": "_results",
        "result_of": "_results",
        "search": "_results",
    },
)
