"""The agent's state machine: no I/O of its own; the process shell feeds it and sends its outbox.

``AgentCore`` holds the session (the conversation, the rules, the window), takes every message (``on_ui``,
``on_llm``, ``on_executor``, a worker's death) and keeps the outbox. A prompt's turn is episodes (a model request,
then its tool calls) until the model stops calling tools; where it goes at each wait is ``_turn.TURN``, one screen
that ``_move`` and ``_go`` check every move against. One answer's calls are ``_calls.CallsFlow``; what to do with one
call is ``_decide.decide``. Every path out of a turn leaves a conversation with a tool message for every announced
call.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Final, Literal, assert_never

import msgspec

from dashfloat.agent import _compaction as compaction
from dashfloat.agent import _mentions as mentions
from dashfloat.agent import _turn as turn
from dashfloat.agent._calls import CANCELLED, CallsFlow, Out, Outcome, Outgoing, Stop
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
from dashfloat.agent._options import AgentOptions
from dashfloat.agent._prompt import system_message
from dashfloat.agent._replay import replay_rows, result_row
from dashfloat.agent._rules import Rules
from dashfloat.agent._turn import At, Event, Waiting
from dashfloat.protocol import (
    AgentReady,
    ApprovalMode,
    AssembledCall,
    Cancel,
    CancelStream,
    CancelTool,
    ChatMessage,
    ClearSession,
    CommandOutput,
    CommandStarted,
    CompactConversation,
    ConfirmRequested,
    ContentDelta,
    ContextChanged,
    ConversationEntry,
    DecideConfirmation,
    DiscoverWindow,
    ExecuteCommandArgs,
    ExecutorToAgent,
    FindPaths,
    FrameRejected,
    FunctionCall,
    ListPermissions,
    ListPrompts,
    ListSessions,
    LlmToAgent,
    Message,
    PathsFound,
    Phase,
    PhaseChanged,
    PreviewReady,
    PromptFile,
    PromptInfo,
    PromptRestored,
    PromptsListed,
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
    ToolCallRecord,
    ToolCallShown,
    ToolFailed,
    ToolFinished,
    ToolOutputShown,
    ToolReply,
    ToolResult,
    TurnEnded,
    UiToAgent,
    UndoTurn,
    Usage,
    UsageShown,
    WindowFound,
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

APPROVE_ALL_WARNING: Final = (
    "approve: all — every edit, write and command now runs without asking "
    "(deny rules still apply; writes in .git/ still ask)"
)
PLAN_NOTICE: Final = "approve: plan — nothing changes: edits, writes and commands are refused; read-only commands run"


def _canonical(call: AssembledCall) -> ToolCallRecord:
    return ToolCallRecord(id=call.id, function=FunctionCall(name=call.name or "unknown", arguments=call.arguments))


def tool_message(reply: ToolReply) -> ChatMessage:
    """The ``role: "tool"`` message the provider gets for ``reply``: the one place a result becomes JSON."""
    return ChatMessage(role="tool", tool_call_id=reply.call_id, content=result_json(reply.result))


def provider_message(entry: ConversationEntry) -> ChatMessage:
    """A conversation entry as the provider's chat message."""
    return tool_message(entry) if isinstance(entry, ToolReply) else entry


