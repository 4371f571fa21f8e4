"""Checkpoints: the pre-image of every applied write/edit, kept content-addressed in the session's store.

The store is ``<store>/objects/<sha256>``: one file per distinct pre-image, written before the mutation and
fsynced (in a helper thread, while the mutation writes and fsyncs its own file) before the result that
references it is sent, so it is on disk before the session log can name it. It is bounded twice: a
pre-image over CHECKPOINT_FILE_MAX_BYTES is not copied (the checkpoint says why it is not restorable), and
when the store passes CHECKPOINT_STORE_MAX_BYTES the oldest objects are dropped, with a notice. Neither
bound, nor any failure of the store, ever blocks the mutation itself. Opening a store (``store_for``) takes its shared
lock for the process's life and prunes other sessions' stores past CHECKPOINTS_TOTAL_MAX_BYTES (``_prune.py``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import stat
import threading
import time

import msgspec

from dashfloat.executor._errors import ToolError
from dashfloat.executor._files import ABSENT_DIGEST, _digest_at, _open_regular, _stat_at
from dashfloat.executor._limits import (
    CHECKPOINT_FILE_MAX_BYTES,
    CHECKPOINT_STORE_MAX_BYTES,
    CHECKPOINTS_TOTAL_MAX_BYTES,
    EXEC_TIMEOUT_S,
)
from dashfloat.executor._prune import (
    CHECKPOINTS_DIRNAME,
    OBJECTS_DIRNAME,
    PruneReport,
    hold_store,
    prune_checkpoints,
    pruned_at,
    remove_trash,
)
from dashfloat.executor._tools import as_root, run
from dashfloat.executor.path_policy import PathError, Root
from dashfloat.protocol import (
    Checkpoint,
    EditFileArgs,
    EditFileResult,
    ToolArgs,
    ToolResult,
    WriteFileArgs,
    WriteFileResult,
)

_DIGEST_RE = re.compile(r"[0-9a-f]{64}")
_MIB = 1024 * 1024


class CheckpointUnavailable(Exception):
    """A pre-image that cannot be read back; the message names the object's path and why."""


def _mib(n: int) -> str:
    return f"{n / _MIB:.0f} MiB" if n >= _MIB else f"{n} bytes"


class _Object(msgspec.Struct):
    name: str
    size: int
    mtime_ns: int


