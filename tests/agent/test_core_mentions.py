"""@ mentions in the agent's state machine: completion requests pass through; attachments (below)."""

from __future__ import annotations

from pathlib import Path

from dashfloat.agent import AgentCore, AgentOptions, MemoryJournal
from dashfloat.agent._mentions import MENTIONS_ATTACHED_MAX_BYTES, MENTIONS_MAX_PER_PROMPT
from dashfloat.mentions import ATTACHMENTS_LINE
from dashfloat.protocol import (
    Cancel,
    DirectoryEntry,
    FindPaths,
    ListDirectoryArgs,
    ListDirectoryResult,
    Message,
    PathsFound,
    PromptRestored,
    ReadFileArgs,
    ReadFileResult,
    RunTool,
    StartStream,
    SubmitPrompt,
    SystemEntry,
    ToolCallShown,
    ToolFailed,
    ToolFinished,
    ToolResult,
    ToolResultShown,
    TurnEnded,
)
from tests.agent.test_core import PROVIDER, make_core, take


def test_a_completion_request_goes_to_the_executor_and_its_answer_to_the_ui() -> None:
    core = make_core()
    core.on_ui(FindPaths(ref=3, query="READ", refresh=True))
    assert take(core, "executor") == [FindPaths(ref=3, query="READ", refresh=True)]
    core.on_executor(PathsFound(ref=3, query="READ", paths=["README.md"]))
    assert take(core, "ui") == [PathsFound(ref=3, query="READ", paths=["README.md"])]
    assert core.phase == "idle"  # completion is no turn


def test_an_executor_death_answers_the_open_completion_request() -> None:
    core = make_core()
    core.on_ui(FindPaths(ref=4, query="src"))
    take(core)
    core.on_executor_died("killed by SIGKILL")
    [answer] = take(core, "ui")
    assert isinstance(answer, PathsFound) and answer.ref == 4 and answer.paths == []
    assert "executor process died" in answer.notice
    core.on_executor_died("again")
    assert take(core, "ui") == []  # answered once


# ---------------------------------------------------------------- attachments


def file_read(path: str, content: str) -> ReadFileResult:
    lines = content.count("\n")
    return ReadFileResult(path, content, 1, lines, lines, len(content.encode()), False)


def started(out: list[Message]) -> StartStream:
    [start] = [m for m in out if isinstance(m, StartStream)]
    return start


def user_message(out: list[Message]) -> str:
    [user] = [m for m in started(out).messages if m.role == "user"]
    return user.content or ""


def answer_reads(core: AgentCore, contents: dict[str, ToolResult]) -> list[Message]:
    """Answer every read the core asks for (in order) with ``contents[path]``; everything it sent meanwhile."""
    out: list[Message] = []
    while True:
        batch = take(core)
        out += batch
        runs = [m for m in batch if isinstance(m, RunTool)]
        if not runs:
            return out
        [run] = runs
        assert isinstance(run.args, ReadFileArgs | ListDirectoryArgs)
        core.on_executor(ToolFinished(run.call_id, contents[run.args.path]))


def test_a_mentioned_file_is_read_as_a_tool_row_then_sent_with_the_prompt() -> None:
    core = make_core()
    core.on_ui(SubmitPrompt(text="explain @README.md."))
    first = take(core)
    assert ToolCallShown(id="mention-1", args=ReadFileArgs(path="README.md")) in first
    assert RunTool(call_id="mention-1", args=ReadFileArgs(path="README.md")) in first
    assert not any(isinstance(m, StartStream) for m in first)  # nothing goes to the model before the read
    assert core.phase == "running"
    core.on_executor(ToolFinished("mention-1", file_read("README.md", "# DashFloat\nhello\n")))
    out = take(core)
    assert ToolResultShown(id="mention-1", name="read_file", status="ok", output="# DashFloat\nhello") in out
    content = user_message(out)
    assert content.startswith(
        f"explain @README.md.\n\n{ATTACHMENTS_LINE}\n\nThe file README.md, attached with @README.md"
    )
    assert content.endswith("```\n# DashFloat\nhello\n```")


