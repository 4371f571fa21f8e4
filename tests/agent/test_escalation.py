"""Issue 35: a command the sandbox refused is offered one re-run with what was refused, on a keypress only; headless
never is (the core's state machine with a scripted executor; the real sandbox's side: tests/executor/
test_registry_proxy.py)."""

from __future__ import annotations

from dashfloat.agent import AgentCore, AgentOptions, MemoryJournal, provider_message
from dashfloat.agent._decide import ESCALATION_NO_ALWAYS, escalated_policy, escalation
from dashfloat.protocol import (
    CapturedOutput,
    CommandExited,
    ConfirmRequested,
    DecideConfirmation,
    Message,
    ProviderConfig,
    RunTool,
    SandboxGrant,
    SandboxPolicy,
    SandboxState,
    StreamDone,
    SubmitPrompt,
    ToolFinished,
)
from dashfloat.tool_args import assemble

PROVIDER = ProviderConfig(name="test", base_url="http://127.0.0.1:9/v1", model="m")
GRANT = SandboxGrant(refused="writing /h/.npm/_cacache: outside …", writable=["/h/.npm"])
REFUSED = CommandExited(
    exit_code=1, output=CapturedOutput(output="npm error EROFS\n[sandbox refused: …]", truncated=False, total_bytes=9)
)
PASSED = CommandExited(exit_code=0, output=CapturedOutput(output="added 1 package", truncated=False, total_bytes=15))


def core_with(escalation: bool) -> AgentCore:
    sandbox = SandboxState(mode="workspace-write", network_mode="registries", escalation=escalation)
    return AgentCore(AgentOptions(provider=PROVIDER, cwd="/work", approval="all", sandbox=sandbox), MemoryJournal())


def take(core: AgentCore) -> list[Message]:
    out = [m for _, m in core.outbox]
    core.outbox.clear()
    return out


def run_refused(core: AgentCore) -> tuple[RunTool, list[Message]]:
    """A turn whose model runs `npm ci` (allowed by --approve all, so unasked) and the sandbox refuses a write."""
    core.on_ui(SubmitPrompt(text="install"))
    calls = [assemble("c", "execute_command", {"command": "npm ci"})]
    core.on_llm(StreamDone(request_id=core.request_id, content="", tool_calls=calls, finish_reason="tool_calls"))
    [first] = [m for m in take(core) if isinstance(m, RunTool)]
    core.on_executor(ToolFinished(call_id="c", result=REFUSED, refused=GRANT))
    return first, take(core)


def test_one_key_reruns_exactly_the_refused_command_with_the_grant() -> None:
    core = core_with(escalation=True)
    first, out = run_refused(core)
    assert not first.sandbox.network and first.sandbox.writable == []  # unasked: the registries only, no grant
    [ask] = [m for m in out if isinstance(m, ConfirmRequested)]
    assert not [m for m in out if isinstance(m, RunTool)]  # never re-run without the key
    assert ask.lines[0] == f"the sandbox refused: {GRANT.refused}" and "/h/.npm writable" in ask.lines[1]
    assert ask.scope == "sandbox(npm write /h/.npm)" and core.phase == "confirming"
    core.on_ui(DecideConfirmation(ref=ask.ref, decision="approve"))
    [again] = [m for m in take(core) if isinstance(m, RunTool)]
    assert again.args == first.args and again.call_id == first.call_id
    assert again.sandbox == SandboxPolicy(writable=["/h/.npm"])
    # Refused again: the result is the model's, no second offer.
    core.on_executor(ToolFinished(call_id="c", result=REFUSED, refused=GRANT))
    out = take(core)
    assert not [m for m in out if isinstance(m, ConfirmRequested | RunTool)]
    assert "EROFS" in (provider_message(core.conversation[-1]).content or "")


def test_declined_the_model_reads_the_refused_result_and_nothing_reruns() -> None:
    core = core_with(escalation=True)
    _, out = run_refused(core)
    [ask] = [m for m in out if isinstance(m, ConfirmRequested)]
    core.on_ui(DecideConfirmation(ref=ask.ref, decision="reject"))
    out = take(core)
    assert not [m for m in out if isinstance(m, RunTool)]
    assert "[sandbox refused: …]" in (provider_message(core.conversation[-1]).content or "")