class CheckpointStore(msgspec.Struct):
    """One session's objects; sizes and ages are kept in memory after one scan of the directory."""

    directory: str
    max_bytes: int = CHECKPOINT_STORE_MAX_BYTES
    file_max_bytes: int = CHECKPOINT_FILE_MAX_BYTES
    _objects: dict[str, _Object] | None = None
    _total: int = 0
    _lock_fd: int = -1
    _notice: str = ""
    _remover: threading.Thread | None = None

    def open(self) -> PruneReport | None:
        """Hold the store for this process and prune other sessions' stores past the total cap; never raises.

        Pruning runs only where the store lies in the agent's ``checkpoints`` directory: a store given anywhere else
        (a test, the standalone executor) never makes its siblings candidates.
        """
        self._lock_fd = hold_store(self.directory)
        with contextlib.suppress(OSError):
            os.utime(self.objects_dir)  # the store's last use: what pruning orders by
        parent, name = os.path.split(os.path.normpath(self.directory))
        if os.path.basename(parent) != CHECKPOINTS_DIRNAME:
            return None
        report = prune_checkpoints(parent, name, self.total_bytes, remove=False)
        if report.trash:
            # Renamed away, the stores are pruned already; deleting their files (a full store: tens of thousands)
            # runs beside the session's first write instead of before it. Cut short by the exit, a later pass ends it.
            self._remover = threading.Thread(
                target=remove_trash, args=(parent, report.trash), name="checkpoint-prune", daemon=True
            )
            self._remover.start()
        if report.pruned:
            count = len(report.pruned)
            self._notice = (
                f"all sessions' checkpoints passed their {_mib(CHECKPOINTS_TOTAL_MAX_BYTES)} cap: pruned those of the "
                f"{count} least recently used other session{'s' if count != 1 else ''}; "
                "the changes they recorded can no longer be undone"
            )
        return report

    @property
    def locked(self) -> bool:
        return self._lock_fd >= 0

    def take_notice(self) -> str:
        """What opening the store pruned, once (the first write's result carries it)."""
        notice, self._notice = self._notice, ""
        return notice

    def close(self) -> None:
        """Wait for the removal its pruning started, release its lock (the process's exit does both otherwise)."""
        if self._remover is not None:
            self._remover.join()
            self._remover = None
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1

    @property
    def objects_dir(self) -> str:
        return os.path.join(self.directory, OBJECTS_DIRNAME)

    def object_path(self, digest: str) -> str:
        return os.path.join(self.objects_dir, digest)

    def _index(self) -> dict[str, _Object]:
        if self._objects is None:
            self._objects = {}
            self._total = 0
            try:
                with os.scandir(self.objects_dir) as entries:
                    found = [e for e in entries if not e.name.startswith(".") and e.is_file(follow_symlinks=False)]
                    stats = [(e.name, e.stat(follow_symlinks=False)) for e in found]
            except (FileNotFoundError, NotADirectoryError):
                stats = []
            # Oldest first: the eviction order survives an executor restart through the objects' mtimes.
            for name, st in sorted(stats, key=lambda item: item[1].st_mtime_ns):
                self._objects[name] = _Object(name, st.st_size, st.st_mtime_ns)
                self._total += st.st_size
        return self._objects

    @property
    def total_bytes(self) -> int:
        self._index()
        return self._total

    def keep(self, data: bytes, digest: str, pending: list[PendingObject] | None = None) -> str:
        """Store ``data`` under ``digest`` (durably) and return a notice when older objects were dropped.

        With ``pending``, the fsync and rename run in a helper thread appended there: the caller finishes it.
        Raises OSError when the object cannot be written, ValueError when it alone exceeds the store's cap.
        """
        index = self._index()
        if len(data) > self.max_bytes:
            raise ValueError(f"the pre-image ({_mib(len(data))}) is larger than the store's {_mib(self.max_bytes)} cap")
        known = index.pop(digest, None)
        if known is not None:
            # Already kept: refresh its age, so the eviction order stays "least recently needed first".
            with contextlib.suppress(OSError):
                os.utime(self.object_path(digest))
            known.mtime_ns = _now_ns()
            index[digest] = known
            return ""
        dropped, freed = self._make_room(len(data))
        written = PendingObject(self, digest, data)
        if pending is None:
            written.sync()
            written.finish()
        else:
            written.start()
            pending.append(written)
        index[digest] = _Object(digest, len(data), _now_ns())
        self._total += len(data)
        if not dropped:
            return ""
        return (
            f"the checkpoint store of this session passed its {_mib(self.max_bytes)} cap: dropped the "
            f"{dropped} oldest pre-image{'s' if dropped != 1 else ''} ({_mib(freed)}); "
            "the changes they recorded can no longer be undone"
        )

    def forget(self, digest: str) -> None:
        """An object that could not be written is not counted."""
        obj = self._index().pop(digest, None)
        if obj is not None:
            self._total -= obj.size

    def _make_room(self, incoming: int) -> tuple[int, int]:
        index = self._index()
        dropped = freed = 0
        # dicts keep insertion order, and keep() re-inserts on use: the first entries are the oldest
        for name in list(index):
            if self._total + incoming <= self.max_bytes:
                break
            obj = index.pop(name)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.object_path(name))
            self._total -= obj.size
            dropped += 1
            freed += obj.size
        return dropped, freed

    def load(self, digest: str) -> bytes:
        """The pre-image named ``digest``, verified against its name; CheckpointUnavailable otherwise."""
        if not _DIGEST_RE.fullmatch(digest):
            # names come from the session log: anything but a sha256 could name a file outside the store
            raise CheckpointUnavailable(f"checkpoint name is not a sha256 digest: {digest!r}")
        path = self.object_path(digest)
        try:
            with open(path, "rb") as f:
                data = f.read(self.file_max_bytes + 1)
        except FileNotFoundError:
            raise CheckpointUnavailable(self._missing(path)) from None
        except OSError as exc:
            raise CheckpointUnavailable(f"checkpoint unreadable: {path}: {exc.strerror}") from None
        if hashlib.sha256(data).hexdigest() != digest:
            raise CheckpointUnavailable(f"checkpoint corrupt: {path} (its bytes do not match its name)")
        return data

    def _missing(self, path: str) -> str:
        """Why an object is not there: its whole store pruned (the tombstone says when), or missing (by path)."""
        when = pruned_at(self.directory)
        if when is None:
            return f"checkpoint missing: {path}"
        day = time.strftime("%Y-%m-%d %H:%M", time.localtime(when))
        return (
            f"checkpoint pruned: this session's checkpoints were removed on {day}, when all sessions' checkpoints "
            f"passed their {_mib(CHECKPOINTS_TOTAL_MAX_BYTES)} cap (the least recently used sessions' go first)"
        )


