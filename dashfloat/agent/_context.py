"""How full a request is, before it is sent: a token estimate calibrated by the provider's own count; and the
window itself (``Window``): configured, or asked of the LLM process once per (server, model), with the answer to a
request sent before it was known held until it is.

Pure functions and small values: the core asks ``estimate`` for every request, and sends what ``Window.ask``
returns. Decision records: docs/decisions/0030-context-window.md, 0052-first-request-before-the-window.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import msgspec

from dashfloat.agent._compaction import nothing_to_drop
from dashfloat.catalogue import TOOLS
from dashfloat.config import is_local_url
from dashfloat.protocol import (
    ChatMessage,
    ContextChanged,
    DiscoverWindow,
    LlmToAgent,
    PromptProgress,
    ProviderConfig,
    StreamDone,
    StreamFailed,
    SystemEntry,
    WindowFound,
    WindowSource,
)

BYTES_PER_TOKEN: Final = 3.0
"""Raw estimate: UTF-8 bytes of the encoded message per token. Real tokenizers give 3.5–4.5 for English
and code; 3 over-counts on purpose, and the provider's reported count corrects it after one request."""
MESSAGE_OVERHEAD_TOKENS: Final = 4
"""Role markers and separators a chat template adds around each message."""
CALIBRATION_MIN: Final = 0.25
CALIBRATION_MAX: Final = 4.0
"""A reported count further than this from the raw estimate is not believed (a proxy summing retries)."""
ANSWER_RESERVE_MAX_TOKENS: Final = 4096
ANSWER_RESERVE_FRACTION: Final = 0.125
"""Room kept free for the answer: an eighth of the window, at most 4096 tokens."""

_ENCODER = msgspec.json.Encoder()
TOOLS_BYTES: Final = len(_ENCODER.encode(TOOLS))


def raw_tokens(message: ChatMessage) -> int:
    """The uncalibrated estimate of one message (its JSON bytes, as sent)."""
    return int(len(_ENCODER.encode(message)) / BYTES_PER_TOKEN) + MESSAGE_OVERHEAD_TOKENS


def raw_request_tokens(messages: Sequence[ChatMessage]) -> int:
    """The uncalibrated estimate of a whole request: every message plus the tool catalogue."""
    return int(TOOLS_BYTES / BYTES_PER_TOKEN) + sum(raw_tokens(m) for m in messages)


class Calibration(msgspec.Struct, frozen=True):
    """What the provider said about the last request: its front (``sent`` messages) cost ``reported``."""

    sent: tuple[ChatMessage, ...]
    reported: int
    raw: int

    @property
    def ratio(self) -> float:
        """Reported over raw, clamped: the factor applied to text the provider has not counted yet."""
        if self.raw <= 0 or self.reported <= 0:
            return 1.0
        return min(CALIBRATION_MAX, max(CALIBRATION_MIN, self.reported / self.raw))


def calibrate(sent: Sequence[ChatMessage], prompt_tokens: int) -> Calibration | None:
    """A calibration from one request and the prompt_tokens reported for it (None when nothing usable)."""
    if prompt_tokens <= 0:
        return None
    return Calibration(tuple(sent), prompt_tokens, raw_request_tokens(sent))


def estimate(messages: Sequence[ChatMessage], calibration: Calibration | None) -> int:
    """Tokens of a request of ``messages``: the reported count of the front it shares with the last
    request, plus the calibrated raw estimate of the new tail (the only guess)."""
    if calibration is None:
        return raw_request_tokens(messages)
    sent = calibration.sent
    n = len(sent)
    if len(messages) >= n and tuple(messages[:n]) == sent:
        tail = sum(raw_tokens(m) for m in messages[n:])
        return calibration.reported + round(tail * calibration.ratio)
    # The front changed (a compaction): scale the whole raw estimate by what the provider taught us.
    return round(raw_request_tokens(messages) * calibration.ratio)


def unread_tokens(messages: Sequence[ChatMessage], calibration: Calibration | None) -> int:
    """Tokens of a request its server has not read before: the front it shares with the last request is in the
    server's prompt cache (llama.cpp, vLLM, Ollama keep it), the rest is read before the first token."""
    if calibration is not None:
        sent = calibration.sent
        if len(messages) >= len(sent) and tuple(messages[: len(sent)]) == sent:
            return round(sum(raw_tokens(m) for m in messages[len(sent) :]) * calibration.ratio)
    return estimate(messages, calibration)


BUSY_WORDS: Final = "the server may still be busy with the cancelled request"
"""The wait after a request cancelled while a local server read its prompt: llama.cpp reads it to its end first."""


def request_sent(base_url: str, messages: Sequence[ChatMessage], calibration: Calibration | None) -> ContextChanged:
    """The status bar as a request goes: the fill with the prompt in flight, and for a local server how much of it
    is read before the first token (``waiting``; a hosted API's wait says nothing new). ADR 0092."""
    tokens = estimate(messages, calibration)
    if not is_local_url(base_url):
        return ContextChanged(tokens=tokens)
    unread = unread_tokens(messages, calibration)
    return ContextChanged(tokens=tokens, waiting=f"the server reads ~{unread:,} new prompt tokens")


def progress_shown(progress: PromptProgress, sent_tokens: int) -> ContextChanged:
    """The status bar as the server reports reading the prompt (llama.cpp ``prompt_progress``): ``reading prompt
    3,200/5,500 tokens``, the fill with the server's own count; or that it is busy with a cancelled request first."""
    if progress.busy:
        return ContextChanged(tokens=sent_tokens, waiting=BUSY_WORDS)
    if progress.total <= 0:
        return ContextChanged(tokens=sent_tokens)
    read = min(progress.processed, progress.total)
    return ContextChanged(tokens=progress.total, waiting=f"reading prompt {read:,}/{progress.total:,} tokens")


