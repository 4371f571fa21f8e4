"""The agent's state machine: no I/O of its own; the process shell feeds it and sends its outbox.

``AgentCore`` keeps the session (the conversation, the rules, the window and what the model is sent), takes every
message (``on_ui``, ``on_llm``, ``on_executor``, a worker's death) and keeps the outbox. A prompt's turn is
``_steps.Turn``: where it goes at each wait is ``_turn.TURN``, one screen, and every move is checked against it.
One answer's calls are ``_calls.CallsFlow``; what to do with one call is ``_decide.decide``. The path of one prompt,
step by step: docs/architecture.md. Every path out of a turn leaves a conversation with a tool message for every
announced call.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final, Literal, assert_never

import msgspec

from dashfloat.agent import _compaction as compaction
from dashfloat.agent import _mentions as mentions
from dashfloat.agent._calls import result_row
from dashfloat.agent._context import (
    MODELS_REQUEST_ID,
    Calibration,
    Window,
    compact_threshold,
    estimate,
    fill_percent,
    progress_shown,
    tokens_text,
)
from dashfloat.agent._echo import echoed
from dashfloat.agent._mcp import McpSession
from dashfloat.agent._options import AgentOptions
from dashfloat.agent._prompt import system_message
from dashfloat.agent._rules import Rules
from dashfloat.agent._steps import Turn
from dashfloat.agent._turn import Event, Waiting
from dashfloat.protocol import (
    AgentReady,
    ApprovalMode,
    Cancel,
    CancelStream,
    ChatMessage,
    ClearSession,
    CommandOutput,
    CommandStarted,
    CompactConversation,
    ContextChanged,
    ConversationEntry,
    DecideConfirmation,
    DiscoverWindow,
    ExecutorToAgent,
    ExposeJob,
    FindPaths,
    FrameRejected,
    HooksRan,
    JobExited,
    JobExposed,
    JobOutput,
    JobStarted,
    KillJobs,
    ListPermissions,
    ListPrompts,
    ListSessions,
    LlmToAgent,
    McpServersListed,
    Message,
    PathsFound,
    Phase,
    PhaseChanged,
    PreviewReady,
    PromptFile,
    PromptProgress,
    ReasoningEffort,
    RemovePermission,
    RestoreApplied,
    RestorePreviewed,
    ResumeSession,
    RewindTo,
    RunUserCommand,
    SavePermission,
    SessionCleared,
    SessionStarted,
    SetApproval,
    SetModel,
    ShowHooks,
    ShowLastResult,
    ShowMcp,
    ShowModels,
    ShowStatus,
    ShowUsage,
    Shutdown,
    StartStream,
    StopJob,
    SubmitPrompt,
    SystemEntry,
    ToolFailed,
    ToolFinished,
    ToolOutputShown,
    ToolReply,
    ToolResult,
    UiToAgent,
    UndoTurn,
    Usage,
    WindowFound,
    result_json,
)
from dashfloat.skills import Skill, skills_index

if TYPE_CHECKING:
    # Imported where first used: undo serves /undo and /rewind and a change's checkpoint; an idle agent runs neither,
    # and each module the agent imports is copied into the executor too (ADR 0053).
    from dashfloat.agent import undo
    from dashfloat.agent._journal import Journal

Dest = Literal["ui", "llm", "executor"]

APPROVE_ALL_WARNING: Final = (
    "approve: all — every edit, write and command now runs without asking "
    "(deny rules still apply; writes in .git/ still ask)"
)
PLAN_NOTICE: Final = "approve: plan — nothing changes: edits, writes and commands are refused; read-only commands run"


def tool_message(reply: ToolReply) -> ChatMessage:
    """The ``role: "tool"`` message the provider gets for ``reply``: the one place a result becomes JSON."""
    return ChatMessage(role="tool", tool_call_id=reply.call_id, content=result_json(reply.result, reply.context))


def provider_message(entry: ConversationEntry) -> ChatMessage:
    """A conversation entry as the provider's chat message."""
    return tool_message(entry) if isinstance(entry, ToolReply) else entry


