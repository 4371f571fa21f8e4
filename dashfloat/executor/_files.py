"""The four file tools: bounded reads, atomic writes, exact-match edits, capped listings."""

from __future__ import annotations

import codecs
import contextlib
import hashlib
import io
import os
import secrets
import stat
from typing import IO

import msgspec

from dashfloat.executor._errors import ToolError
from dashfloat.executor._limits import (
    EDIT_MAX_FILE_BYTES,
    EXEC_READ_CHUNK_BYTES,
    LIST_MAX_ENTRIES,
    LOCATE_MAX_COUNT,
    READ_MAX_BYTES,
    READ_MAX_LINES,
    READ_STREAM_THRESHOLD_BYTES,
    TEMP_NAME_BASE_MAX_BYTES,
)
from dashfloat.executor.path_policy import BadPath, Root
from dashfloat.protocol import (
    DirectoryEntry,
    EditFileResult,
    EntryType,
    ListDirectoryResult,
    ReadFileResult,
    WriteFileResult,
)

ABSENT_DIGEST = "absent"
_HASH_CHUNK_BYTES = 1024 * 1024


# ---------------------------------------------------------------- shared helpers


def _open_regular(root: Root, rel: bytes, path: str) -> int:
    """An fd on a regular file beneath the root; O_NONBLOCK so a FIFO cannot hang the open, then refused by type."""
    fd = root.open(rel, os.O_RDONLY | os.O_NONBLOCK, path=path)
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise ToolError(f"is a directory: {path}")
        raise ToolError(f"not a regular file: {path}")
    return fd


def digest_of(real: str) -> str:
    """sha256 hex of a file's current bytes (streamed), ``absent`` if nothing is there."""
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return ABSENT_DIGEST
    try:
        return _digest_stream(fd)
    finally:
        os.close(fd)


def _digest_stream(fd: int) -> str:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        return f"not-a-file:{stat.S_IFMT(st.st_mode):o}"
    h = hashlib.sha256()
    while chunk := os.read(fd, _HASH_CHUNK_BYTES):
        h.update(chunk)
    return h.hexdigest()


def _digest_at(root: Root, rel: bytes) -> str:
    """``digest_of`` for a located path, opened beneath the root."""
    try:
        fd = root.open(rel, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return ABSENT_DIGEST
    try:
        return _digest_stream(fd)
    finally:
        os.close(fd)


def _stat_at(root: Root, rel: bytes) -> os.stat_result | None:
    """The stat of a located path (beneath the root), None when nothing is there."""
    try:
        fd = root.open(rel, os.O_PATH)
    except FileNotFoundError:
        return None
    try:
        return os.fstat(fd)
    finally:
        os.close(fd)


def _check_digest(root: Root, rel: bytes, expect: str | None, current: bytes | None = None) -> None:
    if expect is None:
        return
    actual = hashlib.sha256(current).hexdigest() if current is not None else _digest_at(root, rel)
    if actual != expect:
        raise ToolError("file changed since the preview; nothing was written (preview it again)")


def atomic_write(root: Root, rel: bytes, data: bytes, mode: int | None) -> None:
    """Write through an O_EXCL temp file beside ``rel`` (so inside the root), then rename; no temp survives."""
    directory, base = root.parent(rel, create=True)
    short = os.fsdecode(os.fsencode(base)[:TEMP_NAME_BASE_MAX_BYTES])  # bytes, not characters: NAME_MAX is bytes
    temp = f".{short}.{secrets.token_hex(8)}.dashfloat-tmp"
    try:
        # An existing file's mode is restored by fchmod; 0600 until then, so the mode never widens.
        fd = os.open(
            temp,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o600 if mode is not None else 0o666,
            dir_fd=directory,
        )
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                if mode is not None:
                    os.fchmod(f.fileno(), mode)
                os.fsync(f.fileno())
            os.rename(temp, base, src_dir_fd=directory, dst_dir_fd=directory)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=directory)
            raise
    finally:
        os.close(directory)


