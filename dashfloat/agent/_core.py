"""The agent's state machine: no I/O of its own; the process shell feeds it and sends its outbox.

One turn = episodes (stream -> tool calls -> stream ...) until the model stops calling tools. Every
path out of a turn leaves a conversation with a tool message for every announced call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, Literal, Protocol, assert_never

import msgspec

from dashfloat.agent import undo
from dashfloat.agent._options import AgentOptions
from dashfloat.agent._prompt import system_message
from dashfloat.agent._restore import RestoreFlow
from dashfloat.agent._summary import result_excerpt, result_status
from dashfloat.catalogue import EDIT_TOOLS, EXECUTE_COMMAND, MUTATING_TOOLS
from dashfloat.permissions import SourcedRule, call_scope, read_only_command, verdict
from dashfloat.protocol import (
    AgentReady,
    ApprovalMode,
    AssembledCall,
    Cancel,
    CancelStream,
    CancelTool,
    ChatMessage,
    ClearSession,
    CommandExited,
    CommandOutput,
    CommandStarted,
    CommandTimedOut,
    ConfirmRequested,
    ContentDelta,
    ConversationEntry,
    DecideConfirmation,
    EditFileResult,
    ExecutorToAgent,
    FrameRejected,
    FunctionCall,
    ListDirectoryResult,
    ListPermissions,
    ListPrompts,
    ListSessions,
    LlmToAgent,
    Message,
    Phase,
    PhaseChanged,
    PreviewReady,
    PreviewTool,
    PromptFile,
    PromptInfo,
    PromptRestored,
    PromptsListed,
    ReadFileResult,
    ReasoningDelta,
    ReasoningReceived,
    RemovePermission,
    RestoreApplied,
    RestoreEnded,
    RestorePreviewed,
    ResumeSession,
    RewindTo,
    RunTool,
    RunUserCommand,
    SandboxPolicy,
    SavePermission,
    SessionCleared,
    SessionInfo,
    SessionsListed,
    SessionStarted,
    SetApproval,
    SetModel,
    ShowUsage,
    Shutdown,
    StartStream,
    StreamDone,
    StreamFailed,
    StreamFailureKind,
    StreamStatus,
    SubmitPrompt,
    SystemEntry,
    TokenReceived,
    ToolCallRecord,
    ToolCallShown,
    ToolCancelled,
    ToolFailed,
    ToolFinished,
    ToolOutputShown,
    ToolRejected,
    ToolReply,
    ToolResult,
    ToolResultShown,
    TurnEnded,
    UiToAgent,
    UndoTurn,
    Usage,
    UsageShown,
    UserPromptShown,
    WriteFileResult,
    result_json,
)

MAX_EPISODES_PER_TURN: Final = 50
CONTEXT_WARNING_FRACTIONS: Final = (0.80, 0.95)

Dest = Literal["ui", "llm", "executor"]
Outcome = Literal["completed", "failed", "cancelled", "stopped", "limit"]
Waiting = Literal["nothing", "stream", "preview", "confirm", "tool", "restore", "user_command"]

APPROVE_ALL_WARNING: Final = (
    "approve: all — every edit, write and command now runs without asking (deny rules still apply)"
)
PLAN_NOTICE: Final = "approve: plan — nothing changes: edits, writes and commands are refused; read-only commands run"
REJECTED: Final = ToolRejected()
CANCELLED: Final = ToolCancelled()
PLAN_REFUSAL: Final = (
    "not run: plan mode — nothing may change. Read, search and plan; describe the changes you would make and "
    "wait for the user to leave plan mode (/approve ask)"
)


class Journal(Protocol):
    """Where the conversation becomes durable (the session log), before anything depends on it."""

    @property
    def session_id(self) -> str: ...

    def record(self, entry: ConversationEntry) -> None: ...

    def record_usage(self, turn: int, usage: Usage) -> None: ...

    def record_prompt(self, text: str) -> None: ...

    def new_session(self) -> None: ...

    def take_warning(self) -> str | None: ...

    def list_sessions(self) -> list[SessionInfo]: ...

    def resume(self, session_id: str) -> tuple[list[ConversationEntry], list[Usage], list[str]]: ...

    @property
    def checkpoint_store(self) -> str: ...

    def loaded_changes(self) -> list[undo.CheckpointEntry | undo.CommandEntry]: ...

    def record_change(self, entry: undo.CheckpointEntry | undo.CommandEntry) -> None: ...

    def record_undone(self, turns: list[int]) -> None: ...

    def record_rewind(self, turns: int) -> None: ...

    def save_rules(self, path: str, rules: list[SourcedRule]) -> None: ...


class MemoryJournal:
    """A journal that keeps nothing on disk (tests; persistence disabled)."""

    def __init__(self) -> None:
        self.session_id = ""
        self.messages: list[ConversationEntry] = []
        self.saved_rules: list[SourcedRule] = []

    def record(self, entry: ConversationEntry) -> None:
        self.messages.append(entry)

    def record_usage(self, turn: int, usage: Usage) -> None:
        pass

    def record_prompt(self, text: str) -> None:
        pass

    def new_session(self) -> None:
        self.messages = []

    def take_warning(self) -> str | None:
        return None

    def list_sessions(self) -> list[SessionInfo]:
        return []

    def resume(self, session_id: str) -> tuple[list[ConversationEntry], list[Usage], list[str]]:
        raise LookupError("sessions are not saved in this run")

    @property
    def checkpoint_store(self) -> str:
        return ""  # nothing on disk: no checkpoints, nothing to undo

    def loaded_changes(self) -> list[undo.CheckpointEntry | undo.CommandEntry]:
        return []

    def record_change(self, entry: undo.CheckpointEntry | undo.CommandEntry) -> None:
        pass

    def record_undone(self, turns: list[int]) -> None:
        pass

    def record_rewind(self, turns: int) -> None:
        pass

    def save_rules(self, path: str, rules: list[SourcedRule]) -> None:
        self.saved_rules = list(rules)


def _canonical(call: AssembledCall) -> ToolCallRecord:
    arguments = msgspec.json.encode(call.args if call.args is not None else {}).decode()
    return ToolCallRecord(id=call.id, function=FunctionCall(name=call.name or "unknown", arguments=arguments))


def tool_message(reply: ToolReply) -> ChatMessage:
    """The ``role: "tool"`` message the provider gets for ``reply``: the one place a result becomes JSON."""
    return ChatMessage(role="tool", tool_call_id=reply.call_id, content=result_json(reply.result))


def provider_message(entry: ConversationEntry) -> ChatMessage:
    """A conversation entry as the provider's chat message."""
    return tool_message(entry) if isinstance(entry, ToolReply) else entry


