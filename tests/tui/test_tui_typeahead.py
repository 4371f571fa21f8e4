"""Keys typed while DashFloat starts are neither echoed into the scrollback nor turned into newlines."""

from __future__ import annotations

import termios
import time
from pathlib import Path

from dashfloat.testing.sse_server import ScriptedServer, text_reply
from tests.e2e import dashfloat_argv
from tests.pty_harness import Terminal


def test_typeahead_before_the_first_paint_submits_as_typed(tmp_path: Path, isolated_env: dict[str, str]) -> None:
    tree = tmp_path / "work"
    tree.mkdir()
    with ScriptedServer() as server:
        server.enqueue(text_reply("first answer"), text_reply("second answer"))
        term = Terminal(dashfloat_argv(server, tree), isolated_env)
        try:
            # Type the moment DashFloat has taken the terminal (its first act, before the heavy imports, the
            # agent and the first paint); keys typed before the interpreter even runs our code are the tty's.
            deadline = time.monotonic() + 10
            while termios.tcgetattr(term.fd)[3] & termios.ECHO and time.monotonic() < deadline:
                time.sleep(0.002)
            assert not termios.tcgetattr(term.fd)[3] & termios.ECHO
            assert "❯" not in term.visible()  # really before the first paint
            term.send("hello\r")
            assert term.wait_for("first answer"), term.text()
            assert term.wait_for("Idle", visible_only=True)
            term.send("second\r")
            assert term.wait_for("second answer"), term.text()
            assert server.requests[0]["messages"][-1] == {"role": "user", "content": "hello"}
            assert server.requests[1]["messages"][-1] == {"role": "user", "content": "second"}
            term.send("\x04")
            assert term.wait_exit() == 0, term.text()
        finally:
            term.close()