def _encode(text: str, what: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ToolError(f"{what} is not valid Unicode text: {exc.reason} at {exc.start}") from exc


# ---------------------------------------------------------------- read_file


def _next_line(reader: IO[bytes], keep: int) -> tuple[bytes, bool] | None:
    """One whole line: its first ``keep`` bytes and whether it was longer; None at EOF (bounded memory)."""
    kept = bytearray()
    cut = False
    started = False
    while True:
        chunk = reader.readline(EXEC_READ_CHUNK_BYTES)
        if not chunk:
            return (bytes(kept), cut) if started else None
        started = True
        room = keep - len(kept)
        if room > 0:
            kept += chunk[:room]
        if len(chunk) > max(room, 0):
            cut = True
        if chunk.endswith(b"\n"):
            return bytes(kept), cut


def _decode_text(data: bytes, cut: bool, path: str) -> str:
    if b"\0" in data:
        raise ToolError(f"binary file (contains NUL bytes): {path}")
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    try:
        # A window cut mid-line may end inside a multi-byte character: drop that tail, do not fail.
        return decoder.decode(data, final=not cut)
    except UnicodeDecodeError as exc:
        raise ToolError(f"binary file (not UTF-8 text at byte {exc.start} of the window): {path}") from exc


def read_file(root: Root, path: str, offset: int, limit: int) -> ReadFileResult:
    """A 1-based line window of a text file, capped at READ_MAX_LINES lines and READ_MAX_BYTES bytes."""
    fd = _open_regular(root, root.locate(path), path)
    with os.fdopen(fd, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        total_lines: int | None = None
        reader: IO[bytes] = f
        if size <= READ_STREAM_THRESHOLD_BYTES:
            data = f.read(READ_STREAM_THRESHOLD_BYTES + 1)
            _decode_text(data, False, path)
            total_lines = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
            reader = io.BytesIO(data)
        # Above the threshold only the window is read; lines before it are skipped in bounded chunks.
        skipped = 0
        while skipped < offset - 1 and _next_line(reader, 0) is not None:
            skipped += 1
        window = bytearray()
        lines = 0
        cut = False
        while lines < min(limit, READ_MAX_LINES) and len(window) < READ_MAX_BYTES and not cut:
            line = _next_line(reader, READ_MAX_BYTES - len(window))
            if line is None:
                break
            window += line[0]
            cut = line[1]
            lines += 1
        truncated = cut or reader.read(1) != b""  # the probe past the window
    if lines == 0 and offset > 1:
        raise ToolError(f"offset {offset} is past the end of the file ({skipped} lines): {path}")
    content = _decode_text(bytes(window), cut, path)
    if truncated:
        content += ("" if content.endswith("\n") or not content else "\n") + _read_marker(
            offset, lines, cut, total_lines, size
        )
    return ReadFileResult(
        path=path,
        content=content,
        offset=offset,
        lines=lines,
        total_lines=total_lines,
        total_bytes=size,
        truncated=truncated,
    )


def _read_marker(offset: int, lines: int, cut: bool, total_lines: int | None, size: int) -> str:
    last = offset + lines - 1
    shown = f"lines {offset}-{last}" if lines else "no lines"
    if total_lines is not None:
        totals = f"{total_lines} lines, {size} bytes"
    else:
        totals = f"{size} bytes; lines are not counted in files over {READ_STREAM_THRESHOLD_BYTES} bytes"
    how = f"line {last} was cut at the {READ_MAX_BYTES}-byte cap" if cut else f"continue with offset={last + 1}"
    caps = f"at most {READ_MAX_LINES} lines / {READ_MAX_BYTES} bytes per call"
    return f"[truncated: showing {shown} of {totals}; {caps}; {how}]"


# ---------------------------------------------------------------- write_file


class PlannedWrite(msgspec.Struct, frozen=True):
    """What a write or edit would put where: shared by the preview and the execution."""

    rel: bytes  # from Root.locate: symlink-free, relative to the root
    old: bytes | None  # None: no file there yet (or too large to hold; see old_size)
    old_size: int | None
    new: bytes
    mode: int | None
    digest: str
    line: int = 0  # edit_file: 1-based line of the match


def _write_target(root: Root, path: str) -> tuple[bytes, os.stat_result | None]:
    """The located target of a write and its stat; the root itself and directories are refused here,
    before anything is created."""
    rel = root.locate(path)
    if rel == b".":
        raise BadPath(f"cannot write to the working directory itself: {path}")
    st = _stat_at(root, rel)
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise ToolError(f"is a directory: {path}")
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise ToolError(f"not a regular file: {path}")
    return rel, st


def plan_write(root: Root, path: str, content: str) -> PlannedWrite:
    """Resolve and encode a write_file call; the current file's bytes when small enough to diff."""
    rel, st = _write_target(root, path)
    new = _encode(content, "content")
    if st is None:
        return PlannedWrite(rel, None, None, new, None, ABSENT_DIGEST)
    old = None
    if st.st_size <= EDIT_MAX_FILE_BYTES:
        fd = _open_regular(root, rel, path)
        with os.fdopen(fd, "rb") as f:
            old = f.read(EDIT_MAX_FILE_BYTES + 1)
    digest = hashlib.sha256(old).hexdigest() if old is not None else _digest_at(root, rel)
    return PlannedWrite(rel, old, st.st_size, new, stat.S_IMODE(st.st_mode), digest)


def write_file(root: Root, path: str, content: str, expect_digest: str | None) -> WriteFileResult:
    """Create or replace a file atomically, creating parent directories; an existing mode is kept."""
    rel, st = _write_target(root, path)
    data = _encode(content, "content")
    _check_digest(root, rel, expect_digest)
    mode = None if st is None else stat.S_IMODE(st.st_mode)
    atomic_write(root, rel, data, mode)
    return WriteFileResult(path=path, bytes=len(data), created=mode is None)


# ---------------------------------------------------------------- edit_file


def locate(content: bytes, search_block: bytes) -> int:
    """The offset of the one exact match of ``search_block``; ToolError on zero, several or empty."""
    if not search_block:
        raise ToolError("search_block is empty (it would match everywhere)")
    start = content.find(search_block)
    if start == -1:
        raise ToolError("search block not found (it must match the file byte for byte, whitespace included)")
    # Overlapping matches count too ("aa" is ambiguous in "aaa"); counting stops past the cap.
    count = 1
    at = content.find(search_block, start + 1)
    while at != -1 and count <= LOCATE_MAX_COUNT:
        count += 1
        at = content.find(search_block, at + 1)
    if count > 1:
        times = f"more than {LOCATE_MAX_COUNT}" if count > LOCATE_MAX_COUNT else str(count)
        raise ToolError(
            f"search block matches {times} times; it must match exactly once (include more surrounding lines)"
        )
    return start


def plan_edit(root: Root, path: str, search_block: str, replace_block: str) -> PlannedWrite:
    """Resolve, size-check by stat, read and locate an edit_file call."""
    rel = root.locate(path)
    search, replace = _encode(search_block, "search_block"), _encode(replace_block, "replace_block")
    fd = _open_regular(root, rel, path)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if st.st_size > EDIT_MAX_FILE_BYTES:
            raise ToolError(f"file is {st.st_size} bytes; edit_file refuses files over {EDIT_MAX_FILE_BYTES}: {path}")
        old = f.read(EDIT_MAX_FILE_BYTES + 1)
    if len(old) > EDIT_MAX_FILE_BYTES:  # it grew between the stat and the read
        raise ToolError(f"file is over {EDIT_MAX_FILE_BYTES} bytes; edit_file refuses it: {path}")
    start = locate(old, search)
    new = old[:start] + replace + old[start + len(search) :]
    line = old.count(b"\n", 0, start) + 1
    return PlannedWrite(rel, old, len(old), new, stat.S_IMODE(st.st_mode), hashlib.sha256(old).hexdigest(), line)


def edit_file(
    root: Root, path: str, search_block: str, replace_block: str, expect_digest: str | None
) -> EditFileResult:
    """Replace the unique exact match of search_block, atomically; the file's mode is kept."""
    plan = plan_edit(root, path, search_block, replace_block)
    _check_digest(root, plan.rel, expect_digest, plan.old)
    atomic_write(root, plan.rel, plan.new, plan.mode)
    return EditFileResult(path=path, line=plan.line, bytes=len(plan.new))


# ---------------------------------------------------------------- list_directory


def _entry_type(mode: int) -> EntryType:
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISREG(mode):
        return "file"
    return "other"


def list_directory(root: Root, path: str) -> ListDirectoryResult:
    """Sorted entries with type and size; at most LIST_MAX_ENTRIES are statted."""
    rel = root.locate(path)
    try:
        fd = root.open(rel, os.O_RDONLY | os.O_DIRECTORY, path=path)
    except NotADirectoryError:
        raise ToolError(f"not a directory: {path}") from None
    try:
        # bytes names (surrogateescape round trip): nothing undecodable is skipped
        names = sorted(os.fsencode(name) for name in os.listdir(fd))
        entries: list[DirectoryEntry] = []
        for name in names[:LIST_MAX_ENTRIES]:
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                continue  # removed while we listed
            try:
                shown, escaped = name.decode("utf-8"), False
            except UnicodeDecodeError:
                shown, escaped = name.decode("utf-8", "backslashreplace"), True
            entries.append(DirectoryEntry(name=shown, type=_entry_type(st.st_mode), size=st.st_size, escaped=escaped))
    finally:
        os.close(fd)
    return ListDirectoryResult(path=path, entries=entries, total=len(names), truncated=len(names) > LIST_MAX_ENTRIES)
