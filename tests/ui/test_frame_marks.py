"""Frame marks (issue 19's honest token-to-screen figure): with DASHFLOAT_FRAME_MARKS=1 the TUI ends each frame with
a mark saying how much answer text it shows; the bytes up to a mark really show that text; off, there is none."""

from __future__ import annotations

import os
from pathlib import Path

import pyte

from dashfloat.testing.sse_server import Pause, Reply, ScriptedServer, text_reply
from dashfloat.ui import FRAME_MARKS_ENV, read_frame_marks
from dashfloat.ui._frames import frame_mark, frame_marks_on
from tests.e2e import dashfloat_argv
from tests.ui.ui_pty import ENTER, REPO, Term

ANSWER = " ".join(f"word{i:03d}" for i in range(300)) + " LASTWORD"
COLS, ROWS = 90, 26


def test_a_mark_reads_back_wherever_it_sits() -> None:
    data = b"x\x1b[2J" + frame_mark(12).encode() + b"\x1b]0;title\x07" + frame_mark(0).encode() + b"\x1b]7707;"
    assert read_frame_marks(data) == [12, 0]
    assert frame_marks_on({FRAME_MARKS_ENV: "1"})
    assert not frame_marks_on({FRAME_MARKS_ENV: "0"}) and not frame_marks_on({})


def _streamed(tmp_path: Path, marks: bool) -> Term:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "DASHFLOAT_", "NO_COLOR"))}
    env.update(PYTHONPATH=str(REPO), HOME=str(tmp_path), XDG_STATE_HOME=str(tmp_path / "s"))
    env["XDG_CONFIG_HOME"] = str(tmp_path / "c")
    if marks:
        env[FRAME_MARKS_ENV] = "1"
    with ScriptedServer() as server:
        term = Term(dashfloat_argv(server, tmp_path), env, cols=COLS, rows=ROWS)
        try:
            assert term.wait_for("● Idle · m", 20), term.text()
            # the answer, then a pause before the stream ends: its last word is drawn by a frame of the stream,
            # not printed with the turn's end
            streamed = text_reply(ANSWER, chunk_size=7, delay_s=0.001).body
            assert isinstance(streamed, list)
            server.enqueue(Reply(body=[*streamed[:-3], Pause(0.5), *streamed[-3:]]))  # before the finish
            term.send("go" + ENTER)
            assert term.wait_for("LASTWORD"), term.text()
            assert term.wait_for("● Idle", visible_only=True), term.text()
        finally:
            term.close()
    return term


def test_each_frame_is_marked_with_the_answer_text_it_shows(tmp_path: Path) -> None:
    term = _streamed(tmp_path, marks=True)
    raw = bytes(term.raw)
    counts = read_frame_marks(raw)
    assert counts == sorted(counts), "a later frame never shows less"
    assert counts[-1] == len(ANSWER)
    assert counts.index(len(ANSWER)) > 0  # frames drawn while it streamed came first
    # The bytes up to the first mark that counts the whole answer draw the whole answer: its last word is on screen.
    end = raw.index(frame_mark(len(ANSWER)).encode()) + len(frame_mark(len(ANSWER)))
    screen = pyte.HistoryScreen(COLS, ROWS, history=2000, ratio=0.5)
    pyte.Stream(screen).feed(raw[:end].decode("utf-8", errors="replace"))
    assert any("LASTWORD" in line for line in screen.display), "\n".join(screen.display)
    # and no earlier frame drew it under a smaller count (a mark never says less than its frame shows)
    earlier = counts[counts.index(len(ANSWER)) - 1]
    assert b"LASTWORD" not in raw[: raw.rindex(frame_mark(earlier).encode())]


def test_without_the_variable_no_frame_is_marked(tmp_path: Path) -> None:
    term = _streamed(tmp_path, marks=False)
    assert read_frame_marks(bytes(term.raw)) == []
    assert "LASTWORD" in term.text()