class AgentCore:
    """The session, the turn, and the outbox (what to send where)."""

    def __init__(self, options: AgentOptions, journal: Journal, instructions: str = "") -> None:
        self.provider = options.provider
        self.cwd = options.cwd
        self.approval: ApprovalMode = options.approval
        self.sandbox = options.sandbox
        self.idle_timeout_s = options.idle_timeout_s
        self.exec_timeout_s = options.exec_timeout_s
        self.idle_timeout_from = options.idle_timeout_from
        self.first_byte_timeout_s = options.first_byte_timeout_s
        self.compact_at_percent = options.compact_at_percent
        self.read_only_commands = options.read_only_commands
        self.restoring = options.restoring
        """Started by ``--undo`` / ``--rewind``: headless, no input a rewound prompt could go back into."""
        self.instructions = instructions
        self.journal = journal
        self.history: list[str] = []
        self.conversation: list[ConversationEntry] = []
        self.transcript: list[ConversationEntry] = []
        """Every entry of the session as it came into existence (prompts are numbered from it)."""
        self.compaction_points: list[tuple[int, list[ConversationEntry]]] = []
        """(transcript length, compacted conversation) of each compaction: what a rewind goes back to."""
        self.turn_usage: list[Usage] = []
        self.outbox: list[tuple[Dest, Message]] = []
        self.log: list[str] = []
        """Lines for the agent's log file (stderr), not for the user: ignored stale input and the like."""
        self.rules = Rules(options.rules, options.rules_path)
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
        self.waiting: Waiting = "nothing"
        """Where the turn waits (``_turn.Waiting``); only ``_go`` moves it."""
        self._reset_turn()

    def _reset_turn(self) -> None:
        self.phase: Phase = "idle"
        self.user_command: tuple[str, str] | None = None
        """The running !command: (call id, command line)."""
        self.attaching: mentions.Attaching | None = None
        """A submitted prompt whose @mentions are being read (it goes to the model once they all are)."""
        self.episodes = 0
        self.partial: list[str] = []
        self.reasoning_chars = 0
        """Reasoning received for the current request (an answer with only reasoning is not "nothing")."""
        self.stop = Stop()
        self.calls = CallsFlow([], self.stop, self)
        self.last_usage: Usage | None = None
        self.window.held = None
        self.restore: RestoreFlow | None = None
        self.summary: SummaryFlow | None = None
        self.summarised = False
        """A summary was tried at this episode boundary (it is not tried twice in a row)."""
        self.exceeded_retried = False

    # ------------------------------------------------------------ the turn's moves (_turn.TURN)

    def _move(self, event: Event, to: At | None, out: Iterable[Outgoing] = ()) -> None:
        """``event`` came while the turn waits: send and record ``out``, then go to ``to`` as TURN allows (None: the
        message moved nothing), and on to the next wait."""
        self._send(out)
        if to is not None:
            turn.check(self.waiting, event, to)
            self._go(to)

    def _go(self, to: At) -> None:
        """Take the turn's steps from ``to`` until it waits for a message; TURN lists where each step may go."""
        while True:
            at = to
            match at:
                case "episode":
                    to = self._episode()
                case "request":
                    to = self._request()
                case "calls":
                    to, out = self.calls.step()
                    self._send(out)
                case "calls_done":
                    to = self._calls_done()
                case _:
                    self.waiting = at
                    return
            turn.check(at, "step", to)

    def _send(self, out: Iterable[Outgoing]) -> None:
        """Record and send what a flow returned, in order; a tool run or a confirmation shows its phase first."""
        for item in out:
            if isinstance(item, ToolReply):
                self._record(item)
                continue
            if isinstance(item[1], ConfirmRequested):
                self._set_phase("confirming")
            elif isinstance(item[1], RunTool):
                self._set_phase("running")
            self.outbox.append(item)

    # ------------------------------------------------------------ plumbing

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

    def next_ref(self) -> int:
        """A new confirmation's ref."""
        self.confirm_ref += 1
        return self.confirm_ref

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
        if replay:
            self.outbox += [("ui", message) for message in replay_rows(self.transcript)]

    # ------------------------------------------------------------ UI -> agent

    def on_ui(self, message: UiToAgent) -> None:
        match message:
            case SubmitPrompt(text=text):
                self._move("SubmitPrompt", self._submit(text))
            case RunUserCommand(command=command):
                self._move("RunUserCommand", self._run_user_command(command))
            case FindPaths():
                self._find_paths(message)
            case DecideConfirmation(ref=ref, decision=decision):
                if self.waiting == "restore" and self.restore is not None:
                    self._move("DecideConfirmation", self._restore_step(self.restore.on_decision(ref, decision)))
                elif self.waiting == "confirm" and ref == self.calls.ref:
                    self._move("DecideConfirmation", *(self.calls.decided(decision)))
                else:  # a keypress for a confirmation already answered (or never asked): ignored, and logged
                    pending = str(self.confirm_ref) if self.waiting == "confirm" else "none"
                    self.log.append(f"ignored decision {decision!r} for confirmation {ref}: pending is {pending}")
            case Cancel():
                self._move("Cancel", *self.cancel())
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
                if not self._busy("/clear"):
                    self._clear()
            case ListSessions():
                skipped: list[str] = []
                self._ui(SessionsListed(sessions=self.journal.list_sessions(skipped)))
                self.outbox += [("ui", SystemEntry(text=line, level="warning")) for line in skipped]
            case ResumeSession(session_id=session_id):
                if not self._busy("/resume"):
                    self._resume(session_id)
            case ShowUsage():
                self._ui(SystemEntry(text=self.usage_report()))
            case UndoTurn():
                if not self._busy("/undo"):
                    self._move("UndoTurn", self._start_restore(None, ""))
            case ListPrompts():
                prompts = [PromptInfo(n, text) for n, text in enumerate(self.prompts(), 1)]
                self._ui(PromptsListed(session_id=self.journal.session_id, prompts=prompts))
            case RewindTo(prompt=prompt, session_id=session_id):
                if not self._busy("/rewind"):
                    self._move("RewindTo", self._start_restore(prompt, session_id))
            case CompactConversation(focus=focus):
                if not self._busy("/compact"):
                    self._move("CompactConversation", self._compact_now(focus))
            case Shutdown():
                self.shutting_down = True
                if self.phase != "idle":
                    self._move("Cancel", *self.cancel())
            case _:
                assert_never(message)

    def _busy(self, what: str) -> bool:
        if self.phase == "idle":
            return False
        self._ui(SystemEntry(text=f"{what} waits for the current turn: press Esc to cancel it", level="warning"))
        return True

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

    def _clear(self) -> None:
        """/clear: a new, empty session (no file yet: a restart after a crash must not bring the old one back)."""
        self.pending_context = []
        self.journal.new_session()
        self.conversation, self.transcript, self.compaction_points, self.turn_usage = [], [], [], []
        self._undo_log = None
        self._fresh_front()
        self._announced_session = ""
        if self.rules.session:
            self._ui(self.rules.revoke())
            self._ui(self.ready_message())
        self._ui(SessionCleared())
        self.show_context()  # the system prompt and the tools still go with the next request
        self._ui(SystemEntry(text="new session: the conversation starts empty"))

    def _resume(self, session_id: str) -> None:
        try:
            resumed = self.journal.resume(session_id)
        except (LookupError, OSError, ValueError) as exc:
            self._ui(SystemEntry(text=str(exc), level="error"))
            return
        self.outbox += [("ui", SystemEntry(text=notice, level="warning")) for notice in resumed.notices]
        self.load(resumed.conversation, resumed.usage, transcript=resumed.transcript)

    def usage_report(self) -> str:
        """/usage and /status: the window and its fill, what commands' environment leaves out, tokens by turn."""
        from dashfloat.agent import _reports as reports  # slash commands only: imported where first used

        window = self.window
        tokens = estimate(self._request_messages(), self.calibration) if window.size is not None else 0
        line = reports.window_report(
            window.size, window.source, window.detail, tokens, self.compact_at_percent, self.compactions
        )
        return reports.usage_report(line, self.sandbox, self.turn_usage)

    def permissions_report(self) -> str:
        """/permissions: every rule in force, numbered, with where it comes from."""
        from dashfloat.agent import _reports as reports  # slash commands only: imported where first used

        return reports.permissions_report(self.approval, self.read_only_commands, self.rules.all())

    def _rules_changed(self, said: list[SystemEntry], changed: bool) -> None:
        self.outbox += [("ui", entry) for entry in said]
        if changed:
            self._ui(self.ready_message())

    # ------------------------------------------------------------ a prompt, its @mentions, a !command

    def _submit(self, text: str) -> At | None:
        """A prompt: recorded and sent, or its @mentions read first (each like a read_file call: its row, its caps)."""
        if self._busy("a new prompt"):
            return None
        self.journal.record_prompt(text)
        if not self.history or self.history[-1] != text:
            self.history.append(text)
        self._reset_turn()
        context, self.pending_context = self.pending_context, []
        prompt = "\n\n".join([*context, text])
        found = mentions.mentioned(text)
        if not found.paths:
            self._record(ChatMessage(role="user", content=prompt))
            return "episode"
        self.attaching = mentions.Attaching(text, context, prompt, found.paths)
        self._set_phase("running")
        if found.beyond:
            limit = mentions.MENTIONS_MAX_PER_PROMPT
            note = f"only the first {limit} mentions are attached ({found.beyond} more are not)"
            self._ui(SystemEntry(text=note, level="warning"))
        return self._attach_next()

    def _attach_next(self) -> At:
        """Read the next mention, or send the prompt with every attachment once none is left."""
        attaching = self.attaching
        assert attaching is not None
        self._send(attaching.read_next(self.mention_ids, self.cwd))
        if not attaching.done:
            return "mention"
        self.attaching = None
        self._record(ChatMessage(role="user", content=attaching.message()))
        return "episode"

    def _attached(self, result: ToolResult) -> At:
        """The read of the current mention is back: its row, its part of the prompt, then the next one."""
        assert self.attaching is not None and self.attaching.call is not None
        self._send(self.attaching.read(result))
        return self._attach_next()

    def _run_user_command(self, command: str) -> At | None:
        """!command: the user's own command through the executor (same sandbox and cwd), no confirmation."""
        if self._busy("a !command"):
            return None
        self.user_commands_run += 1
        call_id = f"user-command-{self.user_commands_run}"
        self.user_command = (call_id, command)
        self._set_phase("running")
        args = ExecuteCommandArgs(command=command)
        self._ui(ToolCallShown(id=call_id, args=args))
        # Typed by a person: the network as for a command approved with a key.
        policy = SandboxPolicy(mode="workspace-write", network=True)
        self.outbox.append(("executor", RunTool(call_id=call_id, args=args, sandbox=policy)))
        return "user_command"

    def _user_command_done(self, result: ToolResult) -> At:
        """Its row; its output goes to the model with the next prompt."""
        from dashfloat.agent._summary import command_context  # loaded by the result's row already

        assert self.user_command is not None
        call_id, command = self.user_command
        self.user_command = None
        self._ui(result_row(call_id, "execute_command", result))
        self.pending_context.append(command_context(command, result))
        self._ui(SystemEntry(text="the command's output goes to the model with your next prompt"))
        self._set_phase("idle")
        return "nothing"

    # ------------------------------------------------------------ the model request

    def _episode(self) -> At:
        """An episode boundary: one more model request in this turn (compacted if need be: once per boundary)."""
        self.episodes += 1
        self.summarised = False
        return "request"

    def _request(self) -> At:
        """Send the request, compacting it first when it would fill the window past the threshold; before the window
        is known, send it only when no compaction could shrink it (its answer is held: ``Window.held``)."""
        self._set_phase("streaming")
        size = self.window.size
        tokens = estimate(self._request_messages(), self.calibration)
        if size is None:
            if not self.window.discovering:
                return self._send_request(tokens)  # nothing to count against
            if sends_before_window(self._chat()[0], tokens):
                self._send_request(tokens)  # no compaction could help it: its answer waits for the window instead
                self.window.held = []
                return "stream"
            return "window"  # WindowFound continues; each discovery request has a short timeout
        if tokens >= self._threshold():
            tokens = self._shrink(tokens)
            over = tokens >= self._threshold()
            if over and not self.summarised and self._start_summary("", "request"):
                return "summary"
        if tokens > hard_limit(size):
            return self._does_not_fit(tokens)
        return self._send_request(tokens)

    def _send_request(self, tokens: int) -> At:
        self.window.held = None
        self.partial = []
        self.reasoning_chars = 0
        self.last_usage = None
        self.last_sent = self._request_messages()
        self.last_estimate = tokens
        self._stream(self.last_sent)
        return "stream"

    def _stream(self, messages: list[ChatMessage]) -> None:
        self.request_id += 1
        self.answered = False
        start = StartStream(
            request_id=self.request_id,
            provider=self.provider,
            messages=messages,
            idle_timeout_s=self.idle_timeout_s,
            exec_timeout_s=self.exec_timeout_s,
            idle_timeout_from=self.idle_timeout_from,
            first_byte_timeout_s=self.first_byte_timeout_s,
        )
        self.outbox.append(("llm", start))

    def _fresh_front(self) -> None:
        """A new conversation: a new system message at its first request, no calibration yet."""
        self._system = None
        self.calibration = None

    def _request_messages(self, conversation: Sequence[ConversationEntry] | None = None) -> list[ChatMessage]:
        if self._system is None:
            # Built once per session: a byte-identical front keeps the server's prompt cache warm
            # (the date would otherwise change it at midnight).
            self._system = system_message(self.cwd, self.instructions)
        return [self._system, *map(provider_message, self.conversation if conversation is None else conversation)]

    def show_context(self) -> None:
        """The status bar's context figure from the estimate of the next request (the one /usage gives)."""
        self._ui(ContextChanged(tokens=estimate(self._request_messages(), self.calibration)))

    # ------------------------------------------------------------ the window (_context.Window)

    def discover_window(self) -> None:
        """Ask the LLM process for the window of the current provider and model (once per pair)."""
        asked = self.window.ask(self.provider)
        if isinstance(asked, DiscoverWindow):
            self.outbox.append(("llm", asked))
        elif asked is not None:  # known already: an answer held for a window is let through or refused now
            self._adopt_window(asked)
            if self.window.held is not None:
                self._move("WindowFound", self._release_held())

    def _adopt_window(self, found: WindowFound) -> None:
        assumed = self.window.adopt(found)
        if assumed is not None:
            self._ui(assumed)
        self._ui(self.ready_message())

    def _window_found(self, found: WindowFound) -> At | None:
        if not self.window.answers(found, self.provider):
            return None  # an answer for a model we no longer use
        if found.notice:
            self._ui(SystemEntry(text=found.notice, level="warning"))
        self._adopt_window(found)
        if self.waiting == "window":
            return "request"
        if self.window.held is not None:
            return self._release_held()
        return None

    def _release_held(self) -> At | None:
        """The window came while a request sent before it streams: refuse it as ``_request`` would have (it could not
        be compacted), or let its answer through: each held message then moves the turn as it would have."""
        size = self.window.size
        assert size is not None
        held, self.window.held = self.window.held or [], None
        if self.last_estimate > hard_limit(size):
            self.outbox.append(("llm", CancelStream(request_id=self.request_id)))  # its last word is not waited for
            return self._does_not_fit(self.last_estimate)
        for message in held:
            self.on_llm(message)
        return None

    def _does_not_fit(self, tokens: int) -> At:
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
        return self._end_turn("failed")

    # ------------------------------------------------------------ compaction (_compaction)

    def _threshold(self) -> int:
        return compact_threshold(self.window.size or 0, self.compact_at_percent)

    def _chat(self) -> tuple[list[ChatMessage], dict[int, ConversationEntry]]:
        """The conversation as provider messages (what compaction plans on), and the way back to the entries:
        what a compaction keeps stays the typed entry it was."""
        chat = [provider_message(e) for e in self.conversation]
        return chat, {id(c): e for c, e in zip(chat, self.conversation, strict=True)}

    def _measure(self, conversation: Sequence[ChatMessage]) -> int:
        return estimate(self._request_messages(conversation), self.calibration)

    def _shrink(self, tokens: int) -> int:
        """Stage 1 (at once): cut old tool results while the request stays above the threshold; the new estimate."""
        chat, back = self._chat()
        shrunk = shrink(chat, self._measure, self._threshold())
        if shrunk is None:
            return tokens
        what = f"shrank {shrunk.results} old tool results"
        self._replace_conversation(entries(shrunk.conversation, back), what, tokens, shrunk.tokens)
        return shrunk.tokens

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
        self._set_phase("compacting")
        self._stream(self._request_messages(flow.asked))
        return True

    def _compact_now(self, focus: str) -> At:
        """/compact [focus]: both stages now, whatever the fill."""
        self._reset_turn()
        if self.window.size is None:
            self._ui(SystemEntry(text="/compact waits for the context window to be known: try again in a moment"))
            return "nothing"
        self._shrink(estimate(self._request_messages(), self.calibration))
        if self._start_summary(focus, "idle"):
            return "summary"
        self._ui(SystemEntry(text="nothing older than the recent turns to summarise"))
        return "nothing"

    def _summarised(self, summary: str, failure: str) -> At:
        """The summary came (or failed): the conversation compacted (or not), then the request, or idle (/compact)."""
        flow, self.summary = self.summary, None
        then: Then = flow.then if flow is not None else "idle"
        if flow is not None and summary.strip():
            before = estimate(self._request_messages(), self.calibration)
            compacted, what = flow.compacted(summary)
            after = estimate(self._request_messages(compacted), self.calibration)
            self._replace_conversation(compacted, what, before, after)
        elif failure == "cancelled":
            self._ui(SystemEntry(text="compaction cancelled: the conversation is unchanged"))
            if then == "idle":
                return self._go_idle()
            self.stop.set(CANCELLED, "cancelled")
            return self._end_turn("cancelled")
        else:
            why = f"it failed: {failure}" if failure else "it came back empty"
            text = f"the summary could not be made ({why}): the conversation is unchanged"
            self._ui(SystemEntry(text=text, level="warning"))
        return self._go_idle() if then == "idle" else "request"

    def _go_idle(self) -> At:
        self._reset_turn()
        self._ui(PhaseChanged(phase="idle"))
        return "nothing"

    # ------------------------------------------------------------ LLM -> agent

    def on_llm(self, message: LlmToAgent) -> None:
        if isinstance(message, WindowFound):
            self._move("WindowFound", self._window_found(message))
            return
        if message.request_id != self.request_id:
            return  # a late message of a stream we already finished
        self.answered = True
        if self.window.held is not None and self.waiting == "stream":
            self.window.held.append(message)  # sent before the window was known: acted on once it is
            return
        if self.waiting == "summary":
            assert self.summary is not None
            match self.summary.on_llm(message):
                case Summarised(summary=summary, failure=failure):
                    event: Event = "StreamDone" if isinstance(message, StreamDone) else "StreamFailed"
                    self._move(event, self._summarised(summary, failure))
                case SystemEntry() as status:
                    self._ui(status)
            return
        if self.waiting != "stream":
            return
        match message:
            case ContentDelta(text=text):
                self.partial.append(text)
                if self.stop.result is None:
                    self._ui(TokenReceived(text=text))
            case ReasoningDelta(text=text):
                self.reasoning_chars += len(text)
                if self.stop.result is None:
                    self._ui(ReasoningReceived(text=text))
            case StreamStatus(text=text, level=level):
                self._ui(SystemEntry(text=text, level=level))
            case StreamDone():
                self._move("StreamDone", self._stream_done(message))
            case StreamFailed(kind=kind, message=text, content=content, tool_calls=calls):
                self._move("StreamFailed", self._stream_failed(kind, text, content, calls))
            case _:
                assert_never(message)

    def _stream_done(self, done: StreamDone) -> At:
        """The answer: recorded, then its calls; an empty one ends the turn (or is read as "context exceeded")."""
        self.last_usage = done.usage
        if done.usage is not None and done.usage.prompt_tokens > 0:
            self.estimates.append((self.last_estimate, done.usage.prompt_tokens))
            self.calibration = calibrate(self.last_sent, done.usage.prompt_tokens)
        if not done.content and not done.tool_calls:
            window = self.window.size or 0
            suspect = window and fill_percent(self.last_estimate, window) >= EMPTY_ANSWER_SUSPECT_PERCENT
            retried = self._context_exceeded("an empty answer to a large request", "", []) if suspect else None
            if retried is not None:
                return retried
            if self.reasoning_chars:
                # Seen with local reasoning models whose chat template never closes the thinking block.
                text = (
                    f"the model only reasoned ({self.reasoning_chars} characters) and gave no answer text: "
                    "ask again, or check the server's reasoning settings"
                )
                self._ui(SystemEntry(text=text, level="warning"))
            else:
                self._ui(SystemEntry(text="[model returned nothing]"))
            return self._end_turn(self.stop.outcome)
        calls = self._unique_ids(done.tool_calls)
        self._record_assistant(done.content, calls)
        if done.finish_reason == "length":
            text = "the answer was cut off: the model hit its output limit (finish_reason: length)"
            self._ui(SystemEntry(text=text, level="warning"))
        return self._begin_calls(calls)

    def _stream_failed(self, kind: StreamFailureKind, text: str, content: str, calls: list[AssembledCall]) -> At:
        """What came is recorded; its calls are answered unrun (the turn stops); "context exceeded" is retried once."""
        if kind == "context_exceeded":
            retried = self._context_exceeded(kind, content or "".join(self.partial), calls)
            if retried is not None:
                return retried
        calls = self._unique_ids(calls)
        content = content or "".join(self.partial)
        if content or calls:
            self._record_assistant(content, calls)
        if kind == "cancelled":
            self.stop.set(CANCELLED, "cancelled")
            self._ui(SystemEntry(text="cancelled"))
        else:
            self.stop.set(ToolFailed(error=f"not run: the stream failed ({kind})"), "failed")
            self._ui(SystemEntry(text=text, level="error"))
        return self._begin_calls(calls)

    def _context_exceeded(self, kind: str, content: str, calls: list[AssembledCall]) -> At | None:
        """The provider said the request was too large: compact and retry once (None: not handled here)."""
        size = self.window.size
        if content or calls or self.stop.result is not None or size is None:
            return None
        if self.exceeded_retried:
            self._ui(
                SystemEntry(
                    text="the provider still says the conversation exceeds the model's context window after "
                    "compacting it: /clear starts a fresh session; if the server's window is smaller than "
                    f"{tokens_text(size)}, set context_window in config.toml",
                    level="error",
                )
            )
            return self._end_turn("failed")
        self.exceeded_retried = True
        sent = self.last_estimate
        self.window.shrink_to(sent)  # the server's real window is at most what we sent
        text = (
            f"the provider says the conversation exceeds the model's context window ({kind}): "
            "compacting and retrying once"
        )
        self._ui(SystemEntry(text=text, level="warning"))
        self._ui(self.ready_message())
        self.summarised = False
        self._shrink(sent)
        return "summary" if self._start_summary("", "retry") else "request"

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

    def _record_assistant(self, content: str, calls: list[AssembledCall]) -> None:
        tool_calls = [_canonical(call) for call in calls] or None
        self._record(ChatMessage(role="assistant", content=content or None, tool_calls=tool_calls))

    def _begin_calls(self, calls: list[AssembledCall]) -> At:
        self.calls = CallsFlow(list(calls), self.stop, self)
        return "calls"

    def _calls_done(self) -> At:
        """The answer's calls are all answered: the next episode, or the turn's end."""
        if self.stop.result is not None:
            return self._end_turn(self.stop.outcome)
        if not self.calls.calls:
            return self._end_turn("completed")
        if self.shutting_down:
            return self._end_turn("stopped")
        if self.episodes >= MAX_EPISODES_PER_TURN:
            text = f"stopped after {MAX_EPISODES_PER_TURN} model requests in one turn; send a prompt to let it continue"
            self._ui(SystemEntry(text=text, level="warning"))
            return self._end_turn("limit")
        return "episode"

    # ------------------------------------------------------------ executor -> agent

    def on_executor(self, message: ExecutorToAgent) -> None:
        match message:
            case PreviewReady(call_id=call_id):
                if self.waiting == "preview" and call_id == self.calls.current.id:
                    self._move("PreviewReady", *(self.calls.previewed(message)))
            case ToolFinished(call_id=call_id, result=result) if (
                self.waiting == "user_command" and self.user_command and call_id == self.user_command[0]
            ):
                self._move("ToolFinished", self._user_command_done(result))
            case ToolFinished(call_id=call_id, result=result) if (
                self.waiting == "mention" and self.attaching and self.attaching.call_id == call_id
            ):
                self._move("ToolFinished", self._attached(result))
            case ToolFinished(call_id=call_id):
                if self.waiting == "tool" and call_id == self.calls.current.id:
                    self._keep_changes(message)
                    self._move("ToolFinished", *(self.calls.ran(message)))
            case FrameRejected(error=error):
                self._ui(SystemEntry(text=error, level="error"))
            case CommandStarted():
                pass  # the process shell keeps the process group to kill if the executor dies
            case RestorePreviewed() | RestoreApplied():
                if self.restore is not None and self.waiting == "restore":
                    event: Event = "RestorePreviewed" if isinstance(message, RestorePreviewed) else "RestoreApplied"
                    self._move(event, self._restore_step(self.restore.on_executor(message)))
            case PathsFound(ref=ref):
                self._ui(message)
                if self.finding is not None and self.finding.ref == ref:
                    self.finding, waiting = None, self.find_next
                    self.find_next = None
                    if waiting is not None:
                        self._find_paths(waiting)
            case CommandOutput(call_id=call_id, text=text, skipped_bytes=skipped):
                running = self.user_command[0] if self.user_command else None
                if call_id == running or (self.waiting == "tool" and call_id == self.calls.current.id):
                    self._ui(ToolOutputShown(id=call_id, text=text, skipped_bytes=skipped))  # late chunks go
            case _:
                assert_never(message)

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
        turn_number = len(self.prompts())
        entry: undo.CheckpointEntry | undo.CommandEntry | None = None
        if finished.checkpoint is not None:
            from dashfloat.agent import undo

            entry = undo.CheckpointEntry(turn_number, finished.call_id, finished.checkpoint, self.cwd)
        elif finished.changes is not None and (finished.changes.paths or finished.changes.unknown):
            from dashfloat.agent import undo

            entry = undo.CommandEntry(turn_number, finished.call_id, finished.changes, self.cwd)
        if entry is not None:
            self.undo_log.add(entry)
            self.journal.record_change(entry)
        if finished.notice:
            self._ui(SystemEntry(text=finished.notice, level="warning"))

    def _start_restore(self, prompt: int | None, session_id: str) -> At:
        """/undo (``prompt`` None) or /rewind: plan it, then ask the executor for the reverse preview."""
        from dashfloat.agent._restore import begin

        journal = self.journal
        prompts, store = self.prompts(), journal.checkpoint_store
        flow = begin(
            prompt,
            session_id,
            journal.session_id,
            prompts,
            self.undo_log,
            self.cwd,
            store,
            self.next_ref,
            self.restoring,
        )
        if isinstance(flow, list):
            self.outbox += flow  # refused, or nothing to undo
            return "nothing"
        self.restore = flow
        self._set_phase("running")
        return self._restore_step(flow.start())

    def _restore_step(self, out: Sequence[tuple[Dest, Message]]) -> At:
        """Send what the restore flow asks for; when it is over, record it and go idle."""
        flow = self.restore
        assert flow is not None
        for dest, message in out:
            if isinstance(message, ConfirmRequested):
                self._set_phase("confirming")
            elif dest == "executor":
                self._set_phase("running")
            self.outbox.append((dest, message))
        if flow.ended is None:
            return "restore"
        self.restore = None
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
        return "nothing"

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

    # ------------------------------------------------------------ cancel, crashes, end of turn

    def cancel(self) -> tuple[At | None, Out]:
        """Esc: stop the stream, reject-and-stop a confirmation, or kill the running command (where the turn goes,
        and what to send and record first)."""
        match self.waiting:
            case "stream" if self.window.held is not None:
                # Nothing of its answer was shown or run: the turn ends as a wait for the window does.
                self.window.held = None
                self.outbox.append(("llm", CancelStream(request_id=self.request_id)))
                return self._end_turn("cancelled"), []
            case "stream" | "summary":
                self.stop.set(CANCELLED, "cancelled")
                self.outbox.append(("llm", CancelStream(request_id=self.request_id)))
                return self.waiting, []  # its last word ends it
            case "window":
                return self._end_turn("cancelled"), []
            case "preview" | "confirm" | "tool":
                return self.calls.cancel(self.waiting)
            case "restore":
                return (self._restore_step(self.restore.cancel()) if self.restore is not None else None), []
            case "user_command":
                if self.user_command is not None:
                    self.outbox.append(("executor", CancelTool(call_id=self.user_command[0])))
                return "user_command", []  # its result ends it
            case "mention":
                # Nothing was sent yet: the prompt goes back into the input, a !command's output back to waiting.
                if self.attaching is not None:
                    self.pending_context = [*self.attaching.context, *self.pending_context]
                    self._ui(SystemEntry(text="not sent: reading its @mentions was cancelled; the prompt is back"))
                    self._ui(PromptRestored(text=self.attaching.text))
                return self._end_turn("cancelled"), []
            case "nothing":
                return (self._end_turn("cancelled") if self.phase != "idle" else None), []
            case _:
                assert_never(self.waiting)

    def on_llm_died(self, reason: str) -> None:
        """The LLM stream process died; a fresh one is already running."""
        self.window.held = None  # what it sent before dying is reported as the stream's failure, not acted on
        if self.waiting == "summary":
            self._move("llm died", self._summarised("", f"the model stream process died ({reason})"))
        elif self.waiting == "stream":
            text = f"the model stream process died ({reason}); a fresh one will serve the next request"
            self._move("llm died", self._stream_failed("crashed", text, "", []))
        if self.window.size is None:
            self.discover_window()  # the question died with the process: ask the fresh one

    def on_executor_died(self, reason: str) -> None:
        """The executor died; a fresh one is already running. In-flight work becomes an error result."""
        open_requests = [r for r in (self.finding, self.find_next) if r is not None]
        self.finding = self.find_next = None
        for request in open_requests:
            notice = f"the executor process died ({reason}); type on to ask again"
            self._ui(PathsFound(ref=request.ref, query=request.query, paths=[], notice=notice))
        failed = ToolFailed(error=f"executor crashed: {reason}")
        if self.waiting in ("preview", "tool"):  # a pending confirmation's digest stays valid for the fresh one
            self._move("executor died", *(self.calls.executor_died(reason)))
        elif self.waiting == "restore" and self.restore is not None:
            self._move("executor died", self._restore_step(self.restore.executor_died(reason)))
        elif self.waiting == "user_command":
            self._move("executor died", self._user_command_done(failed))
        elif self.waiting == "mention" and self.attaching is not None and self.attaching.call is not None:
            self._move("executor died", self._attached(failed))

    def on_internal_error(self, error: str) -> None:
        """A bug of ours: say so, leave a valid conversation, go idle, stay up."""
        self._ui(SystemEntry(text=f"internal error in the agent: {error}", level="error"))
        if self.waiting in ("stream", "summary"):
            self.outbox.append(("llm", CancelStream(request_id=self.request_id)))
        self.summary = None
        self._answer_dangling(ToolFailed(error="not run: internal error in the agent"))
        self._go(self._end_turn("failed"))

    def _answer_dangling(self, result: ToolResult) -> None:
        """Give every call of the last assistant message that has no result yet ``result``."""
        answered = {m.call_id for m in self.conversation if isinstance(m, ToolReply)}
        for message in reversed(self.conversation):
            if isinstance(message, ChatMessage) and message.role == "assistant":
                for record in message.tool_calls or []:
                    if record.id not in answered:
                        self._record(ToolReply(call_id=record.id, name=record.function.name, result=result))
                        self._ui(result_row(record.id, record.function.name, result))
                return

    def _end_turn(self, outcome: Outcome) -> At:
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
        return "nothing"
