"""The model's context window: configured, or asked of the LLM process once per (server, model); and the answer to a
request sent before it was known, held until it is. Pure: the core sends what ``ask`` returns and replays what was
held. Decision records: docs/decisions/0030-context-window.md, 0052-first-request-before-the-window.md.
"""

from __future__ import annotations

from dashfloat.agent._context import tokens_text
from dashfloat.protocol import (
    DiscoverWindow,
    LlmToAgent,
    ProviderConfig,
    StreamDone,
    StreamFailed,
    SystemEntry,
    WindowFound,
    WindowSource,
)


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
