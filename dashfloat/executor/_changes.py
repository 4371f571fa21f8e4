"""What a command changed in the workspace, told by size and mtime before and after it (bounded)."""

from __future__ import annotations

import os
from collections.abc import Mapping

from dashfloat.executor._limits import COMMAND_CHANGES_MAX_PATHS, COMMAND_SCAN_MAX_FILES
from dashfloat.executor.path_policy import Root
from dashfloat.protocol import CommandChanges

# Version-control internals change under every git command and say nothing the user can act on.
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn"})

Snapshot = dict[str, tuple[int, int]]
"""Relative path -> (size, mtime_ns) of every file and symlink under the root."""


def snapshot(root: Root | str, max_files: int = COMMAND_SCAN_MAX_FILES) -> Snapshot | str:
    """Every file's size and mtime under ``root`` (symlinks not followed), or why it was not taken.

    Metadata only, through the start-time real path: nothing is opened, so nothing can escape through it.
    """
    root = root.path if isinstance(root, Root) else root
    files: Snapshot = {}
    stack = [root]
    while stack:
        directory = stack.pop()
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            if entry.name not in SKIPPED_DIRS:
                                stack.append(entry.path)
                            continue
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue  # gone while we looked
                    if len(files) >= max_files:
                        return f"the workspace has more than {max_files} files; changes by commands are not tracked"
                    files[os.path.relpath(entry.path, root)] = (st.st_size, st.st_mtime_ns)
        except OSError:
            continue  # unreadable or removed directory: its files are not told
    return files


def compare(
    before: Mapping[str, tuple[int, int]] | str,
    after: Mapping[str, tuple[int, int]] | str,
    max_paths: int = COMMAND_CHANGES_MAX_PATHS,
) -> CommandChanges:
    """Files created, deleted or changed (size or mtime) between two snapshots, at most ``max_paths`` named."""
    if isinstance(before, str):
        return CommandChanges(unknown=before)
    if isinstance(after, str):
        return CommandChanges(unknown=after)
    changed = sorted(path for path in before.keys() | after.keys() if before.get(path) != after.get(path))
    return CommandChanges(paths=changed[:max_paths], more=max(0, len(changed) - max_paths))
