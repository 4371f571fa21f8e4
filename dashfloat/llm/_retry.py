"""The stream's retry policy: which failed attempts are tried again, after how long, and what the user is told."""

from __future__ import annotations

from typing import Final

from dashfloat.llm._errors import RETRYABLE_KINDS, StreamError
from dashfloat.llm._limits import BACKOFF_BASE_S, MAX_ATTEMPTS, RETRY_AFTER_MAX_S
from dashfloat.llm._request import Optional

DROPPED_NOTICE: Final[dict[Optional, str]] = {
    "stream_options": "the provider rejected stream_options; retrying without it (no usage figures)",
    "max_tokens": "the provider rejected max_tokens; retrying without it (only the repetition guard bounds answers)",
}
"""What the user is told when a provider refused a request field: the request goes again without it (this attempt
does not count against MAX_ATTEMPTS; the field stays dropped for that provider)."""


def retry_delay(error: StreamError, attempt: int, emitted: bool) -> float | None:
    """Seconds to wait before trying again after ``error`` ended attempt number ``attempt`` (from 1): the server's
    Retry-After, else BACKOFF_BASE_S doubled per retry. None: reported instead, as the kind is not retryable, the
    answer had begun (what was shown cannot be taken back), MAX_ATTEMPTS were made, or the server asks for a wait
    over RETRY_AFTER_MAX_S."""
    waited = error.retry_after_s
    if (
        error.kind not in RETRYABLE_KINDS
        or emitted
        or attempt >= MAX_ATTEMPTS
        or (waited is not None and waited > RETRY_AFTER_MAX_S)
    ):
        return None
    return waited if waited is not None else BACKOFF_BASE_S * 2 ** (attempt - 1)


def retry_notice(error: StreamError, delay_s: float, next_attempt: int) -> str:
    """The status line shown while the stream waits ``delay_s`` before attempt ``next_attempt``."""
    return f"{error.reason}; retrying in {delay_s:.1f} s (attempt {next_attempt} of {MAX_ATTEMPTS})"