def answer_reserve(window: int) -> int:
    """Tokens kept free for the answer in a window of ``window`` tokens."""
    return min(ANSWER_RESERVE_MAX_TOKENS, max(1, int(window * ANSWER_RESERVE_FRACTION)))


def hard_limit(window: int) -> int:
    """The largest request ever sent: the window minus the answer reserve."""
    return window - answer_reserve(window)


EARLY_REQUEST_WINDOW_TOKENS: Final = 4096
"""A window the local servers run a chat model with at least, unless told otherwise (Ollama's default num_ctx,
llama.cpp's usual ``-c``); hosted models have far more."""
EARLY_REQUEST_MAX_TOKENS: Final = hard_limit(EARLY_REQUEST_WINDOW_TOKENS)
"""The largest request sent before the server said its window (``sends_before_window``): one that fits
EARLY_REQUEST_WINDOW_TOKENS. A larger one (a long piped input, big attachments) waits for the window, so that a
request too large for it is refused before it is sent."""


def sends_before_window(conversation: Sequence[ChatMessage], tokens: int) -> bool:
    """Whether a request of ``tokens`` whose conversation (without the system message) is ``conversation`` may go
    before the window is known: compaction could not make it smaller, so the window can only say whether it fits at
    all (the core holds the answer until it knows, and refuses one that did not), and it is small enough to fit
    every common window (EARLY_REQUEST_MAX_TOKENS). A resumed session's history and a huge first prompt wait."""
    return tokens <= EARLY_REQUEST_MAX_TOKENS and nothing_to_drop(conversation)


def compact_threshold(window: int, percent: int) -> int:
    """The request size at which automatic compaction starts (never above the hard limit)."""
    return min(hard_limit(window), window * percent // 100)


def fill_percent(tokens: int, window: int) -> int:
    """How full the window is, rounded, for the status bar and /status."""
    return round(100 * tokens / window) if window > 0 else 0


def tokens_text(tokens: int) -> str:
    """A token count as the user reads it: ``950``, ``12.3k``."""
    return f"{tokens / 1000:.1f}k" if tokens >= 1000 else str(tokens)


class Window:
    """What the core knows of the window, the question open about it, and an answer held for it."""

    def __init__(self, provider: ProviderConfig) -> None:
        self.size: int | None = provider.context_window
        self.source: WindowSource | None = "config" if self.size else None
        self.detail = provider.context_window_from if self.size else ""
        self.known: dict[tuple[str, str], WindowFound] = {}
        """Discovered windows by (base URL, model), so /model back and forth asks only once."""
        self.asked = 0
        """The id of the newest DiscoverWindow: an answer to an older one is for a model no longer used."""
        self.discovering = False
        """A DiscoverWindow is unanswered: the next request waits for it (a short wait; never twice)."""
        self.held: list[LlmToAgent] | None = None
        """The answer so far to a request sent before the window was known (``sends_before_window``): kept, not
        shown or acted on, until the window says the request fits (the discovery answers within its deadline)."""

    def ask(self, provider: ProviderConfig) -> DiscoverWindow | WindowFound | None:
        """What knowing ``provider``'s window takes: nothing (it is configured), the answer had before (a /model back
        and forth: adopt it), or a question for the LLM process."""
        if self.source == "config":
            return None
        self.asked += 1  # a question still open (for the model before a /model back and forth) is stale now
        cached = self.known.get((provider.base_url, provider.model))
        if cached is not None:
            self.discovering = False
            return cached
        self.discovering = True
        return DiscoverWindow(request_id=self.asked, provider=provider)

    def answers(self, found: WindowFound, provider: ProviderConfig) -> bool:
        """Whether ``found`` answers the open question (kept for ``provider``), not one about a model no longer used."""
        if found.request_id != self.asked or self.source == "config":
            return False
        self.discovering = False
        self.known[(provider.base_url, provider.model)] = found
        return True

    def adopt(self, found: WindowFound) -> SystemEntry | None:
        """Take ``found`` as the window; a window only assumed is said once, with how to set it."""
        self.size, self.source, self.detail = found.window, found.source, found.detail
        if found.source != "assumed":
            return None
        return SystemEntry(
            text=f"the server did not say how large the model's context window is: assuming "
            f"{tokens_text(found.window)} tokens; set context_window in config.toml if you know it",
            level="warning",
        )

    def forget(self) -> bool:
        """/model: a discovered window is the old model's (False: the configured one stays)."""
        if self.source == "config":
            return False
        self.size, self.source = None, None
        return True

    def shrink_to(self, sent: int) -> int:
        """The provider said a request of ``sent`` tokens exceeds its window: never send this much again."""
        self.size = max(1, min(self.size or sent, sent))
        return self.size

    def answer_held(self) -> bool:
        """Whether the whole answer to a request sent before the window was known has come and is held for it: the
        LLM process owes only the window now (its discovery's deadline bounds that), no stream to watch for silence."""
        held = self.held
        return bool(held) and held is not None and isinstance(held[-1], StreamDone | StreamFailed)


MODELS_REQUEST_ID: Final = -1
"""The request id of a DiscoverWindow sent for the server's model list alone (/model, ``_models``); the window's own
questions count up from 1."""
