"""/undo and /rewind end to end: real agent, executor and CLI processes on real trees, real session logs."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from dashfloat.protocol import (
    ChatMessage,
    ConfirmRequested,
    DecideConfirmation,
    ListPrompts,
    PromptRestored,
    PromptsListed,
    RestoreConflict,
    RestoreEnded,
    RewindConversation,
    RewindTo,
    SubmitPrompt,
    SystemEntry,
    UndoTurn,
)
from dashfloat.sessions import log as session_log
from dashfloat.testing.sse_server import Pause, Reply, ScriptedServer, text_reply, tool_calls_reply
from tests.e2e import agent_tree, collect, dashfloat_argv, isolated_environment, turn_over, wait_for

CLI_TIMEOUT_S = 90


@pytest.fixture
def work(tmp_path: Path) -> Path:
    tree = tmp_path / "work"
    tree.mkdir()
    return tree


def cli(server: ScriptedServer, tree: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        dashfloat_argv(server, tree, *args),
        env=isolated_environment(tmp_path),
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        check=False,
    )


def edit(path: str, old: str, new: str) -> dict[str, str]:
    return {"path": path, "search_block": old, "replace_block": new}


def state_dir(tmp_path: Path) -> Path:
    return tmp_path / "state" / "dashfloat"


def ended(message: Any) -> bool:
    return isinstance(message, RestoreEnded)


# ---------------------------------------------------------------- headless, the pinned interface


def test_undo_of_a_multi_file_turn_creates_deletes_and_restores_bytes_and_mode(work: Path, tmp_path: Path) -> None:
    script = work / "run.sh"
    original = b"#!/bin/sh\r\necho one\r\n"
    script.write_bytes(original)
    script.chmod(0o750)
    (work / "keep.txt").write_text("untouched\n")
    with ScriptedServer() as server:
        server.enqueue(
            tool_calls_reply(
                [
                    ("c1", "edit_file", edit("run.sh", "one", "two")),
                    ("c2", "write_file", {"path": "pkg/new/mod.py", "content": "x = 1\n"}),
                    ("c3", "execute_command", {"command": "echo built > build.log"}),
                    ("c4", "edit_file", edit("run.sh", "two", "three")),
                ]
            ),
            text_reply("done"),
        )
        done = cli(server, work, tmp_path, "-p", "change things", "--yes")
        assert done.returncode == 0, done.stderr
        assert script.read_bytes() == b"#!/bin/sh\r\necho three\r\n" and (work / "pkg/new/mod.py").exists()

        preview = cli(server, work, tmp_path, "--undo")
        assert preview.returncode == 1, preview.stderr
        err = preview.stderr
        assert "undo of turn 1: 2 files to restore" in err
        # newest change first: run.sh was written last
        assert err.index("── run.sh: restore") < err.index("── pkg/new/mod.py: delete (DashFloat created it)")
        assert "-echo three" in err and "+echo one" in err
        assert "commands in these turns changed these files; they are NOT restored:\n  build.log\n" in err
        assert "undo of turn 1: a preview only; nothing was restored" in err and "declined" not in err  # issue 37
        assert err.rstrip().endswith("nothing was applied: add --yes to apply it")
        assert script.read_bytes() == b"#!/bin/sh\r\necho three\r\n"  # without --yes nothing is applied

        undone = cli(server, work, tmp_path, "--undo", "--yes")
        assert undone.returncode == 0, undone.stderr
        # issue 37: the file DashFloat created is said to be deleted, not restored
        assert "undo of turn 1: restored 1 file, deleted 1 file DashFloat had created" in undone.stderr
        assert "  restored run.sh\n" in undone.stderr and "  deleted pkg/new/mod.py\n" in undone.stderr
        assert script.read_bytes() == original and os.stat(script).st_mode & 0o7777 == 0o750
        assert not (work / "pkg").exists()  # the file and the directories the write created
        assert (work / "build.log").read_text() == "built\n"  # a command's change is listed, not restored
        assert (work / "keep.txt").read_text() == "untouched\n"

        again = cli(server, work, tmp_path, "--undo", "--yes")
        assert again.returncode == 1 and "nothing to undo" in again.stderr
        assert len(server.requests) == 2  # undo never talks to the model


def test_a_conflicting_file_is_skipped_and_reported_the_rest_restored(work: Path, tmp_path: Path) -> None:
    (work / "a.txt").write_text("a0\n")
    (work / "b.txt").write_text("b0\n")
    with ScriptedServer() as server:
        server.enqueue(
            tool_calls_reply(
                [("c1", "edit_file", edit("a.txt", "a0", "a1")), ("c2", "edit_file", edit("b.txt", "b0", "b1"))]
            ),
            text_reply("done"),
        )
        assert cli(server, work, tmp_path, "-p", "edit", "--yes").returncode == 0
        (work / "b.txt").write_text("b1 and the user's own line\n")
        done = cli(server, work, tmp_path, "--undo", "--yes")
        assert done.returncode == 1, done.stderr
        assert "── b.txt: CONFLICT: changed since DashFloat wrote it" in done.stderr
        assert "skipped 1:\n  b.txt: changed since DashFloat wrote it" in done.stderr
        assert (work / "a.txt").read_text() == "a0\n"
        assert (work / "b.txt").read_text() == "b1 and the user's own line\n"


def test_a_missing_checkpoint_is_reported_by_path_and_skipped(work: Path, tmp_path: Path) -> None:
    (work / "a.txt").write_text("a0\n")
    (work / "b.txt").write_text("b0\n")
    with ScriptedServer() as server:
        server.enqueue(
            tool_calls_reply(
                [("c1", "edit_file", edit("a.txt", "a0", "a1")), ("c2", "edit_file", edit("b.txt", "b0", "b1"))]
            ),
            text_reply("done"),
        )
        assert cli(server, work, tmp_path, "-p", "edit", "--yes").returncode == 0
        (store,) = (state_dir(tmp_path) / "checkpoints").iterdir()
        lost = store / "objects" / hashlib.sha256(b"a0\n").hexdigest()
        lost.unlink()
        done = cli(server, work, tmp_path, "--undo", "--yes")
        assert done.returncode == 1, done.stderr
        assert f"a.txt: checkpoint missing: {lost}" in done.stderr
        assert (work / "a.txt").read_text() == "a1\n" and (work / "b.txt").read_text() == "b0\n"


def test_undo_after_a_crash_and_continue(work: Path, tmp_path: Path) -> None:
    (work / "a.txt").write_text("before\n")
    with ScriptedServer() as server:
        server.enqueue(
            tool_calls_reply([("c1", "edit_file", edit("a.txt", "before", "after"))]),
            Reply(body=[Pause(60.0)]),  # the model hangs: the process is killed mid-turn
        )
        proc = subprocess.Popen(
            dashfloat_argv(server, work, "-p", "edit", "--yes"),
            env=isolated_environment(tmp_path),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            assert wait_for(lambda: len(server.requests) == 2, timeout_s=60)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)  # every DashFloat process at once: nobody shuts down cleanly
            proc.wait()
        assert (work / "a.txt").read_text() == "after\n"
        done = cli(server, work, tmp_path, "--undo", "--yes")
        assert done.returncode == 0, done.stderr
        assert (work / "a.txt").read_text() == "before\n"


def test_undo_of_a_session_of_another_directory_is_refused(work: Path, tmp_path: Path) -> None:
    (work / "a.txt").write_text("a0\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "a.txt").write_text("a1\n")
    with ScriptedServer() as server:
        server.enqueue(tool_calls_reply([("c1", "edit_file", edit("a.txt", "a0", "a1"))]), text_reply("done"))
        assert cli(server, work, tmp_path, "-p", "edit", "--yes").returncode == 0
        (session,) = (state_dir(tmp_path) / "sessions").glob("*.jsonl")
        done = cli(server, elsewhere, tmp_path, "--undo", "--yes", "--resume", session.stem)
        assert done.returncode == 1
        assert f"refused: changes of these turns were made in {work}, not in {elsewhere}" in done.stderr
        assert (elsewhere / "a.txt").read_text() == "a1\n" and (work / "a.txt").read_text() == "a1\n"


def test_usage_errors_exit_2(work: Path, tmp_path: Path) -> None:
    with ScriptedServer() as server:
        for args in (["--undo", "--rewind", "1"], ["--rewind", "0"], ["--undo", "-p", "hi"]):
            done = cli(server, work, tmp_path, *args)
            assert done.returncode == 2, (args, done.stderr)


def test_undo_without_a_saved_session_says_so_and_starts_nothing(work: Path, tmp_path: Path) -> None:
    with ScriptedServer() as server:
        for args in (["--undo"], ["--rewind", "1"]):
            done = cli(server, work, tmp_path, *args)
            assert done.returncode == 1, (args, done.stderr)
            assert "no saved session for this directory" in done.stderr
            assert "starting a new one" not in done.stderr
        assert not server.requests, "a restore never asks the model anything"
        sessions = state_dir(tmp_path) / "sessions"
        assert not sessions.exists() or not any(sessions.iterdir()), "a restore never creates a session"


def test_headless_rewind_goes_back_n_turns(work: Path, tmp_path: Path) -> None:
    with ScriptedServer() as server:
        for n in (1, 2, 3):
            server.enqueue(
                tool_calls_reply([(f"w{n}", "write_file", {"path": f"f{n}.txt", "content": f"{n}\n"})]),
                text_reply("ok"),
            )
            args = ["-p", f"prompt {n}", "--yes"] + (["--continue"] if n > 1 else [])
            assert cli(server, work, tmp_path, *args).returncode == 0
        too_far = cli(server, work, tmp_path, "--rewind", "4", "--yes")
        assert too_far.returncode == 1 and "cannot go back 4 turns: this session has 3" in too_far.stderr
        done = cli(server, work, tmp_path, "--rewind", "2", "--yes")
        assert done.returncode == 0, done.stderr
        assert "rewind to just before prompt 2 (“prompt 2”)" in done.stderr
        # Headless has no input for the prompt to return to: it says where the prompt goes instead.
        back = (
            "the conversation goes back to just before prompt 2; its text is printed on stdout, to edit and send again"
        )
        assert back in done.stderr.splitlines() and "input" not in done.stderr
        assert done.stdout == "prompt 2\n"  # the prompt given back, for a script to resend
        assert sorted(p.name for p in work.iterdir()) == ["f1.txt"]
        (session,) = (state_dir(tmp_path) / "sessions").glob("*.jsonl")
        loaded = session_log.load(session)
        assert [m.content for m in loaded.messages if isinstance(m, ChatMessage) and m.role == "user"] == ["prompt 1"]
        assert [c.turn for c in loaded.changes] == [1]


# ---------------------------------------------------------------- the agent, as the TUI drives it


def test_rewind_truncates_the_conversation_to_exactly_the_earlier_prefix(work: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    with ScriptedServer() as server, agent_tree(server, work, approval="all", state_dir=state) as link:
        server.enqueue(
            tool_calls_reply([("w1", "write_file", {"path": "one.txt", "content": "1\n"})]),
            text_reply("wrote one"),
            tool_calls_reply([("w2", "edit_file", edit("one.txt", "1", "2"))]),
            text_reply("edited"),
            text_reply("fresh answer"),
        )
        link.send(SubmitPrompt(text="first"))
        collect(link, turn_over)
        link.send(SubmitPrompt(text="second\nwith two lines"))
        collect(link, turn_over)
        second_turn_request = server.requests[2]["messages"]
        link.send(ListPrompts())
        listed = collect(link, lambda m: isinstance(m, PromptsListed))[-1]
        assert isinstance(listed, PromptsListed)
        assert [(p.number, p.text) for p in listed.prompts] == [(1, "first"), (2, "second\nwith two lines")]
        link.send(RewindTo(prompt=2, session_id=listed.session_id))
        got: list[Any] = []
        ask = collect(link, lambda m: isinstance(m, ConfirmRequested), into=got)[-1]
        assert isinstance(ask, ConfirmRequested) and isinstance(ask.subject, RewindConversation)
        assert "-2" in ask.lines and "+1" in ask.lines
        assert ask.lines[-1] == "the conversation goes back to just before prompt 2; its text returns to the input"
        link.send(DecideConfirmation(ref=ask.ref, decision="approve"))
        collect(link, turn_over, into=got)  # RestoreEnded, then the phase goes idle
        assert any(ended(m) for m in got)
        assert [m.text for m in got if isinstance(m, PromptRestored)] == ["second\nwith two lines"]
        assert (work / "one.txt").read_text() == "1\n"
        link.send(SubmitPrompt(text="second, edited"))
        collect(link, turn_over)
        after = server.requests[4]["messages"]
        # exactly the earlier prefix (system prompt included), then the new prompt
        assert after[:-1] == second_turn_request[:-1]
        assert second_turn_request[-1] == {"role": "user", "content": "second\nwith two lines"}
        assert after[-1] == {"role": "user", "content": "second, edited"}
    (session,) = (state / "sessions").glob("*.jsonl")
    resumed = session_log.load(session)
    assert [m.content for m in resumed.messages if isinstance(m, ChatMessage) and m.role == "user"] == [
        "first",
        "second, edited",
    ]


def test_rewind_to_a_prompt_of_another_session_is_refused(work: Path, tmp_path: Path) -> None:
    with ScriptedServer() as server, agent_tree(server, work, approval="all", state_dir=tmp_path / "s") as link:
        server.enqueue(text_reply("hi"))
        link.send(SubmitPrompt(text="hello"))
        collect(link, turn_over)
        link.send(RewindTo(prompt=1, session_id="20200101-000000-abcdef"))
        got = collect(link, ended)
        assert got[-1] == RestoreEnded(outcome="refused")
        text = next(m.text for m in got if isinstance(m, SystemEntry))
        assert text.startswith("refused: that prompt list is of session 20200101-000000-abcdef")
        link.send(RewindTo(prompt=5))
        got = collect(link, ended)
        assert "no prompt 5 to rewind to: this session has 1" in [m.text for m in got if isinstance(m, SystemEntry)]


def test_a_conflict_confirmed_for_that_file_is_restored(work: Path, tmp_path: Path) -> None:
    (work / "a.txt").write_text("a0\n")
    (work / "b.txt").write_text("b0\n")
    with ScriptedServer() as server, agent_tree(server, work, approval="all", state_dir=tmp_path / "s") as link:
        server.enqueue(
            tool_calls_reply(
                [("c1", "edit_file", edit("a.txt", "a0", "a1")), ("c2", "edit_file", edit("b.txt", "b0", "b1"))]
            ),
            text_reply("done"),
        )
        link.send(SubmitPrompt(text="edit"))
        collect(link, turn_over)
        (work / "a.txt").write_text("a1 plus mine\n")
        (work / "b.txt").write_text("b1 plus mine\n")
        link.send(UndoTurn())
        got: list[Any] = []
        main = collect(link, lambda m: isinstance(m, ConfirmRequested), into=got)[-1]
        assert (
            isinstance(main, ConfirmRequested) and main.lines[0] == "undo of turn 1: 0 files to restore, 2 conflicting"
        )
        link.send(DecideConfirmation(ref=main.ref, decision="approve"))
        first = collect(link, lambda m: isinstance(m, ConfirmRequested), into=got)[-1]
        # newest change first
        assert isinstance(first, ConfirmRequested) and first.subject == RestoreConflict(path="b.txt")
        assert first.lines[0] == "b.txt was changed since DashFloat wrote it (by you, an editor or a command)."
        link.send(DecideConfirmation(ref=first.ref, decision="approve"))
        second = collect(link, lambda m: isinstance(m, ConfirmRequested), into=got)[-1]
        assert isinstance(second, ConfirmRequested) and second.subject == RestoreConflict(path="a.txt")
        link.send(DecideConfirmation(ref=second.ref, decision="reject"))
        end = collect(link, ended, into=got)[-1]
        assert isinstance(end, RestoreEnded) and end.outcome == "skipped" and end.restored == 1
        assert (work / "b.txt").read_text() == "b0\n" and (work / "a.txt").read_text() == "a1 plus mine\n"


def test_undo_waits_for_the_running_turn(work: Path, tmp_path: Path) -> None:
    with ScriptedServer() as server, agent_tree(server, work, approval="all", state_dir=tmp_path / "s") as link:
        server.enqueue(Reply(body=[Pause(5.0)]))
        link.send(SubmitPrompt(text="slow"))
        assert wait_for(lambda: len(server.requests) == 1)  # the request is out: the turn is running
        link.send(UndoTurn())
        got = collect(link, lambda m: isinstance(m, SystemEntry) and "/undo waits" in m.text)
        assert not any(isinstance(m, RestoreEnded) for m in got)
