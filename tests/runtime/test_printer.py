"""The headless printer on its own: a fake link over a real pipe feeds it display messages."""

from __future__ import annotations

import io
import json
import os
from typing import Any

from dashfloat.protocol import (
    JSON_ENCODER,
    AgentReady,
    AgentToUi,
    ConfirmRequested,
    DecideConfirmation,
    MalformedCall,
    PhaseChanged,
    ReadFileArgs,
    SessionStarted,
    SubmitPrompt,
    SystemEntry,
    TokenReceived,
    ToolCallShown,
    ToolResultShown,
    TurnEnded,
    UiToAgent,
    UserPromptShown,
    WriteFileArgs,
)
from dashfloat.runtime import Printer


class ScriptedLink:
    """Plays back batches of messages, one batch per receive(); readable through a real pipe."""

    def __init__(self, *batches: list[AgentToUi]) -> None:
        self.batches = list(batches)
        self.sent: list[UiToAgent] = []
        self._r, self._w = os.pipe()
        os.write(self._w, b"x")

    def fileno(self) -> int:
        return self._r

    def send(self, message: UiToAgent) -> None:
        self.sent.append(message)

    def receive(self) -> list[AgentToUi]:
        return self.batches.pop(0) if self.batches else []

    def close(self) -> None:
        os.close(self._r)
        os.close(self._w)


def play(*batches: list[AgentToUi], json_mode: bool = False) -> tuple[int, str, str, list[UiToAgent]]:
    link = ScriptedLink(*batches)
    out, err = io.StringIO(), io.StringIO()
    try:
        code = Printer(link, json_mode, out, err).run("prompt")  # type: ignore[arg-type]
    finally:
        link.close()
    return code, out.getvalue(), err.getvalue(), link.sent


def test_a_turn_prints_prose_to_stdout_and_tool_rows_to_stderr() -> None:
    batches: list[Any] = [
        [PhaseChanged(phase="streaming"), TokenReceived(text="Looking.")],
        [ToolCallShown(id="c", args=ReadFileArgs(path="a.txt"))],
        [ToolResultShown(id="c", name="read_file", status="error", output="file not found: a.txt\nmore")],
        [TokenReceived(text="Done."), TurnEnded(outcome="completed"), PhaseChanged(phase="idle")],
    ]
    code, out, err, sent = play(*batches)
    assert code == 0 and sent == [SubmitPrompt(text="prompt")]
    assert out == "Looking.\n\nDone.\n"
    assert err == "⚙ read_file a.txt\n→ error: file not found: a.txt\n  more\n"


def test_confirmations_are_rejected_and_say_which_flag_allows_them() -> None:
    ask = ConfirmRequested(ref=3, id="w", subject=WriteFileArgs(path="a", content=""), lines=[])
    done: list[AgentToUi] = [TurnEnded(outcome="completed"), PhaseChanged(phase="idle")]
    code, _, err, sent = play([PhaseChanged(phase="streaming"), ask], done)
    assert code == 4 and DecideConfirmation(ref=3, decision="reject") in sent and "--approve" in err  # refused


def test_an_agent_death_before_any_stream_still_ends_the_run_with_1() -> None:
    death: list[AgentToUi] = [
        SystemEntry(text="the agent process stopped", level="error"),
        TurnEnded(outcome="failed"),
        PhaseChanged(phase="idle"),
    ]
    code, _, err, _ = play(death)
    assert code == 1 and "agent process stopped" in err


def test_json_mode_writes_every_live_message_as_a_line() -> None:
    code, out, _, _ = play(
        [
            PhaseChanged(phase="streaming"),
            TokenReceived(text="hi"),
            TurnEnded(outcome="completed"),
            PhaseChanged(phase="idle"),
        ],
        json_mode=True,
    )
    assert code == 0
    assert [line.split('"type":"')[1].split('"')[0] for line in out.splitlines()] == [
        "phase_changed",
        "token_received",
        "turn_ended",
        "phase_changed",
        "result",
    ]


