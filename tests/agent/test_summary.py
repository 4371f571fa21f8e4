"""The outcome row's excerpt: at most 30 lines, verbatim, errors first."""

from __future__ import annotations

from dashfloat.agent import RESULT_EXCERPT_MAX_LINES, result_excerpt, result_status
from dashfloat.agent._summary import RESULT_EXCERPT_MAX_LINE_CHARS


def test_the_excerpt_stops_at_30_lines_and_says_how_many_more() -> None:
    at_bound = "\n".join(f"l{i}" for i in range(RESULT_EXCERPT_MAX_LINES))
    assert result_excerpt({"ok": True, "content": at_bound}) == at_bound
    over = at_bound + "\nl30\nl31"
    lines = result_excerpt({"ok": True, "output": over}).splitlines()
    assert len(lines) == RESULT_EXCERPT_MAX_LINES  # the marker is one of the 30
    assert lines[:-1] == at_bound.splitlines()[:-1] and lines[-1] == "… 3 more lines"


def test_one_long_line_is_cut() -> None:
    excerpt = result_excerpt({"ok": True, "content": "x" * (RESULT_EXCERPT_MAX_LINE_CHARS + 50)})
    assert excerpt == "x" * RESULT_EXCERPT_MAX_LINE_CHARS


def test_errors_lead_and_statuses_are_named() -> None:
    result = {"ok": False, "error": "timed out after 30s", "output": "partial"}
    assert result_excerpt(result) == "timed out after 30s\npartial" and result_status(result) == "error"
    assert result_status({"ok": False, "rejected": True}) == "rejected"
    assert result_status({"ok": False, "cancelled": True}) == "cancelled"
    entries = {
        "ok": True,
        "entries": [{"name": "src", "type": "dir", "size": 0}, {"name": "a", "type": "file", "size": 3}],
    }
    assert result_excerpt(entries) == "src/  0\na  3"
