"""One writer per session: the lock beside the log, between real processes (sessions/_lock.py)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import msgspec
import pytest

from dashfloat.protocol import ChatMessage
from dashfloat.sessions import _lock
from dashfloat.sessions.log import (
    SESSION_ID_MAX_CHARS,
    SessionError,
    SessionHeader,
    SessionLocked,
    SessionWriter,
    check_unlocked,
    load,
    new_header,
    valid_session_id,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
HOLD_WAIT_S = 30.0

# Opens (or creates) the session named on its command line, says so, and holds it until stdin closes.
_HOLDER = """
import sys
from pathlib import Path
from dashfloat.sessions.log import SessionWriter, new_header
import msgspec
path = Path(sys.argv[1])
if path.exists():
    writer, _ = SessionWriter.open_existing(path)
else:
    header = msgspec.structs.replace(new_header(cwd="/w", provider="p", model="m", dashfloat_version="0"), id=path.stem)
    writer = SessionWriter.create(path.parent, header)
print("held", flush=True)
sys.stdin.read()
writer.close()
"""


def header(session_id: str = "job-1") -> SessionHeader:
    return msgspec.structs.replace(new_header(cwd="/w", provider="p", model="m", dashfloat_version="0"), id=session_id)


@contextmanager
def holder(path: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the session at ``path`` until the block ends (or the test kills it)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line == "held\n", proc.stderr.read() if proc.stderr else ""
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=HOLD_WAIT_S)


@pytest.fixture
def sdir(tmp_path: Path) -> Path:
    return tmp_path / "sessions"


def test_a_second_process_is_refused_naming_the_holder_and_the_file_is_untouched(sdir: Path) -> None:
    with SessionWriter.create(sdir, header()) as w:
        w.append(ChatMessage(role="user", content="one"))
    before = w.path.read_bytes()
    with holder(w.path) as proc:
        for attempt in (lambda: SessionWriter.open_existing(w.path), lambda: check_unlocked(w.path)):
            with pytest.raises(SessionLocked) as caught:
                attempt()
            message = str(caught.value)
            assert f"session job-1 is in use by process {proc.pid} on {socket.gethostname()}" in message
            assert str(w.path) in message and "\n" not in message
        assert w.path.read_bytes() == before
    check_unlocked(w.path)  # the holder closed its writer: free again


def test_create_under_a_held_id_is_refused_as_in_use(sdir: Path) -> None:
    with holder(sdir / "job-1.jsonl"), pytest.raises(SessionLocked, match="in use by process"):
        SessionWriter.create(sdir, header())


def test_a_lock_held_by_a_killed_process_is_taken_over_and_restamped(sdir: Path) -> None:
    SessionWriter.create(sdir, header()).close()
    path = sdir / "job-1.jsonl"
    with holder(path) as proc:
        proc.send_signal(signal.SIGKILL)
        proc.wait(HOLD_WAIT_S)
        stale = _lock.read_holder(_lock.lock_path(path))
        assert stale is not None and stale.pid == proc.pid  # its words stay; its flock went with it
        writer, loaded = SessionWriter.open_existing(path)
    with writer:
        assert loaded.header.id == "job-1"
        now = _lock.read_holder(_lock.lock_path(path))
        assert now is not None and (now.pid, now.host) == (os.getpid(), socket.gethostname())


def test_one_process_opening_its_own_session_twice_is_one_writer(sdir: Path) -> None:
    first = SessionWriter.create(sdir, header())
    second, _ = SessionWriter.open_existing(first.path)  # the TUI resuming the session it is writing
    first.close()
    tried = subprocess.run(
        [sys.executable, "-c", _HOLDER, str(first.path)],
        input="",
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        timeout=HOLD_WAIT_S,
    )
    assert tried.returncode == 1 and f"SessionLocked: session job-1 is in use by process {os.getpid()}" in tried.stderr
    second.close()
    with holder(first.path):
        pass


def test_a_forked_child_does_not_keep_its_parents_lock(sdir: Path) -> None:
    writer = SessionWriter.create(sdir, header())
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child only waits for its parent's word
        os.close(write_end)
        os.read(read_end, 1)
        os._exit(0)
    os.close(read_end)
    try:
        writer.close()  # the child lives on, with a copy of every descriptor the parent had at the fork
        with holder(writer.path):
            pass
    finally:
        os.close(write_end)
        os.waitpid(child, 0)


def test_a_holder_nobody_can_read_is_named_as_unknown(sdir: Path) -> None:
    path = sdir / "job-1.jsonl"
    sdir.mkdir()
    stamp = msgspec.json.encode(_lock.LockHolder(pid=7, host="h", since="2026-01-01T00:00:00+00:00"))
    lock = _lock.lock_path(path)
    lock.write_bytes(stamp.ljust(_lock.HOLDER_MAX_BYTES))  # trailing blanks are still JSON
    assert _lock.read_holder(lock) == _lock.LockHolder(pid=7, host="h", since="2026-01-01T00:00:00+00:00")
    lock.write_bytes(stamp.ljust(_lock.HOLDER_MAX_BYTES + 1))
    assert _lock.read_holder(lock) is None
    lock.write_bytes(b"not json")
    assert _lock.read_holder(lock) is None
    assert _lock.read_holder(sdir / "missing.lock") is None
    assert _lock.describe(None) == "another process (it has not said which yet)"


def test_a_lock_file_that_cannot_be_opened_is_a_session_error(sdir: Path) -> None:
    sdir.mkdir()
    _lock.lock_path(sdir / "job-1.jsonl").mkdir()  # a directory where the lock file goes
    with pytest.raises(SessionError, match="cannot lock the session"):
        SessionWriter.create(sdir, header())
    assert not (sdir / "job-1.jsonl").exists()


def test_a_failed_open_gives_its_lock_back(sdir: Path) -> None:
    sdir.mkdir()
    path = sdir / "job-1.jsonl"
    path.write_text("not a session\n")
    with pytest.raises(SessionError, match="not a DashFloat session"):
        SessionWriter.open_existing(path)
    SessionWriter.create(sdir, header("job-2")).close()
    with pytest.raises(SessionError, match="already exists"):
        SessionWriter.create(sdir, header("job-2"))
    with holder(path.with_name("job-2.jsonl")):  # neither failure kept a hold
        check_unlocked(path)


def test_session_ids_are_safe_file_names_of_bounded_length() -> None:
    assert valid_session_id("ci-run_42.retry") is None
    assert valid_session_id("a" * SESSION_ID_MAX_CHARS) is None
    assert valid_session_id("a" * (SESSION_ID_MAX_CHARS + 1)) == (
        f"it is {SESSION_ID_MAX_CHARS + 1} characters long; at most {SESSION_ID_MAX_CHARS}"
    )
    assert valid_session_id("") == "it is empty"
    for bad in ("../x", "a/b", ".hidden", "-flag", "a b", "é"):
        assert valid_session_id(bad) is not None, bad


def test_the_longest_id_makes_a_working_session(sdir: Path) -> None:
    longest = "a" * SESSION_ID_MAX_CHARS
    with SessionWriter.create(sdir, header(longest)) as w:
        w.append(ChatMessage(role="user", content="x"))
    assert load(w.path).header.id == longest
    with pytest.raises(SessionError, match="at most"):
        SessionWriter.create(sdir, header(longest + "a"))
