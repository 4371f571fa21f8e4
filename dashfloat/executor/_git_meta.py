"""The git metadata a sandboxed command may not change: the bwrap binds that make it read-only (ADR 0067).

A git directory's hooks, config and info run programs or choose them at the user's next git command, outside any
sandbox, unseen by a review of the work tree. In ``workspace-write`` each command's sandbox binds, for every git
directory it finds in the workspace:

- the git directory onto itself, writable: a mount point cannot be renamed, replaced or removed, while its objects,
  refs, index, HEAD and logs stay writable (``git add`` and ``git commit`` work);
- ``hooks``, ``info``, ``config`` (and ``config.worktree`` where the config turns it on) read-only; missing ones are
  made empty on the host first (a mount needs a place), so none can be created either;
- ``commondir`` where there is one (it moves hooks and config elsewhere), and the ``.git`` file that points to a git
  directory, read-only;
- below ``modules/`` (submodules' git directories) and ``worktrees/`` (linked work trees' own files), the same, up to
  ``GIT_WALK_MAX`` folders; past it, or where a link is met there, the folder is read-only whole.

Everything is opened beneath the executor's held root descriptor, never following a link out of the workspace, and
bound from those descriptors (``--bind-fd``, ``--ro-bind-fd``). A git directory that is odd (an entry that is a link,
or of the wrong type, or that cannot be made) is bound read-only whole, with what its links lead to inside the
workspace: a git write there fails, the command runs. Nothing here makes a command fail: a git directory that cannot
be looked at is left as it is.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from typing import Final

from dashfloat.executor._openat2 import RESOLVE_BENEATH, RESOLVE_NO_MAGICLINKS, openat2

GIT_READ_ONLY_DIRS: Final = ("hooks", "info")
"""Folders of a git directory read-only in the sandbox: the hooks, and ``info`` (attributes naming drivers)."""
GIT_READ_ONLY_FILES: Final = ("config",)
"""Files of a git directory read-only in the sandbox: the config (``core.fsmonitor``, ``core.hooksPath``, aliases)."""
GIT_WALK_MAX: Final = 64
"""Folders below the git directories' ``modules/`` and ``worktrees/`` bound one by one for a command; past it, the
``modules/`` or ``worktrees/`` being walked is bound read-only whole (its submodules' git writes fail)."""
GITFILE_MAX_BYTES: Final = 16384
"""The largest ``.git`` file or ``commondir`` read as a pointer: git itself refuses a larger ``.git`` file (4 x
PATH_MAX), so a larger one points nowhere."""
GIT_CONFIG_SCAN_MAX_BYTES: Final = 1 << 20
"""The part of a config read to see whether it turns on ``extensions.worktreeConfig``; a larger config is taken to."""
_BENEATH: Final = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS
_LINK: Final = "link"


class _Fallback(Exception):
    """A walk below ``modules/`` or ``worktrees/`` met its bound or a link: the folder is bound read-only whole."""


def _kind(fd: int) -> str:
    mode = os.fstat(fd).st_mode
    if stat.S_ISLNK(mode):
        return _LINK
    return "dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else "other"


def _read(fd: int, limit: int) -> bytes | None:
    """Up to ``limit`` bytes of the regular file ``fd`` (an O_PATH one), None when it holds more."""
    with open(os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC), "rb") as file:
        data = file.read(limit + 1)
    return None if len(data) > limit else data


def _worktree_config(config: bytes, whole: bool) -> bool:
    """Whether a config turns on per-work-tree config (``extensions.worktreeConfig``); one too large to read: yes."""
    return not whole or b"worktreeconfig" in config.lower()


