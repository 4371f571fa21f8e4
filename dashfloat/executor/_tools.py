"""The in-process entry points: run a tool or build its preview from its typed arguments; failures become results."""

from __future__ import annotations

import contextlib
import difflib
import os
import stat
from collections.abc import Iterator
from typing import assert_never

import msgspec

from dashfloat.catalogue import call_name
from dashfloat.command_env import command_env
from dashfloat.executor import _files
from dashfloat.executor._confine import bounds_for
from dashfloat.executor._errors import ToolError, error_result, os_message
from dashfloat.executor._exec import Command
from dashfloat.executor._git_writers import git_metadata_note
from dashfloat.executor._limits import EDIT_MAX_FILE_BYTES, EXEC_TIMEOUT_S, PREVIEW_FULL_MAX_BYTES, PREVIEW_MAX_LINES
from dashfloat.executor._sandbox import Sandbox, describe
from dashfloat.executor.path_policy import PathError, Root, protected_reason
from dashfloat.protocol import (
    EditFileArgs,
    ExecuteCommandArgs,
    JobKillArgs,
    JobOutputArgs,
    ListDirectoryArgs,
    McpCallArgs,
    McpSearchArgs,
    ReadFileArgs,
    SandboxPolicy,
    SandboxState,
    ToolArgs,
    ToolResult,
    WriteFileArgs,
)
from dashfloat.tool_args import parse_args

MCP_ELSEWHERE = "MCP tools are run by the executor's MCP host (ADR 0086), not by the standalone executor"
# A preview line longer than this is cut: a one-line minified file must not flood the confirmation.
PREVIEW_MAX_LINE_CHARS = 400


class Preview(msgspec.Struct, frozen=True):
    """What the confirmation shows; ``error`` set when the call would fail anyway (no confirmation)."""

    lines: list[str]
    digest: str | None = None
    error: str | None = None
    summary: str = ""
    full: str = ""
    protected: str = ""


def full_text(lines: list[str]) -> str:
    """The whole preview as one text, cut at PREVIEW_FULL_MAX_BYTES with a marker naming the rest."""
    text = "\n".join(lines)
    data = text.encode("utf-8", "replace")
    if len(data) <= PREVIEW_FULL_MAX_BYTES:
        return text
    kept = data[:PREVIEW_FULL_MAX_BYTES].decode("utf-8", "ignore").rpartition("\n")[0]
    rest = len(data) - len(kept.encode())
    return f"{kept}\n[… {rest} more bytes of the preview not shown (cap {PREVIEW_FULL_MAX_BYTES} bytes)]"


def failure_message(exc: Exception, args: ToolArgs) -> str:
    match exc:
        case ToolError() | PathError():
            return str(exc)
        case OSError():
            return os_message(exc, args.cwd if isinstance(args, ExecuteCommandArgs) else getattr(args, "path", ""))
        case _:
            return f"internal error in {call_name(args)}: {type(exc).__name__}: {exc}"


@contextlib.contextmanager
def as_root(root: Root | str) -> Iterator[Root]:
    """``root`` itself, or a Root fixed now for one call (tests and the standalone mode pass a path)."""
    if isinstance(root, Root):
        yield root
        return
    fixed = Root(root)
    try:
        yield fixed
    finally:
        fixed.close()


def command_cwd(args: ExecuteCommandArgs, root: Root) -> str:
    """The resolved, existing directory execute_command runs in."""
    rel = root.locate(args.cwd)
    fd = root.open(rel, os.O_PATH, path=args.cwd)
    try:
        is_dir = stat.S_ISDIR(os.fstat(fd).st_mode)
    finally:
        os.close(fd)
    if not is_dir:
        raise ToolError(f"cwd is not an existing directory: {args.cwd}")
    return root.real(rel)


