"""The in-process entry points: validate, then run a tool or build its preview; failures become results."""

from __future__ import annotations

import contextlib
import difflib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from dashfloat.catalogue import EDIT_FILE, EXECUTE_COMMAND, LIST_DIRECTORY, READ_FILE, WRITE_FILE
from dashfloat.executor import _files
from dashfloat.executor._errors import ToolError, error_result, os_message
from dashfloat.executor._exec import Command
from dashfloat.executor._limits import EDIT_MAX_FILE_BYTES, EXEC_TIMEOUT_S, PREVIEW_FULL_MAX_BYTES, PREVIEW_MAX_LINES
from dashfloat.executor._sandbox import Sandbox, describe
from dashfloat.executor._validate import validate
from dashfloat.executor.path_policy import PathError, Root
from dashfloat.protocol import SandboxPolicy, SandboxState, ToolResult

# A preview line longer than this is cut: a one-line minified file must not flood the confirmation.
PREVIEW_MAX_LINE_CHARS = 400


@dataclass(frozen=True)
class Preview:
    """What the confirmation shows; ``error`` set when the call would fail anyway (no confirmation)."""

    lines: list[str]
    digest: str | None = None
    error: str | None = None
    summary: str = ""
    full: str = ""


def full_text(lines: list[str]) -> str:
    """The whole preview as one text, cut at PREVIEW_FULL_MAX_BYTES with a marker naming the rest."""
    text = "\n".join(lines)
    data = text.encode("utf-8", "replace")
    if len(data) <= PREVIEW_FULL_MAX_BYTES:
        return text
    kept = data[:PREVIEW_FULL_MAX_BYTES].decode("utf-8", "ignore").rpartition("\n")[0]
    rest = len(data) - len(kept.encode())
    return f"{kept}\n[… {rest} more bytes of the preview not shown (cap {PREVIEW_FULL_MAX_BYTES} bytes)]"


def failure_message(exc: Exception, name: str, args: dict[str, Any]) -> str:
    match exc:
        case ToolError() | PathError():
            return str(exc)
        case OSError():
            return os_message(exc, str(args.get("path", args.get("cwd", ""))))
        case _:
            return f"internal error in {name}: {type(exc).__name__}: {exc}"


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


def command_cwd(args: dict[str, Any], root: Root) -> str:
    """The resolved, existing directory execute_command runs in."""
    rel = root.locate(args["cwd"])
    fd = root.open(rel, os.O_PATH, path=args["cwd"])
    try:
        is_dir = stat.S_ISDIR(os.fstat(fd).st_mode)
    finally:
        os.close(fd)
    if not is_dir:
        raise ToolError(f"cwd is not an existing directory: {args['cwd']}")
    return root.real(rel)


def start_command(
    args: dict[str, Any],
    root: Root,
    exec_timeout_s: float,
    sandbox: Sandbox | None = None,
    policy: SandboxPolicy | None = None,
) -> Command:
    """Start a validated execute_command call (raises like the tools do); no ``sandbox``: unconfined."""
    if "\0" in args["command"]:
        raise ToolError("command contains a NUL byte")
    cwd = command_cwd(args, root)
    wrap = None if sandbox is None else sandbox.wrap(policy or SandboxPolicy(), root.fd, root.path)
    timeout_s = args.get("timeout") or exec_timeout_s  # the call's own (bounded by validation), else the default
    try:
        return Command(args["command"], cwd, float(timeout_s), wrap)
    except OSError as exc:
        if wrap is None:
            raise
        raise ToolError(f"the sandbox did not start, so the command did not run: {exc}") from exc


def run_tool(
    name: str,
    args: Any,
    root: Root | str,
    exec_timeout_s: float = EXEC_TIMEOUT_S,
    expect_digest: str | None = None,
    sandbox: Sandbox | None = None,
    policy: SandboxPolicy | None = None,
) -> ToolResult:
    """Validate and execute one call to completion; every failure is an error result, never a raise.

    Commands run unconfined unless a ``sandbox`` is given (the executor process always gives one).
    """
    valid = validate(name, args)
    if isinstance(valid, str):
        return error_result(valid)
    try:
        with as_root(root) as fixed:
            return _run_valid(name, valid, fixed, exec_timeout_s, expect_digest, sandbox, policy)
    except Exception as exc:  # a failure is a result, never an exception across the process boundary
        return error_result(failure_message(exc, name, valid))


def _run_valid(
    name: str,
    valid: dict[str, Any],
    root: Root,
    exec_timeout_s: float,
    expect_digest: str | None,
    sandbox: Sandbox | None,
    policy: SandboxPolicy | None,
) -> ToolResult:
    if name == READ_FILE:
        return _files.read_file(root, valid["path"], valid["offset"], valid["limit"])
    if name == WRITE_FILE:
        return _files.write_file(root, valid["path"], valid["content"], expect_digest)
    if name == EDIT_FILE:
        return _files.edit_file(root, valid["path"], valid["search_block"], valid["replace_block"], expect_digest)
    if name == LIST_DIRECTORY:
        return _files.list_directory(root, valid["path"])
    if name == EXECUTE_COMMAND:
        return start_command(valid, root, exec_timeout_s, sandbox, policy).run_to_end()
    raise AssertionError(f"validated tool {name!r} has no runner")


def _window(lines: list[str]) -> list[str]:
    lines = [line if len(line) <= PREVIEW_MAX_LINE_CHARS else line[:PREVIEW_MAX_LINE_CHARS] + " […]" for line in lines]
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
    return Preview(_window(diff), digest=plan.digest, summary=change_summary(plan, diff), full=full_text(diff))


def preview(name: str, args: Any, root: Root | str, sandbox: SandboxState | None = None) -> Preview:
    """The confirmation preview of a call, built with the same planning code its execution uses."""
    valid = validate(name, args)
    if isinstance(valid, str):
        return Preview([], error=valid)
    try:
        with as_root(root) as fixed:
            return _preview_valid(name, valid, fixed, sandbox)
    except Exception as exc:
        return Preview([], error=failure_message(exc, name, valid))


def _preview_valid(name: str, valid: dict[str, Any], root: Root, sandbox: SandboxState | None) -> Preview:
    if name == WRITE_FILE:
        return _file_preview(_files.plan_write(root, valid["path"], valid["content"]))
    if name == EDIT_FILE:
        return _file_preview(_files.plan_edit(root, valid["path"], valid["search_block"], valid["replace_block"]))
    if name == EXECUTE_COMMAND:
        if "\0" in valid["command"]:
            raise ToolError("command contains a NUL byte")
        first, *rest = valid["command"].splitlines() or [""]
        # A confirmation is a keypress: the line says what the command will run in if approved.
        command_lines = [f"$ {first}", *(f"  {line}" for line in rest)]
        where = f"in {command_cwd(valid, root)}"
        confinement = describe(sandbox or SandboxState(), None)
        return Preview(
            [*_window(command_lines), where, confinement],
            summary=where,
            full=full_text([*command_lines, where, confinement]),
        )
    if name in (READ_FILE, LIST_DIRECTORY):
        root.locate(valid["path"])
        return Preview([f"{name} {valid['path']}"])
    raise AssertionError(f"validated tool {name!r} has no preview")
