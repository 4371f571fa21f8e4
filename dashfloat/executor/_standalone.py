"""``python -m dashfloat.executor``: run tool calls from JSON lines on stdin, no confirmation (debugging)."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from collections.abc import Iterator
from types import FrameType
from typing import Any, BinaryIO, Final

import msgspec

from dashfloat.executor._confine import sweep
from dashfloat.executor._errors import error_result
from dashfloat.executor._limits import EXEC_TIMEOUT_S, STANDALONE_LINE_MAX_BYTES
from dashfloat.executor._tools import run_tool
from dashfloat.protocol import ToolResult, result_json

_DESCRIPTION = """\
Run DashFloat tool calls directly, without confirmation: the executor's debugging entry point.

Reads one JSON object per line on stdin:   {"id": "1", "name": "read_file", "args": {"path": "a.py"}}
Writes one JSON object per call on stdout: {"id": "1", "result": {"ok": true, ...}}

Tools: read_file, write_file, edit_file, execute_command, list_directory (see docs/tools.md).
A line that is not valid JSON or not of that shape gets {"id": null, "result": {"ok": false, "error": ...}}
and serving goes on. Stops at EOF.
"""


EXIT_INTERRUPTED: Final = 130


class Request(msgspec.Struct, forbid_unknown_fields=True):
    """One stdin line."""

    id: str
    name: str
    args: dict[str, Any] = {}


_ENCODER = msgspec.json.Encoder()


def _reply(request_id: str | None, result: ToolResult) -> bytes:
    # The result is spliced in as the model would read it, so this prints exactly that JSON.
    return b'{"id":' + _ENCODER.encode(request_id) + b',"result":' + result_json(result).encode() + b"}\n"


class Interrupts:
    """Ctrl-C while a call runs is a byte on a pipe, read where the running command's group is killed (a
    KeyboardInterrupt raised between starting a command and watching it left the command running);
    between calls it raises at once."""

    def __init__(self) -> None:
        self.fd, self._write = os.pipe()
        os.set_blocking(self.fd, False)
        os.set_blocking(self._write, False)
        self.running = False

    def on_sigint(self, signum: int, frame: FrameType | None) -> None:
        if not self.running:
            raise KeyboardInterrupt
        with contextlib.suppress(BlockingIOError):
            os.write(self._write, b"\0")

    def pending(self) -> bool:
        """Whether a Ctrl-C came during the call (and was not yet acted on); clears it."""
        try:
            return bool(os.read(self.fd, 64))
        except BlockingIOError:
            return False

    @contextlib.contextmanager
    def call(self) -> Iterator[int]:
        """Around one call: Ctrl-C wakes it; one that came during a call that was not a command raises after."""
        self.running = True
        try:
            yield self.fd
        finally:
            self.running = False
            came = self.pending()  # read even when the call raised it, so none is left for the next call
        if came:
            raise KeyboardInterrupt


def handle_line(line: bytes, root: str, exec_timeout_s: float, interrupts: Interrupts | None = None) -> bytes:
    """The stdout line for one stdin line."""
    try:
        raw = msgspec.json.decode(line)
    except msgspec.DecodeError as exc:
        return _reply(None, error_result(f"not a JSON line: {exc}"))
    except RecursionError:
        return _reply(None, error_result("not a usable JSON line: nested too deeply"))
    request_id = raw.get("id") if isinstance(raw, dict) and isinstance(raw.get("id"), str) else None
    try:
        request = msgspec.convert(raw, Request)
    except msgspec.ValidationError as exc:
        return _reply(request_id, error_result(f'expected {{"id": str, "name": str, "args": {{...}}}}: {exc}'))
    if interrupts is None:
        return _reply(request.id, run_tool(request.name, request.args, root, exec_timeout_s))
    with interrupts.call() as interrupt_fd:
        result = run_tool(request.name, request.args, root, exec_timeout_s, interrupt_fd=interrupt_fd)
    return _reply(request.id, result)


def main(argv: list[str] | None = None) -> int:
    """Serve stdin until EOF."""
    parser = argparse.ArgumentParser(
        prog="python -m dashfloat.executor",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--cwd", required=True, help="the working directory every path must stay inside")
    parser.add_argument(
        "--exec-timeout",
        type=float,
        default=EXEC_TIMEOUT_S,
        metavar="SECONDS",
        help=f"execute_command timeout (default {EXEC_TIMEOUT_S:g})",
    )
    ns = parser.parse_args(argv)
    root = os.path.abspath(ns.cwd)
    if not os.path.isdir(root):
        parser.error(f"--cwd is not a directory: {ns.cwd}")
    if ns.exec_timeout <= 0:
        parser.error("--exec-timeout must be positive")
    sweep()  # as the served executor does at its start (ADR 0062)
    interrupts = Interrupts()
    signal.signal(signal.SIGINT, interrupts.on_sigint)
    try:
        _serve_lines(root, ns.exec_timeout, interrupts)
    except KeyboardInterrupt:  # Ctrl-C: the running command's group is already killed (run_to_end)
        sys.stderr.write("interrupted\n")
        return EXIT_INTERRUPTED
    return 0


def _serve_lines(root: str, exec_timeout_s: float, interrupts: Interrupts) -> None:
    out = sys.stdout.buffer
    for line in _lines(sys.stdin.buffer):
        if line is None:
            out.write(_reply(None, error_result(f"line longer than {STANDALONE_LINE_MAX_BYTES} bytes: skipped")))
        elif line.strip():
            out.write(handle_line(line, root, exec_timeout_s, interrupts))
        out.flush()


def _lines(stream: BinaryIO) -> Iterator[bytes | None]:
    """Lines of at most STANDALONE_LINE_MAX_BYTES; None stands for a longer line, read past, never held."""
    while True:
        line = stream.readline(STANDALONE_LINE_MAX_BYTES + 1)
        if not line:
            return
        if len(line) <= STANDALONE_LINE_MAX_BYTES:
            yield line
            continue
        while line and not line.endswith(b"\n"):
            line = stream.readline(STANDALONE_LINE_MAX_BYTES)
        yield None
