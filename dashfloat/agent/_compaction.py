"""Compaction planning: what to shrink, what to summarise, what to keep verbatim (pure functions).

A conversation is cut only between *units*: a user message, or an assistant message together with the
tool messages answering its calls. So no compaction can separate a call from its result, drop a result
whose call remains, or leave a call unanswered. The two stages as a turn runs them: _compactor.py.
Decision record: docs/decisions/0031-compaction.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import msgspec

from dashfloat.catalogue import EXECUTE_COMMAND, LIST_DIRECTORY, READ_FILE
from dashfloat.jsonvalue import JsonValue
from dashfloat.mentions import ATTACHMENTS_LINE
from dashfloat.protocol import ChatMessage

KEEP_RECENT_UNITS: Final = 4
"""Units at the end of the conversation never shrunk nor summarised (the model's working memory)."""
SHRINK_MIN_BYTES: Final = 2048
"""A tool result smaller than this is left alone: shrinking it would save less than the marker costs."""
SHRINK_HEAD_LINES: Final = 12
SHRINK_TAIL_LINES: Final = 8
"""Lines of a shrunk output kept from its start and its end."""
SHRINK_LINE_MAX_CHARS: Final = 200
SHRINK_LIST_KEEP: Final = 10
"""Items of a long list field (directory entries) kept from its start and its end."""
SUMMARY_HEADER: Final = "[Summary of the earlier conversation, written at a compaction]"
COMPACTION_PROMPT: Final = (
    "Summarise the conversation above for your own later use: it will replace these messages. Do not call tools. "
    "Be concise and factual. Write exactly these four Markdown sections, each a short list, the most important first:\n"
    "## Goal\nthe user's goal and constraints\n"
    "## Next\nwhat remains to do\n"
    "## Files\neach file read or changed, with its path and what was done\n"
    "## Done\ncommands run and their outcomes, errors met, decisions made"
)
"""The summary request's fixed text: a structure a small model can follow (ADR 0092), its word bound after it."""
SUMMARY_WINDOW_SHARE: Final = 0.08
"""The summary's budget: this share of the largest request (8192-token window: ~570 tokens), so that the compacted
conversation leaves room to work in a small window; between SUMMARY_MIN_TOKENS and SUMMARY_MAX_TOKENS."""
SUMMARY_MIN_TOKENS: Final = 256
SUMMARY_MAX_TOKENS: Final = 2048
WORDS_PER_TOKEN: Final = 0.75
"""English prose: about three words in four tokens (the bound is asked for in words, which a model can count)."""
SUMMARY_KEEP_RATIO: Final = 1.5
"""A summary longer than this many times its budget is cut at a line end (a small model that does not stop): the
sections come most important first, so the cut takes the least."""
SUMMARY_BYTES_PER_TOKEN: Final = 3
"""The estimate's bytes per token (``_context.BYTES_PER_TOKEN``: it over-counts), used to measure a summary."""

ELIDED: Final = "elided at a compaction"
"""In every marker; text that holds it was shrunk already and is not cut again."""

_DECODER = msgspec.json.Decoder()
_ENCODER = msgspec.json.Encoder()


class Unit(msgspec.Struct, frozen=True):
    """``conversation[start:end]``: one user message, or one assistant message and its results."""

    start: int
    end: int


def units(conversation: Sequence[ChatMessage]) -> list[Unit]:
    """The conversation cut at every place a compaction may cut it."""
    out: list[Unit] = []
    start = 0
    for i, message in enumerate(conversation):
        if i > start and message.role != "tool":
            out.append(Unit(start, i))
            start = i
    if conversation:
        out.append(Unit(start, len(conversation)))
    return out


def _how_to_get_again(tool: str) -> str:
    if tool == READ_FILE:
        return "call read_file again (offset/limit) to see them"
    if tool == EXECUTE_COMMAND:
        return "run the command again to see them"
    if tool == LIST_DIRECTORY:
        return "list the directory again to see them"
    return "repeat the call to see them"


def shrink_text(text: str, tool: str) -> str:
    """A short head and tail of ``text`` with a marker saying what was elided and how to get it again."""
    if ELIDED in text:
        return text
    lines = text.splitlines()
    keep = SHRINK_HEAD_LINES + SHRINK_TAIL_LINES
    if len(lines) > keep:
        head, tail = lines[:SHRINK_HEAD_LINES], lines[-SHRINK_TAIL_LINES:]
        elided = len(lines) - keep
    else:
        head, tail, elided = lines, [], 0
    cut = [line[:SHRINK_LINE_MAX_CHARS] for line in [*head, *tail]]
    cut_chars = sum(len(a) - len(b) for a, b in zip([*head, *tail], cut, strict=True))
    what = []
    if elided:
        what.append(f"{elided} lines")
    if cut_chars:
        what.append(f"{cut_chars} characters of long lines")
    if not what:  # few, short lines, yet big: one huge line was cut; say so all the same
        return text
    marker = f"[… {' and '.join(what)} {ELIDED}; {_how_to_get_again(tool)} …]"
    shrunk = "\n".join([*cut[: len(head)], marker, *cut[len(head) :]])
    # A few characters cut from a few lines cost less than the marker: never make a result longer.
    return shrunk if len(shrunk) < len(text) else text


def _shrink_value(value: JsonValue, tool: str) -> JsonValue:
    if isinstance(value, str) and len(value.encode()) >= SHRINK_MIN_BYTES // 2:
        return shrink_text(value, tool)
    already = any(isinstance(item, str) and ELIDED in item for item in value) if isinstance(value, list) else True
    if isinstance(value, list) and len(value) > 2 * SHRINK_LIST_KEEP and not already:
        elided = len(value) - 2 * SHRINK_LIST_KEEP
        marker = f"[… {elided} items {ELIDED}; {_how_to_get_again(tool)} …]"
        return [*value[:SHRINK_LIST_KEEP], marker, *value[-SHRINK_LIST_KEEP:]]
    return value


def shrink_result(content: str, tool: str) -> str:
    """A tool message's content, shrunk: the object keeps every field (``ok``, the status, the path) and
    only its long text and list fields are cut; a result that is not a JSON object is cut as text."""
    if len(content.encode()) < SHRINK_MIN_BYTES:
        return content
    try:
        value = _DECODER.decode(content)
    except msgspec.DecodeError:
        return shrink_text(content, tool)
    if not isinstance(value, dict):
        return shrink_text(content, tool)
    shrunk = {key: _shrink_value(item, tool) for key, item in value.items()}
    if shrunk == value:
        return content  # nothing to cut: keep the bytes the provider has cached
    encoded = _ENCODER.encode(shrunk).decode()
    return encoded if len(encoded.encode()) < len(content.encode()) else content


class Shrunk(msgspec.Struct, frozen=True):
    """The conversation after stage 1, and how many results were cut."""

    conversation: list[ChatMessage]
    results: int


def shrink_old_results(conversation: Sequence[ChatMessage], keep_recent: int = KEEP_RECENT_UNITS) -> Shrunk:
    """Stage 1: cut the big tool results of every unit but the last ``keep_recent`` (calls untouched)."""
    out = list(conversation)
    cut = units(conversation)
    old = cut[: max(0, len(cut) - keep_recent)]
    count = 0
    for unit in old:
        names = {r.id: r.function.name for r in conversation[unit.start].tool_calls or []}
        for i in range(unit.start + 1, unit.end):
            message = conversation[i]
            if message.role != "tool" or message.content is None:
                continue
            content = shrink_result(message.content, names.get(message.tool_call_id or "", ""))
            if content != message.content:
                out[i] = msgspec.structs.replace(message, content=content)
                count += 1
    return Shrunk(out, count)


def nothing_to_drop(conversation: Sequence[ChatMessage]) -> bool:
    """Whether no compaction could make ``conversation`` smaller: no old tool result to shrink (however few units
    are kept), nothing but the newest prompt older than the last unit to summarise (the core's two stages)."""
    return shrink_old_results(conversation, 0).results == 0 and plan_summary(conversation, 1) is None


class SummaryPlan(msgspec.Struct, frozen=True):
    """Stage 2: ``older`` is summarised; ``prompt`` (the latest user prompt, if older) and ``recent`` stay."""

    older: list[ChatMessage]
    prompt: ChatMessage | None
    recent: list[ChatMessage]


def plan_summary(conversation: Sequence[ChatMessage], keep_recent: int = KEEP_RECENT_UNITS) -> SummaryPlan | None:
    """What a summary would replace; None when there is nothing older than what must stay verbatim."""
    cut = units(conversation)
    if len(cut) <= keep_recent:
        return None
    boundary = cut[len(cut) - keep_recent].start if keep_recent > 0 else len(conversation)
    older = list(conversation[:boundary])
    recent = list(conversation[boundary:])
    latest = max((i for i, m in enumerate(conversation) if m.role == "user"), default=None)
    prompt = conversation[latest] if latest is not None and latest < boundary else None
    if not [m for m in older if m is not prompt]:
        return None
    return SummaryPlan(older, prompt, recent)


def summary_budget(limit: int) -> int:
    """The summary's budget in tokens when the largest request is ``limit`` tokens."""
    return max(SUMMARY_MIN_TOKENS, min(SUMMARY_MAX_TOKENS, int(limit * SUMMARY_WINDOW_SHARE)))


def summary_request(plan: SummaryPlan, focus: str = "", budget: int = 0) -> list[ChatMessage]:
    """The conversation part of the summary request (the caller puts the system message first); ``budget``: the
    summary's bound in tokens, asked for in words (0: none)."""
    ask = COMPACTION_PROMPT
    if budget:
        ask += f"\n\nAt most {int(budget * WORDS_PER_TOKEN)} words in all."
    ask += f"\n\nFocus on: {focus.strip()}" if focus.strip() else ""
    return [*plan.older, ChatMessage(role="user", content=ask)]


def for_summary(older: Sequence[ChatMessage]) -> list[ChatMessage]:
    """What the summary request carries of the older part: every tool result shrunk (its fields, path and outcome
    kept; only long text and lists cut) and every @mention attachment shrunk after the prompt as typed. Deterministic,
    so a small model reads a short request (ADR 0092)."""
    out = shrink_old_results(older, 0).conversation
    for i, message in enumerate(out):
        text = message.content
        if message.role != "user" or not text or ATTACHMENTS_LINE not in text:
            continue
        typed, line, attached = text.partition(ATTACHMENTS_LINE)
        if len(attached.encode()) >= SHRINK_MIN_BYTES:
            out[i] = msgspec.structs.replace(message, content=typed + line + shrink_text(attached, READ_FILE))
    return out


def bounded_summary(summary: str, budget: int) -> str:
    """``summary`` cut at a line end once past SUMMARY_KEEP_RATIO times its ``budget`` (tokens), with a marker."""
    most = int(budget * SUMMARY_KEEP_RATIO * SUMMARY_BYTES_PER_TOKEN)
    data = summary.encode()
    if len(data) <= most:
        return summary
    head = data[:most].decode(errors="ignore")
    head = head[: head.rfind("\n")] if "\n" in head else head
    over = len(data) - len(head.encode())
    return f"{head.rstrip()}\n[… the rest of the summary was cut: {over} bytes over its bound]"


def drop_front_units(messages: Sequence[ChatMessage], count: int) -> list[ChatMessage]:
    """``messages`` without its first ``count`` units (a summary input that must shrink to fit)."""
    cut = units(messages)
    if count >= len(cut):
        return []
    return list(messages[cut[count].start :]) if count > 0 else list(messages)


def apply_summary(plan: SummaryPlan, summary: str) -> list[ChatMessage]:
    """The compacted conversation: the summary, the latest prompt verbatim, the recent units verbatim."""
    head = ChatMessage(role="user", content=f"{SUMMARY_HEADER}\n\n{summary.strip()}")
    return [head, *([plan.prompt] if plan.prompt is not None else []), *plan.recent]


def common_suffix(a: Sequence[object], b: Sequence[object]) -> int:
    """How many messages at the end of ``a`` and ``b`` are equal (what followed the last compaction)."""
    n = 0
    while n < min(len(a), len(b)) and a[len(a) - 1 - n] == b[len(b) - 1 - n]:
        n += 1
    return n


def dangling_calls(conversation: Sequence[ChatMessage]) -> list[str]:
    """Call ids not answered right after their assistant message, and results with no such call."""
    problems: list[str] = []
    for unit in units(conversation):
        first = conversation[unit.start]
        ids = [r.id for r in first.tool_calls or []] if first.role == "assistant" else []
        answered = [m.tool_call_id or "" for m in conversation[unit.start + 1 : unit.end]]
        if first.role == "tool":
            answered = [first.tool_call_id or "", *answered]
        problems += [f"unanswered {i}" for i in ids if i not in answered]
        problems += [f"orphan {i}" for i in answered if i not in ids]
    return problems
