"""The turn on one screen: where it waits, what moves it on, who acts, and where it can go next.

A prompt's turn is *steps*, taken at once one after the other, and *waits*, where it stops until a message comes
(``Turn.waiting`` holds the wait). ``_steps.Turn.go`` takes the steps from wherever a message left the turn until it
reaches a wait; every move, a step's (``go``) or a message's (``Turn.move``), is checked against ``TURN``
(``check``): a move the table does not list is a bug, raised where it happens. Read a row as "at AT, when EVENT
comes, WHO acts, and the turn goes to one of NEXT". Decision record:
docs/decisions/0073-the-turn-as-a-table.md; the path in prose: docs/architecture.md, "The path of one prompt".
"""

from __future__ import annotations

from typing import Final, Literal

Waiting = Literal[
    "nothing", "hook", "mention", "window", "stream", "summary", "preview", "confirm", "tool", "restore", "user_command"
]
"""Where the turn waits, for what, and the phase the status bar shows meanwhile:

- ``nothing``: for the user (idle); ``phase`` is ``idle``.
- ``hook``: the prompt's UserPromptSubmit hooks, and a session start's (``RunHooks``, ADR 0088); ``running``.
- ``mention``: an @mention's read (a ``RunTool``; the prompt is sent once all are read); ``running``.
- ``window``: the context window, before a request that might need compacting (``DiscoverWindow``); ``streaming``.
- ``stream``: the model's answer (``StartStream``); held unseen until the window comes when it was sent before it
  (``Window.held``); ``streaming``.
- ``summary``: the summary a compaction asked for (``StartStream``); ``compacting``.
- ``preview``: a mutation's preview (``PreviewTool``); the phase stays as it was (``streaming`` or ``running``).
- ``confirm``: the user's answer to a ``ConfirmRequested``; ``confirming``.
- ``tool``: a call's result (``RunTool``); ``running``.
- ``restore``: an /undo or /rewind's executor replies and confirmations (``RestoreFlow``); ``running`` or
  ``confirming``.
- ``user_command``: a !command's result (``RunTool``); ``running``.
"""
Step = Literal["episode", "request", "calls", "calls_done"]
"""Where the turn decides at once: ``episode`` counts a model request, ``request`` sends it (or waits for the window,
or compacts first), ``calls`` handles the answer's next tool call, ``calls_done`` asks for the next episode or ends
the turn."""
At = Waiting | Step
Event = Literal[
    "step",
    "SubmitPrompt",
    "RunUserCommand",
    "UndoTurn",
    "RewindTo",
    "CompactConversation",
    "WindowFound",
    "StreamDone",
    "StreamFailed",
    "PreviewReady",
    "DecideConfirmation",
    "ToolFinished",
    "HooksRan",
    "RestorePreviewed",
    "RestoreApplied",
    "Cancel",
    "executor died",
    "llm died",
]
"""What moves the turn: a step taken, or a message (Esc is ``Cancel``, and so is ``Shutdown`` mid-turn)."""

