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


def search_older(history: tuple[str, ...], query: str, before: int) -> int | None:
    """The index of the newest entry before ``before`` that contains ``query`` (Ctrl-R), or None."""
    for index in range(min(before, len(history)) - 1, -1, -1):
        if query in history[index]:
            return index
    return None


class ReverseSearch:
    """A Ctrl-R search in progress: the query, the entry it found, and the draft to give back on Esc."""

    def __init__(self, draft: str, history_length: int) -> None:
        self.query = ""
        self.draft = draft
        self.found: int | None = None
        self.history_length = history_length

    def type(self, history: tuple[str, ...], text: str) -> str | None:
        """The query grew: search again from the newest entry; the match, or None."""
        self.query += text
        return self._search(history, len(history))

    def erase(self, history: tuple[str, ...]) -> str | None:
        """Backspace in the query."""
        self.query = self.query[:-1]
        return self._search(history, len(history))

    def again(self, history: tuple[str, ...]) -> str | None:
        """Ctrl-R once more: the next older match."""
        start = self.found if self.found is not None else len(history)
        return self._search(history, start)

    def _search(self, history: tuple[str, ...], before: int) -> str | None:
        index = search_older(history, self.query, before) if self.query else None
        if index is not None:
            self.found = index
            return history[index]
        return None

    def prompt(self, history: tuple[str, ...]) -> str:
        """The hint line: what is searched for and whether it was found."""
        failed = self.query and (self.found is None or self.query not in history[self.found])
        return f"({'failed ' if failed else ''}reverse-i-search)`{self.query}' · Enter keeps it · Esc gives back"
