"""The turn's moves: what each row of ``_turn.TURN`` does, and the driver that checks every move against it.

``Turn`` holds what one turn needs (where it waits, its episodes, its calls, why it stops) and acts on its session,
the ``AgentCore`` (the conversation, the window, the outbox). The core gives it each message as an event; a handler
does its part and says where the turn goes (an ``At``), ``move`` checks that against the table and ``go`` takes the
steps from there to the next wait. One answer's calls are ``_calls.CallsFlow``; /undo and /rewind are
``_restore.RestoreFlow``; a summary is ``_compactor.SummaryFlow``; @mentions are ``_mentions.Attaching``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Final, assert_never

import msgspec

from dashfloat.agent import _mentions as mentions
from dashfloat.agent import _turn as turn
from dashfloat.agent._calls import CANCELLED, CallsFlow, Out, Outcome, Outgoing, Stop, result_row
from dashfloat.agent._context import (
    calibrate,
    estimate,
    fill_percent,
    hard_limit,
    request_sent,
    sends_before_window,
    tokens_text,
)
from dashfloat.agent._loops import repeated_calls
from dashfloat.agent._turn import At, Event, Waiting
from dashfloat.protocol import (
    AssembledCall,
    CancelStream,
    CancelTool,
    ChatMessage,
    ConfirmRequested,
    ContentDelta,
    ExecuteCommandArgs,
    FunctionCall,
    HooksRan,
    LlmToAgent,
    Message,
    PhaseChanged,
    PromptProgress,
    PromptRestored,
    ReasoningDelta,
    ReasoningReceived,
    RunTool,
    SandboxPolicy,
    StreamDone,
    StreamFailed,
    StreamFailureKind,
    StreamStatus,
    SystemEntry,
    TokenReceived,
    ToolCallRecord,
    ToolCallShown,
    ToolFailed,
    ToolReply,
    ToolResult,
    TurnEnded,
    Usage,
    UsageShown,
    WindowFound,
)

if TYPE_CHECKING:
    from dashfloat.agent._compactor import SummaryFlow, Then
    from dashfloat.agent._core import AgentCore, Dest
    from dashfloat.agent._restore import RestoreFlow

MAX_EPISODES_PER_TURN: Final = 50
EMPTY_ANSWER_SUSPECT_PERCENT: Final = 50
"""An empty 200 to a request filling at least this much of the window is read as "context exceeded"
(LM Studio answers an over-window prompt that way), and handled like the explicit errors."""


def _canonical(call: AssembledCall) -> ToolCallRecord:
    return ToolCallRecord(id=call.id, function=FunctionCall(name=call.name or "unknown", arguments=call.arguments))


class Turn:
    """The turn of a prompt, and the waits beside one (a !command, /undo, /rewind, /compact)."""

    def __init__(self, core: AgentCore) -> None:
        self.core = core
        self.waiting: Waiting = "nothing"
        """Where the turn waits (``_turn.Waiting``); only ``go`` moves it."""
        self.reset()

    def reset(self) -> None:
        """A fresh turn: nothing of the last one's state carries over."""
        self.core.phase = "idle"
        self.core.window.held = None
        self.user_command: tuple[str, str] | None = None
        """The running !command: (call id, command line)."""
        self.attaching: mentions.Attaching | None = None
        """A submitted prompt whose @mentions are being read (it goes to the model once they all are)."""
        self.episodes = 0
        self.partial: list[str] = []
        self.reasoning_chars = 0
        """Reasoning received for the current request (an answer with only reasoning is not "nothing")."""
        self.stop = Stop()
        self.calls = CallsFlow([], self.stop, self.core)
        self.last_usage: Usage | None = None
        self.restore: RestoreFlow | None = None
        self.summary: SummaryFlow | None = None
        self.summarised = False
        """A summary was tried at this episode boundary (it is not tried twice in a row)."""
        self.exceeded_retried = False
        self.held_prompt: str | None = None
        """A prompt waiting for its hooks (and a session start's) to answer (ADR 0088)."""
        self.hook_block = ""
        self.hook_context: list[str] = []

    # ------------------------------------------------------------ the driver

    def move(self, event: Event, to: At | None, out: Iterable[Outgoing] = ()) -> None:
        """``event`` came while the turn waits: send and record ``out``, then go to ``to`` as TURN allows (None: the
        message moved nothing), and on to the next wait."""
        self.send(out)
        if to is not None:
            turn.check(self.waiting, event, to)
            self.go(to)

    def go(self, to: At) -> None:
        """Take the turn's steps from ``to`` until it waits for a message; TURN lists where each step may go."""
        while True:
            at = to
            match at:
                case "episode":
                    to = self.episode()
                case "request":
                    to = self.request()
                case "calls":
                    to, out = self.calls.step()
                    self.send(out)
                case "calls_done":
                    to = self.calls_done()
                case _:
                    self.waiting = at
                    return
            turn.check(at, "step", to)

    def send(self, out: Iterable[Outgoing]) -> None:
        """Record and send what a flow returned, in order; a tool run or a confirmation shows its phase first."""
        core = self.core
        for item in out:
            if isinstance(item, ToolReply):
                core.record(item)
                continue
            if isinstance(item[1], ConfirmRequested):
                core.set_phase("confirming")
            elif isinstance(item[1], RunTool):
                core.set_phase("running")
            core.outbox.append(item)

    # ------------------------------------------------------------ a prompt, its @mentions, a !command

    def submit(self, text: str) -> At:
        """A prompt: recorded and sent, or its @mentions read first (each like a read_file call: its row, its caps)."""
        core = self.core
        core.journal.record_prompt(text)
        if not core.history or core.history[-1] != text:
            core.history.append(text)
        self.reset()
        if core.hooks.hooks or core.hook_runs:
            from dashfloat.agent._extensions import prompt_submitted  # hooks (ADR 0088)

            if prompt_submitted(core, text):
                self.held_prompt = text
                core.set_phase("running")
                return "hook"
        return self._send_prompt(text)

    def prompt_hooked(self, ran: HooksRan | None) -> At:
        """A hook run the held prompt waits for answered (None: the executor died): wait on, send the prompt with
        what its hooks added, or give it back (one blocked it, or nothing could run them)."""
        from dashfloat.agent._extensions import hooks_ran

        core, text = self.core, self.held_prompt or ""
        said = hooks_ran(core, ran) if ran is not None else None
        if said is not None:
            self.hook_block = self.hook_block or (said.reason if said.blocked else "")
            self.hook_context += [said.context] if said.context else []
        if ran is None:
            core.hook_runs.clear()
            self.hook_block = "the executor died before the prompt's hooks ran; send it again"
        elif core.hook_runs:
            return "hook"
        if self.hook_block:
            core.ui(SystemEntry(text=f"not sent: {self.hook_block}", level="error"))
            core.ui(PromptRestored(text=text))
            return self.end("stopped")
        core.pending_context += self.hook_context
        return self._send_prompt(text)

    def _send_prompt(self, text: str) -> At:
        """The prompt goes to the model with what waited for it, once its @mentions are read."""
        core = self.core
        context, core.pending_context = core.pending_context, []
        prompt = "\n\n".join([*context, text])
        found = mentions.mentioned(text)
        if not found.paths:
            core.record(ChatMessage(role="user", content=prompt))
            return "episode"
        self.attaching = mentions.Attaching(text, context, prompt, found.paths, window=core.window.size)
        core.set_phase("running")
        if found.beyond:
            limit = mentions.MENTIONS_MAX_PER_PROMPT
            note = f"only the first {limit} mentions are attached ({found.beyond} more are not)"
            core.ui(SystemEntry(text=note, level="warning"))
        return self._attach_next()

    def _attach_next(self) -> At:
        """Read the next mention, or send the prompt with every attachment once none is left."""
        attaching = self.attaching
        assert attaching is not None
        self.send(attaching.read_next(self.core.mention_ids, self.core.cwd))
        if not attaching.done:
            return "mention"
        self.attaching = None
        self.core.record(ChatMessage(role="user", content=attaching.message()))
        return "episode"

    def attached(self, result: ToolResult) -> At:
        """The read of the current mention is back: its row, its part of the prompt, then the next one."""
        assert self.attaching is not None and self.attaching.call is not None
        self.send(self.attaching.read(result))
        return self._attach_next()

    def run_user_command(self, command: str) -> At:
        """!command: the user's own command through the executor (same sandbox and cwd), no confirmation."""
        core = self.core
        core.user_commands_run += 1
        call_id = f"user-command-{core.user_commands_run}"
        self.user_command = (call_id, command)
        core.set_phase("running")
        args = ExecuteCommandArgs(command=command)
        core.ui(ToolCallShown(id=call_id, args=args))
        # Typed by a person: the network as for a command approved with a key.
        policy = SandboxPolicy(mode="workspace-write", network=True)
        core.outbox.append(("executor", RunTool(call_id=call_id, args=args, sandbox=policy)))
        return "user_command"

    def user_command_done(self, result: ToolResult) -> At:
        """Its row; its output goes to the model with the next prompt."""
        from dashfloat.agent._summary import command_context  # loaded by the result's row already

        core = self.core
        assert self.user_command is not None
        call_id, command = self.user_command
        self.user_command = None
        core.ui(result_row(call_id, "execute_command", result))
        core.user_reply = ToolReply(call_id=call_id, name="execute_command", result=result)  # what /last shows
        core.pending_context.append(command_context(command, result))
        core.ui(SystemEntry(text="the command's output goes to the model with your next prompt"))
        core.set_phase("idle")
        return "nothing"

    # ------------------------------------------------------------ the model request

    def episode(self) -> At:
        """An episode boundary: one more model request in this turn (compacted if need be: once per boundary)."""
        self.episodes += 1
        self.summarised = False
        self.core.set_phase("streaming", announce=True)
        return "request"

    def request(self) -> At:
        """Send the request, compacting it first when it would fill the window past the threshold; before the window
        is known, send it only when no compaction could shrink it (its answer is held: ``Window.held``)."""
        core = self.core
        core.set_phase("streaming")
        size = core.window.size
        tokens = estimate(core.request_messages(), core.calibration)
        if size is None:
            if not core.window.discovering:
                return self._send_request(tokens)  # nothing to count against
            if sends_before_window(core.chat()[0], tokens):
                self._send_request(tokens)  # no compaction could help it: its answer waits for the window instead
                core.window.held = []
                return "stream"
            return "window"  # WindowFound continues; each discovery request has a short timeout
        if tokens >= core.threshold():
            tokens = self._shrink(tokens)
            over = tokens >= core.threshold()
            if over and not self.summarised and self._start_summary("", "request"):
                return "summary"
        if tokens > hard_limit(size):
            return self._does_not_fit(tokens)
        return self._send_request(tokens)

    def _send_request(self, tokens: int) -> At:
        core = self.core
        core.window.held = None
        self.partial = []
        self.reasoning_chars = 0
        self.last_usage = None
        core.last_sent = core.request_messages()
        core.last_estimate = tokens
        core.start_stream(core.last_sent)
        core.ui(request_sent(core.provider.base_url, core.last_sent, core.calibration))  # fill and wait (ADR 0092)
        return "stream"

    def window_found(self) -> At | None:
        """The window came: the request that waited for it goes on, or an answer held for it is let through or
        refused."""
        if self.waiting == "window":
            return "request"
        if self.core.window.held is not None:
            return self.release_held()
        return None

    def release_held(self) -> At | None:
        """The window came while a request sent before it streams: refuse it as ``request`` would have (it could not
        be compacted), or let its answer through: each held message then moves the turn as it would have."""
        core = self.core
        size = core.window.size
        assert size is not None
        held, core.window.held = core.window.held or [], None
        if core.last_estimate > hard_limit(size):
            core.outbox.append(("llm", CancelStream(request_id=core.request_id)))  # its last word is not waited for
            return self._does_not_fit(core.last_estimate)
        for message in held:
            core.on_llm(message)
        return None

    def _does_not_fit(self, tokens: int) -> At:
        size = self.core.window.size
        assert size is not None
        self.core.ui(
            SystemEntry(
                text=f"the conversation (~{tokens_text(tokens)} tokens) does not fit the model's context window "
                f"({tokens_text(size)}) even after compaction: /clear starts a fresh session, or use a "
                "model with a larger window (context_window in config.toml if the server's is larger)",
                level="error",
            )
        )
        return self.end("failed")

    # ------------------------------------------------------------ compaction (_compaction)

    def _shrink(self, tokens: int) -> int:
        """Stage 1 (at once): cut old tool results while the request stays above the threshold; the new estimate."""
        from dashfloat.agent._compactor import entries, shrink  # the first compaction imports it (most never do)

        core = self.core
        chat, back = core.chat()
        shrunk = shrink(chat, core.measure, core.threshold())
        if shrunk is None:
            return tokens
        what = f"shrank {shrunk.results} old tool results"
        core.replace_conversation(entries(shrunk.conversation, back), what, tokens, shrunk.tokens)
        return shrunk.tokens

    def _start_summary(self, focus: str, then: Then) -> bool:
        """Stage 2: ask the model for a summary of the older part (False: nothing to summarise)."""
        from dashfloat.agent._compactor import summary_flow

        core = self.core
        size = core.window.size
        if size is None:
            return False
        chat, back = core.chat()
        raw = lambda kept: estimate(core.request_messages(kept), None)  # noqa: E731
        flow = summary_flow(chat, back, raw, core.measure, core.threshold(), hard_limit(size), focus, then)
        if flow is None:
            return False
        self.summarised = True  # a plan was found: not tried again at this boundary, even when it cannot be sent
        if not flow.sendable:
            return False
        self.summary = flow
        core.set_phase("compacting")
        core.start_stream(core.request_messages(flow.asked))
        return True

    def compact_now(self, focus: str) -> At:
        """/compact [focus]: both stages now, whatever the fill."""
        core = self.core
        self.reset()
        if core.window.size is None:
            core.ui(SystemEntry(text="/compact waits for the context window to be known: try again in a moment"))
            return "nothing"
        self._shrink(estimate(core.request_messages(), core.calibration))
        if self._start_summary(focus, "idle"):
            return "summary"
        core.ui(SystemEntry(text="nothing older than the recent turns to summarise"))
        return "nothing"

    def summary_done(self, summary: str, failure: str) -> At:
        """The summary came (or failed): the conversation compacted (or not), then the request, or idle (/compact)."""
        core = self.core
        flow, self.summary = self.summary, None
        then: Then = flow.then if flow is not None else "idle"
        if flow is not None and summary.strip():
            before = estimate(core.request_messages(), core.calibration)
            compacted, what = flow.compacted(summary)
            after = estimate(core.request_messages(compacted), core.calibration)
            core.replace_conversation(compacted, what, before, after)
        elif failure == "cancelled":
            core.ui(SystemEntry(text="compaction cancelled: the conversation is unchanged"))
            if then == "idle":
                return self._go_idle()
            self.stop.set(CANCELLED, "cancelled")
            return self.end("cancelled")
        else:
            why = f"it failed: {failure}" if failure else "it came back empty"
            text = f"the summary could not be made ({why}): the conversation is unchanged"
            core.ui(SystemEntry(text=text, level="warning"))
        return self._go_idle() if then == "idle" else "request"

    def _go_idle(self) -> At:
        self.reset()
        self.core.ui(PhaseChanged(phase="idle"))
        return "nothing"

    # ------------------------------------------------------------ the answer

    def on_llm(self, message: LlmToAgent) -> None:
        """A message of the request in flight (the core dropped those of earlier ones)."""
        core = self.core
        if core.window.held is not None and self.waiting == "stream":
            core.window.held.append(message)  # sent before the window was known: acted on once it is
            return
        if self.waiting == "summary":
            from dashfloat.agent._compactor import Summarised  # a summary in flight imported it

            assert self.summary is not None
            match self.summary.on_llm(message):
                case Summarised(summary=summary, failure=failure):
                    event: Event = "StreamDone" if isinstance(message, StreamDone) else "StreamFailed"
                    self.move(event, self.summary_done(summary, failure))
                case SystemEntry() as status:
                    core.ui(status)
            return
        if self.waiting != "stream":
            return
        match message:
            case ContentDelta(text=text):
                self.partial.append(text)
                if self.stop.result is None:
                    core.ui(TokenReceived(text=text))
            case ReasoningDelta(text=text):
                self.reasoning_chars += len(text)
                if self.stop.result is None:
                    core.ui(ReasoningReceived(text=text))
            case StreamStatus(text=text, level=level):
                core.ui(SystemEntry(text=text, level=level))
            case StreamDone():
                self.move("StreamDone", self.stream_done(message))
            case StreamFailed(kind=kind, message=text, content=content, tool_calls=calls):
                self.move("StreamFailed", self.stream_failed(kind, text, content, calls))
            case WindowFound() | PromptProgress():
                pass  # the core takes them
            case _:
                assert_never(message)

    def stream_done(self, done: StreamDone) -> At:
        """The answer: recorded, then its calls; an empty one ends the turn (or is read as "context exceeded")."""
        core = self.core
        self.last_usage = done.usage
        if done.usage is not None:
            core.ui(UsageShown(usage=done.usage, request=True))  # as it comes: a headless budget is checked mid-turn
        if done.usage is not None and done.usage.prompt_tokens > 0:
            core.estimates.append((core.last_estimate, done.usage.prompt_tokens))
            core.calibration = calibrate(core.last_sent, done.usage.prompt_tokens)
        if not done.content and not done.tool_calls:
            window = core.window.size or 0
            suspect = window and fill_percent(core.last_estimate, window) >= EMPTY_ANSWER_SUSPECT_PERCENT
            retried = self._context_exceeded("an empty answer to a large request", "", []) if suspect else None
            if retried is not None:
                return retried
            if self.reasoning_chars:
                # Seen with local reasoning models whose chat template never closes the thinking block.
                text = (
                    f"the model only reasoned ({self.reasoning_chars} characters) and gave no answer text: "
                    "ask again, or check the server's reasoning settings"
                )
                core.ui(SystemEntry(text=text, level="warning"))
            else:
                core.ui(SystemEntry(text="[model returned nothing]"))
            return self.end(self.stop.outcome)
        calls = self._unique_ids(done.tool_calls)
        self._record_assistant(done.content, calls, done)
        if done.finish_reason == "length":
            text = "the answer was cut off: the model hit its output limit (finish_reason: length)"
            core.ui(SystemEntry(text=text, level="warning"))
        return self._begin_calls(calls)

    def stream_failed(self, kind: StreamFailureKind, text: str, content: str, calls: list[AssembledCall]) -> At:
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
            self.core.ui(SystemEntry(text="cancelled"))
        else:
            self.stop.set(ToolFailed(error=f"not run: the stream failed ({kind})"), "failed")
            self.core.ui(SystemEntry(text=text, level="error"))
        return self._begin_calls(calls)

    def _context_exceeded(self, kind: str, content: str, calls: list[AssembledCall]) -> At | None:
        """The provider said the request was too large: compact and retry once (None: not handled here)."""
        core = self.core
        size = core.window.size
        if content or calls or self.stop.result is not None or size is None:
            return None
        if self.exceeded_retried:
            core.ui(
                SystemEntry(
                    text="the provider still says the conversation exceeds the model's context window after "
                    "compacting it: /clear starts a fresh session; if the server's window is smaller than "
                    f"{tokens_text(size)}, set context_window in config.toml",
                    level="error",
                )
            )
            return self.end("failed")
        self.exceeded_retried = True
        sent = core.last_estimate
        core.window.shrink_to(sent)  # the server's real window is at most what we sent
        text = (
            f"the provider says the conversation exceeds the model's context window ({kind}): "
            "compacting and retrying once"
        )
        core.ui(SystemEntry(text=text, level="warning"))
        core.ui(core.ready_message())
        self.summarised = False
        self._shrink(sent)
        return "summary" if self._start_summary("", "retry") else "request"

    def _unique_ids(self, calls: list[AssembledCall]) -> list[AssembledCall]:
        """Call ids unique in the whole conversation: a provider without ids gets synthesized ones
        (``call_0_0``) that would repeat in every episode, and a repeated id confuses providers."""
        seen = {r.id for m in self.core.conversation if isinstance(m, ChatMessage) for r in m.tool_calls or []}
        unique: list[AssembledCall] = []
        for call in calls:
            if call.id in seen:
                call = msgspec.structs.replace(call, id=f"{call.id}_r{self.core.request_id}_{len(unique)}")
            seen.add(call.id)
            unique.append(call)
        return unique

    def _record_assistant(self, content: str, calls: list[AssembledCall], done: StreamDone | None = None) -> None:
        """The answer joins the conversation, with the reasoning the stream kept for it (ADR 0077)."""
        tool_calls = [_canonical(call) for call in calls] or None
        reasoning = done.reasoning if done is not None else ""
        message = ChatMessage(
            role="assistant",
            content=content or None,
            tool_calls=tool_calls,
            reasoning=reasoning or None,
            reasoning_field=done.reasoning_field if done is not None and reasoning else None,
            reasoning_details=done.reasoning_details if done is not None and done.reasoning_details else None,
        )
        self.core.record(message)

    def _begin_calls(self, calls: list[AssembledCall]) -> At:
        checked, looping = repeated_calls(calls, self.core.conversation)  # loops cut early (ADR 0079)
        if looping is not None and self.stop.result is None:
            self.stop.set(ToolFailed(error=looping), "limit")  # the model reads it as each call's result
            self.core.ui(SystemEntry(text=looping.removeprefix("not run: "), level="warning"))
        self.calls = CallsFlow(checked, self.stop, self.core)
        return "calls"

    def calls_done(self) -> At:
        """The answer's calls are all answered: the next episode, or the turn's end."""
        if self.stop.result is not None:
            return self.end(self.stop.outcome)
        if not self.calls.calls:
            return self.end("completed")
        if self.core.shutting_down:
            return self.end("stopped")
        if self.episodes >= MAX_EPISODES_PER_TURN:
            text = f"stopped after {MAX_EPISODES_PER_TURN} model requests in one turn; send a prompt to let it continue"
            self.core.ui(SystemEntry(text=text, level="warning"))
            return self.end("limit")
        return "episode"

    # ------------------------------------------------------------ /undo and /rewind (_restore)

    def start_restore(self, prompt: int | None, session_id: str) -> At:
        """/undo (``prompt`` None) or /rewind: plan it, then ask the executor for the reverse preview."""
        from dashfloat.agent._restore import begin

        core, journal = self.core, self.core.journal
        prompts, store = core.prompts(), journal.checkpoint_store
        flow = begin(
            prompt,
            session_id,
            journal.session_id,
            prompts,
            core.undo_log,
            core.cwd,
            store,
            core.next_ref,
            core.restoring,
        )
        if isinstance(flow, list):
            core.outbox += flow  # refused, or nothing to undo
            return "nothing"
        self.restore = flow
        core.set_phase("running")
        return self.restore_step(flow.start())

    def restore_step(self, out: Sequence[tuple[Dest, Message]]) -> At:
        """Send what the restore flow asks for; when it is over, record it and go idle."""
        core, flow = self.core, self.restore
        assert flow is not None
        for dest, message in out:
            if isinstance(message, ConfirmRequested):
                core.set_phase("confirming")
            elif dest == "executor":
                core.set_phase("running")
            core.outbox.append((dest, message))
        if flow.ended is None:
            return "restore"
        self.restore = None
        if flow.applied:
            if flow.text is None:
                core.journal.record_undone(list(flow.plan.turns))
                core.undo_log.undone(flow.plan.turns)
            else:
                kept = flow.first_turn - 1
                core.journal.record_rewind(kept)
                core.undo_log.rewound(kept)
                core.truncate(kept)
                core.show_context()  # the shorter conversation is what the next request carries
                core.ui(PromptRestored(text=flow.text))
        core.ui(flow.ended)
        core.set_phase("idle")
        return "nothing"

    # ------------------------------------------------------------ Esc, a worker's death, the end

    def cancel(self) -> tuple[At | None, Out]:
        """Esc: stop the stream, reject-and-stop a confirmation, or kill the running command (where the turn goes,
        and what to send and record first)."""
        core = self.core
        match self.waiting:
            case "stream" if core.window.held is not None:
                # Nothing of its answer was shown or run: the turn ends as a wait for the window does.
                core.window.held = None
                core.outbox.append(("llm", CancelStream(request_id=core.request_id)))
                return self.end("cancelled"), []
            case "stream" | "summary":
                self.stop.set(CANCELLED, "cancelled")
                core.outbox.append(("llm", CancelStream(request_id=core.request_id)))
                return self.waiting, []  # its last word ends it
            case "window":
                return self.end("cancelled"), []
            case "preview" | "confirm" | "tool":
                return self.calls.cancel(self.waiting)
            case "restore":
                return (self.restore_step(self.restore.cancel()) if self.restore is not None else None), []
            case "user_command":
                if self.user_command is not None:
                    core.outbox.append(("executor", CancelTool(call_id=self.user_command[0])))
                return "user_command", []  # its result ends it
            case "hook":  # the prompt's hooks run (ADR 0088): nothing was sent yet
                core.ui(SystemEntry(text="not sent: its hooks were still running; the prompt is back"))
                core.ui(PromptRestored(text=self.held_prompt or ""))
                return self.end("cancelled"), []
            case "mention":
                # Nothing was sent yet: the prompt goes back into the input, a !command's output back to waiting.
                if self.attaching is not None:
                    core.pending_context = [*self.attaching.context, *core.pending_context]
                    core.ui(SystemEntry(text="not sent: reading its @mentions was cancelled; the prompt is back"))
                    core.ui(PromptRestored(text=self.attaching.text))
                return self.end("cancelled"), []
            case "nothing":
                return (self.end("cancelled") if core.phase != "idle" else None), []
            case _:
                assert_never(self.waiting)

    def llm_died(self, reason: str) -> None:
        """The LLM process died mid-request: the summary failed, or the stream (its calls are not run)."""
        if self.waiting == "summary":
            self.move("llm died", self.summary_done("", f"the model stream process died ({reason})"))
        elif self.waiting == "stream":
            text = f"the model stream process died ({reason}); a fresh one will serve the next request"
            self.move("llm died", self.stream_failed("crashed", text, "", []))

    def executor_died(self, reason: str) -> None:
        """The executor died: what it was doing for the turn becomes an error result."""
        failed = ToolFailed(error=f"executor crashed: {reason}")
        if self.waiting in ("preview", "tool"):  # a pending confirmation's digest stays valid for the fresh one
            self.move("executor died", *self.calls.executor_died(reason))
        elif self.waiting == "restore" and self.restore is not None:
            self.move("executor died", self.restore_step(self.restore.executor_died(reason)))
        elif self.waiting == "user_command":
            self.move("executor died", self.user_command_done(failed))
        elif self.waiting == "hook":
            self.move("executor died", self.prompt_hooked(None))
        elif self.waiting == "mention" and self.attaching is not None and self.attaching.call is not None:
            self.move("executor died", self.attached(failed))

    def end(self, outcome: Outcome) -> At:
        """The turn ends: its usage kept and shown, then idle."""
        core = self.core
        if self.last_usage is not None:
            core.ui(UsageShown(usage=self.last_usage))
            core.turn_usage.append(self.last_usage)
            core.journal.record_usage(len(core.turn_usage), self.last_usage)
        elif core.last_estimate:
            # A provider that reports no usage: the status bar shows the estimate /usage gives, not 0 forever.
            core.show_context()
        core.ui(TurnEnded(outcome=outcome))
        if core.hooks.hooks:
            from dashfloat.agent._extensions import turn_stopped  # Stop hooks (ADR 0088): they report, after the end

            turn_stopped(core, outcome)
        self.reset()
        core.ui(PhaseChanged(phase="idle"))
        return "nothing"
