"""`make run` from inside DashFloat's own checkout, as a newcomer types it: the demo works on a scratch copy."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.e2e import isolated_environment
from tests.pty_harness import Terminal

REPO = Path(__file__).resolve().parents[2]


def checkout_state() -> str:
    """What git would call a change in the checkout (tracked and untracked, ignored files aside)."""
    done = subprocess.run(
        ["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


@pytest.mark.skipif(
    shutil.which("make") is None or not (REPO / ".git").exists(), reason="needs make and a git checkout"
)
def test_make_run_demo_fix_leaves_the_checkout_clean_and_says_how_to_install(tmp_path: Path) -> None:
    before = checkout_state()
    env = {**isolated_environment(tmp_path), "TMPDIR": str(tmp_path)}
    term = Terminal(["make", "-s", "-C", str(REPO), "run", "ARGS=--yes"], env, cols=110, rows=40)
    try:
        assert term.wait_for("Idle", visible_only=True, timeout_s=60), term.text()
        match = re.search(r"scratch copy of this checkout: (\S+)", term.raw.decode(errors="replace"))
        assert match, term.text()
        scratch = Path(match.group(1))
        assert scratch.parent == tmp_path and (scratch / "pyproject.toml").exists()
        term.send("fix\r")
        assert term.wait_for("The fix is in", timeout_s=30), term.text()
        assert term.wait_for("Idle", visible_only=True)
        term.send("\x04")  # Ctrl-D on the empty input
        assert term.wait_for("make install", timeout_s=30), term.text()
        assert term.wait_exit(30) == 0, term.text()
    finally:
        term.close()
    assert "pipx install ." in term.text()
    assert checkout_state() == before  # the edit landed in the copy, not in DashFloat's own files
    assert not scratch.exists()
