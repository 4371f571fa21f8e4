"""One answer's tool calls, in its order: each shown, decided (``_decide.decide``), previewed and asked where it must
be, run, and answered in the conversation; once the turn stops, the rest are answered unrun (the rows a call shows,
live: ``shown``, ``result_row``, ``not_run_row``).

Pure, as ``_restore.RestoreFlow`` is: each method returns where the turn goes next (a ``_turn.At``) and what to
send and to record first (``Out``, in order); ``AgentCore`` sends, records, and moves the turn as ``_turn.TURN``
allows. The mode and the rules are read from the session at each call: a /approve or an "always" mid-turn counts
for the next call.
"""

from __future__ import annotations

import collections
import os
from typing import TYPE_CHECKING, Final, Literal, Protocol, assert_never

import msgspec

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
    escalated_policy,
    escalates,
    escalation,
    grant_rules,
    ruled_policy,
)
from dashfloat.catalogue import UNNAMED_CALL
from dashfloat.permissions import SourcedRule, call_scope
from dashfloat.protocol import (
    AgentReady,
    ApprovalMode,
    AssembledCall,
    CancelTool,
    ChangeRecorded,
    Decision,
    EditFileArgs,
    ExecuteCommandArgs,
    MalformedCall,
    Message,
    PreviewReady,
    PreviewTool,
    ReadFileArgs,
    RunTool,
    SandboxGrant,
    SandboxPolicy,
    SandboxState,
    SystemEntry,
    ToolArgs,
    ToolCallShown,
    ToolCancelled,
    ToolFailed,
    ToolFinished,
    ToolRejected,
    ToolReply,
    ToolResult,
    ToolResultShown,
    WriteFileArgs,
)

if TYPE_CHECKING:
    from dashfloat.agent._journal import Journal
    from dashfloat.agent._rules import Rules
    from dashfloat.agent._turn import At
    from dashfloat.hooks import HookSet
    from dashfloat.skills import Skill

Outcome = Literal["completed", "failed", "cancelled", "stopped", "limit"]
Outgoing = tuple[Literal["ui", "executor"], Message] | ToolReply
Out = list[Outgoing]
"""What to send (to the UI, to the executor) and what to record in the conversation (a ``ToolReply``), in order."""

NOT_RUN_ROWS_MAX: Final = 3
"""Calls a stopped turn leaves unrun are shown a row each up to this many; more are one row that counts them (an
answer stopped at its 65th call printed 65 identical rows)."""

NOT_RUN_CUT = " while this call was arriving"
CUT_RECORDED = (
    ". It is recorded with the arguments {} and nothing of it ran: call it again, whole, if it is still needed"
)

REJECTED: Final = ToolRejected()
CANCELLED: Final = ToolCancelled()


class Session(Protocol):
    """What the calls read of the agent's session (``AgentCore`` is one)."""

    approval: ApprovalMode
    rules: Rules
    sandbox: SandboxState
    read_only_commands: bool
    cwd: str
    journal: Journal
    """Where a write's checkpoint goes (``checkpoint_store``)."""
    hooks: HookSet
    """The PreToolUse and PostToolUse hooks each call runs with (ADR 0088)."""
    skills: list[Skill]
    """The skills found at start: a read of a user skill's SKILL.md is answered from its copy (ADR 0088)."""

    def next_ref(self) -> int: ...

    def ready_message(self) -> AgentReady: ...


class Stop:
    """Why the turn stops (the result each call it leaves unrun gets) and how it ends: the first reason wins."""

    def __init__(self) -> None:
        self.result: ToolResult | None = None
        self.outcome: Outcome = "completed"

    def set(self, result: ToolResult, outcome: Outcome) -> None:
        if self.result is None:
            self.result = result
            self.outcome = outcome


def change_record(call: AssembledCall, approval: Approval, summary: str, diff: list[str]) -> ChangeRecorded:
    """What the UI shows once ``call``'s mutation lands: what changed and who let it run."""
    args = call.args
    return ChangeRecorded(
        id=call.id,
        name=call.name,
        path=args.path if isinstance(args, WriteFileArgs | EditFileArgs) else "",
        summary=summary,
        approved_by=approval[0],
        rule=approval[1],
        diff=diff if approval[0] != "keypress" or not isinstance(args, ExecuteCommandArgs) else [],
    )


