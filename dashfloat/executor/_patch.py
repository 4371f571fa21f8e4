"""A headless run's changes as one git patch (``--patch FILE``): the starting tree kept, the final tree diffed with it.

A process of its own (``serve_patch``, forked by the main process for a ``--patch`` run) takes the *baseline* before
the prompt is sent: every regular file's and symlink's bytes under the working directory (``.git``, ``.hg`` and
``.svn`` skipped), copied into one anonymous temporary file that vanishes with the process, bounded by
PATCH_BASELINE_MAX_FILES and PATCH_BASELINE_MAX_BYTES. At the end (``WritePatch``) it walks the tree again and writes
what differs in the format ``git diff --binary --full-index`` writes and ``git apply`` reads: text hunks, new,
deleted and mode-changed files, symlinks, and binary files as ``GIT binary patch`` literals. So files a command
changed are in it as much as those write_file and edit_file changed: nothing depends on the change records.
Decision record: docs/decisions/0078-patch-and-run-usage.md.
"""

from __future__ import annotations

import base64
import contextlib
import difflib
import hashlib
import os
import signal
import stat
import tempfile
import zlib
from collections.abc import Iterator
from multiprocessing.connection import Connection
from typing import IO, Final, NamedTuple, assert_never

import msgspec

from dashfloat import procutil
from dashfloat.channel import Channel, PeerDied, ProtocolError
from dashfloat.executor._changes import SKIPPED_DIRS
from dashfloat.protocol import (
    BaselineKept,
    PatchedFile,
    PatchToKeeper,
    PatchWritten,
    Shutdown,
    WritePatch,
)

PATCH_BASELINE_MAX_FILES: Final = 100_000
"""Files the starting tree may hold for ``--patch`` (a tree past it is refused before the run: exit 2)."""
PATCH_BASELINE_MAX_BYTES: Final = 1024 * 1024 * 1024
"""Bytes the starting tree may hold for ``--patch``: they are copied to a temporary file for the run's length."""
CONTEXT_LINES: Final = 3
"""Unchanged lines around each hunk, as ``git diff`` writes them."""
BINARY_LINE_BYTES: Final = 52
"""Deflated bytes per line of a binary literal: git's own (the line's first letter says how many, A=1 … z=52)."""
BINARY_SNIFF_BYTES: Final = 8000
"""Git calls a file binary when a NUL byte is among its first 8000 bytes; we look at the whole file."""

_NULL_OID: Final = "0" * 40
_FILE, _EXECUTABLE, _LINK = 0o100644, 0o100755, 0o120000


class PatchRefused(Exception):
    """The tree cannot be kept or diffed (too large, unreadable root): the message says which bound and what to do."""


class Item(NamedTuple):
    """One file or symlink of a tree: its git mode and what says it did not change (size, mtime, ctime, inode)."""

    mode: int
    ident: tuple[int, int, int, int]


class Kept(NamedTuple):
    """Where a baseline item's bytes lie in the baseline's temporary file."""

    item: Item
    offset: int
    size: int


def _git_mode(st: os.stat_result) -> int | None:
    if stat.S_ISLNK(st.st_mode):
        return _LINK
    if stat.S_ISREG(st.st_mode):
        return _EXECUTABLE if st.st_mode & stat.S_IXUSR else _FILE
    return None  # a FIFO, socket or device: git has no word for it