def test_json_mode_starts_with_agent_ready_then_notices_and_never_the_replay() -> None:
    ready = AgentReady(model="m", provider="p", cwd="/w", approval="ask")
    start: list[AgentToUi] = [
        ready,
        SystemEntry(text="a start-up notice"),
        SessionStarted(session_id="s1", resumed=True),
        UserPromptShown(text="old prompt"),  # the resumed session's transcript
        TokenReceived(text="old answer"),
        PhaseChanged(phase="idle"),
    ]
    turn: list[AgentToUi] = [
        PhaseChanged(phase="streaming"),
        SystemEntry(text="the window was not reported", level="warning"),
        AgentReady(model="m", provider="p", cwd="/w", approval="ask", context_window=32768),
        TokenReceived(text="new"),
        TurnEnded(outcome="completed"),
        PhaseChanged(phase="idle"),
    ]
    code, out, _, _ = play(start, turn, json_mode=True)
    events = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and events[0] == {**json.loads(JSON_ENCODER.encode(ready)), "schema": 1}
    assert [e["type"] for e in events] == [
        "agent_ready",
        "system_entry",
        "session_started",
        "phase_changed",
        "system_entry",
        "agent_ready",  # what changed: the context window, discovered while the request streamed
        "token_received",
        "turn_ended",
        "phase_changed",
        "result",
    ]
    assert "old" not in out


def test_json_mode_tool_calls_carry_their_typed_arguments() -> None:
    """The shape scripts read (ADR 0034): the arguments under their tool's tag, defaults left out; a call
    that did not parse as the model wrote it."""
    code, out, _, _ = play(
        [
            PhaseChanged(phase="streaming"),
            ToolCallShown(id="a", args=ReadFileArgs(path="a.txt", limit=5)),
            ToolCallShown(id="b", args=MalformedCall("read_file", '{"path":3}')),
            TurnEnded(outcome="completed"),
            PhaseChanged(phase="idle"),
        ],
        json_mode=True,
    )
    calls = [json.loads(line) for line in out.splitlines() if '"tool_call_shown"' in line]
    assert code == 0 and calls == [
        {
            "type": "tool_call_shown",
            "name": "read_file",
            "id": "a",
            "args": {"tool": "read_file", "path": "a.txt", "limit": 5},
        },
        {
            "type": "tool_call_shown",
            "name": "read_file",
            "id": "b",
            "args": {"tool": "malformed", "name": "read_file", "arguments": '{"path":3}'},
        },
    ]


def test_a_replayed_transcript_is_not_printed() -> None:
    replay: list[AgentToUi] = [TokenReceived(text="old answer"), PhaseChanged(phase="idle")]
    live: list[AgentToUi] = [
        PhaseChanged(phase="streaming"),
        TokenReceived(text="new"),
        TurnEnded(outcome="completed"),
        PhaseChanged(phase="idle"),
    ]
    code, out, _, _ = play(replay, live)
    assert code == 0 and out == "new\n"


def test_model_chosen_names_and_tool_output_cannot_write_control_sequences_to_stderr() -> None:
    hostile = "read\u009b2J\x07\nX fake row"
    batches: list[Any] = [
        [PhaseChanged(phase="streaming"), ToolCallShown(id="c", args=MalformedCall(hostile, '{"path":"a\x1b[2J"}'))],
        [ToolResultShown(id="c", name=hostile, status="ok", output="line\x1b]0;t\x07\ttab")],
        [TurnEnded(outcome="completed"), PhaseChanged(phase="idle")],
    ]
    _, _, err, _ = play(*batches)
    assert not any(ch in err for ch in "\x1b\x07\u009b\t")
    assert err.splitlines()[0].startswith("⚙ read^") and not any(ln.startswith("X fake") for ln in err.splitlines())


class TerminalOut(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_model_prose_cannot_write_control_sequences_to_a_terminal_but_reaches_a_pipe_as_sent() -> None:
    # Found by review: a hostile endpoint's (or a prompt-injected model's) answer reached the terminal of
    # `dashfloat -p` as it came: a title set, a screen clear, an OSC 52 clipboard write (the TUI shows caret form).
    prose = "a\x1b]52;c;cHduZWQ=\x07b\x1b[2J\u009b2J\tc\nd\r"
    batches: list[Any] = [
        [PhaseChanged(phase="streaming"), TokenReceived(text=prose)],
        [TurnEnded(outcome="completed"), PhaseChanged(phase="idle")],
    ]
    link = ScriptedLink(*batches)
    out = TerminalOut()
    try:
        Printer(link, False, out, io.StringIO()).run("prompt")  # type: ignore[arg-type]
    finally:
        link.close()
    assert out.getvalue() == "a^[]52;c;cHduZWQ=^Gb^[[2J^[2J\tc\nd^M\n"
    _, piped, _, _ = play(*batches)
    assert piped == prose + "\n"  # a pipe or file gets the model's bytes (a script asked for, redirected)
