"""The agent's side of checkpoints, /undo and /rewind, driven in-process message by message."""

from __future__ import annotations

from typing import Any

from dashfloat.agent import AgentCore, AgentOptions, MemoryJournal
from dashfloat.agent._context import estimate
from dashfloat.agent.undo import CheckpointEntry, CommandEntry
from dashfloat.protocol import (
    ApplyRestore,
    Cancel,
    CapturedOutput,
    ChatMessage,
    Checkpoint,
    CommandChanges,
    CommandExited,
    ConfirmRequested,
    ContextChanged,
    DecideConfirmation,
    Message,
    PhaseChanged,
    PreviewReady,
    PreviewRestore,
    PreviewTool,
    PromptRestored,
    ProviderConfig,
    RestoreApplied,
    RestoreEnded,
    RestoreOutcome,
    RestorePreview,
    RestorePreviewed,
    RewindConversation,
    RewindTo,
    RunTool,
    StreamDone,
    SubmitPrompt,
    SystemEntry,
    ToolFinished,
    UndoChanges,
    UndoTurn,
    WriteFileResult,
)
from dashfloat.tool_args import assemble

PROVIDER = ProviderConfig(name="test", base_url="http://127.0.0.1:9/v1", model="m")
STORE = "/state/checkpoints/s1"


class RecordingJournal(MemoryJournal):
    """A journal with a store, recording what the core asks it to keep."""

    def __init__(self) -> None:
        super().__init__()
        self.session_id = "s1"
        self.changes: list[CheckpointEntry | CommandEntry] = []
        self.undone: list[list[int]] = []
        self.rewinds: list[int] = []

    @property
    def checkpoint_store(self) -> str:
        return STORE

    def record_change(self, entry: CheckpointEntry | CommandEntry) -> None:
        self.changes.append(entry)

    def record_undone(self, turns: list[int]) -> None:
        self.undone.append(turns)

    def record_rewind(self, turns: int) -> None:
        self.rewinds.append(turns)


WRITTEN = WriteFileResult(path="f", bytes=1, created=False)
EXITED = CommandExited(exit_code=0, output=CapturedOutput(output="", truncated=False, total_bytes=0))


def take(core: AgentCore, dest: str | None = None) -> list[Message]:
    out = [m for d, m in core.outbox if dest is None or d == dest]
    core.outbox.clear()
    return out


def one(messages: list[Message], kind: type[Any]) -> Any:
    (found,) = [m for m in messages if isinstance(m, kind)]
    return found


def previewed_for_the_record(core: AgentCore, call_id: str) -> None:
    """An auto-approved write is previewed (for its change record and digest) before it runs."""
    one(take(core, "executor"), PreviewTool)
    core.on_executor(PreviewReady(call_id=call_id, lines=["+x"], digest="absent", summary="new file · +1 · 1 bytes"))


def turn_with_a_write(core: AgentCore, prompt: str, call_id: str, path: str) -> RunTool:
    core.on_ui(SubmitPrompt(text=prompt))
    take(core)
    call = assemble(call_id, "write_file", {"path": path, "content": "x"})
    core.on_llm(StreamDone(request_id=core.request_id, content="", tool_calls=[call], finish_reason="tool_calls"))
    previewed_for_the_record(core, call_id)
    run = one(take(core, "executor"), RunTool)
    checkpoint = Checkpoint(path=path, existed=False, after="a" * 64)
    core.on_executor(
        ToolFinished(call_id=call_id, result=WRITTEN, checkpoint=checkpoint, notice="store passed its cap")
    )
    core.on_llm(StreamDone(request_id=core.request_id, content="done", tool_calls=[], finish_reason="stop"))
    return run  # type: ignore[no-any-return]


def phase_of(core: AgentCore) -> str:
    return core.phase  # read afresh: mypy would narrow the attribute across calls that change it


def make() -> tuple[AgentCore, RecordingJournal]:
    journal = RecordingJournal()
    return AgentCore(AgentOptions(provider=PROVIDER, cwd="/work", approval="all"), journal), journal


def test_a_landed_write_is_recorded_with_its_turn_and_the_notice_is_shown() -> None:
    core, journal = make()
    core.on_ui(SubmitPrompt(text="one"))
    take(core)
    call = assemble("c1", "write_file", {"path": "f", "content": "x"})
    core.on_llm(StreamDone(request_id=core.request_id, content="", tool_calls=[call], finish_reason="tool_calls"))
    previewed_for_the_record(core, "c1")
    run = one(take(core, "executor"), RunTool)
    assert run.checkpoint_store == STORE
    checkpoint = Checkpoint(path="f", existed=False, after="a" * 64)
    core.on_executor(ToolFinished(call_id="c1", result=WRITTEN, checkpoint=checkpoint, notice="cap passed"))
    out = take(core, "ui")
    assert SystemEntry(text="cap passed", level="warning") in out
    assert journal.changes == [CheckpointEntry(1, "c1", checkpoint, "/work")]
    # a command's changes are kept too; one that changed nothing is not
    core.on_llm(
        StreamDone(
            request_id=core.request_id,
            content="",
            tool_calls=[assemble("c2", "execute_command", {"command": "make"})],
            finish_reason="tool_calls",
        )
    )
    core.on_executor(ToolFinished(call_id="c2", result=EXITED, changes=CommandChanges(paths=["out"])))
    assert journal.changes[-1] == CommandEntry(1, "c2", CommandChanges(paths=["out"]), "/work")


