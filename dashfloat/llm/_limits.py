"""Every bound of the LLM stream process, in one place (seed §2)."""

from __future__ import annotations

from typing import Final

SSE_FRAME_MAX_BYTES: Final = 1024 * 1024
"""One SSE event (bytes between blank lines); sseclient-py buffers a whole event, so this caps it."""
SSE_EVENT_MAX_LINES: Final = 256
"""Lines in one SSE event (real events have one to three); bounds the parser's per-line work."""
DECODED_MAX_RATIO: Final = 500
"""A compressed answer may inflate this many times (real SSE: 100-260x); more is a compression bomb."""
DECODED_RATIO_FREE_BYTES: Final = 256 * 1024
"""Decoded bytes allowed before the ratio is judged (a short answer's header skews it)."""
MAX_REDIRECTS: Final = 3
"""Same-origin redirects followed per request; a redirect to another origin is never followed."""
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
DELTA_BATCH_S: Final = 0.008
"""Deltas arriving within this long of the last message sent join the next one (paced providers send one token
per event): a token waits at most this long, a quarter of the UI's 33 ms tick. Each window costs a wake-up in
four places (the LLM process's two threads, the agent, the UI or printer): at 5 000 tokens/s, 8 ms instead of 4
took a third off the CPU per token across the processes (ADR 0037)."""
HOLD_MIN_S: Final = 0.001
"""The serve loop holds a message for more deltas only if DELTA_BATCH_S leaves at least this much (a shorter hold
costs a wake-up and batches nothing)."""
PACED_READ_MAX_BYTES: Final = 8 * 1024
"""A read that brought answer text and less than this is a paced provider's (at 5 000 tokens/s a DELTA_BATCH_S
window holds ~4 KiB): the next read waits for DELTA_BATCH_S to take the events sent meanwhile in one go. A flooding
server's reads are larger (its 16 KiB writes), and are never delayed."""
BODY_END_WAIT_S: Final = 0.5
"""After ``[DONE]``, how long the rest of the body (its closing chunk) may take in all; then the connection is
closed instead of kept for the next request."""
BODY_END_MAX_BYTES: Final = 64 * 1024
"""Bytes read after ``[DONE]`` to reach the body's end; a server sending more loses its kept-alive connection."""
MAX_ATTEMPTS: Final = 3
"""Tries per request for retryable failures before the first token (429, 5xx, connection errors)."""
BACKOFF_BASE_S: Final = 0.25
"""First retry delay without Retry-After; doubles per retry."""
RETRY_AFTER_MAX_S: Final = 30.0
"""A longer Retry-After is not waited out: the failure is reported with the provider's delay."""
DEADLINE_GRACE_S: Final = 1.0
"""A stream still waiting for its answer this long past its deadline is cut by the serve loop (``Stream.expire``): a
head that never ends (a header dribbled byte by byte, endless 100 Continue) has every read within its timeout."""
CONNECT_TIMEOUT_S: Final = 10.0
"""TCP + TLS connect; never longer than the request's idle timeout."""
ANSWER_MAX_TOKENS_DEFAULT: Final = 4096
"""``max_tokens`` sent when the provider's window is unknown (every chat model can answer this much)."""
ANSWER_WINDOW_FRACTION: Final = 0.25
"""With a known window, ``max_tokens`` is this share of it (room for the prompt; vLLM rejects an overrun)."""
ANSWER_MAX_TOKENS_CAP: Final = 8192
"""Never more than this, whatever the window (many models reject a larger max_tokens)."""
ANSWER_MAX_TOKENS_DISCOVERED_CAP: Final = ANSWER_MAX_TOKENS_DEFAULT
"""With a window the server reported (not configured), ``max_tokens`` is ANSWER_WINDOW_FRACTION of it, at most this:
a small local window lowers the bound (8192 tokens: 2048), a large one never raises it above what is sent without a
window (the server's own output limit is unknown, and vLLM refuses a prompt plus ``max_tokens`` over its window)."""
REPEAT_SPAN_MIN_CHARS: Final = 32
"""The shortest passage the repetition guard counts; what repeats a shorter unit is a run (``REPEAT_RUN_MIN_CHARS``)."""
REPEAT_SPAN_MAX_CHARS: Final = 2048
"""The longest repeated span the guard looks for (a looping paragraph)."""
REPEAT_MIN_COUNT: Final = 24
"""Back-to-back copies of one span that end a stream: a model looping, not writing."""
REPEAT_RUN_MIN_CHARS: Final = 4096
"""A run (a unit shorter than ``REPEAT_SPAN_MIN_CHARS`` back to back: ``=====``, ``|-----``, blank lines) is a loop
only from this length: a rule, a table separator or blank lines take far less (ADR 0051)."""
REPEAT_CHECK_EVERY_CHARS: Final = 512
"""The guard looks again after this much new text (its cost stays a small share of the stream's)."""
PROBE_TIMEOUT_S: Final = 2.0
"""How long the one ``/props`` look-up per server may take before it is given up."""
DROPPED_TOOLS_RATIO: Final = 0.5
"""Reported prompt tokens below this share of the request's estimate: the server dropped the tools."""
CHUNK_LINE_MAX_BYTES: Final = 4096
"""One HTTP chunk-size line, extensions included (real servers send a few hex digits); longer is broken framing."""
CHUNK_SIZE_MAX_DIGITS: Final = 16
"""Hex digits of one chunk size (16: any 64-bit size); more is broken framing, not a larger chunk."""
CHUNK_TRAILER_MAX_BYTES: Final = 8192
"""Trailer fields after the last chunk, in all (servers send none to a streaming client)."""
REASONING_KEEP_MAX_BYTES: Final = 64 * 1024
"""Reasoning kept with one answer (and echoed with it): more is cut, with ``REASONING_CUT_MARKER`` at the cut. The
same cap ends a ``<think>`` block that never closes: the rest of the text is the answer (ADR 0077)."""
REASONING_CUT_MARKER: Final = "\n[reasoning cut: DashFloat keeps the first {kib} KiB of an answer's reasoning]"