def start_command(
    args: ExecuteCommandArgs,
    root: Root,
    exec_timeout_s: float,
    sandbox: Sandbox | None = None,
    policy: SandboxPolicy | None = None,
    *,
    held: bool = False,
) -> Command:
    """Start an execute_command call (raises like the tools do); no ``sandbox``: unconfined. ``held``: it waits at
    its gate until ``Command.release`` (ADR 0050)."""
    if "\0" in args.command:
        raise ToolError("command contains a NUL byte")
    cwd = command_cwd(args, root)
    wrap = None if sandbox is None else sandbox.wrap(policy or SandboxPolicy(), root.fd, root.path)
    timeout_s = args.timeout or exec_timeout_s  # the call's own (bounded by its parse), else the default
    state = sandbox.state if sandbox is not None else SandboxState()
    # Every command, sandboxed or not, starts without the secrets (ADR 0068); one run unasked gets less still.
    unasked = (policy or SandboxPolicy()).private_home
    env = command_env(os.environ, state.hide_env, state.pass_env, unasked=unasked, workspace=root.path)
    try:
        return Command(args.command, cwd, timeout_s, wrap, held=held, bounds=bounds_for(state.limits), env=env)
    except OSError as exc:
        if wrap is None:
            raise
        raise ToolError(f"the sandbox did not start, so the command did not run: {exc}") from exc


def run_tool(
    name: str,
    args: object,
    root: Root | str,
    exec_timeout_s: float = EXEC_TIMEOUT_S,
    expect_digest: str | None = None,
    sandbox: Sandbox | None = None,
    policy: SandboxPolicy | None = None,
    interrupt_fd: int | None = None,
) -> ToolResult:
    """A call as the model writes it (the standalone executor, tests): parsed, then run; a bad one is an error
    result with the text the model would read. ``interrupt_fd`` readable: a running command is killed and
    KeyboardInterrupt raised (Ctrl-C in the standalone executor)."""
    parsed = parse_args(name, args)
    if isinstance(parsed, str):
        return error_result(parsed)
    return run(parsed, root, exec_timeout_s, expect_digest, sandbox, policy, interrupt_fd)


def run(
    args: ToolArgs,
    root: Root | str,
    exec_timeout_s: float = EXEC_TIMEOUT_S,
    expect_digest: str | None = None,
    sandbox: Sandbox | None = None,
    policy: SandboxPolicy | None = None,
    interrupt_fd: int | None = None,
) -> ToolResult:
    """Execute one call to completion; every failure is an error result, never a raise.

    Commands run unconfined unless a ``sandbox`` is given (the executor process always gives one).
    """
    try:
        with as_root(root) as fixed:
            return _run(args, fixed, exec_timeout_s, expect_digest, sandbox, policy, interrupt_fd)
    except Exception as exc:  # a failure is a result, never an exception across the process boundary
        return error_result(failure_message(exc, args))


def _run(
    args: ToolArgs,
    root: Root,
    exec_timeout_s: float,
    expect_digest: str | None,
    sandbox: Sandbox | None,
    policy: SandboxPolicy | None,
    interrupt_fd: int | None,
) -> ToolResult:
    match args:
        case ReadFileArgs(path=path, offset=offset, limit=limit):
            return _files.read_file(root, path, offset, limit)
        case WriteFileArgs(path=path, content=content):
            return _files.write_file(root, path, content, expect_digest)
        case EditFileArgs(path=path, search_block=search, replace_block=replace):
            return _files.edit_file(root, path, search, replace, expect_digest)
        case ListDirectoryArgs(path=path):
            return _files.list_directory(root, path)
        case ExecuteCommandArgs(background=True):  # issue 36: a job outlives its call, which only a session has
            raise ToolError("background jobs run only in DashFloat's executor process; run it without background")
        case ExecuteCommandArgs():
            return start_command(args, root, exec_timeout_s, sandbox, policy).run_to_end(interrupt_fd)
        case McpCallArgs() | McpSearchArgs():
            raise ToolError(MCP_ELSEWHERE)
        case JobOutputArgs() | JobKillArgs():  # background jobs (issue 36) live in the executor process
            raise ToolError(f"{call_name(args)}: background jobs run only in DashFloat's executor process")
        case _:
            assert_never(args)


def _window(lines: list[str]) -> list[str]:
    lines = [
        line
        if len(line) <= PREVIEW_MAX_LINE_CHARS
        else f"{line[:PREVIEW_MAX_LINE_CHARS]} [… {len(line) - PREVIEW_MAX_LINE_CHARS} more characters]"
        for line in lines
    ]
    if len(lines) <= PREVIEW_MAX_LINES:
        return lines
    return [*lines[:PREVIEW_MAX_LINES], f"[… {len(lines) - PREVIEW_MAX_LINES} more lines not shown]"]