def test_a_missing_file_is_an_error_row_and_the_prompt_still_goes() -> None:
    core = make_core()
    core.on_ui(SubmitPrompt(text="what is in @nope.txt"))
    out = answer_reads(core, {"nope.txt": ToolFailed(error="no such file: nope.txt")})
    assert ToolResultShown(id="mention-1", name="read_file", status="error", output="no such file: nope.txt") in out
    expected = f"what is in @nope.txt\n\n{ATTACHMENTS_LINE}\n\n@nope.txt could not be attached: no such file: nope.txt"
    assert user_message(out) == expected


def test_several_mentions_are_read_once_each_and_a_directory_is_listed() -> None:
    core = make_core()
    core.on_ui(SubmitPrompt(text='compare @a.py and @"my b.py", then @a.py again; see @src/'))
    listing = ListDirectoryResult("src/", [DirectoryEntry("x.py", "file", 1), DirectoryEntry("d", "dir", 0)], 2, False)
    out = answer_reads(
        core, {"a.py": file_read("a.py", "A\n"), "my b.py": file_read("my b.py", "B\n"), "src/": listing}
    )
    read = [m.args for m in out if isinstance(m, RunTool)]
    assert read == [ReadFileArgs(path="a.py"), ReadFileArgs(path="my b.py"), ListDirectoryArgs(path="src/")]
    content = user_message(out)
    assert content.index("```\nA\n```") < content.index("```\nB\n```") < content.index("```\nx.py\nd/\n```")


def test_the_mention_count_bound_reads_only_the_first_ones_and_says_so() -> None:
    core = make_core()
    names = [f"f{i}.txt" for i in range(MENTIONS_MAX_PER_PROMPT + 2)]
    core.on_ui(SubmitPrompt(text=" ".join(f"@{n}" for n in names)))
    out = answer_reads(core, {n: file_read(n, "x\n") for n in names})
    assert len([m for m in out if isinstance(m, RunTool)]) == MENTIONS_MAX_PER_PROMPT
    assert any(isinstance(m, SystemEntry) and "2 more are not" in m.text for m in out)
    exactly = make_core()
    exactly.on_ui(SubmitPrompt(text=" ".join(f"@{n}" for n in names[:MENTIONS_MAX_PER_PROMPT])))
    at_bound = answer_reads(exactly, {n: file_read(n, "x\n") for n in names})
    assert not any(isinstance(m, SystemEntry) for m in at_bound)


