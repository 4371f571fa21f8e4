"""Failure semantics of the process tree, proved by SIGKILLing real processes."""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import psutil
import pytest

from dashfloat.agent import EXECUTOR_PROCESS_NAME, LLM_PROCESS_NAME
from dashfloat.executor import _serve
from dashfloat.executor._confine import _own_cgroup
from dashfloat.executor._exec import Command
from dashfloat.executor._sandbox_probe import detect as detect_sandbox
from dashfloat.protocol import (
    AgentReady,
    Cancel,
    ClearSession,
    PhaseChanged,
    SandboxMode,
    SubmitPrompt,
    SystemEntry,
    TokenReceived,
    ToolOutputShown,
)
from dashfloat.testing.sse_server import Pause, Reply, ScriptedServer, sse_event, text_reply, tool_calls_reply
from tests.e2e import (
    agent_tree,
    assert_no_dangling,
    children_named,
    collect,
    dashfloat_argv,
    isolated_environment,
    outcome,
    turn_over,
    wait_for,
)
from tests.executor.conftest import EXIT_WAIT_S, group_gone, within

REPORT_WAIT_S = 30.0
"""How long a test waits for the executor to start a command (a generous bound on a loaded machine)."""


def one_named(pid: int, name: str) -> psutil.Process:
    assert wait_for(lambda: len(children_named(pid, name)) == 1)
    [process] = children_named(pid, name)
    return process


def test_llm_death_mid_stream_is_a_stream_failure_and_a_fresh_llm_serves_next(tree: Path) -> None:
    with ScriptedServer() as server, agent_tree(server, tree) as link:
        chunk = {"choices": [{"index": 0, "delta": {"content": "half"}, "finish_reason": None}]}
        server.enqueue(Reply(body=[sse_event(chunk), Pause(30)]), text_reply("second answer"))
        link.send(SubmitPrompt(text="one"))
        got = collect(link, lambda m: isinstance(m, TokenReceived))
        llm = one_named(link.pid or 0, LLM_PROCESS_NAME)
        llm.send_signal(signal.SIGKILL)
        collect(link, turn_over, into=got)
        assert outcome(got) == "failed"
        assert any(isinstance(m, SystemEntry) and "SIGKILL" in m.text for m in got)
        assert one_named(link.pid or 0, LLM_PROCESS_NAME).pid != llm.pid
        link.send(SubmitPrompt(text="two"))
        got = collect(link, turn_over)
        assert outcome(got) == "completed"
        assert {"role": "assistant", "content": "half"} in server.requests[1]["messages"]


def test_executor_death_mid_call_is_an_error_result_and_a_fresh_executor_serves_next(tree: Path) -> None:
    with ScriptedServer() as server, agent_tree(server, tree, approval="all") as link:
        command = "echo started; sleep 301"
        calls = [("c", "execute_command", {"command": command}), ("r", "read_file", {"path": "a.txt"})]
        server.enqueue(tool_calls_reply(calls), text_reply("ok"))
        link.send(SubmitPrompt(text="run"))
        # The command's output reaches us through the agent after its CommandStarted (one pipe, in order): from
        # here on the agent knows the command's process group.
        got = collect(link, lambda m: isinstance(m, ToolOutputShown) and "started" in m.text)
        executor = one_named(link.pid or 0, EXECUTOR_PROCESS_NAME)
        [shell] = [p for p in executor.children() if p.cmdline()[-2:] == ["-c", command]]  # leads the group
        executor.send_signal(signal.SIGKILL)
        collect(link, turn_over, into=got)
        assert group_gone(shell.pid)  # the shell and its `sleep`
        results = [json.loads(m["content"]) for m in server.requests[1]["messages"] if m["role"] == "tool"]
        assert results[0] == {"ok": False, "error": "executor crashed: killed by SIGKILL"}
        assert results[1]["ok"] is True and results[1]["content"] == "hello\n"  # the fresh executor
        assert_no_dangling(server.requests[1]["messages"])


