"""The total checkpoint cap end to end (ADR 0070): real CLI, agent and executor processes, real session logs; a new
session's first write prunes the least recently used other session's store, and that session's undo says so."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

from dashfloat.testing.sse_server import ScriptedServer, text_reply, tool_calls_reply
from tests.e2e import dashfloat_argv, isolated_environment

CLI_TIMEOUT_S = 90
FULL_STORE_BYTES = 256 * 1024 * 1024  # CHECKPOINT_STORE_MAX_BYTES; eight of them are the whole total cap


def cli(server: ScriptedServer, tree: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        dashfloat_argv(server, tree, *args),
        env=isolated_environment(tmp_path),
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        check=False,
    )


def full_store(checkpoints: Path, name: str, last_use: int) -> None:
    """Another session's store at its per-session cap (one sparse object: no disk used)."""
    objects = checkpoints / name / "objects"
    objects.mkdir(parents=True)
    with open(objects / hashlib.sha256(name.encode()).hexdigest(), "wb") as f:
        f.truncate(FULL_STORE_BYTES)
    os.utime(objects, (last_use, last_use))


def test_a_new_sessions_first_write_prunes_the_oldest_store_and_its_undo_says_pruned(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text("a0\n")
    checkpoints = tmp_path / "state" / "dashfloat" / "checkpoints"
    with ScriptedServer() as server:
        server.enqueue(
            tool_calls_reply([("c1", "edit_file", {"path": "a.txt", "search_block": "a0", "replace_block": "a1"})]),
            text_reply("done"),
        )
        assert cli(server, work, tmp_path, "-p", "edit", "--yes").returncode == 0
        (first,) = checkpoints.iterdir()
        os.utime(first / "objects", (1_700_000_000, 1_700_000_000))  # used long ago
        # eight full stores used since: with the first one's few bytes, all of them pass the 2 GiB cap
        for i in range(8):
            full_store(checkpoints, f"20240101-00000{i}-abcdef", 1_700_000_100 + i)

        server.enqueue(
            tool_calls_reply([("c2", "write_file", {"path": "b.txt", "content": "b\n"})]),
            text_reply("done"),
        )
        second = cli(server, work, tmp_path, "-p", "write", "--yes")
        assert second.returncode == 0, second.stderr
        assert (
            "all sessions' checkpoints passed their 2048 MiB cap: pruned those of the 1 least recently used other "
            "session; the changes they recorded can no longer be undone"
        ) in second.stderr
        assert not first.exists() and (checkpoints / f"{first.name}.pruned").is_file()
        # the eight and the second session's (the removal of the renamed store may still be under way)
        assert len([p for p in checkpoints.iterdir() if p.is_dir() and not p.name.startswith(".")]) == 9

        undo = cli(server, work, tmp_path, "--undo", "--yes", "--resume", first.name)
        assert undo.returncode == 1, undo.stderr
        assert "a.txt: checkpoint pruned: this session's checkpoints were removed on " in undo.stderr
        assert "when all sessions' checkpoints passed their 2048 MiB cap (the least recently used" in undo.stderr
        assert (work / "a.txt").read_text() == "a1\n"
