"""Walking the input history with Up/Down (pure apart from its own cursor)."""

from __future__ import annotations


class HistoryCursor:
    """Where Up/Down stand in the history; the draft being typed is kept while walking."""

    def __init__(self) -> None:
        self.index: int | None = None
        self.draft = ""

    def reset(self) -> None:
        self.index = None
        self.draft = ""

    def older(self, history: tuple[str, ...], current: str) -> str | None:
        """The previous entry (None at the oldest, or with no history)."""
        if not history:
            return None
        if self.index is None:
            self.draft = current
            self.index = len(history) - 1
        elif self.index > 0:
            self.index -= 1
        else:
            return None
        return history[min(self.index, len(history) - 1)]

    def newer(self, history: tuple[str, ...]) -> str | None:
        """The next entry, then the draft; None when not walking."""
        if self.index is None:
            return None
        self.index += 1
        if self.index >= len(history):
            self.index = None
            return self.draft
        return history[self.index]