def test_headless_never_escalates_it_reports() -> None:
    core = core_with(escalation=False)
    _, out = run_refused(core)
    assert not [m for m in out if isinstance(m, ConfirmRequested | RunTool)]
    assert "[sandbox refused: …]" in (provider_message(core.conversation[-1]).content or "")


def test_esc_at_the_offer_stops_the_turn_with_the_refused_result() -> None:
    from dashfloat.protocol import Cancel

    core = core_with(escalation=True)
    run_refused(core)
    core.on_ui(Cancel())
    out = take(core)
    assert not [m for m in out if isinstance(m, RunTool)]
    assert "EROFS" in (provider_message(core.conversation[-1]).content or "")


def test_the_rerun_adds_the_network_where_it_was_refused() -> None:
    policy = escalated_policy(SandboxPolicy(writable=["/a"]), SandboxGrant(refused="x", writable=["/b"], network=True))
    assert policy == SandboxPolicy(network=True, writable=["/a", "/b"])


def test_status_shows_the_writable_paths_the_network_mode_and_the_allowlist() -> None:
    from dashfloat.protocol import ShowStatus, SystemEntry

    sandbox = SandboxState(
        mode="workspace-write", network_mode="registries", allow_domains=["pypi.org"], writable=["/h/.npm"]
    )
    core = AgentCore(AgentOptions(provider=PROVIDER, cwd="/work", sandbox=sandbox), MemoryJournal())
    take(core)
    core.on_ui(ShowStatus())
    [status] = [m.text for m in take(core) if isinstance(m, SystemEntry)]
    assert "writable: the working directory (not .git's hooks, config, info), a private /tmp, /h/.npm" in status
    assert "(--network registries); allowed hosts: pypi.org" in status


def test_always_grants_the_program_for_the_session_and_ask_revokes_it() -> None:
    from dashfloat.protocol import AssembledCall, ExecuteCommandArgs, SetApproval

    core = core_with(escalation=True)
    _, out = run_refused(core)
    [ask] = [m for m in out if isinstance(m, ConfirmRequested)]
    core.on_ui(DecideConfirmation(ref=ask.ref, decision="approve_always"))
    out = take(core)
    [again] = [m for m in out if isinstance(m, RunTool)]
    assert again.sandbox.writable == ["/h/.npm"]
    assert [r.rule.text() for r in core.rules.session] == ["sandbox(npm write /h/.npm)"]
    core.on_executor(ToolFinished(call_id="c", result=PASSED))
    core.on_llm(StreamDone(request_id=core.request_id, content="ok", tool_calls=[], finish_reason="stop"))
    take(core)

    def next_run(command: str, call_id: str) -> RunTool:
        core.on_ui(SubmitPrompt(text="again"))
        calls = [assemble(call_id, "execute_command", {"command": command})]
        core.on_llm(StreamDone(request_id=core.request_id, content="", tool_calls=calls, finish_reason="tool_calls"))
        [run] = [m for m in take(core) if isinstance(m, RunTool)]
        core.on_executor(ToolFinished(call_id=call_id, result=PASSED))
        core.on_llm(StreamDone(request_id=core.request_id, content="ok", tool_calls=[], finish_reason="stop"))
        take(core)
        return run

    assert next_run("npm install left-pad", "c2").sandbox.writable == ["/h/.npm"]  # npm: granted, unasked
    assert next_run("cargo build", "c3").sandbox.writable == []  # another program: not
    core.on_ui(SetApproval(mode="ask"))  # /approve ask revokes the session's grants, this one too
    take(core)
    core.on_ui(SetApproval(mode="all"))
    take(core)
    assert next_run("npm ci", "c4").sandbox.writable == []
    # A line that starts with a wrapper or shell syntax names no program: no "always" for it.
    call = AssembledCall(
        id="x", name="execute_command", arguments="{}", args=ExecuteCommandArgs(command="env A=1 npm ci")
    )
    offer = escalation(1, call, GRANT)
    assert offer.scope == "" and offer.no_scope == ESCALATION_NO_ALWAYS
