"""@path mentions headless, as a script runs DashFloat: the file goes with the prompt, rows on stderr."""

from __future__ import annotations

import subprocess
from pathlib import Path

from dashfloat.mentions import ATTACHMENTS_LINE
from dashfloat.testing.sse_server import ScriptedServer, text_reply
from tests.e2e import dashfloat_argv, isolated_environment


def run(server: ScriptedServer, tree: Path, tmp_path: Path, prompt: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        dashfloat_argv(server, tree, "-p", prompt),
        env=isolated_environment(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def user_content(server: ScriptedServer) -> str:
    [request] = server.requests
    [user] = [m for m in request["messages"] if m["role"] == "user"]
    content = user["content"]
    assert isinstance(content, str)
    return content


def test_headless_attaches_a_mentioned_file(tree: Path, tmp_path: Path) -> None:
    (tree / "README.md").write_text("# Project\nThe secret word is pelican.\n")
    with ScriptedServer() as server:
        server.enqueue(text_reply("It is about a pelican."))
        done = run(server, tree, tmp_path, "explain @README.md")
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "It is about a pelican."
        assert "⚙ read_file README.md" in done.stderr and "→ ok" in done.stderr
        content = user_content(server)
        assert content.startswith(f"explain @README.md\n\n{ATTACHMENTS_LINE}\n\nThe file README.md, attached with")
        assert "The secret word is pelican." in content


def test_headless_sends_the_prompt_when_a_mention_is_missing_or_outside(tree: Path, tmp_path: Path) -> None:
    (tree.parent / "outside.txt").write_text("not for the model\n")
    (tree / "link.txt").symlink_to(tree.parent / "outside.txt")
    with ScriptedServer() as server:
        server.enqueue(text_reply("ok"))
        done = run(server, tree, tmp_path, "look at @nope.txt @../outside.txt @link.txt")
        assert done.returncode == 0, done.stderr
        assert done.stderr.count("→ error:") == 3, done.stderr
        content = user_content(server)
        assert "not for the model" not in content
        assert "@nope.txt could not be attached: " in content
        assert "@../outside.txt could not be attached: path escapes the working directory" in content
        assert "@link.txt could not be attached: path escapes the working directory" in content
