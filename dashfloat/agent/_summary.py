"""Turning a tool result into the UI's outcome row: a status word and a bounded excerpt."""

from __future__ import annotations

from typing import Any, Final

from dashfloat.protocol import ResultStatus

RESULT_EXCERPT_MAX_LINES: Final = 30
RESULT_EXCERPT_MAX_LINE_CHARS: Final = 500


def result_status(result: dict[str, Any]) -> ResultStatus:
    """The outcome word of a structured result."""
    if result.get("rejected"):
        return "rejected"
    if result.get("cancelled"):
        return "cancelled"
    return "ok" if result.get("ok") else "error"


def _body(result: dict[str, Any]) -> str:
    if isinstance(result.get("content"), str):
        return str(result["content"])
    if isinstance(result.get("entries"), list):
        rows = []
        for entry in result["entries"]:
            if isinstance(entry, dict):
                suffix = "/" if entry.get("type") == "dir" else ""
                rows.append(f"{entry.get('name', '?')}{suffix}  {entry.get('size', '')}".rstrip())
        return "\n".join(rows)
    if isinstance(result.get("output"), str):
        return str(result["output"])
    return ""


def result_excerpt(result: dict[str, Any]) -> str:
    """At most 30 lines of what the tool produced, verbatim, the marker included; errors lead with their message.

    The marker counts as one of the 30, so the UI's own 30-line guard never cuts an excerpt (it once cut the
    marker and said `… 1 more lines`).
    """
    text = _body(result)
    if result_status(result) == "error" and result.get("error"):
        text = f"{result['error']}\n{text}" if text else str(result["error"])
    lines = text.splitlines()
    if len(lines) <= RESULT_EXCERPT_MAX_LINES:
        return "\n".join(line[:RESULT_EXCERPT_MAX_LINE_CHARS] for line in lines)
    kept = RESULT_EXCERPT_MAX_LINES - 1
    excerpt = [line[:RESULT_EXCERPT_MAX_LINE_CHARS] for line in lines[:kept]]
    excerpt.append(f"… {len(lines) - kept} more lines")
    return "\n".join(excerpt)
