"""Prompts entered while the agent is busy: queued under the input, sent one at a time once it is idle (issue 37).

Pure functions of the UI state. A queued prompt is never an answer to a confirmation (it is not in the input), and
a confirmation in between leaves the queue as it is. Esc or Ctrl-C (the user stopping the turn) gives the queue back
to the input instead of sending it; ``send_now`` cancels the turn so that the queue goes at once.
"""

from __future__ import annotations

from typing import Final

from msgspec.structs import replace

from dashfloat.ui.state import UiState, remembered

QUEUE_MAX_PROMPTS: Final = 20
"""Prompts the queue holds; one more is refused with a hint (a key held down is no plan of twenty turns)."""
QUEUE_SHOWN_MAX: Final = 3
"""Queued prompts listed under the input (the oldest first); more are counted."""
QUEUE_FULL_HINT: Final = f"the queue holds {QUEUE_MAX_PROMPTS} prompts: your text stays in the input"
QUEUE_KEYS: Final = "↑ edits the last · Ctrl-S sends now (stops the turn) · Esc stops and gives them back"
QUEUE_KEYS_SHORT: Final = "↑ edit · Ctrl-S now · Esc back"
"""The same keys on a narrow screen (from 40 columns on they fit)."""


def enqueue(state: UiState, text: str) -> UiState | None:
    """``text`` queued after the others (and in the history for Up); None when the queue is full."""
    if len(state.queued) >= QUEUE_MAX_PROMPTS:
        return None
    return replace(state, queued=(*state.queued, text), history=remembered(state.history, text))


def take_last(state: UiState) -> tuple[UiState, str | None]:
    """The newest queued prompt taken back out, to edit (Enter queues it again) or to clear."""
    if not state.queued:
        return state, None
    return replace(state, queued=state.queued[:-1]), state.queued[-1]


def stopped_by_user(state: UiState) -> UiState:
    """Esc or Ctrl-C stopped the turn: the queue is not sent; it comes back to the input when idle."""
    return replace(state, queue_back=bool(state.queued), queue_now=False)


def send_now(state: UiState) -> UiState:
    """The queue is to go at once: the turn is cancelled for it, and that cancel holds nothing back."""
    return replace(state, queue_now=bool(state.queued), queue_back=False)


def ready_to_send(state: UiState) -> bool:
    """Whether the queue moves now: the agent is ready and idle, no confirmation waits."""
    return bool(state.queued) and state.ready and not state.busy


def next_prompt(state: UiState) -> tuple[UiState, str | None]:
    """The oldest queued prompt to submit now, or None (not idle; or the user stopped the turn: see ``given_back``)."""
    if not ready_to_send(state) or state.queue_back:
        return state, None
    return replace(state, queued=state.queued[1:], queue_now=False), state.queued[0]


def given_back(state: UiState, draft: str) -> tuple[UiState, str | None]:
    """After the user stopped the turn: the queued prompts, then ``draft``, as the input's text (None: none)."""
    if not ready_to_send(state) or not state.queue_back:
        return state, None
    text = "\n\n".join(part for part in (*state.queued, draft) if part.strip())
    return replace(state, queued=(), queue_back=False), text


def queue_lines(state: UiState, width: int) -> list[str]:
    """What is drawn under the input: one line per queued prompt (its first line), then the keys (short when the
    screen is narrower than them)."""
    if not state.queued:
        return []
    lines = [f"↳ queued: {' '.join(text.split())}" for text in state.queued[:QUEUE_SHOWN_MAX]]
    if len(state.queued) > QUEUE_SHOWN_MAX:
        lines.append(f"↳ … {len(state.queued) - QUEUE_SHOWN_MAX} more queued")
    return [*lines, QUEUE_KEYS if len(QUEUE_KEYS) <= width else QUEUE_KEYS_SHORT]