class AgentCore:
    """The session, the dispatch of every message, and the outbox (what to send where)."""

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
        self.hooks = options.hooks  # hooks (ADR 0088): the user's, and a trusted project's
        self.skills: list[Skill] = []
        """The skills found at start (ADR 0088): their index goes into the system prompt."""
        self.running_jobs: dict[int, str] = {}
        """Background jobs running, by id: their command (/status counts them; issue 36)."""
        self.project_hooks = options.project_hooks
        """The project's hooks file as read at launch, trusted or not (``/hooks trust``)."""
        self.state_dir = options.state_dir
        self.hook_runs: dict[int, str] = {}
        """The RunHooks (UserPromptSubmit, Stop, SessionStart) not answered yet: their event by ref."""
        self.hook_ref = 0
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
        self.request_id = 0
        self.answered = False
        """The current request has sent something (the shell's watchdog then expects the idle timeout)."""
        self._system: ChatMessage | None = None
        self.shutting_down = False
        self._announced_session = ""
        self.confirm_ref = 0
        self._undo_log: undo.UndoLog | None = None
        self.user_commands_run = 0
        self.user_reply: ToolReply | None = None  # the newest !command's result, until a model's result is newer
        self.prompt_files: list[PromptFile] = []
        self.models: list[str] | None = None
        """The server's models (``GET /models``), once the window discovery or /model asked; None: not yet."""
        self.listing = False
        """/model waits for that list to show it."""
        self.unchecked: list[tuple[str, str, ReasoningEffort | None]] = []
        """(model, the one before, the effort before) of each /model NAME made before the list came: checked when it
        comes (an undone switch undoes its ``@EFFORT`` too)."""
        self.models_asked = False
        """A DiscoverWindow for the list alone (``MODELS_REQUEST_ID``) is unanswered."""
        self.launch_effort = options.provider.reasoning_effort
        """config.toml's or ``--reasoning-effort``'s: what ``/model @default`` goes back to."""
        self.pending_context: list[str] = []
        """Outputs of !commands, sent to the model with the next prompt."""
        self.mention_ids = itertools.count(1)
        self.finding: FindPaths | None = None
        """The @ completion request the executor is answering (answered for it if the executor dies)."""
        self.find_next: FindPaths | None = None
        """The newest request typed meanwhile: sent when ``finding`` is answered (one in flight at a time, so
        fast typing never queues stale searches in the executor)."""
        self.phase: Phase = "idle"
        self.turn = Turn(self)
        # MCP client (ADR 0086): the executor's MCP host runs the servers; a project's wait for /mcp approve
        self.mcp = McpSession(options.mcp_servers, options.mcp_project, options.state_dir)
        self.outbox += [("ui", entry) for entry in self.mcp.proposed()]
        self._configure_mcp()

    @property
    def waiting(self) -> Waiting:
        """Where the turn waits (``_turn.Waiting``)."""
        return self.turn.waiting

    # ------------------------------------------------------------ plumbing

    def ui(self, message: Message) -> None:
        self.outbox.append(("ui", message))

    def set_phase(self, phase: Phase, *, announce: bool = False) -> None:
        """Set the phase and tell the UI when it changed; ``announce``: tell it even when it did not (each model
        request says ``streaming``, so a headless run counts its requests by it: ``result.episodes``)."""
        if phase != self.phase or announce:
            self.phase = phase
            self.ui(PhaseChanged(phase=phase))

    def record(self, entry: ConversationEntry) -> None:
        """``entry`` joins the conversation, the session log first."""
        self.journal.record(entry)
        self.conversation.append(entry)
        self.transcript.append(entry)
        if isinstance(entry, ToolReply):
            self.user_reply = None  # the model's result is the newest now (/last)
        warning = self.journal.take_warning()
        if warning:
            self.ui(SystemEntry(text=warning, level="error"))
        if self.journal.session_id and self.journal.session_id != self._announced_session:
            self._announced_session = self.journal.session_id
            self.ui(SessionStarted(session_id=self._announced_session))

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
            models=self.models or [],
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
        self.user_reply = None
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
        self.ui(SessionStarted(session_id=self.journal.session_id, resumed=True))
        self.show_context()  # the resumed conversation goes with the next request, not 0 tokens
        if replay:
            from dashfloat.agent._replay import replay_rows  # a resume only: imported where first used (ADR 0053)

            compacted = self.compaction_points[0][0] if self.compaction_points else 0  # one row (issue 37)
            self.outbox += [("ui", message) for message in replay_rows(self.transcript, compacted)]
        from dashfloat.agent._jobs import lost_jobs  # background jobs (issue 36): never said to run on

        self.outbox += [("ui", said) for said in lost_jobs(self.transcript)]

    # ------------------------------------------------------------ UI -> agent

    def on_ui(self, message: UiToAgent) -> None:
        turn = self.turn
        match message:
            case SubmitPrompt(text=text):
                if not self._busy("a new prompt"):
                    turn.move("SubmitPrompt", turn.submit(text))
            case RunUserCommand(command=command):
                if not self._busy("a !command"):
                    turn.move("RunUserCommand", turn.run_user_command(command))
            case FindPaths():
                self._find_paths(message)
            case DecideConfirmation(ref=ref, decision=decision):
                if self.waiting == "restore" and turn.restore is not None:
                    turn.move("DecideConfirmation", turn.restore_step(turn.restore.on_decision(ref, decision)))
                elif self.waiting == "confirm" and ref == turn.calls.ref:
                    turn.move("DecideConfirmation", *turn.calls.decided(decision))
                else:  # a keypress for a confirmation already answered (or never asked): ignored, and logged
                    pending = str(self.confirm_ref) if self.waiting == "confirm" else "none"
                    self.log.append(f"ignored decision {decision!r} for confirmation {ref}: pending is {pending}")
            case Cancel():
                turn.move("Cancel", *turn.cancel())
            case SetModel() | ShowModels():
                from dashfloat.agent import _models  # /model only: imported where first used, as _reports is

                _models.command(self, message)
            case SetApproval(mode=mode):
                self.approval = mode
                if mode == "all":
                    self.ui(SystemEntry(text=APPROVE_ALL_WARNING, level="warning"))
                elif mode == "plan":
                    self.ui(SystemEntry(text=PLAN_NOTICE))
                else:
                    self.ui(SystemEntry(text=f"approval mode: {mode}"))
                if mode == "ask" and self.rules.session:
                    self.ui(self.rules.revoke())
                self.ui(self.ready_message())
            case ShowUsage() | ShowStatus() | ShowLastResult() | ListPermissions() | ListSessions() | ListPrompts():
                from dashfloat.agent import _reports  # slash commands only: imported where first used

                _reports.answer(self, message)
            case RemovePermission(number=number):
                self._rules_changed(*self.rules.remove(number, self.journal))
            case SavePermission(number=number):
                self._rules_changed(*self.rules.save(number, self.journal))
            case ClearSession():
                if not self._busy("/clear"):
                    self.outbox.append(("executor", KillJobs()))  # background jobs (issue 36) end with the session
                    self._clear()
            case StopJob(job_id=job_id):  # /jobs stop (issue 36): its JobExited says the rest
                self.outbox.append(("executor", KillJobs(job_ids=[job_id])))
            case ExposeJob():  # /jobs expose (issue 36): the executor's JobExposed says what it did
                self.outbox.append(("executor", message))
            case ResumeSession(session_id=session_id):
                if not self._busy("/resume"):
                    self._resume(session_id)
            case ShowMcp(approve=approve):
                if approve:
                    self.ui(self.mcp.approve())
                    self._configure_mcp()
                self.ui(SystemEntry(text=self.mcp.report(self.window.size)))
            case ShowHooks(trust=trust_now):  # hooks (ADR 0088)
                from dashfloat.agent._extensions import hooks_command

                self.outbox += hooks_command(self, trust_now)
            case UndoTurn():
                if not self._busy("/undo"):
                    turn.move("UndoTurn", turn.start_restore(None, ""))
            case RewindTo(prompt=prompt, session_id=session_id):
                if not self._busy("/rewind"):
                    turn.move("RewindTo", turn.start_restore(prompt, session_id))
            case CompactConversation(focus=focus):
                if not self._busy("/compact"):
                    turn.move("CompactConversation", turn.compact_now(focus))
            case Shutdown():
                self.shutting_down = True
                if self.phase != "idle":
                    turn.move("Cancel", *turn.cancel())
            case _:
                assert_never(message)

    def _busy(self, what: str) -> bool:
        if self.phase == "idle":
            return False
        self.ui(SystemEntry(text=f"{what} waits for the current turn: press Esc to cancel it", level="warning"))
        return True

    def _find_paths(self, request: FindPaths) -> None:
        """@ completion: the executor answers (it holds the file index); no turn, whatever the phase."""
        if self.finding is None:
            self.finding = request
            self.outbox.append(("executor", request))
            return
        skipped = self.find_next
        if skipped is not None:  # superseded before it was sent: answered here (the UI keeps only the newest)
            self.ui(PathsFound(ref=skipped.ref, query=skipped.query, paths=[], notice="superseded"))
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
            self.ui(self.rules.revoke())
            self.ui(self.ready_message())
        self.ui(SessionCleared())
        self.show_context()  # the system prompt and the tools still go with the next request
        self.ui(SystemEntry(text="new session: the conversation starts empty"))

    def _resume(self, session_id: str) -> None:
        try:
            resumed = self.journal.resume(session_id)
        except (LookupError, OSError, ValueError) as exc:
            self.ui(SystemEntry(text=str(exc), level="error"))
            return
        self.outbox += [("ui", SystemEntry(text=notice, level="warning")) for notice in resumed.notices]
        self.load(resumed.conversation, resumed.usage, transcript=resumed.transcript)

    def _rules_changed(self, said: list[SystemEntry], changed: bool) -> None:
        self.outbox += [("ui", entry) for entry in said]
        if changed:
            self.ui(self.ready_message())

    # ------------------------------------------------------------ what the model is sent

    def start_stream(self, messages: list[ChatMessage]) -> None:
        """A new model request (the turn's, or a summary's) with the session's provider and bounds."""
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
            extra_tools=self.mcp.tools_json(self.window.size),
        )
        self.outbox.append(("llm", start))

    def _fresh_front(self) -> None:
        """A new conversation: a new system message at its first request, no calibration yet."""
        self._system = None
        self.calibration = None

    def request_messages(self, conversation: Sequence[ConversationEntry] | None = None) -> list[ChatMessage]:
        """The system message, then ``conversation`` (the session's by default) as the provider gets it: kept reasoning
        only where it is sent back (``_echo.echoed``), so the estimate counts what goes."""
        if self._system is None:
            # Built once per session: a byte-identical front keeps the server's prompt cache warm
            # (the date would otherwise change it at midnight).
            self._system = system_message(self.cwd, self.instructions, skills=skills_index(self.skills))
        chat = map(provider_message, self.conversation if conversation is None else conversation)
        return [self._system, *echoed(list(chat), self.provider.reasoning_echo)]

    def show_context(self) -> None:
        """The status bar's context figure from the estimate of the next request (the one /usage gives)."""
        self.ui(ContextChanged(tokens=estimate(self.request_messages(), self.calibration)))

    def chat(self) -> tuple[list[ChatMessage], dict[int, ConversationEntry]]:
        """The conversation as provider messages (what compaction plans on), and the way back to the entries:
        what a compaction keeps stays the typed entry it was."""
        chat = [provider_message(e) for e in self.conversation]
        return chat, {id(c): e for c, e in zip(chat, self.conversation, strict=True)}

    def measure(self, conversation: Sequence[ChatMessage]) -> int:
        """The estimate of a request carrying ``conversation``."""
        return estimate(self.request_messages(conversation), self.calibration)

    def threshold(self) -> int:
        """The request size at which compaction starts."""
        return compact_threshold(self.window.size or 0, self.compact_at_percent)

    def replace_conversation(self, conversation: list[ConversationEntry], what: str, before: int, after: int) -> None:
        """A compaction: the conversation the next requests carry (the transcript keeps every entry)."""
        self.conversation = conversation
        self.compaction_points.append((len(self.transcript), list(conversation)))
        self.compactions += 1
        self.journal.record_compaction([provider_message(e) for e in conversation])
        window = self.window.size or 1
        self.ui(
            SystemEntry(
                text=f"compacted: {what}; context ~{tokens_text(before)} → ~{tokens_text(after)} tokens "
                f"({fill_percent(after, window)}% of {tokens_text(window)})"
            )
        )
        self.ui(ContextChanged(tokens=after))

    # ------------------------------------------------------------ the window (_context.Window)

    def discover_window(self) -> None:
        """Ask the LLM process for the window of the current provider and model (once per pair)."""
        asked = self.window.ask(self.provider)
        if isinstance(asked, DiscoverWindow):
            self.outbox.append(("llm", asked))
        elif asked is not None:  # known already: an answer held for a window is let through or refused now
            self._adopt_window(asked)
            if self.window.held is not None:
                self.turn.move("WindowFound", self.turn.release_held())

    def _adopt_window(self, found: WindowFound) -> None:
        assumed = self.window.adopt(found)
        if assumed is not None:
            self.ui(assumed)
        self.ui(self.ready_message())

    # ------------------------------------------------------------ LLM -> agent

    def on_llm(self, message: LlmToAgent) -> None:
        if isinstance(message, WindowFound):
            ours = message.request_id in (MODELS_REQUEST_ID, self.window.asked)  # else stale: its list may be too
            if message.models or ours:
                from dashfloat.agent import _models  # a server that lists models: the picker's flow (ADR 0077)

                _models.known(self, list(message.models))
            if message.request_id == MODELS_REQUEST_ID:
                self.models_asked = False
                return
            if self.window.answers(message, self.provider):  # else an answer for a model we no longer use
                if message.notice:
                    self.ui(SystemEntry(text=message.notice, level="warning"))
                self._adopt_window(message)
                self.turn.move("WindowFound", self.turn.window_found())
            return
        if message.request_id != self.request_id:
            return  # a late message of a stream we already finished
        if isinstance(message, PromptProgress):  # the server reads the prompt: no answer yet (ADR 0092)
            if self.waiting == "stream":
                self.ui(progress_shown(message, self.last_estimate))
            return
        self.answered = True
        self.turn.on_llm(message)

    # ------------------------------------------------------------ executor -> agent

    def on_executor(self, message: ExecutorToAgent) -> None:
        turn = self.turn
        match message:
            case PreviewReady(call_id=call_id):
                if self.waiting == "preview" and call_id == turn.calls.current.id:
                    turn.move("PreviewReady", *turn.calls.previewed(message))
            case ToolFinished(call_id=call_id, result=result) if (
                self.waiting == "user_command" and turn.user_command and call_id == turn.user_command[0]
            ):
                turn.move("ToolFinished", turn.user_command_done(result))
            case ToolFinished(call_id=call_id, result=result) if (
                self.waiting == "mention" and turn.attaching and turn.attaching.call_id == call_id
            ):
                turn.move("ToolFinished", turn.attached(result))
            case ToolFinished(call_id=call_id):
                if self.waiting == "tool" and call_id == turn.calls.current.id:
                    self._keep_changes(message)
                    turn.move("ToolFinished", *turn.calls.ran(message))
            case McpServersListed():
                self.outbox += [("ui", entry) for entry in self.mcp.listed(message)]
            case HooksRan():  # hooks (ADR 0088): a held prompt's, or reported as they come
                if self.waiting == "hook":
                    turn.move("HooksRan", turn.prompt_hooked(message))
                else:
                    from dashfloat.agent._extensions import hooks_ran

                    hooks_ran(self, message)
            case FrameRejected(error=error):
                self.ui(SystemEntry(text=error, level="error"))
            case CommandStarted():
                pass  # the process shell keeps the process group to kill if the executor dies
            case JobStarted(job_id=job_id, command=command):  # background jobs (issue 36): /jobs, the status bar
                self.running_jobs[job_id] = command
                self.ui(message)
            case JobOutput():  # shown by /jobs and --json, not the model's result
                self.ui(message)
            case JobExited(job_id=job_id):
                from dashfloat.agent._jobs import exit_row

                self.running_jobs.pop(job_id, None)
                self.ui(message)
                self.ui(exit_row(message))
            case JobExposed(text=text, ok=ok):
                self.ui(SystemEntry(text=text, level="info" if ok else "warning"))
            case RestorePreviewed() | RestoreApplied():
                if turn.restore is not None and self.waiting == "restore":
                    event: Event = "RestorePreviewed" if isinstance(message, RestorePreviewed) else "RestoreApplied"
                    turn.move(event, turn.restore_step(turn.restore.on_executor(message)))
            case PathsFound(ref=ref):
                self.ui(message)
                if self.finding is not None and self.finding.ref == ref:
                    self.finding, waiting = None, self.find_next
                    self.find_next = None
                    if waiting is not None:
                        self._find_paths(waiting)
            case CommandOutput(call_id=call_id, text=text, skipped_bytes=skipped):
                running = turn.user_command[0] if turn.user_command else None
                if call_id == running or (self.waiting == "tool" and call_id == turn.calls.current.id):
                    self.ui(ToolOutputShown(id=call_id, text=text, skipped_bytes=skipped))  # late chunks go
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
            self.ui(SystemEntry(text=finished.notice, level="warning"))

    def truncate(self, kept: int) -> None:
        """The conversation up to (not including) prompt ``kept + 1``: the next request carries that prefix."""
        prompts = 0
        for index, message in enumerate(self.transcript):
            if isinstance(message, ChatMessage) and message.role == "user":
                prompts += 1
                if prompts > kept:
                    self.transcript = self.transcript[:index]
                    self.user_reply = None
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

    # ------------------------------------------------------------ crashes

    def on_llm_died(self, reason: str) -> None:
        """The LLM stream process died; a fresh one is already running."""
        self.window.held = None  # what it sent before dying is reported as the stream's failure, not acted on
        self.turn.llm_died(reason)
        if self.window.size is None:
            self.discover_window()  # the question died with the process: ask the fresh one

    def _configure_mcp(self) -> None:
        configure = self.mcp.configure()
        if configure is not None:
            self.outbox.append(("executor", configure))

    def on_executor_died(self, reason: str) -> None:
        """The executor died; a fresh one is already running. In-flight work becomes an error result."""
        self._configure_mcp()  # the fresh executor runs the MCP servers again
        open_requests = [r for r in (self.finding, self.find_next) if r is not None]
        self.finding = self.find_next = None
        for request in open_requests:
            notice = f"the executor process died ({reason}); type on to ask again"
            self.ui(PathsFound(ref=request.ref, query=request.query, paths=[], notice=notice))
        self.turn.executor_died(reason)

    def on_internal_error(self, error: str) -> None:
        """A bug of ours: say so, leave a valid conversation, go idle, stay up."""
        self.ui(SystemEntry(text=f"internal error in the agent: {error}", level="error"))
        if self.waiting in ("stream", "summary"):
            self.outbox.append(("llm", CancelStream(request_id=self.request_id)))
        self.turn.summary = None
        self._answer_dangling(ToolFailed(error="not run: internal error in the agent"))
        self.turn.go(self.turn.end("failed"))

    def _answer_dangling(self, result: ToolResult) -> None:
        """Give every call of the last assistant message that has no result yet ``result``."""
        answered = {m.call_id for m in self.conversation if isinstance(m, ToolReply)}
        for message in reversed(self.conversation):
            if isinstance(message, ChatMessage) and message.role == "assistant":
                for record in message.tool_calls or []:
                    if record.id not in answered:
                        self.record(ToolReply(call_id=record.id, name=record.function.name, result=result))
                        self.ui(result_row(record.id, record.function.name, result))
                return
