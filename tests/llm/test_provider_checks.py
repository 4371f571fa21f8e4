"""The checks that a server passes the tools to its model, as pure functions (dashfloat/llm/_provider.py); the
stream's use of them against a real server is in test_providers.py."""

from __future__ import annotations

import pytest

from dashfloat.jsonvalue import JsonValue
from dashfloat.llm._limits import DROPPED_TOOLS_RATIO
from dashfloat.llm._provider import NO_TOOLS_ADVICE, prompt_tokens_warning, props_warning
from dashfloat.protocol import Usage

BASE = "http://127.0.0.1:8080/v1"


@pytest.mark.parametrize(
    ("props", "warns"),
    [
        ({"chat_template_caps": {"supports_tools": False}}, True),
        ({"chat_template_caps": {"supports_tool_calls": False}}, True),
        ({"chat_template_caps": {"supports_tools": True, "supports_tool_calls": True}}, False),
        ({"chat_template_caps": {}}, False),  # says nothing: no warning on a guess
        ({"chat_template_caps": "no"}, False),
        ({"n_ctx": 8192}, False),
        (None, False),  # no /props (another server, or the question failed)
        ([], False),
    ],
)
def test_a_props_body_that_says_the_template_takes_no_tools_warns(props: JsonValue, warns: bool) -> None:
    warning = props_warning(BASE, props)
    assert (warning is not None) is warns
    if warning is not None:
        assert warning == f"the server at {BASE} says its chat template has no tool support: {NO_TOOLS_ADVICE}."


BODY = b"x" * 4000
"""A request of about 1000 tokens (``_request.estimated_tokens``: 4 bytes a token)."""
AT_RATIO = int(DROPPED_TOOLS_RATIO * 1000)


@pytest.mark.parametrize(
    ("usage", "warns"),
    [
        (Usage(prompt_tokens=AT_RATIO - 1), True),  # below the share: the tools were dropped
        (Usage(prompt_tokens=AT_RATIO), False),
        (Usage(prompt_tokens=1000), False),
        (Usage(prompt_tokens=0), False),  # the server counted nothing: nothing to compare
        (None, False),  # no usage figures
    ],
)
def test_a_prompt_counted_far_below_the_request_warns(usage: Usage | None, warns: bool) -> None:
    warning = prompt_tokens_warning(BASE, usage, BODY)
    assert (warning is not None) is warns
    if warning is not None:
        assert f"counted {AT_RATIO - 1} prompt tokens for a request of about 1000" in warning
        assert warning.endswith(f"{NO_TOOLS_ADVICE}.")
