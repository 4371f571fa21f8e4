"""Every bound of the LLM stream process, in one place (seed §2)."""

from __future__ import annotations

from typing import Final

SSE_FRAME_MAX_BYTES: Final = 1024 * 1024
"""One SSE event (bytes between blank lines); sseclient-py buffers a whole event, so this caps it."""
EPISODE_MAX_BYTES: Final = 4 * 1024 * 1024
"""Content + reasoning + tool-call ids, names and argument fragments (counted per fragment)."""
EPISODE_MAX_TOOL_CALLS: Final = 64
"""Distinct tool calls in one episode (a call split into many fragments is one)."""
READ_CHUNK_BYTES: Final = 64 * 1024
"""Largest single read from the socket."""
ERROR_BODY_MAX_BYTES: Final = 64 * 1024
"""How much of a non-200 or non-SSE body is read to find the provider's message."""
DELTA_MAX_CHARS: Final = 16 * 1024
"""Largest coalesced ContentDelta / ReasoningDelta text sent to the agent."""
MAX_ATTEMPTS: Final = 3
"""Tries per request for retryable failures before the first token (429, 5xx, connection errors)."""
BACKOFF_BASE_S: Final = 0.25
"""First retry delay without Retry-After; doubles per retry."""
RETRY_AFTER_MAX_S: Final = 30.0
"""A longer Retry-After is not waited out: the failure is reported with the provider's delay."""
CONNECT_TIMEOUT_S: Final = 10.0
"""TCP + TLS connect; never longer than the request's idle timeout."""