def shown(call: AssembledCall) -> ToolArgs | MalformedCall:
    """What a tool row shows of ``call``: its arguments, or what the model wrote when they did not parse."""
    if call.args is not None:
        return call.args
    if call.cut:  # what had come, nothing when nothing had (not the recorded {})
        return MalformedCall(name=call.name, arguments=call.written, cut=True)
    return MalformedCall(name=call.name, arguments=call.written or call.arguments)


def result_row(call_id: str, name: str, result: ToolResult) -> ToolResultShown:
    """The outcome row of call ``call_id``: its status word and excerpt."""
    from dashfloat.agent._summary import result_shown  # imported with the first result shown (ADR 0053)

    return result_shown(call_id, name, result)


def not_run(call: AssembledCall, stopped: ToolResult) -> ToolResult:
    """The result of ``call``, not run because the turn stopped: a call the failure cut off says what had come
    (the conversation keeps it with the arguments ``{}``, the only JSON a provider takes back)."""
    if call.cut and isinstance(stopped, ToolFailed):
        return ToolFailed(error=f"{stopped.error}{NOT_RUN_CUT}: {call.error}{CUT_RECORDED}")
    return stopped


def not_run_row(names: list[str], why: str, cut: bool) -> str:
    """The one row for calls a stopped turn left unrun: how many, why, of which tools."""
    counts = collections.Counter(name or UNNAMED_CALL for name in names)
    tools = ", ".join(f"{count} {name}" for name, count in counts.most_common())
    return f"{len(names)} tool calls not run, {why}: {tools}{' (the last one cut off)' if cut else ''}"