class GitBinds:
    """One command's binds of the git metadata in the workspace at ``root`` (held as ``root_fd``), for ``cwd``.

    ``args`` is the part of bwrap's command line to put after the workspace's own bind; ``fds`` the descriptors it
    names, which the caller passes to bwrap and closes once bwrap has started (bwrap closes its copies once it has
    bound them: none reaches the command, which could open through it beside the sandbox's mounts). Every other
    descriptor opened on the way is closed here."""

    def __init__(self, root_fd: int, root: str, cwd: str) -> None:
        self._root_fd = root_fd
        self._root = root
        self._binds: dict[str, tuple[bool, int]] = {}
        """Where (relative to the root) → (read-only, the descriptor bound there)."""
        self._seen: dict[tuple[int, int], None] = {}
        self._walked = 0
        self._walking = False
        self._targets: list[int] = []
        """What links lead to, bound read-only: kept when a walk falls back."""
        self._opened: list[int] = []
        self.main_dirs: list[str] = []
        """Main git directories (relative to the root) that had no ``commondir``: ``sweep_commondirs`` looks again."""
        rel = os.path.relpath(cwd, root)
        parts = [] if rel == "." or rel.startswith("..") else rel.split("/")
        try:
            for depth in range(len(parts) + 1):
                # each folder from the root down to cwd: the repository a git command there would find
                self._dot_git(os.path.join(".", *parts[:depth], ".git"))
        finally:
            bound = {fd for _, fd in self._binds.values()}
            for fd in self._opened:
                if fd not in bound:
                    os.close(fd)
        self.args: list[str] = []
        self.fds: list[int] = []
        for where in sorted(self._binds, key=lambda path: path.split("/")):  # a folder before what is in it
            read_only, fd = self._binds[where]
            self.args += ["--ro-bind-fd" if read_only else "--bind-fd", str(fd), os.path.join(root, where)]
            self.fds.append(fd)

    # ------------------------------------------------------------------ descriptors, beneath the root

    def _keep(self, fd: int) -> int:
        self._opened.append(fd)
        return fd

    def _open(self, rel: str, follow: bool = False) -> int | None:
        """An O_PATH descriptor of ``rel`` beneath the root (its last component a link itself unless ``follow``);
        None when nothing is there, or it is reached only through a link out of the workspace."""
        flags = os.O_PATH | (0 if follow else os.O_NOFOLLOW)
        try:
            return self._keep(openat2(self._root_fd, os.fsencode(rel), flags, 0, _BENEATH))
        except OSError as exc:
            if exc.errno != errno.EXDEV or not follow:
                return None  # a hooks that cannot be looked at is made, which fails: its git directory is odd
        # EXDEV: an absolute link, or one through ``..`` above the root; followed by name only to learn where it ends,
        # and opened (beneath the root again) only if that is inside.
        real = os.path.realpath(os.path.join(self._root, rel))
        inside = os.path.relpath(real, self._root)
        if inside == ".." or inside.startswith("../"):
            return None
        return self._open(inside)

    def _where(self, fd: int) -> str | None:
        """Where ``fd`` is, relative to the root; None outside it (read-only in the sandbox anyway)."""
        real = os.readlink(f"/proc/self/fd/{fd}")
        rel = os.path.relpath(real, self._root)
        return None if rel == ".." or rel.startswith("../") or not real.startswith("/") else rel

    def _bind(self, fd: int, read_only: bool) -> None:
        where = self._where(fd)
        if where is None or where == ".":
            return  # the workspace itself is bound already
        previous = self._binds.get(where)
        self._binds[where] = (read_only or (previous is not None and previous[0]), fd)

    def _pointer(self, fd: int, base: str) -> int | None:
        """The directory a ``.git`` file or ``commondir`` (``fd``) names, relative to ``base``, if inside."""
        data = _read(fd, GITFILE_MAX_BYTES)
        if data is None:
            return None
        text = os.fsdecode(data.strip())
        text = text.removeprefix("gitdir:").strip() if text.startswith("gitdir:") else text
        if not text:
            return None
        if text.startswith("/"):
            rel = os.path.relpath(text, self._root)
            if rel == ".." or rel.startswith("../"):
                return None
        else:
            rel = os.path.join(base, text)
        target = self._open(rel, follow=True)
        return target if target is not None and _kind(target) == "dir" else None

    # ------------------------------------------------------------------ what is found

    def _dot_git(self, rel: str) -> None:
        """The ``.git`` at ``rel``: a directory, a file naming one, or a link to either."""
        try:
            fd = self._open(rel)
            if fd is None:
                return
            kind = _kind(fd)
            if kind == _LINK:  # the link itself stays replaceable (ADR 0067); what it leads to inside is protected
                fd = self._open(rel, follow=True)
                kind = _kind(fd) if fd is not None else ""
            if fd is None:
                return
            if kind == "file":
                self._bind(fd, read_only=True)
                target = self._pointer(fd, os.path.dirname(rel))
                if target is not None:
                    self._git_dir(target)
            elif kind == "dir":
                self._git_dir(fd)
        except OSError:
            return  # cannot be looked at: left as it is, the command still runs

    def _entry(self, directory: str, name: str) -> tuple[int | None, str]:
        fd = self._open(os.path.join(directory, name))
        return fd, _kind(fd) if fd is not None else ""

    def _git_dir(self, fd: int) -> None:
        """Protect the git directory ``fd`` (once); not a git directory (no HEAD) or outside: nothing to do."""
        st = os.fstat(fd)
        where = self._where(fd)
        if (st.st_dev, st.st_ino) in self._seen or where is None:
            return
        self._seen[(st.st_dev, st.st_ino)] = None
        if self._entry(where, "HEAD")[0] is None:
            return
        commondir, kind = self._entry(where, "commondir")
        if commondir is not None:
            # a linked work tree's own directory: its hooks, config and info are the common directory's
            if kind != "file":
                self._odd(fd, where, ["commondir"])
                return
            self._bind(fd, read_only=False)
            self._bind(commondir, read_only=True)
            common = self._pointer(commondir, where)
            self._config_worktree(fd, where, common is not None and _worktree_config(*self._config(common)))
            if common is not None:
                self._git_dir(common)
            return
        entries = {name: self._entry(where, name) for name in (*GIT_READ_ONLY_DIRS, *GIT_READ_ONLY_FILES)}
        wanted = dict.fromkeys(GIT_READ_ONLY_DIRS, "dir") | dict.fromkeys(GIT_READ_ONLY_FILES, "file")
        if all(kind in ("", wanted[name]) for name, (_, kind) in entries.items()):
            for name in [name for name, (_, kind) in entries.items() if kind == ""]:
                with contextlib.suppress(OSError):  # not made (or something else got there first): odd below
                    self._make(where, name, wanted[name])
                entries[name] = self._entry(where, name)
        odd = [name for name, (_, kind) in entries.items() if kind != wanted[name]]
        if odd:
            self._odd(fd, where, odd)
            return
        self._bind(fd, read_only=False)
        for entry, _ in entries.values():
            assert entry is not None
            self._bind(entry, read_only=True)
        self.main_dirs.append(where)
        config, whole = self._config(fd)
        self._config_worktree(fd, where, _worktree_config(config, whole))
        self._work_tree_pointer(where, config)
        for folder in ("modules", "worktrees"):
            self._walk_top(fd, where, folder)

    def _make(self, where: str, name: str, kind: str) -> None:
        """Make a missing hooks, info (empty folders) or config (an empty file) on the host, beneath the root."""
        parent = openat2(self._root_fd, os.fsencode(where), os.O_PATH | os.O_DIRECTORY, 0, _BENEATH)
        try:
            if kind == "dir":
                os.mkdir(name, 0o755, dir_fd=parent)
            else:
                os.close(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=parent))
        finally:
            os.close(parent)

    def _odd(self, fd: int, where: str, odd: list[str]) -> None:
        """A git directory with an odd entry: read-only whole, with what its links lead to inside the workspace."""
        self._bind(fd, read_only=True)
        for name in odd:
            self._link_target(os.path.join(where, name))

    def _link_target(self, rel: str) -> None:
        """What ``rel`` leads to, if inside the workspace: read-only (git would read it there)."""
        target = self._open(rel, follow=True)
        if target is not None and _kind(target) in ("dir", "file"):
            self._bind(target, read_only=True)
            self._targets.append(target)

    def _config(self, git_dir: int) -> tuple[bytes, bool]:
        """The git directory's config, up to GIT_CONFIG_SCAN_MAX_BYTES, and whether that is all of it."""
        config = self._entry(self._where(git_dir) or ".", "config")[0]
        if config is None or _kind(config) != "file":
            return b"", True
        data = _read(config, GIT_CONFIG_SCAN_MAX_BYTES)
        return (data, True) if data is not None else (b"", False)

    def _work_tree_pointer(self, where: str, config: bytes) -> None:
        """The ``.git`` file of the work tree the config names (``core.worktree``: a submodule's), read-only: rewritten,
        it would lead the superproject's next ``git status`` into a git directory of the command's making."""
        for line in config.splitlines():
            key, _, value = line.partition(b"=")
            if key.strip().lower() == b"worktree" and value.strip():
                path = os.fsdecode(value.strip().strip(b'"'))
                rel = os.path.relpath(path, self._root) if path.startswith("/") else os.path.join(where, path)
                fd = self._open(os.path.join(rel, ".git")) if not rel.startswith("..") else None
                if fd is not None and _kind(fd) == "file":
                    self._bind(fd, read_only=True)

    def _config_worktree(self, git_dir: int, where: str, turned_on: bool) -> None:
        """``config.worktree`` read-only where it is; made first where the config would read it."""
        fd, kind = self._entry(where, "config.worktree")
        if fd is None and turned_on:
            with contextlib.suppress(FileExistsError):
                self._make(where, "config.worktree", "file")
            fd, kind = self._entry(where, "config.worktree")
        if fd is not None:
            if kind == "file":
                self._bind(fd, read_only=True)
            else:
                self._odd(git_dir, where, ["config.worktree"])

    # ------------------------------------------------------------------ modules/ and worktrees/, bounded

    def _walk_top(self, git_dir: int, where: str, folder: str) -> None:
        fd, kind = self._entry(where, folder)
        if fd is None:
            return
        rel = os.path.join(where, folder)
        if kind != "dir":
            self._odd(git_dir, where, [folder])  # a link there could be swapped: the whole git directory read-only
            return
        if self._walking:  # a submodule's own modules/: part of the walk already under way
            self._walk(fd, rel, folder)
            return
        marks = len(self._binds), len(self._seen)
        self._walking = True
        try:
            self._walk(fd, rel, folder)
        except _Fallback:
            for where_bound in list(self._binds)[marks[0] :]:
                del self._binds[where_bound]
            for seen in list(self._seen)[marks[1] :]:
                del self._seen[seen]
            self._bind(fd, read_only=True)
            for target in self._targets:
                self._bind(target, read_only=True)
        finally:
            self._walking = False

    def _count(self) -> None:
        """One more folder bound on its own below ``modules/`` or ``worktrees/``: none past GIT_WALK_MAX."""
        self._walked += 1
        if self._walked > GIT_WALK_MAX:
            raise _Fallback

    def _walked_entry(self, rel: str, name: str) -> tuple[int | None, str]:
        """An entry met in the walk; a link there could be swapped, so what it leads to is read-only and the walk falls
        back."""
        entry, kind = self._entry(rel, name)
        if kind == _LINK:
            self._link_target(os.path.join(rel, name))
            raise _Fallback
        return entry, kind

    def _walk(self, fd: int, rel: str, folder: str) -> None:
        """Bind the folder onto itself and go through it: git directories protected, other folders walked."""
        self._count()
        self._bind(fd, read_only=False)
        listing = openat2(self._root_fd, os.fsencode(rel), os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, 0, _BENEATH)
        try:
            names = sorted(os.listdir(listing))
        finally:
            os.close(listing)
        for name in names:
            entry, kind = self._walked_entry(rel, name)
            if entry is None or kind != "dir":
                continue
            child = os.path.join(rel, name)
            if folder == "worktrees":
                self._worktree(entry, child)
            elif self._entry(child, "HEAD")[0] is not None:
                self._count()
                self._git_dir(entry)
            else:
                self._walk(entry, child, folder)  # the folders of a nested submodule name (``libs/json``)

    def _worktree(self, fd: int, rel: str) -> None:
        """A linked work tree's own directory in ``worktrees/``: onto itself, its pointers read-only."""
        self._count()
        self._bind(fd, read_only=False)
        for name in ("commondir", "gitdir", "config.worktree"):
            entry, _ = self._walked_entry(rel, name)
            if entry is not None:
                self._bind(entry, read_only=True)


