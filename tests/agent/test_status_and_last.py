"""/status is its own report (issue 37: it was /usage's alias) and /last the newest result in full."""

from __future__ import annotations

from dashfloat.agent._reports import StatusFacts, last_result, status_report
from dashfloat.command_env import describe_env
from dashfloat.protocol import (
    CapturedOutput,
    ChatMessage,
    CommandExited,
    ConversationEntry,
    LastResultShown,
    SandboxState,
    ShowLastResult,
    ShowStatus,
    SystemEntry,
    ToolReply,
    Usage,
)
from tests.agent.test_core_context import make_core, take


def facts(**fields: object) -> StatusFacts:
    base: dict[str, object] = {
        "provider": "openai",
        "base_url": "https://api.openai.com/v1",
        "model": "gpt-4o",
        "window_line": "context window: 128k tokens (known model)",
        "approval": "edits",
        "rules": 2,
        "sandbox": SandboxState(mode="workspace-write", network=True),
        "session_id": "abc123",
        "session_file": "/state/sessions/abc123.jsonl",
    }
    return StatusFacts(**{**base, **fields})  # type: ignore[arg-type]


def test_status_says_who_answers_what_runs_unasked_how_confined_and_which_session() -> None:
    report = status_report(facts(turn_usage=(Usage(total_tokens=1500), Usage(total_tokens=500))))
    assert report.splitlines() == [
        "provider: openai (https://api.openai.com/v1)",
        "model: gpt-4o",
        "context window: 128k tokens (known model)",
        "usage: 2.0k tokens in 2 turns (/usage: by turn)",
        "approval mode: edits, 2 permission rules (/permissions lists them) (Shift-Tab or /approve changes it)",
        "sandbox: workspace-write, network on",
        describe_env([], []),
        "session: abc123",
        "session file: /state/sessions/abc123.jsonl",
    ]


def test_status_names_an_unsandboxed_machine_a_new_session_and_the_lines_others_add() -> None:
    report = status_report(
        facts(
            sandbox=SandboxState(mode="off", unavailable="bwrap is not installed"),
            session_id="",
            session_file="",
            rules=0,
            jobs="jobs: 1 running (/jobs lists them)",
        )
    )
    assert "sandbox: NOT sandboxed (bwrap is not installed)" in report
    assert "session: none yet (saved with the first message)" in report and "session file" not in report
    assert "usage: no usage reported yet in this session" in report
    assert report.endswith("jobs: 1 running (/jobs lists them)")


def test_status_says_the_network_once_where_a_network_line_says_it() -> None:
    """Found in tmux: `sandbox: workspace-write, no network` above `network: package registries through the proxy`."""
    detail = "network: package registries through the proxy for commands run without a key"
    report = status_report(facts(sandbox=SandboxState(mode="workspace-write", network=False), network_detail=detail))
    assert "sandbox: workspace-write" in report.splitlines() and detail in report.splitlines()
    assert "no network" not in report


def test_the_core_answers_status_and_last() -> None:
    core, _ = make_core()
    core.on_ui(ShowStatus())
    [entry] = [m for m in take(core) if isinstance(m, SystemEntry)]
    assert "model: " in entry.text and "approval mode: " in entry.text and "sandbox: " in entry.text
    core.on_ui(ShowLastResult())
    assert take(core) == [LastResultShown(name="", status="ok", output="")]  # nothing yet: the UI says so


def test_last_is_the_newest_result_in_full() -> None:
    long = "\n".join(str(i) for i in range(500))
    output = CapturedOutput(output=long, truncated=False, total_bytes=len(long))
    transcript: list[ConversationEntry] = [
        ChatMessage(role="user", content="go"),
        ToolReply(call_id="c1", name="execute_command", result=CommandExited(exit_code=0, output=output)),
        ToolReply(call_id="c2", name="execute_command", result=CommandExited(exit_code=2, output=output)),
        ChatMessage(role="assistant", content="done"),
    ]
    shown = last_result(transcript)
    assert (shown.name, shown.status) == ("execute_command", "error")
    assert shown.output == "exit code 2\n" + long  # all of it, not the 30-line excerpt


def test_status_counts_the_running_jobs_and_forgets_an_ended_one() -> None:
    """/status names the running background jobs (issue 36's slot in issue 37's report), and only those."""
    from dashfloat.agent._reports import status_facts
    from dashfloat.protocol import JobExited, JobStarted

    core, _ = make_core()
    assert "running job" not in status_report(status_facts(core))
    core.on_executor(JobStarted(job_id=1, call_id="c1", command="python -m http.server", pgid=10))
    core.on_executor(JobStarted(job_id=2, call_id="c2", command="npm run watch", pgid=11))
    assert "jobs: 2 running jobs (/jobs lists them)" in status_report(status_facts(core))
    core.on_executor(JobExited(job_id=1, state="exited", exit_code=0, command="python -m http.server"))
    assert "jobs: 1 running job (/jobs lists them)" in status_report(status_facts(core))


def test_last_is_the_persons_own_command_until_a_model_result_is_newer() -> None:
    """Found in tmux: `!seq 1 20000` said "Ctrl-O or /last shows all", and Ctrl-O showed the model's earlier cksum:
    the person's own command is not in the conversation until the next prompt, so /last never found it."""
    output = CapturedOutput(output="1\n2\n", truncated=False, total_bytes=4)
    model = ToolReply(call_id="c1", name="execute_command", result=CommandExited(exit_code=0, output=output))
    mine = ToolReply(call_id="user-command-1", name="execute_command", result=CommandExited(exit_code=3, output=output))
    assert last_result([model], mine).status == "error"  # the person's, newer
    assert last_result([model]).status == "ok"
    assert last_result([], mine).output == "exit code 3\n1\n2\n"


def test_the_core_shows_the_persons_command_as_last_and_then_the_models_newer_one() -> None:
    from dashfloat.protocol import RunTool, RunUserCommand, ToolFinished

    core, _ = make_core()
    core.on_ui(RunUserCommand(command="seq 3"))
    [run] = [m for m in take(core) if isinstance(m, RunTool)]
    output = CapturedOutput(output="1\n2\n3\n", truncated=False, total_bytes=6)
    core.on_executor(ToolFinished(run.call_id, CommandExited(exit_code=0, output=output)))
    take(core)
    core.on_ui(ShowLastResult())
    assert take(core) == [LastResultShown(name="execute_command", status="ok", output="1\n2\n3\n")]
    core.record(ToolReply(call_id="c9", name="read_file", result=CommandExited(exit_code=1, output=output)))
    core.on_ui(ShowLastResult())
    [shown] = take(core)
    assert isinstance(shown, LastResultShown) and shown.name == "read_file"