class CallsFlow:
    """The calls of one answer; ``next`` is the one being handled."""

    def __init__(self, calls: list[AssembledCall], stop: Stop, session: Session) -> None:
        self.calls = calls
        self.next = 0
        self.stop = stop
        self.session = session
        self.approved: Approval | None = None
        """A file mutation a rule or the mode lets run: previewed for the record, then run without asking."""
        self.change: ChangeRecorded | None = None
        """The record of the mutation running now, sent once it lands."""
        self.preview: PreviewReady | None = None
        """The preview the pending confirmation shows (what an approval runs: its digest)."""
        self.ref = 0
        """The pending confirmation's ref."""
        # the sandbox's escalation (issue 35, ADR 0082): what the current command ran as, and what it was refused
        self.ran_as: tuple[ToolArgs | None, SandboxPolicy] = (None, SandboxPolicy())
        self.escalating: tuple[SandboxGrant, ToolFinished] | None = None
        self.escalated = False
        """The current command was re-run with a grant already: it is not offered another."""

    @property
    def current(self) -> AssembledCall:
        return self.calls[self.next]

    def step(self) -> tuple[At, Out]:
        """The next call: its row, then answered at once ("calls": the next one), sent to be previewed ("preview") or
        run ("tool"); "calls_done" once none is left or the turn stopped with more than NOT_RUN_ROWS_MAX left."""
        stopped = self.stop.result
        if self.next >= len(self.calls):
            return "calls_done", []
        if stopped is not None and len(self.calls) - self.next > NOT_RUN_ROWS_MAX:
            return "calls_done", self._not_run_rest(stopped)
        call = self.current
        out: Out = [("ui", ToolCallShown(id=call.id, args=shown(call)))]
        if stopped is not None:
            return "calls", out + self._finish(not_run(call, stopped))
        session = self.session
        if isinstance(call.args, ReadFileArgs) and session.skills:
            from dashfloat.skills import user_skill_read  # skills (ADR 0088): a user's lies outside the workspace

            read = user_skill_read(session.skills, call.args)
            if read is not None:
                return "calls", out + self._finish(read)
        decision = decide(
            call, session.rules.all(), session.approval, session.sandbox, session.read_only_commands, session.cwd
        )
        match decision:
            case Fail(error=error) | Deny(error=error) | Refuse(error=error):
                return "calls", out + self._finish(ToolFailed(error=error))
            case RunUnasked():
                return "tool", out + self._run(None, by_keypress=False)
            case RunReadOnly(args=args):
                return "tool", out + self._run(None, by_keypress=False, args=args, read_only=True)
            case RunAllowed(args=args, approval=approval):
                assert isinstance(call.args, ExecuteCommandArgs)
                self.change = change_record(call, approval, f"$ {call.args.command}", [])
                return "tool", out + self._run(None, by_keypress=False, args=args)
            case PreviewThenRun() | Ask():
                assert call.args is not None  # decide fails a call whose arguments did not parse
                self.approved = decision.approval if isinstance(decision, PreviewThenRun) else None
                return "preview", [*out, ("executor", PreviewTool(call_id=call.id, args=call.args))]
            case _:
                assert_never(decision)

    def previewed(self, preview: PreviewReady) -> tuple[At, Out]:
        """The preview is back: the call fails, runs (a rule or the mode approved it), or is asked."""
        if preview.error is not None:
            return "calls", self._finish(ToolFailed(error=preview.error))
        approved, self.approved = self.approved, None
        if not asks_after_preview(approved, preview):
            assert approved is not None
            self.change = change_record(self.current, approved, preview.summary, preview.lines)
            return "tool", self._run(preview.digest, by_keypress=False)
        self.preview = preview  # a protected write is asked whatever allowed it
        self.ref = self.session.next_ref()
        return "confirm", [("ui", confirmation(self.ref, self.current, preview))]

    def decided(self, decision: Decision) -> tuple[At, Out]:
        """The user answered the confirmation: run what was previewed (with its digest), or reject the call."""
        if self.escalating is not None:
            return self._escalation_decided(decision)
        call, preview = self.current, self.preview
        assert call.args is not None and preview is not None  # only a parsed, previewed call is confirmed
        if decision in ("approve", "approve_always"):
            summary = f"$ {call.args.command}" if isinstance(call.args, ExecuteCommandArgs) else preview.summary
            self.change = change_record(call, ("keypress", ""), summary, preview.lines)
        match decision:
            case "approve":
                return "tool", self._run(preview.digest, by_keypress=True)
            case "approve_always":
                out: Out = []
                scope = call_scope(call.args)
                if scope is not None:  # the UI offers no "always" without a scope; a stray one approves once
                    out += [("ui", self.session.rules.grant(scope)), ("ui", self.session.ready_message())]
                return "tool", out + self._run(preview.digest, by_keypress=True)
            case "reject":
                return "calls", self._finish(REJECTED)
            case "reject_stop":
                self.stop.set(REJECTED, "stopped")
                return "calls", self._finish(REJECTED)
            case _:
                assert_never(decision)

    def ran(self, finished: ToolFinished) -> tuple[At, Out]:
        """The call's result: answered in the conversation, and its change shown once it landed; a command the
        sandbox refused something is first offered a re-run with it (issue 35), where a person is there."""
        from dashfloat.agent._summary import result_status  # loaded by the result's row already

        if escalates(finished.refused, self.session.sandbox, self.ran_as[1], self.escalated):
            assert finished.refused is not None
            self.escalating = (finished.refused, finished)
            self.ref = self.session.next_ref()
            return "confirm", [("ui", escalation(self.ref, self.current, finished.refused))]

        change, self.change = self.change, None
        # hooks (ADR 0088): what they said for the user; what they added for the model goes with the result
        out: Out = [("ui", SystemEntry(text=notice, level="warning")) for notice in finished.hook_notices]
        out += self._finish(finished.result, finished.hook_context)
        if change is not None and result_status(finished.result) == "ok":
            landed = finished.checkpoint
            if landed is not None:  # the digests a headless run's result lists
                before = landed.before if landed.existed else None
                change = msgspec.structs.replace(change, before_sha256=before, after_sha256=landed.after)
            out.append(("ui", change))
        return "calls", out

    def cancel(self, waiting: Literal["preview", "confirm", "tool"]) -> tuple[At, Out]:
        """Esc: a call still to be asked is rejected and the turn stops; a running one is killed (its result comes)."""
        if self.escalating is not None:
            return self._escalation_decided("reject_stop")  # what it printed and was refused is its result
        if waiting == "tool":
            self.stop.set(CANCELLED, "cancelled")
            return "tool", [("executor", CancelTool(call_id=self.current.id))]
        self.stop.set(REJECTED, "stopped")
        return "calls", self._finish(REJECTED)

    def executor_died(self, reason: str) -> tuple[At, Out]:
        """The call being previewed or run fails (a pending confirmation's digest stays valid for the fresh one)."""
        return "calls", self._finish(ToolFailed(error=f"executor crashed: {reason}"))

    def _escalation_decided(self, decision: Decision) -> tuple[At, Out]:
        """The answer to an escalation: the exact command again with what was refused, or its refused result."""
        assert self.escalating is not None
        grant, refused = self.escalating
        self.escalating = None
        self.escalated = True
        if decision in ("approve", "approve_always"):
            args, policy = self.ran_as
            out: Out = []
            call = self.current
            assert isinstance(call.args, ExecuteCommandArgs)
            rules = grant_rules(call.args.command, grant) if decision == "approve_always" else []
            for rule in rules:  # "always for this program": session rules, revoked as the others are
                self.session.rules.session.append(SourcedRule(rule, "allow", "session"))
            if rules:
                said = ", ".join(rule.text() for rule in rules)
                text = f"{said}: for the rest of this session (/permissions to revoke)"
                out += [("ui", SystemEntry(text=text)), ("ui", self.session.ready_message())]
            return "tool", out + self._run(None, by_keypress=True, args=args, policy=escalated_policy(policy, grant))
        if decision == "reject_stop":
            self.stop.set(REJECTED, "stopped")
        return self.ran(refused)

    def _run(
        self,
        digest: str | None,
        by_keypress: bool,
        args: ToolArgs | None = None,
        read_only: bool = False,
        policy: SandboxPolicy | None = None,
    ) -> Out:
        call = self.current
        assert call.args is not None  # a call whose arguments did not parse never runs
        # Network only for a command a person just approved, unless the session enabled it (--network); a
        # read-only command run unasked gets the read-only sandbox too, so a mistake in the allowlist cannot write,
        # and an empty home, so a symlink in the tree cannot read the user's files to the model. ``policy``: an
        # escalation's (issue 35).
        policy = policy or SandboxPolicy(
            mode="read-only" if read_only else "workspace-write",
            network=not read_only and (by_keypress or self.session.sandbox.network),
            private_home=read_only,
        )
        ran = args if args is not None else call.args
        if not read_only and isinstance(ran, ExecuteCommandArgs):  # sandbox(PROGRAM …) rules (issue 35)
            home = os.environ.get("HOME") or os.path.expanduser("~")
            policy = ruled_policy(policy, self.session.rules.all(), ran.command, home)
        self.ran_as = (args, policy)
        run = RunTool(
            call_id=call.id,
            args=args if args is not None else call.args,
            expect_digest=digest,
            sandbox=policy,
            checkpoint_store=self.session.journal.checkpoint_store,
            hooks=self.session.hooks.for_tool(call.name, self.session.journal.session_id),
        )
        return [("executor", run)]

    def _finish(self, result: ToolResult, context: str = "") -> Out:
        """The current call answered with ``result`` (recorded, then its row); the next one becomes current."""
        call = self.current
        self.approved = None
        self.change = None
        self.escalated = False
        self.next += 1
        return [
            ToolReply(call_id=call.id, name=call.name, result=result, context=context),
            ("ui", result_row(call.id, call.name, result)),
        ]

    def _not_run_rest(self, stopped: ToolResult) -> Out:
        """The calls left when the turn stopped: each answered for the model, one row for all of them."""
        rest = self.calls[self.next :]
        out: Out = [ToolReply(call_id=call.id, name=call.name, result=not_run(call, stopped)) for call in rest]
        self.next = len(self.calls)
        self.approved = None
        self.change = None
        if isinstance(stopped, ToolFailed):
            why = stopped.error.removeprefix("not run: ")
        else:
            from dashfloat.agent._summary import result_status

            why = "you stopped the turn" if isinstance(stopped, ToolRejected) else result_status(stopped)
        text = not_run_row([call.name for call in rest], why, rest[-1].cut)
        out.append(("ui", SystemEntry(text=text, level="warning")))
        return out
