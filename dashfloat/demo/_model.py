"""The offline demo model: a deterministic function from the conversation to the next reply.

It plays a short, real agent loop in the user's working directory — list, read, propose an edit, run a
command, answer in Markdown — so a new user sees every part of DashFloat before configuring a provider.
All of its tool calls go through the same executor, path policy and confirmations as a real model's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final

import msgspec

from dashfloat.jsonvalue import JsonObject, JsonValue
from dashfloat.protocol import (
    ChatMessage,
    DirectoryEntry,
    EditFileArgs,
    ExecuteCommandArgs,
    ListDirectoryArgs,
    ReadFileArgs,
    ToolArgs,
    WriteFileArgs,
)

DEMO_FILE: Final = "dashfloat-demo.md"
CANDIDATES: Final = (
    "README.md",
    "README.rst",
    "README.txt",
    "README",
    "pyproject.toml",
    "package.json",
    "Makefile",
)
FIX_PATTERNS: Final = (("teh ", "the "), ("recieve", "receive"), ("seperate", "separate"), ("TODO", "DONE"))

CONFIGURE: Final = """To use a real model, point DashFloat at any OpenAI-compatible endpoint:

```sh
export OPENAI_API_KEY=sk-...                       # the key stays in your environment
dashfloat --base-url https://api.openai.com/v1 --model gpt-4o-mini
# or a local server, no key needed:
dashfloat --base-url http://localhost:11434/v1 --model qwen2.5-coder
```