def _text_or_none(data: bytes) -> str | None:
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def diff_lines(plan: _files.PlannedWrite) -> list[str]:
    """The unified diff (hunks only) of a planned write, all ``+`` lines for a new file, windowed."""
    return _window(full_diff(plan))


def full_diff(plan: _files.PlannedWrite) -> list[str]:
    """The whole unified diff (hunks only) of a planned write, or one line saying why there is none."""
    new_text = _text_or_none(plan.new)
    if plan.old_size is None:
        if new_text is None:
            return [f"[new binary file, {len(plan.new)} bytes]"]
        return [f"+{line}" for line in new_text.splitlines()]
    old_text = None if plan.old is None else _text_or_none(plan.old)
    if plan.old is None:
        return [f"[replaces a {plan.old_size}-byte file, over {EDIT_MAX_FILE_BYTES} bytes: no diff shown]"]
    if old_text is None or new_text is None:
        return [f"[binary content: {plan.old_size} bytes replaced by {len(plan.new)} bytes]"]
    diff = list(difflib.unified_diff(old_text.splitlines(), new_text.splitlines(), lineterm="", n=3))[2:]
    if not diff:
        return ["[no line changes (the bytes differ only in line endings)]" if plan.old != plan.new else "[no change]"]
    return diff


def change_summary(plan: _files.PlannedWrite, diff: list[str]) -> str:
    """``+N −M`` of a diff (and the size of a new file): what the confirmation's header always shows."""
    added = sum(1 for line in diff if line.startswith("+"))
    removed = sum(1 for line in diff if line.startswith("-"))
    if plan.old_size is None:
        return f"new file · +{added} · {len(plan.new)} bytes"
    return f"+{added} −{removed} · {len(plan.new)} bytes"


def _file_preview(plan: _files.PlannedWrite) -> Preview:
    diff = full_diff(plan)
    return Preview(
        _window(diff),
        digest=plan.digest,
        summary=change_summary(plan, diff),
        full=full_text(diff),
        protected=protected_reason(plan.rel),
    )


def preview(name: str, args: object, root: Root | str, sandbox: SandboxState | None = None) -> Preview:
    """The preview of a call as the model writes it (tests): parsed, then previewed."""
    parsed = parse_args(name, args)
    if isinstance(parsed, str):
        return Preview([], error=parsed)
    return preview_call(parsed, root, sandbox)


def preview_call(args: ToolArgs, root: Root | str, sandbox: SandboxState | None = None) -> Preview:
    """The confirmation preview of a call, built with the same planning code its execution uses."""
    try:
        with as_root(root) as fixed:
            return _preview(args, fixed, sandbox)
    except Exception as exc:
        return Preview([], error=failure_message(exc, args))


def _preview(args: ToolArgs, root: Root, sandbox: SandboxState | None) -> Preview:
    match args:
        case WriteFileArgs(path=path, content=content):
            return _file_preview(_files.plan_write(root, path, content))
        case EditFileArgs(path=path, search_block=search, replace_block=replace):
            return _file_preview(_files.plan_edit(root, path, search, replace))
        case ExecuteCommandArgs(command=command):
            if "\0" in command:
                raise ToolError("command contains a NUL byte")
            first, *rest = command.splitlines() or [""]
            # A confirmation is a keypress: the line says what the command will run in if approved.
            command_lines = [f"$ {first}", *(f"  {line}" for line in rest)]
            cwd = command_cwd(args, root)
            where = f"in {cwd}" + (
                " · in the background (a job, stopped by job_kill or the session's end)" if args.background else ""
            )
            state = sandbox or SandboxState()
            # A command that would change .git's config or hooks: the sandbox will stop it, said before the keypress.
            note = git_metadata_note(command, state, root.path, cwd)
            said = [describe(state, None), *([note] if note else [])]
            return Preview(
                [*_window(command_lines), where, *said],
                summary=where,
                full=full_text([*command_lines, where, *said]),
            )
        case ReadFileArgs(path=path) | ListDirectoryArgs(path=path):
            root.locate(path)
            return Preview([f"{call_name(args)} {path}"])
        case McpCallArgs() | McpSearchArgs():
            raise ToolError(MCP_ELSEWHERE)
        case JobOutputArgs(id=job_id) | JobKillArgs(id=job_id):  # never asked (issue 36): for the record only
            return Preview([f"{call_name(args)} {job_id}"])
        case _:
            assert_never(args)