def _now_ns() -> int:
    return time.time_ns()


class PendingObject:
    """An object written to a temp file; ``sync`` fsyncs and renames it into place, ``finish`` waits for that.

    The fsync is the one slow part of a checkpoint; run beside the mutation's own fsync, it mostly overlaps it.
    """

    def __init__(self, store: CheckpointStore, digest: str, data: bytes) -> None:
        self.store = store
        self.digest = digest
        directory = store.objects_dir
        os.makedirs(directory, mode=0o700, exist_ok=True)
        self.temp = os.path.join(directory, f".{digest[:16]}.{secrets.token_hex(6)}.tmp")
        self.fd = os.open(self.temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        self.error: OSError | None = None
        self.thread: threading.Thread | None = None
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self.fd, view) :]
        except OSError:
            self._discard()
            raise

    def _discard(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)
        with contextlib.suppress(OSError):
            os.unlink(self.temp)

    def sync(self) -> None:
        try:
            os.fsync(self.fd)
            os.close(self.fd)
            os.rename(self.temp, self.store.object_path(self.digest))
        except OSError as exc:
            self.error = exc
            self._discard()

    def start(self) -> None:
        self.thread = threading.Thread(target=self.sync, name="checkpoint-fsync", daemon=True)
        self.thread.start()

    def finish(self) -> None:
        """Wait for the fsync; OSError when the object did not make it (it is then forgotten)."""
        if self.thread is not None:
            self.thread.join()
        if self.error is not None:
            self.store.forget(self.digest)
            raise self.error


_STORES: dict[str, CheckpointStore] = {}


def store_for(directory: str) -> CheckpointStore:
    """The store of ``directory``, opened once per executor process (held, other stores pruned, its index scanned)."""
    store = _STORES.get(directory)
    if store is None:
        store = _STORES[directory] = CheckpointStore(directory)
        store.open()
    return store


# ---------------------------------------------------------------- taking a checkpoint


class PreImage(msgspec.Struct):
    """What was at a mutation's target just before it: enough to build its Checkpoint once it lands."""

    root: Root
    located: bytes
    rel: str
    existed: bool
    mode: int | None = None
    size: int = 0
    before: str | None = None
    created_dirs: list[str] = msgspec.field(default_factory=list)
    lost: str = ""
    notice: str = ""
    pending: list[PendingObject] = msgspec.field(default_factory=list)

    def finish(self) -> None:
        """Wait for the object's fsync; a failure makes the checkpoint lost (the mutation stands)."""
        for written in self.pending:
            try:
                written.finish()
            except OSError as exc:
                self._lose(exc.strerror or str(exc))
        self.pending = []

    def _lose(self, reason: str) -> None:
        self.lost = f"its pre-image could not be kept: {reason}"
        self.notice = f"no checkpoint for {self.rel}: {reason}; the change went ahead and cannot be undone"

    @property
    def expect(self) -> str | None:
        """The digest the mutation must still find: what the pre-image was taken of."""
        if not self.existed:
            return ABSENT_DIGEST
        return self.before

    def checkpoint(self) -> Checkpoint:
        return Checkpoint(
            path=self.rel,
            existed=self.existed,
            after=_digest_at(self.root, self.located),
            before=self.before,
            mode=self.mode,
            size=self.size,
            created_dirs=self.created_dirs,
            lost=self.lost,
        )


