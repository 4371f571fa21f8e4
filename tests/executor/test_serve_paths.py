"""@ completion through a real executor process: FindPaths answers, bounds, and a fresh index after a write."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dashfloat.agent import ForkWorkers
from dashfloat.channel import Channel
from dashfloat.executor._limits import PATH_CANDIDATES_MAX, PATH_QUERY_MAX_CHARS
from dashfloat.protocol import (
    AgentToExecutor,
    CommandOutput,
    CommandStarted,
    ExecuteCommandArgs,
    ExecutorToAgent,
    FindPaths,
    PathsFound,
    RunTool,
    ToolFinished,
    WriteFileArgs,
)

REPLY_TIMEOUT_S = 20.0


@pytest.fixture
def channel(root: Path) -> Iterator[Channel[ExecutorToAgent]]:
    """A real executor process serving over a real pipe, forked as the agent forks it."""
    worker = ForkWorkers(str(root), 5.0, log_path="", held_fds=[]).start_executor()
    proc = worker.process
    yield worker.channel
    worker.channel.close()
    proc.join(REPLY_TIMEOUT_S)
    if proc.is_alive():
        proc.kill()
        proc.join()


def ask(channel: Channel[ExecutorToAgent], message: AgentToExecutor) -> ExecutorToAgent:
    channel.send(message)
    assert channel.poll(REPLY_TIMEOUT_S), "no reply from the executor"
    return channel.recv()


def test_find_paths_answers_with_the_same_ref_and_query(channel: Channel[ExecutorToAgent], root: Path) -> None:
    (root / "README.md").write_text("# x\n")
    (root / "other.txt").write_text("")
    found = ask(channel, FindPaths(ref=7, query="READ", refresh=True))
    assert found == PathsFound(ref=7, query="READ", paths=["README.md"])


def test_the_candidate_bound_holds(channel: Channel[ExecutorToAgent], root: Path) -> None:
    for i in range(PATH_CANDIDATES_MAX + 5):
        (root / f"file{i:03}.txt").write_text("")
    found = ask(channel, FindPaths(ref=1, query="file"))
    assert isinstance(found, PathsFound) and len(found.paths) == PATH_CANDIDATES_MAX


def test_a_query_over_its_bound_is_refused_with_a_notice(channel: Channel[ExecutorToAgent], root: Path) -> None:
    (root / "a.txt").write_text("")
    found = ask(channel, FindPaths(ref=1, query="a" * (PATH_QUERY_MAX_CHARS + 1)))
    assert isinstance(found, PathsFound) and found.paths == [] and str(PATH_QUERY_MAX_CHARS) in found.notice
    at_bound = ask(channel, FindPaths(ref=2, query="a" * PATH_QUERY_MAX_CHARS))
    assert isinstance(at_bound, PathsFound) and at_bound.notice == ""


def test_the_index_is_built_once_and_renewed_after_a_write(channel: Channel[ExecutorToAgent], root: Path) -> None:
    (root / "first.txt").write_text("")
    assert ask(channel, FindPaths(ref=1, query="txt", refresh=True)).paths == ["first.txt"]  # type: ignore[union-attr]
    (root / "second.txt").write_text("")  # made behind the executor's back: the index is not rebuilt per key
    assert ask(channel, FindPaths(ref=2, query="txt")).paths == ["first.txt"]  # type: ignore[union-attr]
    done = ask(channel, RunTool("w1", WriteFileArgs(path="third.txt", content="3\n")))
    assert isinstance(done, ToolFinished)
    after = ask(channel, FindPaths(ref=3, query="txt"))
    assert isinstance(after, PathsFound) and after.paths == ["first.txt", "third.txt", "second.txt"]


def test_a_running_command_does_not_hold_up_completion(channel: Channel[ExecutorToAgent], root: Path) -> None:
    (root / "README.md").write_text("")
    channel.send(RunTool("c1", ExecuteCommandArgs(command="while [ ! -e stop ]; do sleep 0.05; done")))
    started = channel.recv() if channel.poll(REPLY_TIMEOUT_S) else None
    assert isinstance(started, CommandStarted)
    found = ask(channel, FindPaths(ref=1, query="READ"))
    while isinstance(found, CommandOutput):  # live output may come first
        found = channel.recv()
    assert found == PathsFound(ref=1, query="READ", paths=["README.md"])  # answered while the command runs
    (root / "stop").touch()
    assert channel.poll(REPLY_TIMEOUT_S)
    finished = channel.recv()
    while isinstance(finished, CommandOutput):
        finished = channel.recv()
    assert isinstance(finished, ToolFinished) and finished.call_id == "c1"


def test_a_working_directory_that_is_gone_is_said_not_a_crash(channel: Channel[ExecutorToAgent], root: Path) -> None:
    (root / "a.txt").write_text("")
    assert ask(channel, FindPaths(ref=0, query="a", refresh=True)).paths == ["a.txt"]  # type: ignore[union-attr]
    root.rename(root.parent / "moved")  # with an index built before
    found = ask(channel, FindPaths(ref=1, query="a", refresh=True))
    assert isinstance(found, PathsFound) and found.paths == [] and "was moved or deleted" in found.notice
    again = ask(channel, FindPaths(ref=2, query="a", refresh=True))  # still serving
    assert isinstance(again, PathsFound) and again.ref == 2
