"""What resuming a saved session hands the core."""

from __future__ import annotations

from typing import NamedTuple

from dashfloat.protocol import ConversationEntry, Usage


class Resumed(NamedTuple):
    """The conversation to continue, usage by turn, repair notices, and the transcript to replay."""

    conversation: list[ConversationEntry]
    usage: list[Usage]
    notices: list[str]
    transcript: list[ConversationEntry]
