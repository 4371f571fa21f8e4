"""A person's first run: `dashfloat` with nothing configured, in a real pty, walking the demo tour."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import psutil

from dashfloat.agent._workers import AGENT_PROCESS_NAME, EXECUTOR_PROCESS_NAME, LLM_PROCESS_NAME
from dashfloat.demo._model import DEMO_FILE
from tests.pty_harness import WAIT_S, Terminal


def _names(pid: int) -> set[str]:
    """The names of the processes below ``pid`` (the ones that exist and have named themselves so far)."""
    names = set()
    for child in psutil.Process(pid).children(recursive=True):
        with contextlib.suppress(psutil.Error):
            names.add(child.name())
    return names


def test_the_whole_loop_on_the_demo_provider_in_a_real_terminal(tmp_path: Path, isolated_env: dict[str, str]) -> None:
    tree = tmp_path / "work"
    tree.mkdir()
    (tree / "README.md").write_text("# A project\n\nIt greets.\n")
    env = {**isolated_env, "DASHFLOAT_DEMO_DELAY_MS": "0"}
    term = Terminal([sys.executable, "-m", "dashfloat", "--cwd", str(tree)], env, cols=100, rows=40)
    try:
        assert term.wait_for("offline demo model"), term.text()
        assert term.wait_for("Idle", visible_only=True), term.text()
        # The executor is forked after the ready message (its code is imported meanwhile, ADR 0045): "Idle" can be
        # on screen before it exists, and a loaded machine showed it (ADR 0058). Wait for all of them.
        workers = {AGENT_PROCESS_NAME, LLM_PROCESS_NAME, EXECUTOR_PROCESS_NAME}
        assert term.wait_until(lambda: workers <= _names(term.pid)), _names(term.pid)
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
        assert term.wait_exit() == 0, term.text()
        assert psutil.wait_procs(descendants, timeout=WAIT_S)[1] == []  # nothing left behind
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
