"""What the model reads of an MCP result, pure: content blocks as text, capped head and tail; the tool search."""

from __future__ import annotations

from typing import Any, Final

import msgspec

from dashfloat.catalogue import MCP_SEARCH_MAX_TOOLS, mcp_name, mcp_tool_object
from dashfloat.protocol import McpServerInfo, McpTool, McpToolResult

MCP_RESULT_MAX_BYTES: Final = 32 * 1024
"""The most of one MCP result the model reads, as for a command's output (catalogue.EXEC_OUTPUT_MAX_BYTES)."""
MCP_RESULT_HEAD_BYTES: Final = 8 * 1024
"""Of it, the start; the rest is the end (an answer's summary is often last)."""
CUT_MARK: Final = "\n[… {} bytes cut from the middle …]\n"


def _size(n: int) -> str:
    return f"{n} bytes" if n < 1024 else f"{n / 1024:.1f} KiB" if n < 1024 * 1024 else f"{n / 1024 / 1024:.1f} MiB"


def _decoded_size(data: object) -> int:
    """Bytes a base64 payload stands for (what a person would call the image's size)."""
    if not isinstance(data, str):
        return 0
    return len(data) * 3 // 4 - data[-2:].count("=")


def block_text(block: dict[str, Any]) -> str:
    """One content block as text: text as it is; an image, audio or binary resource named with its type and size."""
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind in ("image", "audio"):
        return f"[{kind}: {block.get('mimeType', '?')}, {_size(_decoded_size(block.get('data')))}, not shown]"
    if kind == "resource":
        resource = block.get("resource") or {}
        uri, mime = resource.get("uri", "?"), resource.get("mimeType") or "?"
        if "text" in resource:
            return f"[resource {uri} ({mime})]\n{resource['text']}"
        return f"[resource {uri}: {mime}, {_size(_decoded_size(resource.get('blob')))}, not shown]"
    if kind == "resource_link":
        return f"[resource link {block.get('uri', '?')}: {block.get('name', '')}]"
    return f"[{kind} content, not shown]"


def capped(text: str, is_error: bool = False) -> McpToolResult:
    """``text`` as the model reads it: whole up to MCP_RESULT_MAX_BYTES, else its head and tail around a mark."""
    data = text.encode()
    total = len(data)
    if total <= MCP_RESULT_MAX_BYTES:
        return McpToolResult(text=text, is_error=is_error, total_bytes=total)
    tail = MCP_RESULT_MAX_BYTES - MCP_RESULT_HEAD_BYTES
    head_part = data[:MCP_RESULT_HEAD_BYTES].decode(errors="ignore")
    tail_part = data[total - tail :].decode(errors="ignore")
    kept = head_part + CUT_MARK.format(total - MCP_RESULT_HEAD_BYTES - tail) + tail_part
    return McpToolResult(text=kept, is_error=is_error, truncated=True, total_bytes=total)


def result_of(result: dict[str, Any]) -> McpToolResult:
    """A ``CallToolResult`` (as JSON) as the model reads it: its blocks one after the other (the structured content
    when there are none), capped."""
    blocks = result.get("content") or []
    text = "\n".join(block_text(b) for b in blocks if isinstance(b, dict))
    if not blocks and result.get("structuredContent") is not None:
        text = msgspec.json.encode(result["structuredContent"]).decode()
    return capped(text, is_error=bool(result.get("isError")))


def failed(error: str) -> McpToolResult:
    """A call that got no result (the server crashed, timed out, is unknown): the model reads why."""
    return McpToolResult(text=error, is_error=True, total_bytes=len(error.encode()))


def _words(text: str) -> set[str]:
    return {w for w in "".join(c.lower() if c.isalnum() else " " for c in text).split() if w}


def search(servers: list[McpServerInfo], query: str) -> list[tuple[str, McpTool]]:
    """The tools whose names and descriptions share most words with ``query`` (a name's count twice), best first,
    at most MCP_SEARCH_MAX_TOOLS; none when no word matches."""
    wanted = _words(query)
    scored: list[tuple[int, int, str, McpTool]] = []
    for server in servers:
        for tool in server.tools:
            name_words = _words(f"{server.name} {tool.name}")
            score = 2 * len(wanted & name_words) + len(wanted & _words(tool.description))
            if score:
                scored.append((-score, len(scored), server.name, tool))
    scored.sort(key=lambda item: item[:2])
    return [(server, tool) for _, _, server, tool in scored[:MCP_SEARCH_MAX_TOOLS]]


def search_result(servers: list[McpServerInfo], query: str) -> McpToolResult:
    """mcp_search's answer: the matching tools as the catalogue would list them (name, description, schema)."""
    found = search(servers, query)
    if not found:
        names = ", ".join(f"{s.name}: {', '.join(t.name for t in s.tools[:20])}" for s in servers if s.tools)
        return capped(f"no MCP tool matches {query!r}; the tools are: {names or 'none (no server is ready)'}")
    tools = [mcp_tool_object(server, tool)["function"] for server, tool in found]
    note = f"call a tool by its name ({mcp_name(found[0][0], found[0][1].name)}, ...) with arguments per its schema"
    return capped(msgspec.json.encode({"tools": tools, "how": note}).decode())