def test_an_executor_sigkilled_itself_leaves_no_escaped_child_of_an_unsandboxed_command(tree: Path) -> None:
    # Found by review (ADR 0050 amended, ADR 0057 §2): `--sandbox off`, a command's `setsid` child leaves the group
    # the agent kills; the executor, its subreaper, kills it on a normal stop, but SIGKILLed itself it could not, and
    # the child was re-parented upward and ran on. The agent is the subreaper above the executor now: what comes up
    # to it when the executor dies is killed and reaped (no zombie either: PID 1 here reaps none).
    with ScriptedServer() as server, agent_tree(server, tree, approval="all") as link:
        command = "setsid sleep 3131 >/dev/null 2>&1 & echo started; sleep 301"
        server.enqueue(tool_calls_reply([("c", "execute_command", {"command": command})]), text_reply("ok"))
        link.send(SubmitPrompt(text="run"))
        got = collect(link, lambda m: isinstance(m, ToolOutputShown) and "started" in m.text)
        executor = one_named(link.pid or 0, EXECUTOR_PROCESS_NAME)

        def escapes() -> list[psutil.Process]:
            found = []
            for process in executor.children(recursive=True):
                with contextlib.suppress(psutil.Error):  # one that exits meanwhile (the command's `&` subshell)
                    if process.cmdline() == ["sleep", "3131"]:
                        found.append(process)
            return found

        assert wait_for(lambda: len(escapes()) == 1)
        [escaped] = escapes()
        assert os.getsid(escaped.pid) == escaped.pid  # out of the command's session and group
        try:
            executor.send_signal(signal.SIGKILL)
            collect(link, turn_over, into=got)
            assert within(lambda: not psutil.pid_exists(escaped.pid), EXIT_WAIT_S), "it outlived its executor"
        finally:
            with contextlib.suppress(psutil.Error):
                escaped.kill()


NO_CGROUP = _own_cgroup("pids") is None and _own_cgroup("memory") is None


@pytest.mark.parametrize("sandbox", ["off", "workspace-write"])
@pytest.mark.usefixtures("private_cgroups")
def test_what_a_dashfloat_killed_whole_left_running_is_killed_when_the_next_one_starts(sandbox: SandboxMode) -> None:
    # ADR 0062: the agent and the executor SIGKILLed together (the main process can be too: it is not involved). In
    # the sandbox the command dies with its executor (bwrap's --die-with-parent ends its PID namespace). Unsandboxed,
    # its `setsid` child runs on, re-parented upward; it is still in the command's cgroups, named for the dead
    # executor, and the next DashFloat's executor kills it as it starts.
    if sandbox == "off" and NO_CGROUP:
        pytest.skip("no cgroup this process may create")
    base = Path(tempfile.mkdtemp(dir="/var/tmp"))  # sandboxed commands' trees live outside /tmp (TEAM.md)
    tree = base / "work"
    tree.mkdir()
    state = detect_sandbox(sandbox, False, [], os.environ)
    assert state.mode == sandbox, state.unavailable
    escaped: psutil.Process | None = None
    try:
        with ScriptedServer() as server, agent_tree(server, tree, approval="all", sandbox=state) as link:
            command = "setsid sleep 3133 >/dev/null 2>&1 & echo started; sleep 302"
            server.enqueue(tool_calls_reply([("c", "execute_command", {"command": command})]), text_reply("ok"))
            link.send(SubmitPrompt(text="run"))
            collect(link, lambda m: isinstance(m, ToolOutputShown) and "started" in m.text)
            agent = psutil.Process(link.pid or 0)
            executor = one_named(agent.pid, EXECUTOR_PROCESS_NAME)

            def escapes() -> list[psutil.Process]:
                found = []
                for process in executor.children(recursive=True):
                    with contextlib.suppress(psutil.Error):
                        if process.cmdline() == ["sleep", "3133"]:
                            found.append(process)
                return found

            assert wait_for(lambda: len(escapes()) == 1)
            [escaped] = escapes()
            agent.suspend()  # so that it cannot kill the executor's orphans (ADR 0057 §2) before it dies too
            executor.kill()
            agent.kill()
            assert within(lambda: not live(agent), EXIT_WAIT_S)
            if sandbox != "off":
                assert within(lambda: not live(escaped), EXIT_WAIT_S), "it outlived its sandbox"
                return
            assert live(escaped)  # what was left open: nothing of DashFloat runs to kill it
            with ScriptedServer() as next_server, agent_tree(next_server, tree) as next_link:
                collect(next_link, lambda m: isinstance(m, AgentReady))
                assert within(lambda: not live(escaped), EXIT_WAIT_S), "it outlived its DashFloat's next start"
    finally:
        if escaped is not None:
            with contextlib.suppress(psutil.Error):
                escaped.kill()
        shutil.rmtree(base, ignore_errors=True)