def test_the_total_bound_cuts_the_file_that_crosses_it_and_reads_no_more() -> None:
    core = make_core()
    chunk = MENTIONS_ATTACHED_MAX_BYTES // 3 + 10  # three of them cross the bound
    big = {n: file_read(n, ("y" * 99 + "\n") * (chunk // 100)) for n in ("a", "b", "c", "d")}
    core.on_ui(SubmitPrompt(text="@a @b @c @d"))
    out = answer_reads(core, dict(big))
    assert [m.args for m in out if isinstance(m, RunTool)] == [ReadFileArgs(p) for p in "abc"]  # d is not read
    content = user_message(out)
    assert f"bounded at {MENTIONS_ATTACHED_MAX_BYTES} bytes in all" in content
    assert "@d could not be attached: not read" in content
    body = sum(len(line) + 1 for line in content.splitlines() if line.startswith("y"))
    assert body <= MENTIONS_ATTACHED_MAX_BYTES
    assert any(isinstance(m, SystemEntry) and "@c is attached cut short" in m.text for m in out)
    error_rows = [m for m in out if isinstance(m, ToolResultShown) and m.status == "error"]
    assert [m.id for m in error_rows] == ["mention-4"]


def test_esc_while_reading_sends_nothing_and_gives_the_prompt_back() -> None:
    core = make_core()
    core.pending_context = ["I ran `ls` myself (exit code 0); its output: a.txt"]
    core.on_ui(SubmitPrompt(text="explain @a.txt"))
    take(core)
    core.on_ui(Cancel())
    out = take(core)
    assert PromptRestored(text="explain @a.txt") in out and TurnEnded(outcome="cancelled") in out
    assert core.phase == "idle" and core.conversation == []
    assert core.pending_context == ["I ran `ls` myself (exit code 0); its output: a.txt"]  # kept for the next one
    core.on_executor(ToolFinished("mention-1", file_read("a.txt", "late\n")))
    assert not any(isinstance(m, StartStream) for m in take(core))  # the late read changes nothing


def test_an_executor_death_while_reading_is_an_error_row_and_the_prompt_goes() -> None:
    core = make_core()
    core.on_ui(SubmitPrompt(text="explain @a.txt"))
    take(core)
    core.on_executor_died("killed by SIGKILL")
    out = take(core)
    assert any(isinstance(m, ToolResultShown) and m.status == "error" and "executor crashed" in m.output for m in out)
    assert "@a.txt could not be attached: executor crashed" in user_message(out)


def test_a_prompt_without_mentions_goes_at_once() -> None:
    core = make_core()
    core.on_ui(SubmitPrompt(text="mail a@b.com please"))
    out = take(core)
    assert not any(isinstance(m, RunTool) for m in out)
    assert user_message(out) == "mail a@b.com please"


def test_one_search_at_a_time_goes_to_the_executor_and_only_the_newest_waits() -> None:
    core = make_core()
    core.on_ui(FindPaths(ref=1, query="R", refresh=True))
    core.on_ui(FindPaths(ref=2, query="RE"))
    core.on_ui(FindPaths(ref=3, query="REA"))
    out = take(core)
    assert [m for m in out if isinstance(m, FindPaths)] == [FindPaths(ref=1, query="R", refresh=True)]
    assert PathsFound(ref=2, query="RE", paths=[], notice="superseded") in out  # answered, never searched
    core.on_executor(PathsFound(ref=1, query="R", paths=["README.md", "src/reader.py"]))
    out = take(core)
    assert out == [
        PathsFound(ref=1, query="R", paths=["README.md", "src/reader.py"]),
        FindPaths(ref=3, query="REA", refresh=False),
    ]
    core.on_executor(PathsFound(ref=3, query="REA", paths=["README.md"]))
    assert take(core) == [PathsFound(ref=3, query="REA", paths=["README.md"])]
    assert core.finding is None and core.find_next is None


def test_a_skipped_request_hands_its_refresh_on() -> None:
    core = make_core()
    core.on_ui(FindPaths(ref=1, query="a"))
    core.on_ui(FindPaths(ref=2, query="s", refresh=True))  # a new mention began
    core.on_ui(FindPaths(ref=3, query="sr"))
    take(core)
    core.on_executor(PathsFound(ref=1, query="a", paths=[]))
    assert FindPaths(ref=3, query="sr", refresh=True) in take(core, "executor")


def test_the_prompt_list_and_a_rewind_give_back_the_prompt_as_typed() -> None:
    core = make_core()
    core.on_ui(SubmitPrompt(text="explain @a.txt"))
    answer_reads(core, {"a.txt": file_read("a.txt", "SECRET CONTENT\n")})
    assert "SECRET CONTENT" in (core.conversation[0].content or "")  # type: ignore[union-attr]
    assert core.prompts() == ["explain @a.txt"]


def test_a_directory_mentioned_without_its_slash_is_listed_as_with_it(tmp_path: Path) -> None:
    """ADR 0058: `@src` read the directory with read_file and attached "is a directory: src"; Claude Code attaches
    the directory. It is listed as `@src/` is (the same row, the same attachment)."""
    (tmp_path / "src").mkdir()
    core = AgentCore(AgentOptions(provider=PROVIDER, cwd=str(tmp_path)), MemoryJournal())
    core.on_ui(SubmitPrompt(text="what is in @src, and in @src/? not @nope"))
    listing = ListDirectoryResult("src", [DirectoryEntry("x.py", "file", 1)], 1, False)
    out = answer_reads(core, {"src": listing, "src/": listing, "nope": ToolFailed(error="file not found: nope")})
    read = [m.args for m in out if isinstance(m, RunTool)]
    assert read == [ListDirectoryArgs(path="src"), ListDirectoryArgs(path="src/"), ReadFileArgs(path="nope")]
    content = user_message(out)
    assert "The directory src, attached with @src (list_directory):\n```\nx.py\n```" in content
