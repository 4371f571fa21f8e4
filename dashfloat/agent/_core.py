"""The agent's state machine: no I/O of its own; the process shell feeds it and sends its outbox.

One turn = episodes (stream -> tool calls -> stream ...) until the model stops calling tools. Every
path out of a turn leaves a conversation with a tool message for every announced call.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final, Literal, assert_never

import msgspec

from dashfloat.agent import _compaction as compaction
from dashfloat.agent import _mentions as mentions
from dashfloat.agent._compaction import Summarised, SummaryFlow, Then, entries, shrink, summary_flow
from dashfloat.agent._context import (
    Calibration,
    Window,
    calibrate,
    compact_threshold,
    estimate,
    fill_percent,
    hard_limit,
    sends_before_window,
    tokens_text,
)
from dashfloat.agent._decide import (
    Approval,
    Ask,
    Deny,
    Fail,
    PreviewThenRun,
    Refuse,
    RunAllowed,
    RunReadOnly,
    RunUnasked,
    asks_after_preview,
    confirmation,
    decide,
)
from dashfloat.agent._options import AgentOptions
from dashfloat.agent._prompt import system_message
from dashfloat.agent._replay import NOT_RUN_ROWS_MAX, not_run, not_run_row, replay_rows, result_row, shown
from dashfloat.agent._rules import Rules
from dashfloat.permissions import call_scope
from dashfloat.protocol import (
    AgentReady,
    ApprovalMode,
    AssembledCall,
    Cancel,
    CancelStream,
    CancelTool,
    ChangeRecorded,
    ChatMessage,
    ClearSession,
    CommandExited,
    CommandOutput,
    CommandStarted,
    CommandTimedOut,
    CompactConversation,
    ConfirmRequested,
    ContentDelta,
    ContextChanged,
    ConversationEntry,
    DecideConfirmation,
    DiscoverWindow,
    EditFileArgs,
    EditFileResult,
    ExecuteCommandArgs,
    ExecutorToAgent,
    FindPaths,
    FrameRejected,
    FunctionCall,
    ListDirectoryResult,
    ListPermissions,
    ListPrompts,
    ListSessions,
    LlmToAgent,
    Message,
    PathsFound,
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
    RestorePreviewed,
    ResumeSession,
    RewindTo,
    RunTool,
    RunUserCommand,
    SandboxPolicy,
    SavePermission,
    SessionCleared,
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
    ToolArgs,
    ToolCallRecord,
    ToolCallShown,
    ToolCancelled,
    ToolFailed,
    ToolFinished,
    ToolOutputShown,
    ToolRejected,
    ToolReply,
    ToolResult,
    TurnEnded,
    UiToAgent,
    UndoTurn,
    Usage,
    UsageShown,
    WindowFound,
    WriteFileArgs,
    WriteFileResult,
    result_json,
)

if TYPE_CHECKING:
    # Imported where first used: undo and restore serve /undo and /rewind, the summary a tool's result; an idle
    # agent runs none of them, and each module the agent imports is copied into the executor too (ADR 0053).
    from dashfloat.agent import undo
    from dashfloat.agent._journal import Journal
    from dashfloat.agent._restore import RestoreFlow

MAX_EPISODES_PER_TURN: Final = 50
EMPTY_ANSWER_SUSPECT_PERCENT: Final = 50
"""An empty 200 to a request filling at least this much of the window is read as "context exceeded"
(LM Studio answers an over-window prompt that way), and handled like the explicit errors."""

Dest = Literal["ui", "llm", "executor"]
Outcome = Literal["completed", "failed", "cancelled", "stopped", "limit"]
Waiting = Literal[
    "nothing", "window", "stream", "summary", "preview", "confirm", "tool", "restore", "user_command", "mention"
]

APPROVE_ALL_WARNING: Final = (
    "approve: all — every edit, write and command now runs without asking "
    "(deny rules still apply; writes in .git/ still ask)"
)
PLAN_NOTICE: Final = "approve: plan — nothing changes: edits, writes and commands are refused; read-only commands run"
REJECTED: Final = ToolRejected()
CANCELLED: Final = ToolCancelled()


def _canonical(call: AssembledCall) -> ToolCallRecord:
    return ToolCallRecord(id=call.id, function=FunctionCall(name=call.name or "unknown", arguments=call.arguments))


def tool_message(reply: ToolReply) -> ChatMessage:
    """The ``role: "tool"`` message the provider gets for ``reply``: the one place a result becomes JSON."""
    return ChatMessage(role="tool", tool_call_id=reply.call_id, content=result_json(reply.result))


def provider_message(entry: ConversationEntry) -> ChatMessage:
    """A conversation entry as the provider's chat message."""
    return tool_message(entry) if isinstance(entry, ToolReply) else entry


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
        self.transcript: list[ConversationEntry] = []
        """Every entry of the session as it came into existence (prompts are numbered from it)."""
        self.compaction_points: list[tuple[int, list[ConversationEntry]]] = []
        """(transcript length, compacted conversation) of each compaction: what a rewind goes back to."""
        self.outbox: list[tuple[Dest, Message]] = []
        self.rules = Rules(options.rules, options.rules_path)
        self.read_only_commands = options.read_only_commands
        self.log: list[str] = []
        """Lines for the agent's log file (stderr), not for the user: ignored stale input and the like."""
        self.turn_usage: list[Usage] = []
        self.first_byte_timeout_s = options.first_byte_timeout_s
        self.compact_at_percent = options.compact_at_percent
        self.restoring = options.restoring
        """Started by ``--undo`` / ``--rewind``: headless, no input a rewound prompt could go back into."""
        self.window = Window(options.provider)
        self.calibration: Calibration | None = None
        self.last_sent: list[ChatMessage] = []
        self.last_estimate = 0
        self.estimates: list[tuple[int, int]] = []
        """(estimated, reported) prompt tokens of every request that reported usage: the estimate's error."""
        self.compactions = 0
        self.answered = False
        """The current request has sent something (the shell's watchdog then expects the idle timeout)."""
        self._system: ChatMessage | None = None
        self.shutting_down = False
        self._announced_session = ""
        self.request_id = 0
        self.confirm_ref = 0
        self._undo_log: undo.UndoLog | None = None
        self.user_commands_run = 0
        self.prompt_files: list[PromptFile] = []
        self.pending_context: list[str] = []
        """Outputs of !commands, sent to the model with the next prompt."""
        self.mention_ids = itertools.count(1)
        self.finding: FindPaths | None = None
        """The @ completion request the executor is answering (answered for it if the executor dies)."""
        self.find_next: FindPaths | None = None
        """The newest request typed meanwhile: sent when ``finding`` is answered (one in flight at a time, so
        fast typing never queues stale searches in the executor)."""
        self._reset_turn()

    # ------------------------------------------------------------ plumbing

    def _reset_turn(self) -> None:
        self.phase: Phase = "idle"
        self.waiting: Waiting = "nothing"
        self.user_command: tuple[str, str] | None = None
        """The running !command: (call id, command line)."""
        self.attaching: mentions.Attaching | None = None
        """A submitted prompt whose @mentions are being read (it goes to the model once they all are)."""
        self.episodes = 0
        self.partial: list[str] = []
        self.reasoning_chars = 0
        """Reasoning received for the current request (an answer with only reasoning is not "nothing")."""
        self.calls: list[AssembledCall] = []
        self.next_call = 0
        self.preview_digest: str | None = None
        self.preview_lines: list[str] = []
        self.preview_summary = ""
        self.auto_approval: Approval | None = None
        """A file mutation a rule or a flag lets run: previewed for the record, then run without asking."""
        self.change: ChangeRecorded | None = None
        """The record of the mutation running now, sent once it lands."""
        self.stop_result: ToolResult | None = None
        self.stop_outcome: Outcome = "completed"
        self.last_usage: Usage | None = None
        self.window.held = None
        self.restore: RestoreFlow | None = None
        self.summary: SummaryFlow | None = None
        self.summarised = False
        """A summary was tried at this episode boundary (it is not tried twice in a row)."""
        self.exceeded_retried = False

    def _ui(self, message: Message) -> None:
        self.outbox.append(("ui", message))

    def _set_phase(self, phase: Phase) -> None:
        if phase != self.phase:
            self.phase = phase
            self._ui(PhaseChanged(phase=phase))

    def _record(self, entry: ConversationEntry) -> None:
        self.journal.record(entry)
        self.conversation.append(entry)
        self.transcript.append(entry)
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
            context_window=self.window.size,
            window_source=self.window.source,
            history=self.history,
            sandbox=self.sandbox,
            rules=len(self.rules.all()),
            prompt_files=self.prompt_files,
        )

    def load(
        self,
        conversation: list[ConversationEntry],
        usage: list[Usage],
        replay: bool = True,
        transcript: list[ConversationEntry] | None = None,
    ) -> None:
        """Adopt a resumed conversation and replay its transcript (every message, compacted or not) to the
        UI with the live vocabulary."""
        self.conversation = list(conversation)
        self.transcript = list(conversation if transcript is None else transcript)
        after = compaction.common_suffix(self.transcript, self.conversation)
        self.compaction_points = []
        if len(self.conversation) - after or len(self.transcript) != len(self.conversation):
            point = (len(self.transcript) - after, self.conversation[: len(self.conversation) - after])
            self.compaction_points = [point]
        self.turn_usage = list(usage)
        self._undo_log = None
        for entry in self.journal.loaded_changes():
            self.undo_log.add(entry)
        self._fresh_front()
        self._announced_session = self.journal.session_id
        self._ui(SessionStarted(session_id=self.journal.session_id, resumed=True))
        self.show_context()  # the resumed conversation goes with the next request, not 0 tokens
        if not replay:
            return
        for message in replay_rows(conversation if transcript is None else transcript):
            self._ui(message)

    # ------------------------------------------------------------ UI -> agent

    def on_ui(self, message: UiToAgent) -> None:
        match message:
            case SubmitPrompt(text=text):
                self._submit(text)
            case RunUserCommand(command=command):
                self._run_user_command(command)
            case FindPaths():
                self._find_paths(message)
            case DecideConfirmation():
                self._decide(message)
            case Cancel():
                self.cancel()
            case SetModel(model=model):
                self.provider = msgspec.structs.replace(self.provider, model=model)
                self._ui(SystemEntry(text=f"model set to {model} (from the next request on)"))
                if self.window.forget():
                    self.calibration = None
                    self.discover_window()
                self._ui(self.ready_message())
            case SetApproval(mode=mode):
                self.approval = mode
                if mode == "all":
                    self._ui(SystemEntry(text=APPROVE_ALL_WARNING, level="warning"))
                elif mode == "plan":
                    self._ui(SystemEntry(text=PLAN_NOTICE))
                else:
                    self._ui(SystemEntry(text=f"approval mode: {mode}"))
                if mode == "ask" and self.rules.session:
                    self._ui(self.rules.revoke())
                self._ui(self.ready_message())
            case ListPermissions():
                self._ui(SystemEntry(text=self.permissions_report()))
            case RemovePermission(number=number):
                self._rules_changed(*self.rules.remove(number, self.journal))
            case SavePermission(number=number):
                self._rules_changed(*self.rules.save(number, self.journal))
            case ClearSession():
                if self._busy("/clear"):
                    return
                self.pending_context = []
                self.journal.new_session()
                self.conversation = []
                self.transcript = []
                self.compaction_points = []
                self.turn_usage = []
                self._undo_log = None
                self._fresh_front()
                self._announced_session = ""
                if self.rules.session:
                    self._ui(self.rules.revoke())
                    self._ui(self.ready_message())
                # no session file yet; a restart after a crash must not bring the old one back
                self._ui(SessionCleared())
                self.show_context()  # the system prompt and the tools still go with the next request
                self._ui(SystemEntry(text="new session: the conversation starts empty"))
            case ListSessions():
                skipped: list[str] = []
                self._ui(SessionsListed(sessions=self.journal.list_sessions(skipped)))
                for line in skipped:
                    self._ui(SystemEntry(text=line, level="warning"))
            case ResumeSession(session_id=session_id):
                if self._busy("/resume"):
                    return
                try:
                    resumed = self.journal.resume(session_id)
                except (LookupError, OSError, ValueError) as exc:
                    self._ui(SystemEntry(text=str(exc), level="error"))
                    return
                for notice in resumed.notices:
                    self._ui(SystemEntry(text=notice, level="warning"))
                self.load(resumed.conversation, resumed.usage, transcript=resumed.transcript)
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
            case CompactConversation(focus=focus):
                if self._busy("/compact"):
                    return
                self._compact_now(focus)
            case Shutdown():
                self.shutting_down = True
                if self.phase != "idle":
                    self.cancel()
            case _:
                assert_never(message)

    def _find_paths(self, request: FindPaths) -> None:
        """@ completion: the executor answers (it holds the file index); no turn, whatever the phase."""
        if self.finding is None:
            self.finding = request
            self.outbox.append(("executor", request))
            return
        skipped = self.find_next
        if skipped is not None:  # superseded before it was sent: answered here (the UI keeps only the newest)
            self._ui(PathsFound(ref=skipped.ref, query=skipped.query, paths=[], notice="superseded"))
            request = msgspec.structs.replace(request, refresh=request.refresh or skipped.refresh)
        self.find_next = request

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
        prompt = "\n\n".join([*context, text])
        found = mentions.mentioned(text)
        if not found.paths:
            self._record(ChatMessage(role="user", content=prompt))
            self._start_stream()
            return
        # Each @mention is read like a read_file call (its row, read_file's caps); the prompt goes once all are.
        self.attaching = mentions.Attaching(text, context, prompt, found.paths)
        self.waiting = "mention"
        self._set_phase("running")
        if found.beyond:
            limit = mentions.MENTIONS_MAX_PER_PROMPT
            note = f"only the first {limit} mentions are attached ({found.beyond} more are not)"
            self._ui(SystemEntry(text=note, level="warning"))
        self._attach_next()

    def _attach_next(self) -> None:
        """Read the next mention, or send the prompt with every attachment once none is left."""
        attaching = self.attaching
        assert attaching is not None
        self.outbox += attaching.read_next(self.mention_ids, self.cwd)
        if not attaching.done:
            return
        self.attaching = None
        self.waiting = "nothing"
        self._record(ChatMessage(role="user", content=attaching.message()))
        self._start_stream()

    def _attached(self, result: ToolResult) -> None:
        """The read of the current mention is back: its row, its part of the prompt, then the next one."""
        assert self.attaching is not None and self.attaching.call is not None
        self.outbox += self.attaching.read(result)
        self._attach_next()

    def _run_user_command(self, command: str) -> None:
        """!command: the user's own command through the executor (same sandbox and cwd), no confirmation."""
        if self._busy("a !command"):
            return
        self.user_commands_run += 1
        call_id = f"user-command-{self.user_commands_run}"
        self.user_command = (call_id, command)
        self.waiting = "user_command"
        self._set_phase("running")
        args = ExecuteCommandArgs(command=command)
        self._ui(ToolCallShown(id=call_id, args=args))
        # Typed by a person: the network as for a command approved with a key.
        policy = SandboxPolicy(mode="workspace-write", network=True)
        run = RunTool(call_id=call_id, args=args, sandbox=policy)
        self.outbox.append(("executor", run))

    def _user_command_done(self, result: ToolResult) -> None:
        assert self.user_command is not None
        call_id, command = self.user_command
        self.user_command = None
        self.waiting = "nothing"
        self._show_result(call_id, "execute_command", result)
        from dashfloat.agent._summary import result_status

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
        """/usage and /status: the window and its fill, what commands' environment leaves out, tokens by turn."""
        from dashfloat.agent import _reports as reports  # slash commands only: imported where first used

        window = self.window
        tokens = estimate(self._request_messages(), self.calibration) if window.size is not None else 0
        line = reports.window_report(
            window.size, window.source, window.detail, tokens, self.compact_at_percent, self.compactions
        )
        return reports.usage_report(line, self.sandbox, self.turn_usage)

    # ------------------------------------------------------------ permissions

    def permissions_report(self) -> str:
        """/permissions: every rule in force, numbered, with where it comes from."""
        from dashfloat.agent import _reports as reports  # slash commands only: imported where first used

        return reports.permissions_report(self.approval, self.read_only_commands, self.rules.all())

    def _rules_changed(self, said: list[SystemEntry], changed: bool) -> None:
        for entry in said:
            self._ui(entry)
        if changed:
            self._ui(self.ready_message())

    # ------------------------------------------------------------ episodes

    # ------------------------------------------------------------ the window

    def discover_window(self) -> None:
        """Ask the LLM process for the window of the current provider and model (once per pair)."""
        asked = self.window.ask(self.provider)
        if isinstance(asked, DiscoverWindow):
            self.outbox.append(("llm", asked))
        elif asked is not None:  # known already: an answer held for a window is let through or refused now
            self._adopt_window(asked)
            if self.window.held is not None:
                self._release_held()

    def _adopt_window(self, found: WindowFound) -> None:
        assumed = self.window.adopt(found)
        if assumed is not None:
            self._ui(assumed)
        self._ui(self.ready_message())

    def _window_found(self, found: WindowFound) -> None:
        if not self.window.answers(found, self.provider):
            return  # an answer for a model we no longer use
        if found.notice:
            self._ui(SystemEntry(text=found.notice, level="warning"))
        self._adopt_window(found)
        if self.waiting == "window":
            self.waiting = "nothing"
            self._next_request()
        elif self.window.held is not None:
            self._release_held()

    def _release_held(self) -> None:
        """The window came while a request sent before it streams: refuse it as ``_next_request`` would have (it
        could not be compacted), or let its answer through."""
        size = self.window.size
        assert size is not None
        held, self.window.held = self.window.held or [], None
        if self.last_estimate > hard_limit(size):
            self.outbox.append(("llm", CancelStream(request_id=self.request_id)))
            self.waiting = "nothing"  # the cancelled stream's last word is not waited for
            self._does_not_fit(self.last_estimate)
            return
        for message in held:
            self.on_llm(message)

    def _does_not_fit(self, tokens: int) -> None:
        size = self.window.size
        assert size is not None
        self._ui(
            SystemEntry(
                text=f"the conversation (~{tokens_text(tokens)} tokens) does not fit the model's context window "
                f"({tokens_text(size)}) even after compaction: /clear starts a fresh session, or use a "
                "model with a larger window (context_window in config.toml if the server's is larger)",
                level="error",
            )
        )
        self._end_turn("failed")

    # ------------------------------------------------------------ episodes

    def _fresh_front(self) -> None:
        """A new conversation: a new system message at its first request, no calibration yet."""
        self._system = None
        self.calibration = None

    def _chat(self) -> tuple[list[ChatMessage], dict[int, ConversationEntry]]:
        """The conversation as provider messages (what compaction plans on), and the way back to the entries:
        what a compaction keeps stays the typed entry it was."""
        chat = [provider_message(e) for e in self.conversation]
        return chat, {id(c): e for c, e in zip(chat, self.conversation, strict=True)}

    def _request_messages(self, conversation: Sequence[ConversationEntry] | None = None) -> list[ChatMessage]:
        if self._system is None:
            # Built once per session: a byte-identical front keeps the server's prompt cache warm
            # (the date would otherwise change it at midnight).
            self._system = system_message(self.cwd, self.instructions)
        return [self._system, *map(provider_message, self.conversation if conversation is None else conversation)]

    def _start_stream(self) -> None:
        """An episode boundary: count, compact if needed, then send the request."""
        self.episodes += 1
        self.summarised = False
        self._next_request()

    def _next_request(self) -> None:
        self._set_phase("streaming")
        size = self.window.size
        if size is None:
            tokens = estimate(self._request_messages(), self.calibration)
            if not self.window.discovering:
                self._send_request(tokens)  # nothing to count against
            elif sends_before_window(self._chat()[0], tokens):
                self._send_request(tokens)  # no compaction could help it: its answer waits for the window instead
                self.window.held = []
            else:
                self.waiting = "window"  # WindowFound continues; each discovery request has a short timeout
            return
        tokens = estimate(self._request_messages(), self.calibration)
        if tokens >= self._threshold():
            tokens = self._shrink(tokens)
            over = tokens >= self._threshold()
            if over and not self.summarised and self._start_summary("", "request"):
                return
        if tokens > hard_limit(size):
            self._does_not_fit(tokens)
            return
        self._send_request(tokens)

    def _send_request(self, tokens: int) -> None:
        self.request_id += 1
        self.answered = False
        self.window.held = None
        self.partial = []
        self.reasoning_chars = 0
        self.last_usage = None
        self.waiting = "stream"
        self.last_sent = self._request_messages()
        self.last_estimate = tokens
        self.outbox.append(
            (
                "llm",
                StartStream(
                    request_id=self.request_id,
                    provider=self.provider,
                    messages=self.last_sent,
                    idle_timeout_s=self.idle_timeout_s,
                    exec_timeout_s=self.exec_timeout_s,
                    idle_timeout_from=self.idle_timeout_from,
                    first_byte_timeout_s=self.first_byte_timeout_s,
                ),
            )
        )

    # ------------------------------------------------------------ compaction

    def _threshold(self) -> int:
        return compact_threshold(self.window.size or 0, self.compact_at_percent)

    def _shrink(self, tokens: int) -> int:
        """Stage 1 (synchronous): cut old tool results while the request stays above the threshold; returns the new
        estimate."""
        chat, back = self._chat()
        shrunk = shrink(chat, self._measure, self._threshold())
        if shrunk is None:
            return tokens
        what = f"shrank {shrunk.results} old tool results"
        self._replace_conversation(entries(shrunk.conversation, back), what, tokens, shrunk.tokens)
        return shrunk.tokens

    def _measure(self, conversation: Sequence[ChatMessage]) -> int:
        return estimate(self._request_messages(conversation), self.calibration)

    def _replace_conversation(self, conversation: list[ConversationEntry], what: str, before: int, after: int) -> None:
        self.conversation = conversation
        self.compaction_points.append((len(self.transcript), list(conversation)))
        self.compactions += 1
        self.journal.record_compaction([provider_message(e) for e in conversation])
        window = self.window.size or 1
        self._ui(
            SystemEntry(
                text=f"compacted: {what}; context ~{tokens_text(before)} → ~{tokens_text(after)} tokens "
                f"({fill_percent(after, window)}% of {tokens_text(window)})"
            )
        )
        self._ui(ContextChanged(tokens=after))

    def _start_summary(self, focus: str, then: Then) -> bool:
        """Stage 2: ask the model for a summary of the older part (False: nothing to summarise)."""
        size = self.window.size
        if size is None:
            return False
        chat, back = self._chat()
        raw = lambda kept: estimate(self._request_messages(kept), None)  # noqa: E731
        flow = summary_flow(chat, back, raw, self._measure, self._threshold(), hard_limit(size), focus, then)
        if flow is None:
            return False
        self.summarised = True  # a plan was found: not tried again at this boundary, even when it cannot be sent
        if not flow.sendable:
            return False
        self.summary = flow
        self.request_id += 1
        self.answered = False
        self.waiting = "summary"
        self._set_phase("compacting")
        self.outbox.append(
            (
                "llm",
                StartStream(
                    request_id=self.request_id,
                    provider=self.provider,
                    messages=self._request_messages(flow.asked),
                    idle_timeout_s=self.idle_timeout_s,
                    exec_timeout_s=self.exec_timeout_s,
                    idle_timeout_from=self.idle_timeout_from,
                    first_byte_timeout_s=self.first_byte_timeout_s,
                ),
            )
        )
        return True

    def _compact_now(self, focus: str) -> None:
        """/compact [focus]: both stages now, whatever the fill."""
        self._reset_turn()
        if self.window.size is None:
            self._ui(SystemEntry(text="/compact waits for the context window to be known: try again in a moment"))
            return
        before = estimate(self._request_messages(), self.calibration)
        self._shrink(before)
        if not self._start_summary(focus, "idle"):
            self._ui(SystemEntry(text="nothing older than the recent turns to summarise"))

    def _on_summary(self, message: LlmToAgent) -> None:
        assert self.summary is not None
        match self.summary.on_llm(message):
            case Summarised(summary=summary, failure=failure):
                self._summary_finished(summary, failure)
            case SystemEntry() as status:
                self._ui(status)
            case None:
                pass

    def _summary_finished(self, summary: str, failure: str) -> None:
        flow, self.summary = self.summary, None
        then: Then = flow.then if flow is not None else "idle"
        self.waiting = "nothing"
        if flow is not None and summary.strip():
            before = estimate(self._request_messages(), self.calibration)
            compacted, what = flow.compacted(summary)
            after = estimate(self._request_messages(compacted), self.calibration)
            self._replace_conversation(compacted, what, before, after)
        elif failure == "cancelled":
            self._ui(SystemEntry(text="compaction cancelled: the conversation is unchanged"))
            if then == "idle":
                self._go_idle()
            else:
                self._stop(CANCELLED, "cancelled")
                self._end_turn("cancelled")
            return
        else:
            why = f"it failed: {failure}" if failure else "it came back empty"
            self._ui(
                SystemEntry(
                    text=f"the summary could not be made ({why}): the conversation is unchanged", level="warning"
                )
            )
        if then == "idle":
            self._go_idle()
        else:
            self._next_request()

    def _go_idle(self) -> None:
        self._reset_turn()
        self._ui(PhaseChanged(phase="idle"))

    def on_llm(self, message: LlmToAgent) -> None:
        if isinstance(message, WindowFound):
            self._window_found(message)
            return
        if message.request_id != self.request_id:
            return  # a late message of a stream we already finished
        self.answered = True
        if self.window.held is not None and self.waiting == "stream":
            self.window.held.append(message)  # sent before the window was known: acted on once it is
            return
        if self.waiting == "summary":
            self._on_summary(message)
            return
        if self.waiting != "stream":
            return
        match message:
            case ContentDelta(text=text):
                self.partial.append(text)
                if self.stop_result is None:
                    self._ui(TokenReceived(text=text))
            case ReasoningDelta(text=text):
                self.reasoning_chars += len(text)
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

    def _context_exceeded(self, kind: str, content: str, calls: list[AssembledCall]) -> bool:
        """The provider said the request was too large: compact and retry once (True: handled)."""
        size = self.window.size
        if content or calls or self.stop_result is not None or size is None:
            return False
        if self.exceeded_retried:
            self._ui(
                SystemEntry(
                    text="the provider still says the conversation exceeds the model's context window after "
                    "compacting it: /clear starts a fresh session; if the server's window is smaller than "
                    f"{tokens_text(size)}, set context_window in config.toml",
                    level="error",
                )
            )
            self._end_turn("failed")
            return True
        self.exceeded_retried = True
        sent = self.last_estimate
        self.window.shrink_to(sent)  # the server's real window is at most what we sent
        self._ui(
            SystemEntry(
                text=f"the provider says the conversation exceeds the model's context window ({kind}): "
                "compacting and retrying once",
                level="warning",
            )
        )
        self._ui(self.ready_message())
        self.summarised = False
        self._shrink(sent)
        if not self._start_summary("", "retry"):
            self._next_request()
        return True

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
        if done.usage is not None and done.usage.prompt_tokens > 0:
            self.estimates.append((self.last_estimate, done.usage.prompt_tokens))
            self.calibration = calibrate(self.last_sent, done.usage.prompt_tokens)
        if not done.content and not done.tool_calls:
            window = self.window.size or 0
            suspect = window and fill_percent(self.last_estimate, window) >= EMPTY_ANSWER_SUSPECT_PERCENT
            if suspect and self._context_exceeded("an empty answer to a large request", "", []):
                return
            if self.reasoning_chars:
                # Seen with local reasoning models whose chat template never closes the thinking block.
                text = (
                    f"the model only reasoned ({self.reasoning_chars} characters) and gave no answer text: "
                    "ask again, or check the server's reasoning settings"
                )
                self._ui(SystemEntry(text=text, level="warning"))
            else:
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
        if kind == "context_exceeded" and self._context_exceeded(kind, content or "".join(self.partial), calls):
            return
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
            if self.stop_result is not None and len(self.calls) - self.next_call > NOT_RUN_ROWS_MAX:
                self._not_run_rest(self.stop_result)
                break
            call = self._current()
            self._ui(ToolCallShown(id=call.id, args=shown(call)))
            if self.stop_result is not None:
                self._finish_call(not_run(call, self.stop_result))
                continue
            decision = decide(call, self.rules.all(), self.approval, self.sandbox, self.read_only_commands, self.cwd)
            match decision:
                case Fail(error=error) | Deny(error=error) | Refuse(error=error):
                    self._finish_call(ToolFailed(error=error))
                case RunUnasked():
                    self._run(None, by_keypress=False)
                    return
                case RunReadOnly(args=args):
                    self._run(None, by_keypress=False, args=args, read_only=True)
                    return
                case RunAllowed(args=args, approval=approval):
                    assert isinstance(call.args, ExecuteCommandArgs)
                    self._expect_change(call, approval, f"$ {call.args.command}", [])
                    self._run(None, by_keypress=False, args=args)
                    return
                case PreviewThenRun() | Ask():
                    assert call.args is not None  # decide fails a call whose arguments did not parse
                    self.auto_approval = decision.approval if isinstance(decision, PreviewThenRun) else None
                    self.waiting = "preview"
                    self.outbox.append(("executor", PreviewTool(call_id=call.id, args=call.args)))
                    return
                case _:
                    assert_never(decision)
        self._after_calls()

    def _run(
        self, digest: str | None, by_keypress: bool, args: ToolArgs | None = None, read_only: bool = False
    ) -> None:
        call = self._current()
        assert call.args is not None  # a call whose arguments did not parse never runs
        self.waiting = "tool"
        self._set_phase("running")
        # Network only for a command a person just approved, unless the session enabled it (--network); a
        # read-only command run unasked gets the read-only sandbox too, so a mistake in the allowlist cannot write,
        # and an empty home, so a symlink in the tree cannot read the user's files to the model.
        policy = SandboxPolicy(
            mode="read-only" if read_only else "workspace-write",
            network=not read_only and (by_keypress or self.sandbox.network),
            private_home=read_only,
        )
        run = RunTool(
            call_id=call.id,
            args=args if args is not None else call.args,
            expect_digest=digest,
            sandbox=policy,
            checkpoint_store=self.journal.checkpoint_store,
        )
        self.outbox.append(("executor", run))

    # ------------------------------------------------------------ checkpoints, /undo and /rewind

    @property
    def undo_log(self) -> undo.UndoLog:
        """The session's live changes; made (and ``undo`` imported) when first asked for."""
        if self._undo_log is None:
            from dashfloat.agent import undo

            self._undo_log = undo.UndoLog()
        return self._undo_log

    def prompts(self) -> list[str]:
        """The user prompts of the session, oldest first (prompt N is turn N); a compaction's summary is none."""
        users = [m for m in self.transcript if isinstance(m, ChatMessage) and m.role == "user"]
        return [mentions.typed_prompt(m.content or "") for m in users]  # a rewind gives back what was typed

    def _keep_changes(self, finished: ToolFinished) -> None:
        """A landed write/edit's checkpoint and a command's changes become part of the session log."""
        # The undo module only when there is one: a read's result leaves it unimported (ADR 0055).
        turn = len(self.prompts())
        entry: undo.CheckpointEntry | undo.CommandEntry | None = None
        if finished.checkpoint is not None:
            from dashfloat.agent import undo

            entry = undo.CheckpointEntry(turn, finished.call_id, finished.checkpoint, self.cwd)
        elif finished.changes is not None and (finished.changes.paths or finished.changes.unknown):
            from dashfloat.agent import undo

            entry = undo.CommandEntry(turn, finished.call_id, finished.changes, self.cwd)
        if entry is not None:
            self.undo_log.add(entry)
            self.journal.record_change(entry)
        if finished.notice:
            self._ui(SystemEntry(text=finished.notice, level="warning"))

    def _next_ref(self) -> int:
        self.confirm_ref += 1
        return self.confirm_ref

    def _start_restore(self, prompt: int | None, session_id: str) -> None:
        """/undo (``prompt`` None) or /rewind: plan it, then ask the executor for the reverse preview."""
        from dashfloat.agent._restore import begin

        journal = self.journal
        flow = begin(
            prompt,
            session_id,
            journal.session_id,
            self.prompts(),
            self.undo_log,
            self.cwd,
            journal.checkpoint_store,
            self._next_ref,
            self.restoring,
        )
        if isinstance(flow, list):
            self.outbox += flow  # refused, or nothing to undo
            return
        self.restore = flow
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
                self.show_context()  # the shorter conversation is what the next request carries
                self._ui(PromptRestored(text=flow.text))
        self._ui(flow.ended)
        self._set_phase("idle")

    def _truncate(self, kept: int) -> None:
        """The conversation up to (not including) prompt ``kept + 1``: the next request carries that prefix."""
        prompts = 0
        for index, message in enumerate(self.transcript):
            if isinstance(message, ChatMessage) and message.role == "user":
                prompts += 1
                if prompts > kept:
                    self.transcript = self.transcript[:index]
                    break
        # A compaction made after the cut is undone with it; one before it stays (as the session log reads it).
        self.compaction_points = [(at, conv) for at, conv in self.compaction_points if at <= len(self.transcript)]
        if self.compaction_points:
            at, compacted = self.compaction_points[-1]
            self.conversation = [*compacted, *self.transcript[at:]]
        else:
            self.conversation = list(self.transcript)
        self._fresh_front()
        self.turn_usage = self.turn_usage[:kept]

    def _show_result(self, call_id: str, name: str, result: ToolResult) -> None:
        self._ui(result_row(call_id, name, result))

    def _finish_call(self, result: ToolResult) -> None:
        call = self._current()
        self.waiting = "nothing"
        self.auto_approval = None
        self.change = None
        self._record(ToolReply(call_id=call.id, name=call.name, result=result))
        self._show_result(call.id, call.name, result)
        self.next_call += 1

    def _not_run_rest(self, stopped: ToolResult) -> None:
        """The calls left when the turn stopped: each answered for the model, one row for all of them."""
        rest = self.calls[self.next_call :]
        for call in rest:
            self._record(ToolReply(call_id=call.id, name=call.name, result=not_run(call, stopped)))
        self.next_call = len(self.calls)
        self.waiting = "nothing"
        self.auto_approval = None
        self.change = None
        if isinstance(stopped, ToolFailed):
            why = stopped.error.removeprefix("not run: ")
        else:
            from dashfloat.agent._summary import result_status

            why = "you stopped the turn" if isinstance(stopped, ToolRejected) else result_status(stopped)
        text = not_run_row([call.name for call in rest], why, rest[-1].cut)
        self._ui(SystemEntry(text=text, level="warning"))

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
                approved, self.auto_approval = self.auto_approval, None
                if not asks_after_preview(approved, message):
                    assert approved is not None
                    self._expect_change(call, approved, message.summary, message.lines)
                    self._run(message.digest, by_keypress=False)
                    return
                # A protected write is asked whatever allowed it.
                self.preview_lines, self.preview_summary = message.lines, message.summary
                self.confirm_ref += 1
                self.preview_digest = message.digest
                self.waiting = "confirm"
                self._set_phase("confirming")
                self._ui(confirmation(self.confirm_ref, call, message))
            case ToolFinished(call_id=call_id, result=result) if (
                self.waiting == "user_command" and self.user_command and call_id == self.user_command[0]
            ):
                self._user_command_done(result)
            case ToolFinished(call_id=call_id, result=result) if (
                self.waiting == "mention" and self.attaching and self.attaching.call_id == call_id
            ):
                self._attached(result)
            case ToolFinished(call_id=call_id, result=result):
                if self.waiting == "tool" and call_id == self._current().id:
                    self._keep_changes(message)
                    change, self.change = self.change, None
                    self._finish_call(result)
                    from dashfloat.agent._summary import result_status

                    if change is not None and result_status(result) == "ok":
                        self._ui(change)
                    self._advance()
            case FrameRejected(error=error):
                self._ui(SystemEntry(text=error, level="error"))
            case CommandStarted():
                pass  # the process shell keeps the process group to kill if the executor dies
            case RestorePreviewed() | RestoreApplied():
                if self.restore is not None and self.waiting == "restore":
                    self._restore_step(self.restore.on_executor(message))
            case PathsFound(ref=ref):
                self._ui(message)
                if self.finding is not None and self.finding.ref == ref:
                    self.finding, waiting = None, self.find_next
                    self.find_next = None
                    if waiting is not None:
                        self._find_paths(waiting)
            case CommandOutput(call_id=call_id, text=text, skipped_bytes=skipped):
                running = self.user_command[0] if self.user_command else None
                if call_id == running or (self.waiting == "tool" and call_id == self._current().id):
                    self._ui(ToolOutputShown(id=call_id, text=text, skipped_bytes=skipped))  # late chunks go
            case _:
                assert_never(message)

    def _expect_change(self, call: AssembledCall, approver: Approval, summary: str, diff: list[str]) -> None:
        args = call.args
        self.change = ChangeRecorded(
            id=call.id,
            name=call.name,
            path=args.path if isinstance(args, WriteFileArgs | EditFileArgs) else "",
            summary=summary,
            approved_by=approver[0],
            rule=approver[1],
            diff=diff if approver[0] != "keypress" or not isinstance(args, ExecuteCommandArgs) else [],
        )

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
        assert call.args is not None  # only a parsed call is confirmed
        if decision in ("approve", "approve_always"):
            summary = self.preview_summary
            if isinstance(call.args, ExecuteCommandArgs):
                summary = f"$ {call.args.command}"
            self._expect_change(call, ("keypress", ""), summary, self.preview_lines)
        match decision:
            case "approve":
                self._run(self.preview_digest, by_keypress=True)
            case "approve_always":
                scope = call_scope(call.args)
                if scope is not None:  # the UI offers no "always" without a scope; a stray one approves once
                    self._ui(self.rules.grant(scope))
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
            case "stream" if self.window.held is not None:
                # Nothing of its answer was shown or run: the turn ends as a wait for the window does.
                self.window.held = None
                self.outbox.append(("llm", CancelStream(request_id=self.request_id)))
                self.waiting = "nothing"
                self._end_turn("cancelled")
            case "stream" | "summary":
                self._stop(CANCELLED, "cancelled")
                self.outbox.append(("llm", CancelStream(request_id=self.request_id)))
            case "window":
                self.waiting = "nothing"
                self._end_turn("cancelled")
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
            case "mention":
                # Nothing was sent yet: the prompt goes back into the input, a !command's output back to waiting.
                if self.attaching is not None:
                    self.pending_context = [*self.attaching.context, *self.pending_context]
                    self._ui(SystemEntry(text="not sent: reading its @mentions was cancelled; the prompt is back"))
                    self._ui(PromptRestored(text=self.attaching.text))
                self._end_turn("cancelled")
            case "nothing":
                if self.phase != "idle":
                    self._end_turn("cancelled")
            case _:
                assert_never(self.waiting)

    def on_llm_died(self, reason: str) -> None:
        """The LLM stream process died; a fresh one is already running."""
        self.window.held = None  # what it sent before dying is reported as the stream's failure, not acted on
        if self.waiting == "summary":
            self._summary_finished("", f"the model stream process died ({reason})")
        elif self.waiting == "stream":
            text = f"the model stream process died ({reason}); a fresh one will serve the next request"
            self._stream_failed("crashed", text, "", [])
        if self.window.size is None:
            self.discover_window()  # the question died with the process: ask the fresh one

    def on_executor_died(self, reason: str) -> None:
        """The executor died; a fresh one is already running. In-flight work becomes an error result."""
        open_requests = [r for r in (self.finding, self.find_next) if r is not None]
        self.finding = self.find_next = None
        for request in open_requests:
            notice = f"the executor process died ({reason}); type on to ask again"
            self._ui(PathsFound(ref=request.ref, query=request.query, paths=[], notice=notice))
        if self.waiting in ("preview", "tool"):  # a pending confirmation's digest stays valid for the fresh one
            self._finish_call(ToolFailed(error=f"executor crashed: {reason}"))
            self._advance()
        elif self.waiting == "restore" and self.restore is not None:
            self._restore_step(self.restore.executor_died(reason))
        elif self.waiting == "user_command":
            self._user_command_done(ToolFailed(error=f"executor crashed: {reason}"))
        elif self.waiting == "mention" and self.attaching is not None and self.attaching.call is not None:
            self._attached(ToolFailed(error=f"executor crashed: {reason}"))

    def on_internal_error(self, error: str) -> None:
        """A bug of ours: say so, leave a valid conversation, go idle, stay up."""
        self._ui(SystemEntry(text=f"internal error in the agent: {error}", level="error"))
        if self.waiting in ("stream", "summary"):
            self.outbox.append(("llm", CancelStream(request_id=self.request_id)))
        self.summary = None
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

    def show_context(self) -> None:
        """The status bar's context figure from the estimate of the next request (the one /usage gives)."""
        self._ui(ContextChanged(tokens=estimate(self._request_messages(), self.calibration)))

    def _end_turn(self, outcome: Outcome) -> None:
        if self.last_usage is not None:
            self._ui(UsageShown(usage=self.last_usage))
            self.turn_usage.append(self.last_usage)
            self.journal.record_usage(len(self.turn_usage), self.last_usage)
        elif self.last_estimate:
            # A provider that reports no usage: the status bar shows the estimate /usage gives, not 0 forever.
            self.show_context()
        self._ui(TurnEnded(outcome=outcome))
        self._reset_turn()
        self._ui(PhaseChanged(phase="idle"))