def _compact(tokens: int) -> str:
    return f"{tokens / 1000:.1f}k" if tokens >= 1000 else str(tokens)


class AgentCore:
    """The conversation, the phase, and the tool loop; ``outbox`` holds what to send where."""

    def __init__(self, options: AgentOptions, journal: Journal, instructions: str = "") -> None:
        self.provider = options.provider
        self.cwd = options.cwd
        self.approval: ApprovalMode = options.approval
        self.sandbox = options.sandbox
        self.idle_timeout_s = options.idle_timeout_s
        self.exec_timeout_s = options.exec_timeout_s
        self.idle_timeout_from = options.idle_timeout_from
        self.instructions = instructions
        self.journal = journal
        self.history: list[str] = []
        self.conversation: list[ConversationEntry] = []
        self.outbox: list[tuple[Dest, Message]] = []
        self.session_rules: list[SourcedRule] = []
        """Grants made with "always allow" in this session: revoked by /approve ask, /clear, /permissions."""
        self.saved_rules: list[SourcedRule] = list(options.rules)
        self.rules_path = options.rules_path
        self.read_only_commands = options.read_only_commands
        self.log: list[str] = []
        """Lines for the agent's log file (stderr), not for the user: ignored stale input and the like."""
        self.turn_usage: list[Usage] = []
        self.warned_fractions: set[float] = set()
        self.shutting_down = False
        self._announced_session = ""
        self.request_id = 0
        self.confirm_ref = 0
        self.undo_log = undo.UndoLog()
        self.user_commands_run = 0
        self.prompt_files: list[PromptFile] = []
        self.pending_context: list[str] = []
        """Outputs of !commands, sent to the model with the next prompt."""
        self._reset_turn()

    # ------------------------------------------------------------ plumbing

    def _reset_turn(self) -> None:
        self.phase: Phase = "idle"
        self.waiting: Waiting = "nothing"
        self.user_command: tuple[str, str] | None = None
        """The running !command: (call id, command line)."""
        self.episodes = 0
        self.partial: list[str] = []
        self.calls: list[AssembledCall] = []
        self.next_call = 0
        self.preview_digest: str | None = None
        self.stop_result: ToolResult | None = None
        self.stop_outcome: Outcome = "completed"
        self.last_usage: Usage | None = None
        self.restore: RestoreFlow | None = None

    def _ui(self, message: Message) -> None:
        self.outbox.append(("ui", message))

    def _set_phase(self, phase: Phase) -> None:
        if phase != self.phase:
            self.phase = phase
            self._ui(PhaseChanged(phase=phase))

    def _record(self, entry: ConversationEntry) -> None:
        self.journal.record(entry)
        self.conversation.append(entry)
        warning = self.journal.take_warning()
        if warning:
            self._ui(SystemEntry(text=warning, level="error"))
        if self.journal.session_id and self.journal.session_id != self._announced_session:
            self._announced_session = self.journal.session_id
            self._ui(SessionStarted(session_id=self._announced_session))

    def ready_message(self) -> AgentReady:
        """What the UI needs to draw the status bar (sent at start and after settings change)."""
        return AgentReady(
            model=self.provider.model,
            provider=self.provider.name,
            cwd=self.cwd,
            approval=self.approval,
            context_window=self.provider.context_window,
            history=self.history,
            sandbox=self.sandbox,
            rules=len(self.session_rules) + len(self.saved_rules),
            prompt_files=self.prompt_files,
        )

    def load(self, conversation: list[ConversationEntry], usage: list[Usage], replay: bool = True) -> None:
        """Adopt a resumed conversation and replay it to the UI with the live vocabulary."""
        self.conversation = list(conversation)
        self.turn_usage = list(usage)
        self.undo_log = undo.UndoLog()
        for entry in self.journal.loaded_changes():
            self.undo_log.add(entry)
        self._announced_session = self.journal.session_id
        self._ui(SessionStarted(session_id=self.journal.session_id, resumed=True))
        if not replay:
            return
        for message in conversation:
            if isinstance(message, ToolReply):
                self._show_result(message.call_id, message.name, message.result)
            elif message.role == "user" and message.content is not None:
                self._ui(UserPromptShown(text=message.content))
            elif message.role == "assistant":
                if message.content:
                    self._ui(TokenReceived(text=message.content))
                for record in message.tool_calls or []:
                    try:
                        args = msgspec.json.decode(record.function.arguments)
                    except msgspec.DecodeError:
                        args = {}
                    self._ui(
                        ToolCallShown(
                            id=record.id,
                            name=record.function.name,
                            args=args if isinstance(args, dict) else {},
                        )
                    )
        self._ui(PhaseChanged(phase="idle"))

    # ------------------------------------------------------------ UI -> agent

    def on_ui(self, message: UiToAgent) -> None:
        match message:
            case SubmitPrompt(text=text):
                self._submit(text)
            case RunUserCommand(command=command):
                self._run_user_command(command)
            case DecideConfirmation():
                self._decide(message)
            case Cancel():
                self.cancel()
            case SetModel(model=model):
                self.provider = msgspec.structs.replace(self.provider, model=model)
                self._ui(SystemEntry(text=f"model set to {model} (from the next request on)"))
                self._ui(self.ready_message())
            case SetApproval(mode=mode):
                self.approval = mode
                if mode == "all":
                    self._ui(SystemEntry(text=APPROVE_ALL_WARNING, level="warning"))
                elif mode == "plan":
                    self._ui(SystemEntry(text=PLAN_NOTICE))
                else:
                    self._ui(SystemEntry(text=f"approval mode: {mode}"))
                if mode == "ask" and self.session_rules:
                    self._revoke_session_rules()
                self._ui(self.ready_message())
            case ListPermissions():
                self._ui(SystemEntry(text=self.permissions_report()))
            case RemovePermission(number=number):
                self._remove_rule(number)
            case SavePermission(number=number):
                self._save_rule(number)
            case ClearSession():
                if self._busy("/clear"):
                    return
                self.pending_context = []
                self.journal.new_session()
                self.conversation = []
                self.turn_usage = []
                self.undo_log = undo.UndoLog()
                self.warned_fractions = set()
                self._announced_session = ""
                if self.session_rules:
                    self._revoke_session_rules()
                    self._ui(self.ready_message())
                # no session file yet; a restart after a crash must not bring the old one back
                self._ui(SessionCleared())
                self._ui(SystemEntry(text="new session: the conversation starts empty"))
            case ListSessions():
                self._ui(SessionsListed(sessions=self.journal.list_sessions()))
            case ResumeSession(session_id=session_id):
                if self._busy("/resume"):
                    return
                try:
                    conversation, usage, notices = self.journal.resume(session_id)
                except (LookupError, OSError, ValueError) as exc:
                    self._ui(SystemEntry(text=str(exc), level="error"))
                    return
                for notice in notices:
                    self._ui(SystemEntry(text=notice, level="warning"))
                self.load(conversation, usage)
            case ShowUsage():
                self._ui(SystemEntry(text=self.usage_report()))
            case UndoTurn():
                if not self._busy("/undo"):
                    self._start_restore(None, "")
            case ListPrompts():
                prompts = [PromptInfo(n, text) for n, text in enumerate(self.prompts(), 1)]
                self._ui(PromptsListed(session_id=self.journal.session_id, prompts=prompts))
            case RewindTo(prompt=prompt, session_id=session_id):
                if not self._busy("/rewind"):
                    self._start_restore(prompt, session_id)
            case Shutdown():
                self.shutting_down = True
                if self.phase != "idle":
                    self.cancel()
            case _:
                assert_never(message)

    def _busy(self, what: str) -> bool:
        if self.phase == "idle":
            return False
        self._ui(SystemEntry(text=f"{what} waits for the current turn: press Esc to cancel it", level="warning"))
        return True

    def _submit(self, text: str) -> None:
        if self._busy("a new prompt"):
            return
        self.journal.record_prompt(text)
        if not self.history or self.history[-1] != text:
            self.history.append(text)
        self._reset_turn()
        context, self.pending_context = self.pending_context, []
        self._record(ChatMessage(role="user", content="\n\n".join([*context, text])))
        self._start_stream()

    def _run_user_command(self, command: str) -> None:
        """!command: the user's own command through the executor (same sandbox and cwd), no confirmation."""
        if self._busy("a !command"):
            return
        self.user_commands_run += 1
        call_id = f"user-command-{self.user_commands_run}"
        self.user_command = (call_id, command)
        self.waiting = "user_command"
        self._set_phase("running")
        self._ui(ToolCallShown(id=call_id, name=EXECUTE_COMMAND, args={"command": command}))
        # Typed by a person: the network as for a command approved with a key.
        policy = SandboxPolicy(mode="workspace-write", network=True)
        args = {"command": command}
        run = RunTool(call_id=call_id, name=EXECUTE_COMMAND, args=args, sandbox=policy)
        self.outbox.append(("executor", run))

    def _user_command_done(self, result: ToolResult) -> None:
        assert self.user_command is not None
        call_id, command = self.user_command
        self.user_command = None
        self.waiting = "nothing"
        self._show_result(call_id, EXECUTE_COMMAND, result)
        status: str = result_status(result)
        output = ""
        match result:
            case CommandExited(exit_code=code, output=captured) | CommandTimedOut(exit_code=code, output=captured):
                output = captured.output
                status = status if code is None else f"exit code {code}"
            case ToolCancelled(output=captured):
                output = captured.output if captured is not None else ""
            case ToolFailed(error=error):
                output = error
            case ReadFileResult() | WriteFileResult() | EditFileResult() | ListDirectoryResult() | ToolRejected():
                pass  # not a command's result: nothing printed
            case _:
                assert_never(result)
        self.pending_context.append(f"I ran `{command}` myself ({status}); its output:\n```\n{output.rstrip()}\n```")
        self._ui(SystemEntry(text="the command's output goes to the model with your next prompt"))
        self._set_phase("idle")

    def usage_report(self) -> str:
        """/usage: tokens of this session by turn."""
        if not self.turn_usage:
            return "no usage reported yet in this session"
        rows = ["turn  prompt  completion  total"]
        for turn, usage in enumerate(self.turn_usage, 1):
            rows.append(f"{turn:>4}  {usage.prompt_tokens:>6}  {usage.completion_tokens:>10}  {usage.total_tokens:>5}")
        total = sum(u.total_tokens for u in self.turn_usage)
        rows.append(f"all   {_compact(total)} tokens in {len(self.turn_usage)} turns")
        return "\n".join(rows)

    # ------------------------------------------------------------ permissions

    def _all_rules(self) -> list[SourcedRule]:
        return [*self.session_rules, *self.saved_rules]

    def _revoke_session_rules(self) -> None:
        names = ", ".join(r.rule.text() for r in self.session_rules)
        self.session_rules = []
        self._ui(SystemEntry(text=f"session grants revoked: {names}"))

    def permissions_report(self) -> str:
        """/permissions: every rule in force, numbered, with where it comes from."""
        rules = self._all_rules()
        lines = [f"approval mode: {self.approval}"]
        if self.read_only_commands:
            lines.append(
                "read-only commands (ls, cat, head, tail, wc, rg, grep, find, git status|log|diff|show) run unasked"
            )
        if not rules:
            lines.append("no permission rules (a at a confirmation grants one for this session)")
        for n, sourced in enumerate(rules, 1):
            lines.append(f"{n:>3}  {sourced.effect:<5}  {sourced.rule.text()}  ({sourced.source})")
        if rules:
            lines.append("/permissions remove N drops one; /permissions save N keeps a session grant in your rule file")
        return "\n".join(lines)

    def _numbered(self, number: int) -> SourcedRule | None:
        rules = self._all_rules()
        if 1 <= number <= len(rules):
            return rules[number - 1]
        self._ui(SystemEntry(text=f"no rule {number}: /permissions lists {len(rules)}", level="error"))
        return None

    def _remove_rule(self, number: int) -> None:
        sourced = self._numbered(number)
        if sourced is None:
            return
        if sourced in self.session_rules:
            self.session_rules.remove(sourced)
            self._ui(SystemEntry(text=f"removed {sourced.effect} {sourced.rule.text()} (session)"))
        elif sourced.source != self.rules_path:
            self._ui(
                SystemEntry(
                    text=f"{sourced.rule.text()} comes from {sourced.source}: edit that file to remove it",
                    level="warning",
                )
            )
            return
        else:
            kept = [r for r in self.saved_rules if r is not sourced]
            if not self._write_saved(kept):
                return
            self._ui(SystemEntry(text=f"removed {sourced.effect} {sourced.rule.text()} from {self.rules_path}"))
        self._ui(self.ready_message())

    def _save_rule(self, number: int) -> None:
        sourced = self._numbered(number)
        if sourced is None:
            return
        if sourced not in self.session_rules:
            self._ui(SystemEntry(text=f"rule {number} is already saved in {sourced.source}", level="warning"))
            return
        saved = SourcedRule(sourced.rule, sourced.effect, self.rules_path)
        if not self._write_saved([*self.saved_rules, saved]):
            return
        self.session_rules.remove(sourced)
        self._ui(SystemEntry(text=f"saved {saved.effect} {saved.rule.text()} in {self.rules_path}"))
        self._ui(self.ready_message())

    def _write_saved(self, rules: list[SourcedRule]) -> bool:
        if not self.rules_path:
            self._ui(SystemEntry(text="rules are not saved in this run", level="error"))
            return False
        ours = [r for r in rules if r.source == self.rules_path]
        try:
            self.journal.save_rules(self.rules_path, ours)
        except OSError as exc:
            self._ui(SystemEntry(text=f"cannot write {self.rules_path}: {exc.strerror or exc}", level="error"))
            return False
        self.saved_rules = rules
        return True

    # ------------------------------------------------------------ episodes

    def _start_stream(self) -> None:
        self.request_id += 1
        self.episodes += 1
        self.partial = []
        self.last_usage = None
        self.waiting = "stream"
        self._set_phase("streaming")
        messages = [system_message(self.cwd, self.instructions), *map(provider_message, self.conversation)]
        self.outbox.append(
            (
                "llm",
                StartStream(
                    request_id=self.request_id,
                    provider=self.provider,
                    messages=messages,
                    idle_timeout_s=self.idle_timeout_s,
                    exec_timeout_s=self.exec_timeout_s,
                    idle_timeout_from=self.idle_timeout_from,
                ),
            )
        )

    def on_llm(self, message: LlmToAgent) -> None:
        if self.waiting != "stream" or message.request_id != self.request_id:
            return  # a late message of a stream we already finished
        match message:
            case ContentDelta(text=text):
                self.partial.append(text)
                if self.stop_result is None:
                    self._ui(TokenReceived(text=text))
            case ReasoningDelta(text=text):
                if self.stop_result is None:
                    self._ui(ReasoningReceived(text=text))
            case StreamStatus(text=text, level=level):
                self._ui(SystemEntry(text=text, level=level))
            case StreamDone():
                self._stream_done(message)
            case StreamFailed():
                self._stream_failed(message.kind, message.message, message.content, message.tool_calls)
            case _:
                assert_never(message)

    def _unique_ids(self, calls: list[AssembledCall]) -> list[AssembledCall]:
        """Call ids unique in the whole conversation: a provider without ids gets synthesized ones
        (``call_0_0``) that would repeat in every episode, and a repeated id confuses providers."""
        seen = {r.id for m in self.conversation if isinstance(m, ChatMessage) for r in m.tool_calls or []}
        unique: list[AssembledCall] = []
        for call in calls:
            if call.id in seen:
                call = msgspec.structs.replace(call, id=f"{call.id}_r{self.request_id}_{len(unique)}")
            seen.add(call.id)
            unique.append(call)
        return unique

    def _stream_done(self, done: StreamDone) -> None:
        self.waiting = "nothing"
        self.last_usage = done.usage
        if not done.content and not done.tool_calls:
            self._ui(SystemEntry(text="[model returned nothing]"))
            self._end_turn(self.stop_outcome)
            return
        calls = self._unique_ids(done.tool_calls)
        self._record_assistant(done.content, calls)
        if done.finish_reason == "length":
            self._ui(
                SystemEntry(
                    text="the answer was cut off: the model hit its output limit (finish_reason: length)",
                    level="warning",
                )
            )
        self._begin_calls(calls)

    def _stream_failed(self, kind: StreamFailureKind, text: str, content: str, calls: list[AssembledCall]) -> None:
        self.waiting = "nothing"
        calls = self._unique_ids(calls)
        content = content or "".join(self.partial)
        if content or calls:
            self._record_assistant(content, calls)
        if kind == "cancelled":
            self._stop(CANCELLED, "cancelled")
            self._ui(SystemEntry(text="cancelled"))
        else:
            self._stop(ToolFailed(error=f"not run: the stream failed ({kind})"), "failed")
            self._ui(SystemEntry(text=text, level="error"))
        self._begin_calls(calls)

    def _record_assistant(self, content: str, calls: list[AssembledCall]) -> None:
        self._record(
            ChatMessage(
                role="assistant",
                content=content or None,
                tool_calls=[_canonical(call) for call in calls] or None,
            )
        )

    def _stop(self, result: ToolResult, outcome: Outcome) -> None:
        if self.stop_result is None:
            self.stop_result = result
            self.stop_outcome = outcome

    # ------------------------------------------------------------ tool calls

    def _begin_calls(self, calls: list[AssembledCall]) -> None:
        self.calls = list(calls)
        self.next_call = 0
        self._advance()

    def _current(self) -> AssembledCall:
        return self.calls[self.next_call]

    def _advance(self) -> None:
        """Handle calls in order until one needs to wait; then, or when all are done, move on."""
        while self.next_call < len(self.calls):
            call = self._current()
            self._ui(ToolCallShown(id=call.id, name=call.name, args=call.args or {}))
            if self.stop_result is not None:
                self._finish_call(self.stop_result)
            elif call.error is not None:
                self._finish_call(ToolFailed(error=call.error))
            elif call.name not in MUTATING_TOOLS:
                self._run(None, by_keypress=False)
                return
            else:
                args = call.args or {}
                permit, rule = verdict(self._all_rules(), call.name, args, self.cwd)
                safe_line = self._read_only_line(call)
                if permit == "deny":
                    assert rule is not None
                    error = f"denied by the rule {rule.rule.text()} ({rule.source}): do not retry it; ask the user"
                    self._finish_call(ToolFailed(error=error))
                elif safe_line is not None:
                    self._run(None, by_keypress=False, args={**args, "command": safe_line}, read_only=True)
                    return
                elif self.approval == "plan":
                    self._finish_call(ToolFailed(error=PLAN_REFUSAL))
                elif permit == "allow" or self._auto_approved(call.name):
                    self._run(None, by_keypress=False)
                    return
                else:
                    self.waiting = "preview"
                    self.outbox.append(("executor", PreviewTool(call_id=call.id, name=call.name, args=args)))
                    return
        self._after_calls()

    def _read_only_line(self, call: AssembledCall) -> str | None:
        """The neutralised line of a read-only command that runs unasked, else None."""
        if not self.read_only_commands or call.name != "execute_command" or not call.args:
            return None
        command, cwd = call.args.get("command"), call.args.get("cwd", ".")
        if not isinstance(command, str) or cwd not in (".", "", "./"):
            return None  # another cwd: asked, like any command (its path is the executor's to check)
        return read_only_command(command)

    def _auto_approved(self, name: str) -> bool:
        if self.approval == "all":
            return True
        return self.approval == "edits" and name in EDIT_TOOLS

    def _run(
        self, digest: str | None, by_keypress: bool, args: dict[str, Any] | None = None, read_only: bool = False
    ) -> None:
        call = self._current()
        self.waiting = "tool"
        self._set_phase("running")
        # Network only for a command a person just approved, unless the session enabled it (--network); a
        # read-only command run unasked gets the read-only sandbox too, so a mistake in the allowlist cannot write.
        policy = SandboxPolicy(
            mode="read-only" if read_only else "workspace-write",
            network=not read_only and (by_keypress or self.sandbox.network),
        )
        run = RunTool(
            call_id=call.id,
            name=call.name,
            args=args if args is not None else call.args or {},
            expect_digest=digest,
            sandbox=policy,
            checkpoint_store=self.journal.checkpoint_store,
        )
        self.outbox.append(("executor", run))

    # ------------------------------------------------------------ checkpoints, /undo and /rewind

    def prompts(self) -> list[str]:
        """The user prompts of the conversation, oldest first (prompt N is turn N)."""
        return [m.content or "" for m in self.conversation if isinstance(m, ChatMessage) and m.role == "user"]

    def _keep_changes(self, finished: ToolFinished) -> None:
        """A landed write/edit's checkpoint and a command's changes become part of the session log."""
        turn = len(self.prompts())
        entry: undo.CheckpointEntry | undo.CommandEntry | None = None
        if finished.checkpoint is not None:
            entry = undo.CheckpointEntry(turn, finished.call_id, finished.checkpoint, self.cwd)
        elif finished.changes is not None and (finished.changes.paths or finished.changes.unknown):
            entry = undo.CommandEntry(turn, finished.call_id, finished.changes, self.cwd)
        if entry is not None:
            self.undo_log.add(entry)
            self.journal.record_change(entry)
        if finished.notice:
            self._ui(SystemEntry(text=finished.notice, level="warning"))

    def _next_ref(self) -> int:
        self.confirm_ref += 1
        return self.confirm_ref

    def _refuse_restore(self, text: str) -> None:
        self._ui(SystemEntry(text=text, level="error"))
        self._ui(RestoreEnded(outcome="refused"))

    def _start_restore(self, prompt: int | None, session_id: str) -> None:
        """/undo (``prompt`` None) or /rewind: plan it, then ask the executor for the reverse preview."""
        if session_id and session_id != self.journal.session_id:
            current = self.journal.session_id or "a new session"
            self._refuse_restore(
                f"refused: that prompt list is of session {session_id}, and this is {current}; "
                "/rewind lists this session's prompts"
            )
            return
        prompts = self.prompts()
        if prompt is None:
            first = undo.undo_turn(self.undo_log)
            if first is None:
                self._ui(SystemEntry(text="nothing to undo: no file change of this session is left to revert"))
                self._ui(RestoreEnded(outcome="nothing"))
                return
        else:
            found = undo.prompt_turn(prompt, len(prompts))
            if found is None:
                count = len(prompts)
                if prompt < 0:
                    self._refuse_restore(f"cannot go back {-prompt} turns: this session has {count}")
                else:
                    self._refuse_restore(f"no prompt {prompt} to rewind to: this session has {count}")
                return
            first = found
        elsewhere = undo.other_cwds(self.undo_log, first, self.cwd)
        if elsewhere:
            self._refuse_restore(
                f"refused: changes of these turns were made in {elsewhere[0]}, not in {self.cwd}; "
                "run DashFloat there to restore them"
            )
            return
        plan = undo.plan(self.undo_log, first)
        text = prompts[first - 1] if prompt is not None else None
        self.restore = RestoreFlow(self._next_ref, plan, first, text, self.journal.checkpoint_store)
        self.waiting = "restore"
        self._set_phase("running")
        self._restore_step(self.restore.start())

    def _restore_step(self, messages: Sequence[tuple[Dest, Message]]) -> None:
        """Send what the restore flow asks for; when it is over, record it and go idle."""
        flow = self.restore
        assert flow is not None
        for dest, message in messages:
            if isinstance(message, ConfirmRequested):
                self._set_phase("confirming")
            elif dest == "executor":
                self._set_phase("running")
            self.outbox.append((dest, message))
        if flow.ended is None:
            return
        self.restore = None
        self.waiting = "nothing"
        if flow.applied:
            if flow.text is None:
                self.journal.record_undone(list(flow.plan.turns))
                self.undo_log.undone(flow.plan.turns)
            else:
                kept = flow.first_turn - 1
                self.journal.record_rewind(kept)
                self.undo_log.rewound(kept)
                self._truncate(kept)
                self._ui(PromptRestored(text=flow.text))
        self._ui(flow.ended)
        self._set_phase("idle")

    def _truncate(self, kept: int) -> None:
        """The conversation up to (not including) prompt ``kept + 1``: the next request carries that prefix."""
        prompts = 0
        for index, message in enumerate(self.conversation):
            if isinstance(message, ChatMessage) and message.role == "user":
                prompts += 1
                if prompts > kept:
                    self.conversation = self.conversation[:index]
                    break
        self.turn_usage = self.turn_usage[:kept]

    def _show_result(self, call_id: str, name: str, result: ToolResult) -> None:
        self._ui(ToolResultShown(id=call_id, name=name, status=result_status(result), output=result_excerpt(result)))

    def _finish_call(self, result: ToolResult) -> None:
        call = self._current()
        self.waiting = "nothing"
        self._record(ToolReply(call_id=call.id, name=call.name, result=result))
        self._show_result(call.id, call.name, result)
        self.next_call += 1

    def _after_calls(self) -> None:
        if self.stop_result is not None:
            self._end_turn(self.stop_outcome)
        elif not self.calls:
            self._end_turn("completed")
        elif self.shutting_down:
            self._end_turn("stopped")
        elif self.episodes >= MAX_EPISODES_PER_TURN:
            self._ui(
                SystemEntry(
                    text=f"stopped after {MAX_EPISODES_PER_TURN} model requests in one turn; "
                    "send a prompt to let it continue",
                    level="warning",
                )
            )
            self._end_turn("limit")
        else:
            self._start_stream()

    def on_executor(self, message: ExecutorToAgent) -> None:
        match message:
            case PreviewReady(call_id=call_id):
                if self.waiting != "preview" or call_id != self._current().id:
                    return
                if message.error is not None:
                    self._finish_call(ToolFailed(error=message.error))
                    self._advance()
                    return
                call = self._current()
                self.confirm_ref += 1
                self.preview_digest = message.digest
                self.waiting = "confirm"
                self._set_phase("confirming")
                scope = call_scope(call.name, call.args or {})
                self._ui(
                    ConfirmRequested(
                        ref=self.confirm_ref,
                        id=call.id,
                        name=call.name,
                        args=call.args or {},
                        lines=message.lines,
                        scope=scope.text() if scope is not None else "",
                    )
                )
            case ToolFinished(call_id=call_id, result=result) if (
                self.waiting == "user_command" and self.user_command and call_id == self.user_command[0]
            ):
                self._user_command_done(result)
            case ToolFinished(call_id=call_id, result=result):
                if self.waiting == "tool" and call_id == self._current().id:
                    self._keep_changes(message)
                    self._finish_call(result)
                    self._advance()
            case FrameRejected(error=error):
                self._ui(SystemEntry(text=error, level="error"))
            case CommandStarted():
                pass  # the process shell keeps the process group to kill if the executor dies
            case RestorePreviewed() | RestoreApplied():
                if self.restore is not None and self.waiting == "restore":
                    self._restore_step(self.restore.on_executor(message))
            case CommandOutput(call_id=call_id, text=text, skipped_bytes=skipped):
                running = self.user_command[0] if self.user_command else None
                if call_id == running or (self.waiting == "tool" and call_id == self._current().id):
                    self._ui(ToolOutputShown(id=call_id, text=text, skipped_bytes=skipped))  # late chunks go
            case _:
                assert_never(message)

    def _pending_ref(self) -> str:
        return str(self.confirm_ref) if self.waiting == "confirm" else "none"

    def _decide(self, message: DecideConfirmation) -> None:
        ref, decision = message.ref, message.decision
        if self.waiting == "restore" and self.restore is not None:
            self._restore_step(self.restore.on_decision(ref, decision))
            return
        if self.waiting != "confirm" or ref != self.confirm_ref:
            # a keypress for a confirmation that is already answered (or never was): ignored, and logged
            self.log.append(f"ignored decision {decision!r} for confirmation {ref}: pending is {self._pending_ref()}")
            return
        call = self._current()
        match decision:
            case "approve":
                self._run(self.preview_digest, by_keypress=True)
            case "approve_always":
                scope = call_scope(call.name, call.args or {})
                if scope is not None:  # the UI offers no "always" without a scope; a stray one approves once
                    self.session_rules.append(SourcedRule(scope, "allow", "session"))
                    text = f"{scope.text()} runs without asking for the rest of this session (/permissions to revoke)"
                    self._ui(SystemEntry(text=text))
                    self._ui(self.ready_message())
                self._run(self.preview_digest, by_keypress=True)
            case "reject":
                self._finish_call(REJECTED)
                self._advance()
            case "reject_stop":
                self._stop(REJECTED, "stopped")
                self._finish_call(REJECTED)
                self._advance()
            case _:
                assert_never(decision)

    # ------------------------------------------------------------ cancel, crashes, end of turn

    def cancel(self) -> None:
        """Esc: stop the stream, reject-and-stop a confirmation, or kill the running command."""
        match self.waiting:
            case "stream":
                self._stop(CANCELLED, "cancelled")
                self.outbox.append(("llm", CancelStream(request_id=self.request_id)))
            case "preview" | "confirm":
                self._stop(REJECTED, "stopped")
                self._finish_call(REJECTED)
                self._advance()
            case "tool":
                self._stop(CANCELLED, "cancelled")
                self.outbox.append(("executor", CancelTool(call_id=self._current().id)))
            case "restore":
                if self.restore is not None:
                    self._restore_step(self.restore.cancel())
            case "user_command":
                if self.user_command is not None:
                    self.outbox.append(("executor", CancelTool(call_id=self.user_command[0])))
            case "nothing":
                if self.phase != "idle":
                    self._end_turn("cancelled")
            case _:
                assert_never(self.waiting)

    def on_llm_died(self, reason: str) -> None:
        """The LLM stream process died; a fresh one is already running."""
        if self.waiting == "stream":
            text = f"the model stream process died ({reason}); a fresh one will serve the next request"
            self._stream_failed("crashed", text, "", [])

    def on_executor_died(self, reason: str) -> None:
        """The executor died; a fresh one is already running. In-flight work becomes an error result."""
        if self.waiting in ("preview", "tool"):  # a pending confirmation's digest stays valid for the fresh one
            self._finish_call(ToolFailed(error=f"executor crashed: {reason}"))
            self._advance()
        elif self.waiting == "restore" and self.restore is not None:
            self._restore_step(self.restore.executor_died(reason))
        elif self.waiting == "user_command":
            self._user_command_done(ToolFailed(error=f"executor crashed: {reason}"))

    def on_internal_error(self, error: str) -> None:
        """A bug of ours: say so, leave a valid conversation, go idle, stay up."""
        self._ui(SystemEntry(text=f"internal error in the agent: {error}", level="error"))
        if self.waiting == "stream":
            self.outbox.append(("llm", CancelStream(request_id=self.request_id)))
        self._answer_dangling(ToolFailed(error="not run: internal error in the agent"))
        self._end_turn("failed")

    def _answer_dangling(self, result: ToolResult) -> None:
        """Give every call of the last assistant message that has no result yet ``result``."""
        answered = {m.call_id for m in self.conversation if isinstance(m, ToolReply)}
        for message in reversed(self.conversation):
            if isinstance(message, ChatMessage) and message.role == "assistant":
                for record in message.tool_calls or []:
                    if record.id not in answered:
                        self._record(ToolReply(call_id=record.id, name=record.function.name, result=result))
                        self._show_result(record.id, record.function.name, result)
                return

    def _end_turn(self, outcome: Outcome) -> None:
        if self.last_usage is not None:
            self._ui(UsageShown(usage=self.last_usage))
            self.turn_usage.append(self.last_usage)
            self.journal.record_usage(len(self.turn_usage), self.last_usage)
            self._warn_context(self.last_usage)
        self._ui(TurnEnded(outcome=outcome))
        self._reset_turn()
        self._ui(PhaseChanged(phase="idle"))

    def _warn_context(self, usage: Usage) -> None:
        window = self.provider.context_window
        if not window:
            return
        used = usage.total_tokens or usage.prompt_tokens + usage.completion_tokens
        for fraction in CONTEXT_WARNING_FRACTIONS:
            if used >= fraction * window and fraction not in self.warned_fractions:
                self.warned_fractions.add(fraction)
                self._ui(
                    SystemEntry(
                        text=f"context {round(100 * used / window)}% full ({_compact(used)} / "
                        f"{_compact(window)}): /clear starts a fresh session",
                        level="warning",
                    )
                )