COMMONDIR_NOTE: Final = (
    "\n[DashFloat removed {paths}: the command wrote it, and git would have taken the repository's hooks and config "
    "from where it points at your next git command]"
)
"""What a command's result says when ``sweep_commondirs`` removed a ``commondir`` it planted."""


def sweep_commondirs(root_fd: int, main_dirs: list[str]) -> str:
    """Remove a ``commondir`` that appeared during a command in a main git directory that had none (git reads one in
    any git directory and takes hooks and config from where it points, so a command could move them out of their
    read-only binds; nothing can stop its creation, as git refuses an empty or unreadable one). The note to add to
    the command's result; empty when there was none. Opened beneath the held root: never follows a link out."""
    removed: list[str] = []
    for where in main_dirs:
        try:
            directory = openat2(root_fd, os.fsencode(where), os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW, 0, _BENEATH)
        except OSError:
            continue
        try:
            os.unlink("commondir", dir_fd=directory)
        except FileNotFoundError:
            continue
        except OSError:  # a folder there: git refuses to run in that repository anyway, and it is the user's to see
            with contextlib.suppress(OSError):
                os.rmdir("commondir", dir_fd=directory)
            continue
        finally:
            os.close(directory)
        removed.append(os.path.normpath(os.path.join(where, "commondir")))
    return COMMONDIR_NOTE.format(paths=", ".join(removed)) if removed else ""