def live(process: psutil.Process) -> bool:
    try:
        return process.status() not in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
    except psutil.NoSuchProcess:
        return False


@pytest.mark.parametrize("sandbox", ["off", "workspace-write"])
def test_an_executor_killed_between_starting_a_command_and_reporting_it_leaves_nothing_of_it_running(
    sandbox: SandboxMode, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The worst moment (ADR 0050): the command's process exists, the agent has not been told its group. The hook
    # tells us the group and holds the executor there until we kill it.
    report_r, report_w = os.pipe()
    hold_r, hold_w = os.pipe()

    def hold(command: Command) -> None:
        os.write(report_w, f"{command.pgid}\n".encode())
        os.read(hold_r, 1)  # nobody writes: the executor waits here for its SIGKILL

    monkeypatch.setattr(_serve, "_test_hold_report", hold)
    base = Path(tempfile.mkdtemp(dir="/var/tmp"))  # sandboxed commands' trees live outside /tmp (TEAM.md)
    tree = base / "work"
    tree.mkdir()
    (tree / "a.txt").write_text("hello\n")
    ran = tree / "ran.txt"
    state = detect_sandbox(sandbox, False, [], os.environ)
    assert state.mode == sandbox, state.unavailable
    try:
        with ScriptedServer() as server, agent_tree(server, tree, approval="all", sandbox=state) as link:
            command = "echo $$ > ran.txt; sleep 303"
            calls = [("c", "execute_command", {"command": command}), ("r", "read_file", {"path": "a.txt"})]
            server.enqueue(tool_calls_reply(calls), text_reply("ok"))
            link.send(SubmitPrompt(text="run"))
            assert select.select([report_r], [], [], REPORT_WAIT_S)[0], "the executor never started the command"
            pgid = int(os.read(report_r, 64))
            executor = one_named(link.pid or 0, EXECUTOR_PROCESS_NAME)
            assert pgid in [p.pid for p in executor.children()]  # started, in its own group, not yet reported
            executor.send_signal(signal.SIGKILL)
            collect(link, turn_over)
            assert group_gone(pgid), "a process of the command outlived its executor"
            assert not ran.exists()  # it never ran at all
            results = [json.loads(m["content"]) for m in server.requests[1]["messages"] if m["role"] == "tool"]
            assert results[0] == {"ok": False, "error": "executor crashed: killed by SIGKILL"}
            assert results[1]["ok"] is True and results[1]["content"] == "hello\n"  # the fresh executor
    finally:
        for fd in (report_r, report_w, hold_r, hold_w):
            os.close(fd)
        shutil.rmtree(base, ignore_errors=True)


def restart_notices(messages: list[Any], what: str) -> list[SystemEntry]:
    return [m for m in messages if isinstance(m, SystemEntry) and m.text.startswith(f"{what} died")]


def test_llm_death_while_a_command_runs_is_announced_once(tree: Path) -> None:
    with ScriptedServer() as server, agent_tree(server, tree, approval="all") as link:
        server.enqueue(tool_calls_reply([("c", "execute_command", {"command": "sleep 302"})]), text_reply("ok"))
        link.send(SubmitPrompt(text="run"))
        got = collect(link, lambda m: isinstance(m, PhaseChanged) and m.phase == "running")
        llm = one_named(link.pid or 0, LLM_PROCESS_NAME)
        llm.send_signal(signal.SIGKILL)
        collect(link, lambda m: bool(restart_notices([m], "the model stream process")), into=got)
        assert one_named(link.pid or 0, LLM_PROCESS_NAME).pid != llm.pid
        link.send(Cancel())
        collect(link, turn_over, into=got)
        [notice] = restart_notices(got, "the model stream process")
        assert "SIGKILL" in notice.text and notice.level == "warning"


def test_executor_death_while_the_model_streams_is_announced_once(tree: Path) -> None:
    with ScriptedServer() as server, agent_tree(server, tree) as link:
        chunk = {"choices": [{"index": 0, "delta": {"content": "thinking"}, "finish_reason": None}]}
        server.enqueue(Reply(body=[sse_event(chunk), Pause(30)]))
        link.send(SubmitPrompt(text="one"))
        got = collect(link, lambda m: isinstance(m, TokenReceived))
        executor = one_named(link.pid or 0, EXECUTOR_PROCESS_NAME)
        executor.send_signal(signal.SIGKILL)
        collect(link, lambda m: bool(restart_notices([m], "the executor process")), into=got)
        assert one_named(link.pid or 0, EXECUTOR_PROCESS_NAME).pid != executor.pid
        link.send(Cancel())
        collect(link, turn_over, into=got)
        [notice] = restart_notices(got, "the executor process")
        assert "SIGKILL" in notice.text


def test_agent_death_shows_a_system_entry_and_the_next_prompt_continues_the_conversation(
    tree: Path, tmp_path: Path
) -> None:
    with ScriptedServer() as server, agent_tree(server, tree, state_dir=tmp_path / "state") as link:
        server.enqueue(text_reply("first answer"), text_reply("second answer"))
        link.send(SubmitPrompt(text="remember me"))
        collect(link, turn_over)
        os.kill(link.pid or 0, signal.SIGKILL)
        got = collect(link, lambda m: isinstance(m, SystemEntry) and "agent process stopped" in m.text)
        assert "SIGKILL" in got[-1].text  # type: ignore[union-attr]
        collect(link, lambda m: isinstance(m, AgentReady))
        link.send(SubmitPrompt(text="and now?"))
        got = collect(link, turn_over)
        assert outcome(got) == "completed"
        contents = [m.get("content") for m in server.requests[1]["messages"]]
        assert contents[1:] == ["remember me", "first answer", "and now?"]


def tree_pids(pid: int) -> list[psutil.Process]:
    return [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]


def sleepers_under(pid: int) -> list[psutil.Process]:
    found = []
    for process in tree_pids(pid):
        with contextlib.suppress(psutil.Error):
            if process.cmdline()[:1] == ["sleep"]:
                found.append(process)
    return found


def gone(processes: list[psutil.Process]) -> bool:
    def dead(p: psutil.Process) -> bool:
        try:
            return not p.is_running() or p.status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True

    return all(dead(p) for p in processes)


def launch_headless(server: ScriptedServer, tree: Path, tmp_path: Path, *extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        dashfloat_argv(server, tree, *extra),
        env=isolated_environment(tmp_path),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_to_the_main_process_leaves_no_process_behind(tree: Path, tmp_path: Path, sig: signal.Signals) -> None:
    with ScriptedServer() as server:
        command = "sleep 302 & sleep 303"
        server.enqueue(tool_calls_reply([("c", "execute_command", {"command": command})]), text_reply("x"))
        main = launch_headless(server, tree, tmp_path, "--yes", "-p", "run it")
        try:
            assert wait_for(lambda: len(sleepers_under(main.pid)) == 2, timeout_s=30)  # start-up on a loaded box
            everything = tree_pids(main.pid)
            main.send_signal(sig)
            # Far below the sleepers' 300 s: they were killed, not waited for (bench/runtime.py times it).
            assert wait_for(lambda: gone(everything), timeout_s=20.0)
            assert main.wait(2) == 128 + sig
        finally:
            main.kill()
            main.communicate()


def test_a_finished_headless_run_leaves_no_process_behind(tree: Path, tmp_path: Path) -> None:
    with ScriptedServer() as server:
        server.enqueue(text_reply("all done"))
        main = launch_headless(server, tree, tmp_path, "-p", "hi")
        assert wait_for(lambda: len(tree_pids(main.pid)) >= 3)
        everything = tree_pids(main.pid)
        out, err = main.communicate(timeout=10)
        assert main.returncode == 0, err
        assert out.decode().strip() == "all done"
        assert wait_for(lambda: gone(everything))


def test_headless_json_writes_display_messages(tree: Path, tmp_path: Path) -> None:
    with ScriptedServer() as server:
        server.enqueue(tool_calls_reply([("r", "read_file", {"path": "a.txt"})]), text_reply("fine"))
        main = launch_headless(server, tree, tmp_path, "--json", "-p", "read")
        out, err = main.communicate(timeout=10)
        assert main.returncode == 0, err
        types = [json.loads(line)["type"] for line in out.decode().splitlines()]
        for expected in (
            "phase_changed",
            "tool_call_shown",
            "tool_result_shown",
            "token_received",
            "turn_ended",
        ):
            assert expected in types


def test_headless_rejects_mutations_unless_approved(tree: Path, tmp_path: Path) -> None:
    with ScriptedServer() as server:
        write = [("w", "write_file", {"path": "b.txt", "content": "x"})]
        server.enqueue(tool_calls_reply(write), text_reply("ok"))
        main = launch_headless(server, tree, tmp_path, "-p", "write")
        _, err = main.communicate(timeout=10)
        assert main.returncode == 4  # refused with nobody to ask (docs/headless.md)
        assert "--approve" in err.decode() and not (tree / "b.txt").exists()
        server.enqueue(tool_calls_reply(write), text_reply("ok"))
        main = launch_headless(server, tree, tmp_path, "--approve", "edits", "-p", "write")
        main.communicate(timeout=10)
        assert (tree / "b.txt").read_text() == "x"


def test_headless_provider_failure_exits_1_with_the_reason(tree: Path, tmp_path: Path) -> None:
    with ScriptedServer() as server:
        server.enqueue(Reply(status=404, headers={"Content-Type": "application/json"}, body=[b"{}"]))
        main = launch_headless(server, tree, tmp_path, "-p", "hi")
        _, err = main.communicate(timeout=10)
        assert main.returncode == 1
        assert err.decode().strip()


def test_headless_prompt_from_stdin(tree: Path, tmp_path: Path) -> None:
    with ScriptedServer() as server:
        server.enqueue(text_reply("piped"))
        main = launch_headless(server, tree, tmp_path, "-p", "-")
        out, _ = main.communicate(b"what was piped in\n", timeout=10)
        assert out.decode().strip() == "piped"
        assert server.requests[0]["messages"][1] == {"role": "user", "content": "what was piped in\n"}


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    run: Any = subprocess.run
    result = run([sys.executable, "-m", "dashfloat", "--cwd", str(tmp_path / "nope"), "-p", "x"], capture_output=True)
    assert result.returncode == 2 and b"not a directory" in result.stderr


def test_an_undecodable_frame_to_the_agent_is_reported_naming_the_channel(tree: Path) -> None:
    with ScriptedServer() as server, agent_tree(server, tree) as link:
        collect(link, lambda m: isinstance(m, AgentReady))
        link.channel.conn.send_bytes(b"\xc1 not msgpack")
        got = collect(link, lambda m: isinstance(m, SystemEntry) and "ui->agent" in m.text)
        assert "ui->agent" in got[-1].text  # type: ignore[union-attr]  # start-up notes may come first
        server.enqueue(text_reply("still here"))
        link.send(SubmitPrompt(text="hi"))
        assert outcome(collect(link, turn_over)) == "completed"


def test_exec_timeout_flag_bounds_a_command(tree: Path, tmp_path: Path) -> None:
    with ScriptedServer() as server:
        server.enqueue(
            tool_calls_reply([("c", "execute_command", {"command": "echo start; sleep 20"})]), text_reply("x")
        )
        main = launch_headless(server, tree, tmp_path, "--yes", "--exec-timeout", "0.5", "-p", "run")
        _, err = main.communicate(timeout=15)
        assert main.returncode == 0, err
        result = json.loads(next(m for m in server.requests[1]["messages"] if m["role"] == "tool")["content"])
        assert result["ok"] is False and "timed out after 0.5s" in result["error"] and "start" in result["output"]


def test_a_stuck_llm_process_is_replaced_by_the_watchdog(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import dashfloat.agent._process as agent_process

    monkeypatch.setattr(agent_process, "LLM_WATCHDOG_SLACK_S", 0.5)  # inherited by the forked agent
    with ScriptedServer() as server, agent_tree(server, tree, idle_timeout_s=1.0) as link:
        chunk = {"choices": [{"index": 0, "delta": {"content": "so far"}, "finish_reason": None}]}
        server.enqueue(Reply(body=[sse_event(chunk), Pause(30)]), text_reply("fresh"))
        link.send(SubmitPrompt(text="one"))
        got = collect(link, lambda m: isinstance(m, TokenReceived))
        one_named(link.pid or 0, LLM_PROCESS_NAME).send_signal(signal.SIGSTOP)  # alive, but answers nothing
        collect(link, turn_over, into=got, timeout_s=10)
        assert any(isinstance(m, SystemEntry) and "sent nothing" in m.text for m in got)
        link.send(SubmitPrompt(text="two"))
        assert outcome(collect(link, turn_over)) == "completed"


def test_clear_survives_an_agent_crash(tree: Path, tmp_path: Path) -> None:
    with ScriptedServer() as server, agent_tree(server, tree, state_dir=tmp_path / "state") as link:
        server.enqueue(text_reply("one"), text_reply("two"))
        link.send(SubmitPrompt(text="FIRST"))
        collect(link, turn_over)
        link.send(ClearSession())
        collect(link, lambda m: isinstance(m, SystemEntry) and "new session" in m.text)
        os.kill(link.pid or 0, signal.SIGKILL)
        collect(link, lambda m: isinstance(m, AgentReady))
        link.send(SubmitPrompt(text="SECOND"))
        collect(link, turn_over)
        assert [m.get("content") for m in server.requests[1]["messages"][1:]] == ["SECOND"]


def test_headless_ends_with_exit_1_when_the_agent_dies_mid_turn(tree: Path, tmp_path: Path) -> None:
    with ScriptedServer() as server:
        server.enqueue(Reply(body=[Pause(30)]))  # the request hangs before its first byte
        main = launch_headless(server, tree, tmp_path, "-p", "hi")
        try:
            assert server.wait_requests(1, 10)
            [agent] = [p for p in psutil.Process(main.pid).children() if p.name() == "dashfloat-agent"]
            agent.send_signal(signal.SIGKILL)
            _, err = main.communicate(timeout=10)
            assert main.returncode == 1 and b"agent process stopped" in err
        finally:
            main.kill()
            main.communicate()


def test_what_a_killed_agent_and_executor_left_running_dies_with_the_main_process(tree: Path, tmp_path: Path) -> None:
    """The agent and the executor SIGKILLed together, the main process alive: an unsandboxed command's ``setsid``
    child is re-parented to the main process (a subreaper) and, cgroups or not, the main process kills it as it
    exits; it ran on for good before."""
    with ScriptedServer() as server:
        command = "setsid sleep 3144 >/dev/null 2>&1 & echo started; sleep 304"
        server.enqueue(tool_calls_reply([("c", "execute_command", {"command": command})]), text_reply("x"))
        main = launch_headless(server, tree, tmp_path, "--sandbox", "off", "--yes", "-p", "run it")
        escaped: list[psutil.Process] = []
        try:
            assert wait_for(lambda: len(sleepers_under(main.pid)) == 2, timeout_s=30)  # start-up on a loaded box
            escaped = [p for p in sleepers_under(main.pid) if p.cmdline() == ["sleep", "3144"]]
            [agent] = [p for p in psutil.Process(main.pid).children() if p.name() == "dashfloat-agent"]
            executor = one_named(agent.pid, EXECUTOR_PROCESS_NAME)
            agent.suspend()  # so that it cannot kill the executor's orphans before it dies too
            executor.kill()
            agent.kill()
            _, err = main.communicate(timeout=20)
            assert main.returncode == 1 and b"agent process stopped" in err, err
            assert escaped and wait_for(lambda: gone(escaped), timeout_s=EXIT_WAIT_S), "it outlived DashFloat"
        finally:
            main.kill()
            main.communicate()
            for process in escaped:
                with contextlib.suppress(psutil.Error):
                    process.kill()


def test_a_sigterm_mid_answer_ends_the_cut_line(tree: Path, tmp_path: Path) -> None:
    """ADR 0058, found headless: SIGTERM mid-answer left stdout without its last newline (the shell's prompt then
    followed the cut prose on its line); SIGINT ended it. Under load it caught the signal between an unbuffered
    write (PYTHONUNBUFFERED) and the note that the line was open."""
    with ScriptedServer() as server:
        half = sse_event({"choices": [{"index": 0, "delta": {"content": "half a line"}}]})
        server.enqueue(Reply(body=[half, Pause(60.0)]))
        main = launch_headless(server, tree, tmp_path, "-p", "hi")
        try:
            assert main.stdout is not None
            out = b""
            while b"half a line" not in out:
                assert select.select([main.stdout], [], [], 30.0)[0], out
                chunk = os.read(main.stdout.fileno(), 4096)
                assert chunk, out
                out += chunk
            main.send_signal(signal.SIGTERM)
            rest, err = main.communicate(timeout=30)
            assert main.returncode == 128 + signal.SIGTERM
            assert out + rest == b"half a line\n", err
        finally:
            main.kill()
            main.communicate()
