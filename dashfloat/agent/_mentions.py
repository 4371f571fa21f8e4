"""@path mentions of a submitted prompt: which to read, and the prompt with what was read (pure).

The reads themselves are ordinary read_file / list_directory calls through the executor (the core sends what
``Attaching`` returns: each read and its row); this module decides what to read and how the results join the
prompt, bounded. Decision record: docs/decisions/0032-path-mentions.md.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Final, Literal, assert_never

import msgspec

from dashfloat.agent._calls import result_row
from dashfloat.agent._context import BYTES_PER_TOKEN, tokens_text
from dashfloat.catalogue import call_name
from dashfloat.mentions import ATTACHMENTS_LINE, find_mentions, mention_text
from dashfloat.mentions import typed_prompt as typed_prompt  # the agent reads typed prompts here too (a rewind)
from dashfloat.protocol import (
    CommandExited,
    CommandTimedOut,
    EditFileResult,
    JobReport,
    ListDirectoryArgs,
    ListDirectoryResult,
    McpToolResult,
    Message,
    ReadFileArgs,
    ReadFileResult,
    RunTool,
    SystemEntry,
    ToolCallShown,
    ToolCancelled,
    ToolFailed,
    ToolRejected,
    ToolResult,
    WriteFileResult,
)

MENTIONS_MAX_PER_PROMPT: Final = 10
"""Mentions of one prompt that are read; later ones are named as not attached."""
MENTIONS_ATTACHED_MAX_BYTES: Final = 128 * 1024
"""What all attachments of one prompt may add, in all (each read is also under read_file's own caps): a file
past it is cut with a marker, later ones are not read."""
MENTION_WINDOW_SHARE_WARN: Final = 0.25
"""An attachment estimated at more than this share of the model's window is said to the person before the prompt
goes (a small local window: 8192 tokens fill with one log file; ADR 0092)."""


def window_share_warning(path: str, text: str, window: int | None) -> str | None:
    """The one-line warning for an attachment that takes more than MENTION_WINDOW_SHARE_WARN of ``window``."""
    tokens = int(len(text.encode()) / BYTES_PER_TOKEN)
    if not window or tokens <= MENTION_WINDOW_SHARE_WARN * window:
        return None
    return (
        f"@{path} takes ~{tokens_text(tokens)} tokens, {round(100 * tokens / window)}% of the model's "
        f"{tokens_text(window)}-token window: little room is left to work in; attach a smaller file, or ask for "
        "the part you need (read_file takes offset and limit)"
    )


class Mentioned(msgspec.Struct, frozen=True):
    """The distinct paths a prompt mentions, in order (at most MENTIONS_MAX_PER_PROMPT), and how many more."""

    paths: list[str]
    beyond: int


def mentioned(text: str) -> Mentioned:
    """The paths ``text`` mentions, each once, the first MENTIONS_MAX_PER_PROMPT of them."""
    distinct = list(dict.fromkeys(m.path for m in find_mentions(mention_text(text))))
    return Mentioned(distinct[:MENTIONS_MAX_PER_PROMPT], max(0, len(distinct) - MENTIONS_MAX_PER_PROMPT))


def read_call(path: str, is_dir: bool = False) -> ReadFileArgs | ListDirectoryArgs:
    """The tool call that reads a mention: list_directory for ``dir/`` or a directory named without its ``/``
    (``@src``, as Claude Code attaches it), read_file otherwise."""
    return ListDirectoryArgs(path=path) if is_dir or path.endswith("/") else ReadFileArgs(path=path)


def _fence(content: str) -> str:
    """A backtick fence longer than any run of backticks in ``content``."""
    longest = max((len(run) for run in re.findall(r"`+", content)), default=0)
    return "`" * max(3, longest + 1)


def _cut(content: str, budget: int) -> str:
    """``content`` cut to at most ``budget`` UTF-8 bytes, at a line end where there is one."""
    data = content.encode("utf-8")
    if len(data) <= budget:
        return content
    head = data[:budget].decode("utf-8", errors="ignore")
    line_end = head.rfind("\n")
    return head[: line_end + 1] if line_end >= 0 else head


class Attachment(msgspec.Struct, frozen=True):
    """What one mention adds to the prompt, the bytes it used of the budget, and whether it was cut."""

    text: str
    used: int
    cut: bool = False


def not_attached(path: str, reason: str) -> Attachment:
    """The line a mention that was not read leaves in the prompt."""
    return Attachment(f"@{path} could not be attached: {reason}", 0)


def attachment(path: str, result: ToolResult, budget: int) -> Attachment:
    """The part of the prompt for the mention of ``path`` read as ``result``, within ``budget`` bytes."""
    match result:
        case ReadFileResult(content=content):
            what = f"The file {path}, attached with @{path} (read_file):"
        case ListDirectoryResult(entries=entries, total=total, truncated=truncated):
            names = [f"{e.name}/" if e.type == "dir" else e.name for e in entries]
            more = [f"[… {total} entries in all]"] if truncated else []
            content = "\n".join([*names, *more]) + "\n"
            what = f"The directory {path}, attached with @{path} (list_directory):"
        case ToolFailed(error=error):
            return not_attached(path, error)
        case ToolCancelled():
            return not_attached(path, "the read was cancelled")
        case (
            CommandExited()
            | CommandTimedOut()
            | WriteFileResult()
            | EditFileResult()
            | ToolRejected()
            | McpToolResult()
            | JobReport()  # issue 36
        ):
            return not_attached(path, "not a read's result")  # a read never ends like this
        case _:
            assert_never(result)
    kept = _cut(content, budget)
    used = len(kept.encode("utf-8"))
    cut = kept != content
    if cut:
        kept += f"[… cut here: the attachments of one prompt are bounded at {MENTIONS_ATTACHED_MAX_BYTES} bytes in all]"
    body = kept if kept.endswith("\n") else kept + "\n"
    fence = _fence(body)
    return Attachment(f"{what}\n{fence}\n{body}{fence}", used, cut)


def with_attachments(prompt: str, parts: list[str]) -> str:
    """The user message: the prompt as typed, the attachments line, then each attachment, apart by blank lines."""
    return "\n\n".join([prompt, ATTACHMENTS_LINE, *parts]) if parts else prompt


Out = list[tuple[Literal["ui", "executor"], Message]]


class Attaching:
    """A submitted prompt while its @mentions are read, one at a time; it goes to the model once all are."""

    def __init__(self, text: str, context: list[str], prompt: str, paths: list[str], window: int | None = None) -> None:
        self.window = window
        """The model's window, when known: an attachment past MENTION_WINDOW_SHARE_WARN of it is said."""
        self.text = text
        """The prompt as typed (what a cancel puts back into the input)."""
        self.context = context
        """The !command outputs that go with it (back to waiting on a cancel)."""
        self.prompt = prompt
        """The user message before the attachments."""
        self.paths = paths
        self.next = 0
        self.call: tuple[str, str, str] | None = None
        """The read in flight: (call id, tool name, mentioned path)."""
        self.parts: list[str] = []
        self.budget = MENTIONS_ATTACHED_MAX_BYTES

    @property
    def call_id(self) -> str | None:
        return self.call[0] if self.call is not None else None

    @property
    def done(self) -> bool:
        """Every mention is read (or named as not attached): ``message`` is the prompt to send."""
        return self.call is None and self.next >= len(self.paths)

    def read_next(self, ids: Iterator[int], cwd: str) -> Out:
        """The next mention's row and read; a mention past the budget is named as not attached, not read."""
        out: Out = []
        while self.next < len(self.paths):
            path = self.paths[self.next]
            self.next += 1
            call_id = f"mention-{next(ids)}"
            # Which read only: the executor still applies its path policy to the directory listed.
            args = read_call(path, os.path.isdir(os.path.join(cwd, path)))
            name = call_name(args)
            out.append(("ui", ToolCallShown(id=call_id, args=args)))
            if self.budget <= 0:
                limit = MENTIONS_ATTACHED_MAX_BYTES
                reason = f"not read: this prompt's attachments reached their bound of {limit} bytes"
                out.append(("ui", result_row(call_id, name, ToolFailed(error=reason))))
                self.parts.append(not_attached(path, reason).text)
                continue
            self.call = (call_id, name, path)
            out.append(("executor", RunTool(call_id=call_id, args=args)))
            return out
        return out

    def read(self, result: ToolResult) -> Out:
        """The read in flight came back: its row, and its part of the prompt (cut where the budget ends)."""
        assert self.call is not None
        call_id, name, path = self.call
        self.call = None
        out: Out = [("ui", result_row(call_id, name, result))]
        part = attachment(path, result, self.budget)
        self.budget = 0 if part.cut else self.budget - part.used  # cut: nothing more fits
        self.parts.append(part.text)
        if part.cut:
            limit = MENTIONS_ATTACHED_MAX_BYTES
            note = f"@{path} is attached cut short: this prompt's attachments are bounded at {limit} bytes in all"
            out.append(("ui", SystemEntry(text=note, level="warning")))
        warning = window_share_warning(path, part.text, self.window)
        if warning is not None:
            out.append(("ui", SystemEntry(text=warning, level="warning")))
        return out

    def message(self) -> str:
        """The user message: the prompt and every attachment."""
        return with_attachments(self.prompt, self.parts)