def walk(root_fd: int, skip: frozenset[str], max_files: int) -> Iterator[tuple[str, int, Item]]:
    """Every file and symlink beneath ``root_fd`` as (relative path, parent directory fd, item); symlinks are never
    followed (directories are opened O_NOFOLLOW beneath their parent). PatchRefused past ``max_files``."""
    count = 0
    stack: list[tuple[str, int]] = [("", os.dup(root_fd))]
    try:
        while stack:
            prefix, dir_fd = stack.pop()
            try:
                with os.scandir(dir_fd) as entries:
                    listed = sorted(entries, key=lambda e: e.name)
                for entry in listed:
                    rel = prefix + entry.name
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue  # gone while we looked
                    if stat.S_ISDIR(st.st_mode):
                        if entry.name in SKIPPED_DIRS or rel in skip:
                            continue
                        try:
                            flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
                            stack.append((rel + "/", os.open(entry.name, flags, dir_fd=dir_fd)))
                        except OSError:
                            continue  # unreadable: what it holds is not in the patch (a run cannot write it either)
                        continue
                    mode = _git_mode(st)
                    if mode is None or rel in skip:
                        continue
                    count += 1
                    if count > max_files:
                        raise PatchRefused(
                            f"the working directory holds more than {max_files} files: too many to keep for --patch "
                            "(run in a smaller directory, or make the patch with git diff)"
                        )
                    yield rel, dir_fd, Item(mode, (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
            finally:
                os.close(dir_fd)
    finally:
        for _, fd in stack:
            os.close(fd)


def read_item(dir_fd: int, rel: str, mode: int) -> bytes | None:
    """A file's bytes or a symlink's target, read beneath its directory without following a link; None: gone."""
    name = os.path.basename(rel)
    try:
        if mode == _LINK:
            return os.fsencode(os.readlink(name, dir_fd=dir_fd))
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return file.read()


class Baseline:
    """The starting tree: each item's bytes in one anonymous temporary file (gone when the process is)."""

    def __init__(self, root: str, skip: frozenset[str], max_files: int, max_bytes: int) -> None:
        self.root = root
        self.skip = skip
        self.max_files = max_files
        self.items: dict[str, Kept] = {}
        self.size = 0
        # held for the process's life (no context manager): the anonymous file goes when the process does
        self.store: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115
        try:
            self._keep(max_bytes)
        except BaseException:
            self.close()
            raise

    def _keep(self, max_bytes: int) -> None:
        with _opened_root(self.root) as root_fd:
            for rel, dir_fd, item in walk(root_fd, self.skip, self.max_files):
                data = read_item(dir_fd, rel, item.mode)
                if data is None:
                    continue
                if self.size + len(data) > max_bytes:
                    raise PatchRefused(
                        f"the working directory holds more than {max_bytes} bytes: too many to keep for --patch "
                        "(run in a smaller directory, or make the patch with git diff)"
                    )
                self.items[rel] = Kept(item, self.size, len(data))
                self.store.write(data)
                self.size += len(data)
        self.store.flush()

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Baseline:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def bytes_of(self, rel: str) -> bytes:
        kept = self.items[rel]
        return os.pread(self.store.fileno(), kept.size, kept.offset) if kept.size else b""

    def changes(self) -> list[tuple[str, tuple[int, bytes] | None, tuple[int, bytes] | None]]:
        """Every path whose mode or bytes differ now, sorted: (path, (mode, bytes) before, after); None: absent."""
        found: dict[str, tuple[tuple[int, bytes] | None, tuple[int, bytes] | None]] = {}
        seen: set[str] = set()
        with _opened_root(self.root) as root_fd:
            for rel, dir_fd, item in walk(root_fd, self.skip, self.max_files):
                seen.add(rel)
                kept = self.items.get(rel)
                if kept is not None and kept.item == item:
                    continue  # same size, mtime, ctime and inode: not written since (ctime cannot be set back)
                data = read_item(dir_fd, rel, item.mode)
                if data is None:
                    seen.discard(rel)
                    continue
                before = None if kept is None else (kept.item.mode, self.bytes_of(rel))
                if before != (item.mode, data):
                    found[rel] = (before, (item.mode, data))
        for rel in self.items.keys() - seen:
            found[rel] = ((self.items[rel].item.mode, self.bytes_of(rel)), None)
        return [(rel, *found[rel]) for rel in sorted(found, key=os.fsencode)]


@contextlib.contextmanager
def _opened_root(root: str) -> Iterator[int]:
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise PatchRefused(f"cannot read the working directory {root}: {exc.strerror}") from None
    try:
        yield fd
    finally:
        os.close(fd)


# ---------------------------------------------------------------- the patch text


def git_oid(data: bytes) -> str:
    """The git blob id of ``data`` (SHA-1 of ``blob N\\0`` and the bytes): a binary patch must name both ends."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # git's object name, not a MAC


def is_binary(data: bytes) -> bool:
    """Git's test, over the whole file: a NUL byte makes it binary."""
    return b"\0" in data


def quote_path(path: str) -> str:
    """A path as git writes it in a patch: C-quoted when it holds a quote, a backslash, a control or non-ASCII byte."""
    raw = os.fsencode(path)
    if not any(b < 0x20 or b >= 0x7F or b in b'"\\' for b in raw):
        return path
    escapes = {0x07: "\\a", 0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0B: "\\v", 0x0C: "\\f", 0x0D: "\\r"}
    out = []
    for b in raw:
        if b in escapes:
            out.append(escapes[b])
        elif b in b'"\\':
            out.append("\\" + chr(b))
        elif b < 0x20 or b >= 0x7F:
            out.append(f"\\{b:03o}")
        else:
            out.append(chr(b))
    return '"' + "".join(out) + '"'


def _prefixed(prefix: str, path: str) -> str:
    quoted = quote_path(path)
    return f'"{prefix}{quoted[1:]}' if quoted.startswith('"') else prefix + path


def _lines(data: bytes) -> list[bytes]:
    """Lines split at LF only (a CR is part of its line, as git sees it), each with its LF."""
    lines = data.split(b"\n")
    last = lines.pop()
    out = [line + b"\n" for line in lines]
    if last:
        out.append(last)
    return out


def _range(start: int, stop: int) -> str:
    length = stop - start
    return f"{start + 1 if length else start},{length}"


def text_hunks(before: bytes, after: bytes) -> tuple[list[bytes], int, int]:
    """Unified hunks (3 lines of context) from ``before`` to ``after``, and the lines added and removed."""
    a, b = _lines(before), _lines(after)
    out: list[bytes] = []
    added = removed = 0
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for group in matcher.get_grouped_opcodes(CONTEXT_LINES):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        out.append(f"@@ -{_range(i1, i2)} +{_range(j1, j2)} @@\n".encode())
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                out.extend(_marked(b" ", a[a1:a2]))
                continue
            out.extend(_marked(b"-", a[a1:a2]))
            out.extend(_marked(b"+", b[b1:b2]))
            removed += a2 - a1
            added += b2 - b1
    return out, added, removed


def _marked(mark: bytes, lines: list[bytes]) -> Iterator[bytes]:
    for line in lines:
        if line.endswith(b"\n"):
            yield mark + line
        else:
            yield mark + line + b"\n\\ No newline at end of file\n"


def binary_literal(data: bytes) -> list[bytes]:
    """``literal N`` and the deflated bytes in git's base85 lines (Python's b85 alphabet is git's), then a blank."""
    deflated = zlib.compress(data, 9)
    out = [b"literal %d\n" % len(data)]
    for start in range(0, len(deflated), BINARY_LINE_BYTES):
        chunk = deflated[start : start + BINARY_LINE_BYTES]
        size = len(chunk)
        letter = ord("A") + size - 1 if size <= 26 else ord("a") + size - 27
        out.append(bytes([letter]) + base64.b85encode(chunk, pad=True) + b"\n")
    out.append(b"\n")
    return out


def file_patch(
    path: str, before: tuple[int, bytes] | None, after: tuple[int, bytes] | None
) -> tuple[list[bytes], PatchedFile]:
    """One file's section of the patch (as ``git diff --binary --full-index``) and its entry in the result."""
    if before is not None and after is not None and (before[0] == _LINK) != (after[0] == _LINK):
        # a file became a symlink or the other way: git writes a deletion and a creation
        gone, gone_entry = file_patch(path, before, None)
        made, made_entry = file_patch(path, None, after)
        entry = msgspec.structs.replace(made_entry, before_sha256=gone_entry.before_sha256, removed=gone_entry.removed)
        return gone + made, entry
    old = b"" if before is None else before[1]
    new = b"" if after is None else after[1]
    a_name, b_name = _prefixed("a/", path), _prefixed("b/", path)
    head = [f"diff --git {a_name} {b_name}\n"]
    old_oid = _NULL_OID if before is None else git_oid(old)
    new_oid = _NULL_OID if after is None else git_oid(new)
    index = f"index {old_oid}..{new_oid}"
    if before is None:
        assert after is not None
        head += [f"new file mode {after[0]:o}\n", index + "\n"]
    elif after is None:
        head += [f"deleted file mode {before[0]:o}\n", index + "\n"]
    elif before[0] != after[0]:
        head += [f"old mode {before[0]:o}\n", f"new mode {after[0]:o}\n"]
        if old != new:
            head.append(index + "\n")
    else:
        head.append(f"{index} {after[0]:o}\n")
    out = [line.encode() for line in head]
    binary = is_binary(old) or is_binary(new)
    added = removed = 0
    if binary and old != new:
        out += [b"GIT binary patch\n", *binary_literal(new), *binary_literal(old)]
    elif old != new:
        tab = "\t" if " " in path else ""  # git ends a name with a space this way, so the line's end is clear
        out.append(f"--- {'/dev/null' if before is None else a_name}{tab}\n".encode())
        out.append(f"+++ {'/dev/null' if after is None else b_name}{tab}\n".encode())
        hunks, added, removed = text_hunks(old, new)
        out += hunks
    entry = PatchedFile(
        path=path,
        before_sha256=None if before is None else hashlib.sha256(old).hexdigest(),
        after_sha256=None if after is None else hashlib.sha256(new).hexdigest(),
        added=added,
        removed=removed,
        binary=binary,
    )
    return out, entry


def write_patch(baseline: Baseline, path: str) -> PatchWritten:
    """Write the run's changes to ``path`` (empty when nothing changed); the reply says what it holds."""
    try:
        changes = baseline.changes()
    except PatchRefused as exc:
        return PatchWritten(error=str(exc))
    files: list[PatchedFile] = []
    size = 0
    try:
        with open(path, "wb") as out:
            for rel, before, after in changes:
                lines, entry = file_patch(rel, before, after)
                for line in lines:
                    out.write(line)
                    size += len(line)
                files.append(entry)
    except OSError as exc:
        return PatchWritten(error=f"cannot write {path}: {exc.strerror or exc}")
    return PatchWritten(files=files, size=size)


def serve_patch(conn: Connection, root: str, skip: list[str]) -> None:
    """The patch keeper's process: keep the baseline, reply BaselineKept, then answer WritePatch until Shutdown."""
    procutil.die_with_parent(signal.SIGTERM)
    channel: Channel[PatchToKeeper] = Channel(conn, PatchToKeeper, "main->patch")
    try:
        try:
            baseline = Baseline(root, frozenset(skip), PATCH_BASELINE_MAX_FILES, PATCH_BASELINE_MAX_BYTES)
        except PatchRefused as exc:
            channel.send(BaselineKept(error=str(exc)))
            return
        with baseline:
            channel.send(BaselineKept(files=len(baseline.items), size=baseline.size))
            _answer(channel, baseline)
    except PeerDied:
        return  # the main process is gone: nobody wants the patch


def _answer(channel: Channel[PatchToKeeper], baseline: Baseline) -> None:
    """WritePatch after WritePatch, until Shutdown."""
    while True:
        try:
            message = channel.recv()
        except ProtocolError as exc:
            channel.send(PatchWritten(error=str(exc)))
            continue
        match message:
            case WritePatch(path=path):
                channel.send(write_patch(baseline, path))
            case Shutdown():
                return
            case _:
                assert_never(message)
