"""A long passage written twice ends the stream (issue 39, ADR 0079), through a real llm worker and SSE server."""

from __future__ import annotations

import pytest

from dashfloat.llm._repeat import LONG_PASSAGE_COPIES, REPEAT_LONG_PASSAGE_CHARS
from dashfloat.testing.sse_server import ScriptedServer, looping_handler
from tests.llm.conftest import Llm

# The line the 0.5B model repeated for 120 s in the task suite (a tool schema copied as text).
SCHEMA_LINE = (
    '{"type": "function", "function": {"name": "is_palindrome", "description": "Check if a given text is a '
    'palindrome, ignoring case and spaces.", "parameters": {"type": "string", "description": "The text to '
    'check."}, "required": ["text"]}}\n'
)


@pytest.fixture
def llm(route_llm: Llm) -> Llm:
    return route_llm


def test_a_long_line_written_again_and_again_is_stopped_at_its_second_copy(llm: Llm, server: ScriptedServer) -> None:
    unit = " ".join(SCHEMA_LINE.split()) + " "  # what the handler streams: the words, each followed by a space
    assert len(unit) >= REPEAT_LONG_PASSAGE_CHARS
    server.handler = looping_handler(SCHEMA_LINE)
    failed = llm.run(server.base_url, max_tokens=0, timeout_s=30).failed
    assert failed.kind == "repeating"
    assert f"{len(unit)}-character passage {LONG_PASSAGE_COPIES} times in a row" in failed.message
    assert failed.content.count("is_palindrome") == 1  # one copy kept for the model
