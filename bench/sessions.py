"""Session log costs: resuming a 2 000-message session, and the durable (fsynced) append per message."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import msgspec

from bench.common import Figure
from dashfloat.protocol import ChatMessage, ConversationEntry, FunctionCall, ReadFileResult, ToolCallRecord, ToolReply
from dashfloat.sessions.log import SessionWriter, new_header

RESUME_MESSAGES = 2000
TOOL_RESULT_BYTES = 1024  # a typical bounded tool result; the log's bulk


def _conversation(n: int) -> list[ConversationEntry]:
    """A realistic turn mix: prompt, assistant call, tool result, answer; ends on a dangling call."""
    out: list[ConversationEntry] = []
    content = "x" * TOOL_RESULT_BYTES
    result = ReadFileResult(
        "src/app.py", content, offset=1, lines=1, total_lines=1, total_bytes=len(content), truncated=False
    )
    i = 0
    while len(out) < n - 1:
        call = ToolCallRecord(id=f"call_{i}", function=FunctionCall("read_file", '{"path":"src/app.py"}'))
        out += [
            ChatMessage(role="user", content=f"prompt {i}: look at src/app.py and fix the bug"),
            ChatMessage(role="assistant", content="Reading the file.", tool_calls=[call]),
            ToolReply(call_id=call.id, name="read_file", result=result),
            ChatMessage(role="assistant", content="The bug is on line 12; here is the fix. " * 5),
        ]
        i += 1
    dangling = ToolCallRecord(id="call_last", function=FunctionCall("execute_command", '{"command":"make"}'))
    return [*out[: n - 1], ChatMessage(role="assistant", tool_calls=[dangling])]


def _fs_type(path: Path) -> str:
    """The filesystem type holding ``path`` (fsync on tmpfs measures nothing)."""
    best, kind = "", "unknown"
    try:
        with open("/proc/mounts") as f:
            for line in f:
                parts = line.split()
                if len(parts) > 2 and str(path).startswith(parts[1]) and len(parts[1]) > len(best):
                    best, kind = parts[1], parts[2]
    except OSError:
        pass
    return kind


def _bench_dir() -> Path:
    base = Path(tempfile.gettempdir())
    if _fs_type(base) == "tmpfs":
        base = Path.cwd()  # a real disk, so the fsync figure means something
    return Path(tempfile.mkdtemp(prefix="dashfloat-bench-", dir=base))


def _resume(root: Path, quick: bool) -> Figure:
    sessions = root / "sessions"
    header = new_header(cwd="/p", provider="bench", model="m", dashfloat_version="bench")
    with SessionWriter.create(sessions, header) as w:
        w.append_many(_conversation(RESUME_MESSAGES))
    with open(w.path, "ab") as f:
        f.write(b'{"kind":"message","message":{"role":"ass')  # a torn tail, so repair really runs
    template = root / "template.jsonl"
    shutil.copyfile(w.path, template)
    samples, baseline = [], []
    for _ in range(5 if quick else 25):
        shutil.copyfile(template, w.path)
        start = time.perf_counter()
        writer, loaded = SessionWriter.open_existing(w.path)
        samples.append((time.perf_counter() - start) * 1000)
        writer.close()
        if len(loaded.messages) != RESUME_MESSAGES + 1 or not loaded.notices:  # + the cancelled result
            raise RuntimeError("the benchmark session did not load as built")
        start = time.perf_counter()
        for line in template.read_bytes().splitlines()[:-1]:
            msgspec.json.decode(line)
        baseline.append((time.perf_counter() - start) * 1000)
    return Figure(
        name=f"resume a {RESUME_MESSAGES}-message session (load, repair, write back, reopen)",
        unit="ms",
        samples=samples,
        baseline_name="read + untyped JSON decode of the same lines",
        baseline_samples=baseline,
        target="≤ 100 ms",
        met=sorted(samples)[len(samples) // 2] <= 100,
        note=f"{template.stat().st_size // 1024} KiB file with a torn tail and a dangling call",
    )


def _append(root: Path, quick: bool) -> Figure:
    n = 30 if quick else 300
    messages = _conversation(n)
    header = new_header(cwd="/p", provider="bench", model="m", dashfloat_version="bench")
    samples, baseline = [], []
    with SessionWriter.create(root / "append", header) as w:
        for m in messages:
            start = time.perf_counter()
            w.append(m)
            samples.append((time.perf_counter() - start) * 1000)
    plain = root / "plain.jsonl"
    fd = os.open(plain, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        for m in messages:
            start = time.perf_counter()
            os.write(fd, msgspec.json.encode({"kind": "message", "message": m}) + b"\n")
            baseline.append((time.perf_counter() - start) * 1000)
    finally:
        os.close(fd)
    median = sorted(samples)[len(samples) // 2]
    return Figure(
        name="durable append of one message (write + fsync)",
        unit="ms",
        samples=samples,
        baseline_name="plain unsynced append of the same line",
        baseline_samples=baseline,
        target="≤ 10 ms per message (far below one model round trip)",
        met=median <= 10,
        note=f"{n} messages on {_fs_type(root)}",
    )


def run(quick: bool) -> list[Figure]:
    """The session log figures, measured in one temporary directory on a real disk."""
    root = _bench_dir()
    try:
        return [_resume(root, quick), _append(root, quick)]
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    for fig in run(quick=False):
        base = sorted(fig.baseline_samples)[len(fig.baseline_samples) // 2]
        print(f"{fig.name}: median {fig.median():.3f} {fig.unit} ({fig.baseline_name}: {base:.3f}); {fig.note}")
