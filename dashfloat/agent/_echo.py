"""Which kept reasoning goes back to the server (ADR 0077): a pure rule over the conversation a request carries.

DeepSeek answers 400 when an assistant message that carries tool calls in the current user turn comes back without
its ``reasoning_content``, and ignores reasoning on earlier turns; vLLM's interleaved thinking wants the same.
So by default (``auto``) reasoning goes back on the tool-call messages after the last user message and nowhere
else, which also keeps earlier turns' reasoning out of the context. The estimate and compaction measure the
request this rule leaves, so what they count is what is sent.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from dashfloat.protocol import ChatMessage, ReasoningEcho


def echoed(messages: Sequence[ChatMessage], mode: ReasoningEcho) -> list[ChatMessage]:
    """``messages`` with reasoning left only where it is sent back: ``auto``, on assistant messages with tool calls
    after the last user message; ``always``, on every assistant message that kept some; ``never``, nowhere.
    Reasoning split from ``<think>`` text is never sent back (the server wrote it into the answer itself)."""
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    out: list[ChatMessage] = []
    for i, message in enumerate(messages):
        if message.reasoning is not None or message.reasoning_details is not None:
            sent = (
                mode != "never"
                and message.reasoning_field != "think"
                and (mode == "always" or (i > last_user and bool(message.tool_calls)))
            )
            if not sent:
                message = msgspec.structs.replace(message, reasoning=None, reasoning_field=None, reasoning_details=None)
        out.append(message)
    return out
