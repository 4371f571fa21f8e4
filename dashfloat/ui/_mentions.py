"""@ completion in the input: what to ask the executor for, which answer to keep, and the menu's entries.

The UI reads no files: the candidates come from the executor (FindPaths -> PathsFound through the agent).
Asking never waits; only the answer to the newest request is shown (one for an older prefix is dropped).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

from dashfloat.mentions import Partial, format_mention, partial_at
from dashfloat.protocol import FindPaths, PathsFound

MENTION_MIN_QUERY_CHARS: Final = 1
"""Characters typed after ``@`` before candidates are asked for (a lone ``@`` asks nothing)."""


def partial_in(document: Document) -> Partial | None:
    """The mention the cursor is typing on its line (a mention never spans lines), offsets within that line."""
    return partial_at(document.current_line_before_cursor)


class PathCompletion:
    """The requests sent and the newest answer (pure: the shell sends what ``ask`` returns)."""

    def __init__(self) -> None:
        self.ref = 0
        self.asked: str | None = None
        """The query of the newest request; None while the cursor is in no mention."""
        self.found: PathsFound | None = None

    def ask(self, partial: Partial | None) -> FindPaths | None:
        """The request to send for the mention at the cursor, or None (nothing new to ask)."""
        if partial is None or len(partial.query) < MENTION_MIN_QUERY_CHARS:
            self.asked, self.found = None, None
            return None
        if partial.query == self.asked:
            return None
        begins = self.asked is None  # a new mention: the executor may renew its index
        self.ref += 1
        self.asked, self.found = partial.query, None
        return FindPaths(ref=self.ref, query=partial.query, refresh=begins)

    def answer(self, found: PathsFound) -> bool:
        """Keep ``found`` if it answers the newest request (True: the menu should show it)."""
        if found.ref != self.ref or self.asked is None:
            return False
        self.found = found
        return True

    def candidates(self, partial: Partial | None) -> tuple[list[str], str]:
        """The paths to offer for the mention at the cursor (only an answer for exactly its query) and a notice."""
        found = self.found
        if partial is None or found is None or found.query != partial.query:
            return [], ""
        return found.paths, found.notice


class MentionCompleter(Completer):
    """The menu's entries for the mention at the cursor: a file is written whole and followed by a space, a
    directory is left open (quote included) so typing goes on inside it."""

    def __init__(self, completion: PathCompletion) -> None:
        self.completion = completion

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        partial = partial_in(document)
        paths, notice = self.completion.candidates(partial)
        if partial is None:
            return
        typed = len(document.current_line_before_cursor) - partial.start
        for n, path in enumerate(p for p in paths if p != partial.query):  # what is typed already is no choice
            directory = path.endswith("/")
            text = format_mention(path, closed=not directory) + ("" if directory else " ")
            meta = notice if n == 0 and notice else ("directory" if directory else "")
            yield Completion(text, start_position=-typed, display=path, display_meta=meta)
