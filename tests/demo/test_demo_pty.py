"""A person's first run: `dashfloat` with nothing configured, in a real pty, walking the demo tour."""

from __future__ import annotations

import sys
from pathlib import Path

import psutil

from dashfloat.demo._model import DEMO_FILE
from tests.pty_harness import Terminal


def test_the_whole_loop_on_the_demo_provider_in_a_real_terminal(tmp_path: Path, isolated_env: dict[str, str]) -> None:
    tree = tmp_path / "work"
    tree.mkdir()
    (tree / "README.md").write_text("# A project\n\nIt greets.\n")
    env = {**isolated_env, "DASHFLOAT_DEMO_DELAY_MS": "0"}
    term = Terminal([sys.executable, "-m", "dashfloat", "--cwd", str(tree)], env, cols=100, rows=40)
    try:
        assert term.wait_for("offline demo model"), term.text()
        assert term.wait_for("Idle", visible_only=True), term.text()
        descendants = psutil.Process(term.pid).children(recursive=True)
        assert len(descendants) >= 4  # agent, LLM stream, executor, demo provider
        term.send("tour\r")
        assert term.wait_for("always allow write_file"), term.text()  # read-only steps ran unasked
        assert "⚙ list_directory" in term.text() and "⚙ read_file README.md" in term.text()
        assert "+# DashFloat demo" in term.text()  # the preview of the new file
        term.send("y")
        assert term.wait_for("always allow edit_file"), term.text()
        assert "+It is safe to delete (edited through a confirmation)." in term.text()  # a diff
        term.send("y")
        assert term.wait_for("always allow cksum"), term.text()
        term.send("y")
        assert term.wait_for("Tour complete"), term.text()
        assert term.wait_for("Idle", visible_only=True)
        assert "edited through a confirmation" in (tree / DEMO_FILE).read_text()
        term.send("\x04")  # Ctrl-D on an empty input quits
        assert term.wait_exit(5) == 0
        assert psutil.wait_procs(descendants, timeout=2)[1] == []  # nothing left behind
    finally:
        term.close()


def test_usage_on_the_demo_says_where_its_window_comes_from(tmp_path: Path, isolated_env: dict[str, str]) -> None:
    """Found in tmux: the demo's /usage said `(configured, context_window in config.toml)` with no config.toml."""
    term = Terminal([sys.executable, "-m", "dashfloat", "--demo", "--cwd", str(tmp_path)], isolated_env, cols=100)
    try:
        assert term.wait_for("Idle", visible_only=True), term.text()
        term.send("/usage\r")
        assert term.wait_for("no usage reported yet"), term.text()
        assert "context window: 32.8k tokens (the demo model's own, not configured)" in term.text(), term.text()
        assert "config.toml" not in term.text()
    finally:
        term.close()


def test_at_forty_columns_the_status_bar_keeps_the_safety_state(tmp_path: Path, isolated_env: dict[str, str]) -> None:
    """Found in tmux: at 40 columns the bar read `● Idle · dashfloat-demo · 879 / 32.8k` (approve: and sandbox:
    were the first to go)."""
    term = Terminal([sys.executable, "-m", "dashfloat", "--demo", "--cwd", str(tmp_path)], isolated_env, cols=40)
    try:
        assert term.wait_for("ask · ", visible_only=True), term.text()  # the agent is ready: its sandbox is known
        [bar] = [line for line in term.visible().splitlines() if line.startswith("● Idle · ")]
        assert bar.rstrip().endswith(("ask · ws-write", "ask · NOT sandboxed")), bar
    finally:
        term.close()