def test_undo_previews_asks_applies_and_records_then_goes_idle() -> None:
    core, journal = make()
    turn_with_a_write(core, "one", "c1", "f")
    take(core)
    core.on_ui(UndoTurn())
    preview = one(take(core, "executor"), PreviewRestore)
    assert preview.store == STORE and [f.path for f in preview.files] == ["f"]
    assert phase_of(core) == "running"
    core.on_executor(
        RestorePreviewed(
            ref=preview.ref, files=[RestorePreview(path="f", status="delete", lines=["[d]"], digest="a" * 64)]
        )
    )
    ask = one(take(core, "ui"), ConfirmRequested)
    assert ask.scope == "" and ask.no_scope == "a restore is confirmed each time"
    assert isinstance(ask.subject, UndoChanges) and ask.lines[:3] == [
        "undo of turn 1: 1 file to restore",
        "── f: delete (DashFloat created it)",
        "[d]",
    ]
    assert phase_of(core) == "confirming"
    core.on_ui(DecideConfirmation(ref=ask.ref, decision="approve"))
    apply = one(take(core, "executor"), ApplyRestore)
    assert apply.digests == ["a" * 64]
    core.on_executor(RestoreApplied(ref=apply.ref, outcomes=[RestoreOutcome(path="f", ok=True)]))
    out = take(core, "ui")
    assert one(out, RestoreEnded) == RestoreEnded(outcome="restored", restored=1)
    assert isinstance(out[-1], PhaseChanged) and out[-1].phase == "idle"
    assert journal.undone == [[1]] and core.undo_log.checkpoints == []
    core.on_ui(UndoTurn())
    assert one(take(core, "ui"), RestoreEnded).outcome == "nothing"


def test_cancel_during_the_confirmation_applies_nothing_and_keeps_the_change_undoable() -> None:
    core, journal = make()
    turn_with_a_write(core, "one", "c1", "f")
    take(core)
    core.on_ui(UndoTurn())
    preview = one(take(core, "executor"), PreviewRestore)
    core.on_executor(RestorePreviewed(ref=preview.ref, files=[RestorePreview(path="f", status="delete", digest="d")]))
    take(core)
    core.on_ui(Cancel())
    out = take(core)
    assert one(out, RestoreEnded).outcome == "declined" and not any(isinstance(m, ApplyRestore) for m in out)
    assert journal.undone == [] and len(core.undo_log.checkpoints) == 1 and core.phase == "idle"


def test_an_executor_crash_while_applying_is_reported_and_not_recorded_as_undone() -> None:
    core, journal = make()
    turn_with_a_write(core, "one", "c1", "f")
    take(core)
    core.on_ui(UndoTurn())
    preview = one(take(core, "executor"), PreviewRestore)
    core.on_executor(RestorePreviewed(ref=preview.ref, files=[RestorePreview(path="f", status="delete", digest="d")]))
    ask = one(take(core, "ui"), ConfirmRequested)
    core.on_ui(DecideConfirmation(ref=ask.ref, decision="approve"))
    take(core)
    core.on_executor_died("killed by SIGKILL")
    out = take(core, "ui")
    assert one(out, RestoreEnded).outcome == "skipped"
    assert "some files may be restored" in one(out, SystemEntry).text
    assert journal.undone == [] and core.phase == "idle"


def test_rewind_truncates_records_and_gives_the_prompt_back() -> None:
    core, journal = make()
    turn_with_a_write(core, "one", "c1", "f1")
    turn_with_a_write(core, "two", "c2", "f2")
    take(core)
    before = estimate(core.request_messages(), None)
    core.on_ui(RewindTo(prompt=2))
    preview = one(take(core, "executor"), PreviewRestore)
    assert [f.path for f in preview.files] == ["f2"]
    core.on_executor(RestorePreviewed(ref=preview.ref, files=[RestorePreview(path="f2", status="delete", digest="d")]))
    ask = one(take(core, "ui"), ConfirmRequested)
    assert isinstance(ask.subject, RewindConversation)
    # The TUI's wording; a headless --rewind says its text is printed on stdout (b9ea365's tests).
    assert ask.lines[-1] == "the conversation goes back to just before prompt 2; its text returns to the input"
    core.on_ui(DecideConfirmation(ref=ask.ref, decision="approve"))
    apply = one(take(core, "executor"), ApplyRestore)
    core.on_executor(RestoreApplied(ref=apply.ref, outcomes=[RestoreOutcome(path="f2", ok=True)]))
    out = take(core, "ui")
    assert one(out, PromptRestored).text == "two"
    # The status bar's figure follows the shorter conversation (it kept the longer one's until the next turn).
    assert one(out, ContextChanged).tokens == estimate(core.request_messages(), None) < before
    assert journal.rewinds == [1] and [e.turn for e in core.undo_log.checkpoints] == [1]
    assert [m.content for m in core.conversation if isinstance(m, ChatMessage) and m.role == "user"] == ["one"]
    last = core.conversation[-1]
    assert isinstance(last, ChatMessage) and last.role == "assistant"