or name providers in `~/.config/dashfloat/config.toml` (see `docs/providers.md`)."""

MENU: Final = (
    "Try one of these: **hello**, **explain this project**, **fix**, **run the tests**, or **tour** "
    "(lists, reads, proposes an edit and a command — each mutation waits for your key)."
)


@dataclass
class Reply:
    """What the demo model says next: prose, tool calls, or both."""

    text: str = ""
    calls: list[ToolArgs] = field(default_factory=list)


@dataclass
class _Turn:
    prompt: str
    results: list[tuple[str, JsonObject]]  # (tool name, result object as the model reads it) in call order


def _result_object(content: str | None) -> JsonObject:
    try:
        result: JsonValue = msgspec.json.decode(content or "{}")
    except msgspec.DecodeError:
        return {}
    return result if isinstance(result, dict) else {}


def _turn(messages: list[ChatMessage]) -> _Turn:
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    prompt = (messages[last_user].content or "") if last_user >= 0 else ""
    names: dict[str, str] = {}
    results: list[tuple[str, JsonObject]] = []
    for message in messages[last_user + 1 :]:
        for call in message.tool_calls or []:
            names[call.id] = call.function.name
        if message.role == "tool":
            results.append((names.get(message.tool_call_id or "", ""), _result_object(message.content)))
    return _Turn(prompt=prompt, results=results)


def _entries(turn: _Turn) -> list[DirectoryEntry]:
    for name, result in turn.results:
        if name == "list_directory":
            try:  # the entries as the executor wrote them (docs/tools.md): DirectoryEntry's own fields
                return msgspec.convert(result.get("entries", []), list[DirectoryEntry])
            except msgspec.ValidationError:
                return []
    return []


def _pick_file(entries: list[DirectoryEntry]) -> str | None:
    files = [e.name for e in entries if e.type == "file"]
    for candidate in CANDIDATES:
        if candidate in files:
            return candidate
    small = [e.name for e in entries if e.type == "file" and e.size < 200_000]
    return small[0] if small else None


def _read(turn: _Turn) -> tuple[str, str] | None:
    for name, result in turn.results:
        if name == "read_file" and result.get("ok"):
            return str(result.get("path", "")), str(result.get("content", ""))
    return None


def _stopped(turn: _Turn) -> str | None:
    """A polite stop when the user said no: the model adapts instead of retrying."""
    if turn.results and turn.results[-1][1].get("rejected"):
        return f"Understood — I left that alone. Tell me what you would like instead.\n\n{MENU}"
    return None


def _kind(prompt: str) -> str:
    text = prompt.lower()
    for kind, words in (
        ("tour", ("tour", "demo", "show me")),
        ("tests", ("test", "run ")),
        ("fix", ("fix", "bug", "typo", "todo")),
        ("explain", ("explain", "project", "overview", "describe", "what is this", "what's this")),
        ("hello", ("hello", "hi", "hey", "help")),
    ):
        if any(re.search(rf"\b{re.escape(w.strip())}", text) for w in words):
            return kind
    return "other"


def _count(n: int, noun: str) -> str:
    """``1 file``, ``2 files``, ``1 directory``, ``0 directories``."""
    if n == 1:
        return f"1 {noun}"
    return f"{n} {noun[:-1]}ies" if noun.endswith("y") else f"{n} {noun}s"


def _overview(entries: list[DirectoryEntry], read: tuple[str, str] | None) -> str:
    dirs = [e.name + "/" for e in entries if e.type == "dir"]
    files = [e.name for e in entries if e.type != "dir"]
    lines = [
        "## This project",
        "",
        f"The working directory holds **{_count(len(files), 'file')}** and **{_count(len(dirs), 'directory')}**.",
    ]
    if read:
        path, content = read
        heading = next((ln.lstrip("# ").strip() for ln in content.splitlines() if ln.strip()), "")
        lines += [
            "",
            f"I read `{path}`; it starts with *{heading[:80]}*." if heading else f"I read `{path}`.",
        ]
    tree = "\n".join((dirs + files)[:12]) or "(empty)"
    lines += ["", "```text", tree, "```", "", MENU]
    return "\n".join(lines)


def _test_command(entries: list[DirectoryEntry]) -> str:
    names = {e.name for e in entries}
    if "Makefile" in names:
        return "make -n test"
    if "pyproject.toml" in names or "tests" in names:
        return "python3 -m pytest -q --co"
    if "package.json" in names:
        return "npm test --if-present"
    return "ls -la"


def _explain(turn: _Turn) -> Reply:
    entries = _entries(turn)
    if not turn.results:
        return Reply("Let me look around first.", [ListDirectoryArgs(path=".")])
    target = _pick_file(entries)
    if len(turn.results) == 1 and target:
        return Reply("", [ReadFileArgs(path=target, limit=60)])
    return Reply(_overview(entries, _read(turn)))


def _fix(turn: _Turn) -> Reply:
    if not turn.results:
        return Reply("I'll look for something small to fix.", [ListDirectoryArgs(path=".")])
    target = _pick_file(_entries(turn))
    if len(turn.results) == 1:
        if target is None:
            return Reply(f"There are no files here for me to read.\n\n{MENU}")
        return Reply("", [ReadFileArgs(path=target)])
    read = _read(turn)
    last_name, last = turn.results[-1]
    if last_name == "edit_file":
        verdict = (
            "The fix is in." if last.get("ok") else f"That edit did not land: {last.get('error', 'unknown error')}."
        )
        return Reply(f"{verdict}\n\n{MENU}")
    if read:
        path, content = read
        for line in content.splitlines():
            for wrong, right in FIX_PATTERNS:
                if wrong in line and content.count(line) == 1:
                    fixed = line.replace(wrong, right, 1)
                    return Reply(
                        f"`{path}` has `{wrong.strip()}` in it; here is a one-line fix for you to approve.",
                        [EditFileArgs(path=path, search_block=line, replace_block=fixed)],
                    )
        return Reply(
            f"I read `{path}` and found nothing I know how to fix (I look for TODO and a few classic typos). "
            f"Try **tour** to see an edit anyway.\n\n{MENU}"
        )
    return Reply(f"I could not read a file here.\n\n{MENU}")


def _tests(turn: _Turn) -> Reply:
    if not turn.results:
        return Reply("", [ListDirectoryArgs(path=".")])
    if len(turn.results) == 1:
        command = _test_command(_entries(turn))
        return Reply(f"I'll run `{command}` (a dry run, so it is quick).", [ExecuteCommandArgs(command=command)])
    _, result = turn.results[-1]
    output = str(result.get("output", ""))[-1500:]
    status = "passed" if result.get("ok") else f"failed (exit code {result.get('exit_code', '?')})"
    return Reply(f"The command {status}. The end of its output:\n\n```text\n{output.rstrip()}\n```\n\n{MENU}")


def _tour(turn: _Turn) -> Reply:
    # The next step is the first one not taken yet, not a count of results: in a directory with nothing to
    # read the read is skipped, and a count then asked for the new file a second time.
    done = [name for name, _ in turn.results]
    if not done:
        return Reply("A short tour. First, what is here:", [ListDirectoryArgs(path=".")])
    if done == ["list_directory"]:
        target = _pick_file(_entries(turn))
        if target:
            return Reply("", [ReadFileArgs(path=target, limit=40)])
    if "write_file" not in done:
        body = "# DashFloat demo\n\nThis file was written by the offline demo model.\nIt is safe to delete.\n"
        return Reply(
            f"Now a change: a new file, `{DEMO_FILE}`. The preview shows every line; `y` writes it.",
            [WriteFileArgs(path=DEMO_FILE, content=body)],
        )
    if "edit_file" not in done:
        return Reply(
            "And an edit of that file: one line replaced, shown as a diff.",
            [
                EditFileArgs(
                    path=DEMO_FILE,
                    search_block="It is safe to delete.",
                    replace_block="It is safe to delete (edited through a confirmation).",
                )
            ],
        )
    if "execute_command" not in done:
        return Reply(
            "Finally a command. `cksum` is not on the read-only list (`ls`, `cat`, `rg`, `git status`... run "
            "unasked), so it asks too:",
            [ExecuteCommandArgs(command=f"cksum {DEMO_FILE}")],
        )
    _, result = turn.results[-1]
    output = str(result.get("output", "")).strip()
    return Reply(
        "## Tour complete\n\n"
        "- listed the directory and read a file (no confirmation needed);\n"
        f"- wrote and edited `{DEMO_FILE}` (each after your key);\n"
        "- ran a command:\n\n"
        f"```sh\n$ cksum {DEMO_FILE}\n{output}\n```\n\n"
        "Every tool call went through the same path policy and confirmations a real model gets.\n\n"
        f"{CONFIGURE}"
    )


def respond(messages: list[ChatMessage]) -> Reply:
    """The demo model's next reply for a chat/completions ``messages`` list."""
    turn = _turn(messages)
    stopped = _stopped(turn)
    if stopped:
        return Reply(stopped)
    kind = _kind(turn.prompt)
    if kind == "tour":
        return _tour(turn)
    if kind == "explain":
        return _explain(turn)
    if kind == "fix":
        return _fix(turn)
    if kind == "tests":
        return _tests(turn)
    if kind == "hello":
        return Reply(
            "Hello! I'm DashFloat's **offline demo model** — no network, no API key. I drive the real agent: "
            f"real tools in this directory, real confirmations.\n\n{MENU}\n\n{CONFIGURE}"
        )
    return Reply(f"I'm the offline demo model, so I only know a few moves.\n\n{MENU}\n\n{CONFIGURE}")
