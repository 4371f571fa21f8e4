"""--patch FILE in real `dashfloat -p --json` runs against the scripted server: the patch holds what the tools and a
sandboxed command changed, the real `git apply` reproduces the final tree from a fresh copy of the starting one, and
the result record lists the same files with their digests."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

from dashfloat.runtime.printer import EXIT_OK, EXIT_USAGE
from dashfloat.testing.sse_server import ScriptedServer, text_reply, tool_calls_reply
from tests.executor.test_patch import git_apply, state_of
from tests.runtime.test_headless_contract import run_json, the_result

PNG = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + bytes(range(256))


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_the_patch_of_a_run_reproduces_its_final_tree_with_git_apply(tree: Path, tmp_path: Path) -> None:
    (tree / "gone.txt").write_text("deleted by a command\n")
    (tree / "logo.png").write_bytes(PNG)
    (tree / "kept.txt").write_text("untouched\n")
    start = tmp_path / "start"
    shutil.copytree(tree, start)
    command = (
        "rm gone.txt && printf 'GIF89a\\000\\001\\002' > logo.png && mkdir -p out && printf '\\377\\000' > out/x.bin"
    )
    with ScriptedServer() as server:
        server.enqueue(
            tool_calls_reply(
                [
                    ("c1", "edit_file", {"path": "a.txt", "search_block": "hello", "replace_block": "hello\nworld"}),
                    ("c2", "write_file", {"path": "src/new.py", "content": "print('hi')\n"}),
                    ("c3", "execute_command", {"command": command}),
                ]
            ),
            text_reply("Done."),
        )
        patch = tmp_path / "run.patch"
        code, events, stderr = run_json(server, tree, tmp_path, "-p", "change things", "--yes", "--patch", str(patch))
    assert code == EXIT_OK, stderr
    git_apply(start, patch, tmp_path / "fresh")
    assert state_of(tmp_path / "fresh") == state_of(tree)
    assert (tree / "logo.png").read_bytes() == b"GIF89a\0\1\2"  # the command ran
    result = the_result(events, EXIT_OK)
    changes = {c["path"]: c for c in result["changes"]}
    assert sorted(changes) == ["a.txt", "gone.txt", "logo.png", "out/x.bin", "src/new.py"]
    assert changes["a.txt"] == {
        "path": "a.txt",
        "added": 1,  # the patch's count: "hello" is a line it keeps
        "removed": 0,
        "before_sha256": sha256(b"hello\n"),
        "after_sha256": sha256(b"hello\nworld\n"),
    }
    assert changes["src/new.py"]["before_sha256"] is None
    assert changes["gone.txt"]["after_sha256"] is None and changes["gone.txt"]["removed"] == 1
    assert changes["logo.png"]["before_sha256"] == sha256(PNG)
    assert b"GIT binary patch" in patch.read_bytes()


def test_a_run_that_changes_nothing_writes_an_empty_patch(tree: Path, tmp_path: Path) -> None:
    patch = tree / "run.patch"  # inside the working directory: the patch is not a change of the run's
    with ScriptedServer() as server:
        server.enqueue(text_reply("Nothing to do."))
        code, events, _ = run_json(server, tree, tmp_path, "-p", "hi", "--patch", str(patch))
    assert code == EXIT_OK
    assert patch.read_bytes() == b""
    assert the_result(events, EXIT_OK)["changes"] == []


def test_a_patch_path_in_no_directory_exits_2_before_the_run(tree: Path, tmp_path: Path) -> None:
    with ScriptedServer() as server:
        code, events, stderr = run_json(server, tree, tmp_path, "-p", "hi", "--patch", str(tmp_path / "no" / "p"))
        assert server.requests == []
    assert code == EXIT_USAGE and events == []
    assert "--patch" in stderr and "does not exist" in stderr


def test_patch_needs_a_headless_run(tree: Path, tmp_path: Path) -> None:
    from tests.e2e import dashfloat_argv, isolated_environment

    with ScriptedServer() as server:
        result = subprocess.run(
            [*dashfloat_argv(server, tree), "--patch", str(tmp_path / "p"), "--undo"],
            env=isolated_environment(tmp_path),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert result.returncode == EXIT_USAGE
    assert "--patch needs -p PROMPT" in result.stderr
