"""Compaction as a turn runs it: stage 1 shrinks old tool results at once (``shrink``), stage 2 asks the model to
summarise the older part (a ``SummaryFlow``: planned, sent, its answer taken in). Pure: the turn measures, sends and
records. Imported by the first compaction, not with the agent's code (most sessions never compact). What to cut:
_compaction.py; decision record: docs/decisions/0031-compaction.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final, Literal, assert_never

import msgspec

from dashfloat.agent._compaction import (
    KEEP_RECENT_UNITS,
    SummaryPlan,
    apply_summary,
    bounded_summary,
    drop_front_units,
    for_summary,
    plan_summary,
    shrink_old_results,
    summary_budget,
    summary_request,
)
from dashfloat.protocol import (
    ChatMessage,
    ContentDelta,
    ConversationEntry,
    LlmToAgent,
    PromptProgress,
    ReasoningDelta,
    StreamDone,
    StreamFailed,
    StreamStatus,
    SystemEntry,
    WindowFound,
)

SHRINK_TARGET_PERCENT: Final = 75
"""Stage 1 shrinks until the request is this far below the threshold, so that the next few requests keep
the same front (a warm prompt cache) instead of shrinking one more result each time."""

Measure = Callable[[Sequence[ChatMessage]], int]
"""Tokens of a request carrying these conversation messages (the system message and the tools added)."""
Then = Literal["request", "retry", "idle"]
"""After a summary: send the turn's request, retry the one the provider refused, or go idle (/compact)."""


class Shrinking(msgspec.Struct, frozen=True):
    """Stage 1's result: the conversation with ``results`` old tool results cut, and its request's ``tokens``."""

    conversation: list[ChatMessage]
    results: int
    tokens: int


def shrink(chat: list[ChatMessage], measure: Measure, threshold: int) -> Shrinking | None:
    """Stage 1: cut old tool results, the oldest first, protecting fewer recent units only while the request stays
    above the threshold; None when nothing was cut."""
    for keep in range(KEEP_RECENT_UNITS, -1, -1):
        shrunk = shrink_old_results(chat, keep)
        after = measure(shrunk.conversation)
        if after < threshold * SHRINK_TARGET_PERCENT // 100:
            break
    if not shrunk.results:
        return None
    return Shrinking(shrunk.conversation, shrunk.results, after)


def entries(messages: list[ChatMessage], back: dict[int, ConversationEntry]) -> list[ConversationEntry]:
    """Compacted messages as conversation entries: what a compaction kept stays the typed entry it was."""
    return [back.get(id(m), m) for m in messages]


class Summarised(msgspec.Struct, frozen=True):
    """The summary request ended: its text (empty when it failed) and why it failed ("cancelled", or the error)."""

    summary: str
    failure: str


class SummaryFlow:
    """One summary: the older part of the conversation asked to be summarised, then replaced by the answer."""

    def __init__(
        self, plan: SummaryPlan, back: dict[int, ConversationEntry], asked: list[ChatMessage], then: Then, budget: int
    ) -> None:
        self.plan = plan
        self.back = back
        self.asked = asked
        """The summary request's conversation part (the oldest units dropped when even it would not fit)."""
        self.then = then
        self.budget = budget
        """The summary's bound in tokens (``_compaction.summary_budget``): asked for, and a far longer one is cut."""

    @property
    def sendable(self) -> bool:
        """Whether anything is left to summarise once what does not fit the request was dropped."""
        return len(self.asked) > 1

    def on_llm(self, message: LlmToAgent) -> Summarised | SystemEntry | None:
        """A message of the summary's stream: its end, a status line to show, or nothing to do."""
        match message:
            case ContentDelta() | ReasoningDelta() | WindowFound() | PromptProgress():
                return None  # the summary is StreamDone's content, whole
            case StreamStatus(text=text):
                return SystemEntry(text=text)
            case StreamDone(content=content):
                return Summarised(content, "")
            case StreamFailed(kind=kind, message=text):
                return Summarised("", "cancelled" if kind == "cancelled" else text)
            case _:
                assert_never(message)

    def compacted(self, summary: str) -> tuple[list[ConversationEntry], str]:
        """The conversation with the summary in place of the older part, and what was done (for the user)."""
        replaced = len(self.plan.older) - (1 if self.plan.prompt is not None else 0)
        conversation = entries(apply_summary(self.plan, bounded_summary(summary, self.budget)), self.back)
        return conversation, f"summarised {replaced} earlier messages"


def summary_flow(
    chat: list[ChatMessage],
    back: dict[int, ConversationEntry],
    raw: Measure,
    measure: Measure,
    threshold: int,
    limit: int,
    focus: str,
    then: Then,
) -> SummaryFlow | None:
    """Stage 2's plan: as few recent units kept verbatim as leave room for the summary (its budget counted: in a small
    window it is a large share) and the work to go on (by the ``raw`` estimate), the older part shortened for the
    request (``for_summary``) and its oldest units dropped while it is above ``limit``; None: nothing older than what
    must stay."""
    budget = summary_budget(limit)
    plan = None
    for keep in range(KEEP_RECENT_UNITS, 0, -1):
        plan = plan_summary(chat, keep) or plan
        kept = [*([plan.prompt] if plan and plan.prompt else []), *(plan.recent if plan else [])]
        if plan is not None and raw(kept) + budget < threshold // 2:
            break  # the kept part and the summary leave room for the work to go on
    if plan is None:
        return None
    older = for_summary(plan.older)
    asked = summary_request(SummaryPlan(older, plan.prompt, plan.recent), focus, budget)
    dropped = 0
    while len(asked) > 1 and measure(asked) > limit:
        dropped += 1  # the oldest units do not fit even the summary request: the summary skips them
        asked = [*drop_front_units(older, dropped), asked[-1]]
    return SummaryFlow(plan, back, asked, then, budget)