# fmt: off
TURN: Final[tuple[tuple[At, tuple[Event, ...], str, tuple[At, ...]], ...]] = (
    # at            what moves it on                              who acts              where it can go next
    ("nothing",     ("SubmitPrompt",),                            "Turn.submit",        ("hook", "mention", "episode")),
    ("hook",        ("HooksRan", "executor died"),                "Turn.prompt_hooked", ("hook", "mention", "episode",
                                                                                         "nothing")),
    ("mention",     ("ToolFinished", "executor died"),            "Turn.attached",      ("mention", "episode")),
    ("episode",     ("step",),                                    "Turn.episode",       ("request",)),
    ("request",     ("step",),                                    "Turn.request",       ("window", "stream", "summary",
                                                                                         "nothing")),
    ("window",      ("WindowFound",),                             "Turn.window_found",  ("request",)),
    ("stream",      ("StreamDone",),                              "Turn.stream_done",   ("calls", "request", "summary",
                                                                                         "nothing")),
    ("stream",      ("StreamFailed", "llm died"),                 "Turn.stream_failed", ("calls", "request", "summary",
                                                                                         "nothing")),
    ("stream",      ("WindowFound",),                             "Turn.window_found",  ("nothing",)),
    ("summary",     ("StreamDone", "StreamFailed", "llm died"),   "Turn.summary_done",  ("request", "nothing")),
    ("calls",       ("step",),                                    "CallsFlow.step",     ("calls", "preview", "tool",
                                                                                         "calls_done")),
    # where a turn asks: the preview is back, and _decide.asks_after_preview says whether to confirm or run it
    ("preview",     ("PreviewReady",),                            "CallsFlow.previewed", ("calls", "tool", "confirm")),
    ("confirm",     ("DecideConfirmation",),                      "CallsFlow.decided",  ("calls", "tool")),
    ("tool",        ("ToolFinished",),                            "CallsFlow.ran",      ("calls", "confirm")),
    ("preview",     ("executor died",),                           "CallsFlow.executor_died", ("calls",)),
    ("tool",        ("executor died",),                           "CallsFlow.executor_died", ("calls",)),
    ("calls_done",  ("step",),                                    "Turn.calls_done",    ("episode", "nothing")),
    # Esc: a wait for the model or a command is cut short and its last word awaited; anything else ends or moves on
    ("hook",        ("Cancel",),                                  "Turn.cancel",        ("nothing",)),
    ("mention",     ("Cancel",),                                  "Turn.cancel",        ("nothing",)),
    ("window",      ("Cancel",),                                  "Turn.cancel",        ("nothing",)),
    ("stream",      ("Cancel",),                                  "Turn.cancel",        ("stream", "nothing")),
    ("summary",     ("Cancel",),                                  "Turn.cancel",        ("summary",)),
    ("preview",     ("Cancel",),                                  "CallsFlow.cancel",   ("calls",)),
    ("confirm",     ("Cancel",),                                  "CallsFlow.cancel",   ("calls",)),
    ("tool",        ("Cancel",),                                  "CallsFlow.cancel",   ("tool",)),
    ("nothing",     ("Cancel",),                                  "Turn.cancel",        ("nothing",)),
    # beside a prompt's turn, on the same waits: a !command, /undo and /rewind, /compact
    ("nothing",     ("RunUserCommand",),                          "Turn.run_user_command", ("user_command",)),
    ("user_command", ("ToolFinished", "executor died"),           "Turn.user_command_done", ("nothing",)),
    ("user_command", ("Cancel",),                                 "Turn.cancel",        ("user_command",)),
    ("nothing",     ("UndoTurn", "RewindTo"),                     "Turn.start_restore", ("restore", "nothing")),
    ("restore",     ("RestorePreviewed", "RestoreApplied", "DecideConfirmation", "Cancel", "executor died"),
                                                                  "Turn.restore_step",  ("restore", "nothing")),
    ("nothing",     ("CompactConversation",),                     "Turn.compact_now",   ("summary", "nothing")),
)
# fmt: on
"""``Turn`` is in _steps.py, ``CallsFlow`` in _calls.py. A message no row lists for the wait the turn is at is stale
(a late reply, a second Esc) and moves nothing; an internal error ends the turn from anywhere
(``AgentCore.on_internal_error``)."""


class UnlistedMove(RuntimeError):
    """The turn moved in a way ``TURN`` does not list: a bug (the core reports it and ends the turn)."""


def check(at: At, event: Event, to: At) -> None:
    """Raise ``UnlistedMove`` unless a row of ``TURN`` lets the turn go from ``at`` to ``to`` when ``event`` comes."""
    for row_at, events, _, nexts in TURN:
        if row_at == at and event in events and to in nexts:
            return
    raise UnlistedMove(f"the turn went from {at!r} on {event!r} to {to!r}: no row of TURN (agent/_turn.py) says so")