def _missing_dirs(root: Root, located: bytes) -> list[str]:
    """Parent directories of ``located`` that do not exist yet (a write creates them), deepest first."""
    missing: list[str] = []
    current = os.path.dirname(located)
    while current not in (b"", b"."):
        try:
            if _stat_at(root, current) is not None:
                break
        except OSError:
            break
        missing.append(os.fsdecode(current))
        current = os.path.dirname(current)
    return missing


def take_pre_image(root: Root, path: str, store: CheckpointStore, background: bool = False) -> PreImage | None:
    """Keep the target's current bytes; None when the call will fail anyway (bad path, not a file).

    ``background``: the object's fsync runs in a helper thread until ``PreImage.finish``.
    """
    try:
        located = root.locate(path)
        st = _stat_at(root, located)
    except (PathError, OSError):
        return None  # the call fails the same way when it runs
    if located == b".":
        return None
    rel = os.fsdecode(located)
    if st is None:
        return PreImage(root, located, rel, existed=False, created_dirs=_missing_dirs(root, located))
    if not stat.S_ISREG(st.st_mode):
        return None
    pre = PreImage(root, located, rel, existed=True, mode=stat.S_IMODE(st.st_mode), size=st.st_size)
    if st.st_size > store.file_max_bytes:
        pre.lost = f"the file was {_mib(st.st_size)}, over the {_mib(store.file_max_bytes)} per-file checkpoint cap"
        return pre
    try:
        with os.fdopen(_open_regular(root, located, path), "rb") as f:
            data = f.read(store.file_max_bytes + 1)
    except (OSError, PathError, ToolError):
        return None
    if len(data) > store.file_max_bytes:  # it grew since the stat
        pre.lost = f"the file was over the {_mib(store.file_max_bytes)} per-file checkpoint cap"
        return pre
    pre.size = len(data)
    pre.before = hashlib.sha256(data).hexdigest()
    try:
        pre.notice = store.keep(data, pre.before, pre.pending if background else None)
    except (OSError, ValueError) as exc:
        pre._lose(exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc))
    return pre


class Checkpointed(msgspec.Struct):
    """A file tool's result, plus how to take it back when it was a mutation that landed."""

    result: ToolResult
    checkpoint: Checkpoint | None = None
    notice: str = ""


def run_checkpointed(
    args: ToolArgs,
    root: Root | str,
    store_dir: str,
    exec_timeout_s: float = EXEC_TIMEOUT_S,
    expect_digest: str | None = None,
) -> Checkpointed:
    """Run a file tool; a write/edit keeps its target's pre-image first and must still find those bytes."""
    with as_root(root) as fixed:
        return _run_checkpointed(args, fixed, store_dir, exec_timeout_s, expect_digest)


def _run_checkpointed(
    args: ToolArgs, root: Root, store_dir: str, exec_timeout_s: float, expect_digest: str | None
) -> Checkpointed:
    if not isinstance(args, WriteFileArgs | EditFileArgs) or not store_dir:
        return Checkpointed(run(args, root, exec_timeout_s, expect_digest))
    store = store_for(store_dir)
    opened = store.take_notice()
    pre = take_pre_image(root, args.path, store, background=True)
    if pre is None:
        return Checkpointed(run(args, root, exec_timeout_s, expect_digest), notice=opened)
    # The mutation must change exactly the bytes the pre-image was taken of (the preview's, when approved).
    expect = expect_digest if expect_digest is not None else pre.expect
    try:
        result = run(args, root, exec_timeout_s, expect)
    finally:
        pre.finish()  # the object is on disk before the result that names it leaves the executor
    notice = "\n".join(text for text in (opened, pre.notice) if text)
    if not isinstance(result, WriteFileResult | EditFileResult):
        return Checkpointed(result, notice=notice)
    return Checkpointed(result, pre.checkpoint(), notice)
