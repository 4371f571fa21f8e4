"""Background jobs as the agent handles them (issue 36): never asked to read or stop, told to the UI, killed at
/clear and /jobs stop, and said to be gone when a session resumes."""

from __future__ import annotations

from dashfloat.agent import AgentCore, AgentOptions, MemoryJournal
from dashfloat.agent._jobs import exit_row, lost_jobs
from dashfloat.protocol import (
    CapturedOutput,
    ChatMessage,
    ClearSession,
    ConversationEntry,
    ExecuteCommandArgs,
    JobExited,
    JobKillArgs,
    JobOutput,
    JobOutputArgs,
    JobReport,
    JobStarted,
    KillJobs,
    Message,
    ProviderConfig,
    RunTool,
    StopJob,
    StreamDone,
    SubmitPrompt,
    SystemEntry,
    ToolReply,
)
from dashfloat.tool_args import assemble

PROVIDER = ProviderConfig(name="test", base_url="http://127.0.0.1:9/v1", model="m", context_window=100_000)
NOTHING = CapturedOutput(output="", truncated=False, total_bytes=0)


def make_core() -> AgentCore:
    return AgentCore(AgentOptions(provider=PROVIDER, cwd="/work", approval="ask"), MemoryJournal())


def take(core: AgentCore, dest: str | None = None) -> list[Message]:
    out = [m for d, m in core.outbox if dest is None or d == dest]
    core.outbox.clear()
    return out


def report(job_id: int, state: str = "running") -> JobReport:
    return JobReport(job_id=job_id, state=state, output=NOTHING, cursor=0)  # type: ignore[arg-type]


def test_reading_and_stopping_a_job_run_without_asking() -> None:
    core = make_core()
    core.on_ui(SubmitPrompt(text="check the server"))
    take(core)
    calls = [assemble("a", "job_output", {"id": 1, "cursor": 10}), assemble("b", "job_kill", {"id": 1})]
    core.on_llm(StreamDone(request_id=core.request_id, content="", tool_calls=calls, finish_reason="tool_calls"))
    out = take(core, "executor")
    assert out == [RunTool(call_id="a", args=JobOutputArgs(id=1, cursor=10))]  # no preview, no confirmation


def test_a_background_start_asks_like_a_command() -> None:
    core = make_core()
    core.on_ui(SubmitPrompt(text="start it"))
    take(core)
    start = assemble("s", "execute_command", {"command": "npm run dev", "background": True, "ready_port": 5173})
    core.on_llm(StreamDone(request_id=core.request_id, content="", tool_calls=[start], finish_reason="tool_calls"))
    out = take(core, "executor")
    assert [type(m).__name__ for m in out] == ["PreviewTool"]  # previewed, then asked
    assert isinstance(start.args, ExecuteCommandArgs) and start.args.background


def test_job_messages_reach_the_ui_and_an_end_leaves_a_row() -> None:
    core = make_core()
    started = JobStarted(job_id=1, call_id="s", command="npm run dev", pgid=42)
    output = JobOutput(job_id=1, text="ready\n")
    ended = JobExited(job_id=1, state="exited", exit_code=1, last_line="Error: port taken", command="npm run dev")
    for message in (started, output, ended):
        core.on_executor(message)
    out = take(core, "ui")
    assert out[:3] == [started, output, ended]
    assert out[3] == SystemEntry(text="job 1 `npm run dev` exited with code 1 — last line: Error: port taken",
                                 level="warning")  # fmt: skip


def test_clear_and_jobs_stop_kill_jobs_through_the_executor() -> None:
    core = make_core()
    core.on_ui(StopJob(job_id=3))
    assert take(core, "executor") == [KillJobs(job_ids=[3])]
    core.on_ui(ClearSession())
    assert take(core, "executor") == [KillJobs()]


def test_exit_rows_say_how_a_job_ended() -> None:
    assert exit_row(JobExited(job_id=2, state="killed", command="sleep 9")) == SystemEntry(
        text="job 2 `sleep 9` was stopped"
    )
    assert exit_row(JobExited(job_id=2, state="exited", exit_code=0, command="make")).text == (
        "job 2 `make` exited with code 0"
    )
    assert exit_row(JobExited(job_id=2, state="exited", command="x")).text == "job 2 `x` ended"


def test_a_resumed_session_names_the_jobs_it_left_running_as_not_running() -> None:
    transcript: list[ConversationEntry] = [
        ChatMessage(role="user", content="start two"),
        ToolReply(call_id="a", name="execute_command", result=report(1)),
        ToolReply(call_id="b", name="execute_command", result=report(2)),
        ToolReply(call_id="c", name="job_kill", result=report(2, "killed")),
        ToolReply(call_id="d", name="execute_command", result=report(3)),
    ]
    [said] = lost_jobs(transcript)
    assert said.level == "warning" and said.text.startswith("background job(s) 1, 3 of the earlier run are not running")
    assert lost_jobs(transcript[:1]) == []
    core = make_core()
    core.load(transcript, [])
    assert said in take(core, "ui")


def test_job_kill_args_parse() -> None:
    assert assemble("k", "job_kill", {"id": 2}).args == JobKillArgs(id=2)
