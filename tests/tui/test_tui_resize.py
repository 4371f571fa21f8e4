"""Resizing while a block streams or a confirmation waits leaves the scrollback clean (issue 17, ADR 0033).

The real ``python -m dashfloat`` against the scripted SSE server, in tmux (which re-wraps its screen and
history on a resize, as most terminals do) and in pyte (which cuts lines, as xterm does). The window is
narrowed and widened several times; after each resize a key is typed and the test waits until the input
shows it, so the program has drawn at the new size. Then the whole scrollback is read: every committed
word is there exactly once and in order, and no row of the live region (status bar, input, preview, key
line) is left behind.
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Protocol

import pytest

from dashfloat.testing.sse_server import BodyItem, Reply, ScriptedServer, sse_event, text_reply, tool_calls_reply
from dashfloat.ui.render import PHASE_WORDS
from tests.e2e import dashfloat_argv, tui_environment
from tests.tmux_harness import TMUX, TmuxPane
from tests.ui.ui_pty import Term

SIZES: tuple[tuple[int, int], ...] = ((40, 26), (90, 26), (60, 20), (100, 30), (45, 24), (90, 26))
"""Narrower and wider, shorter and taller: each resize re-wraps what the last one drew."""
PYTE_SIZES = tuple((cols, 26) for cols, _ in SIZES)
"""pyte drops the top rows (history too) when a screen gets shorter: only the width changes there."""
STRANDING_SIZES: tuple[tuple[int, int], ...] = ((30, 12), (90, 26), (45, 10), (100, 30), (40, 12), (90, 26))
"""Small enough that the open paragraph's top rows go into the history (measured: 9 rows at 30x12)."""
TALL_OPEN_WORDS = 200
PROMPTS = 3
SHORT_WORDS = 6
"""Words of a committed paragraph: its rows stay narrower than the narrowest window (pyte cuts wider ones)."""
OPEN_WORDS = 40
"""The paragraph streaming while the window is resized: two rows at 90 columns, more when narrow."""
STATUS = re.compile(r"^\S (" + "|".join(PHASE_WORDS.values()) + r")\b")
WORD = re.compile(r"\b[ap]\d+w\d+\b")


class Screen(Protocol):
    """What the test needs of a terminal: keys in, size, the whole scrollback out."""

    def keys(self, text: str) -> None: ...
    def clear_input(self) -> None: ...
    def resize(self, cols: int, rows: int) -> None: ...
    def scrollback(self) -> list[str]: ...
    def visible(self) -> list[str]: ...
    def until(self, check: Callable[[], bool], timeout_s: float = 30.0) -> bool: ...


class TmuxScreen:
    def __init__(self, pane: TmuxPane) -> None:
        self.pane = pane

    def keys(self, text: str) -> None:
        self.pane.type(text)

    def clear_input(self) -> None:
        self.pane.send("C-u")

    def resize(self, cols: int, rows: int) -> None:
        self.pane.resize(cols, rows)

    def scrollback(self) -> list[str]:
        return self.pane.scrollback()

    def visible(self) -> list[str]:
        return self.pane.visible()

    def until(self, check: Callable[[], bool], timeout_s: float = 30.0) -> bool:
        return self.pane.wait_for(check, timeout_s)


class PyteScreen:
    def __init__(self, term: Term) -> None:
        self.term = term

    def keys(self, text: str) -> None:
        self.term.send(text)

    def clear_input(self) -> None:
        self.term.send("\x15")

    def resize(self, cols: int, rows: int) -> None:
        self.term.resize(cols, rows)

    def scrollback(self) -> list[str]:
        lines = self.term.lines()
        while lines and not lines[-1]:
            lines.pop()
        return lines

    def visible(self) -> list[str]:
        return self.term.visible().splitlines()

    def until(self, check: Callable[[], bool], timeout_s: float = 30.0) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if check():
                return True
            if not self.term.pump(0.02):
                break
        return check()


@dataclass
class App:
    screen: Screen
    server: ScriptedServer
    tree: Path
    sizes: tuple[tuple[int, int], ...]


@pytest.fixture(params=["tmux", "pyte"])
def app(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[App]:
    tree = tmp_path / "tree"
    tree.mkdir()
    with ScriptedServer() as server:
        argv = dashfloat_argv(server, tree)
        if request.param == "tmux":
            if TMUX is None:
                pytest.skip("tmux is not installed: the re-wrapping case is covered by pyte's sibling only in part")
            pane = TmuxPane(argv, {**tui_environment(tmp_path), "TERM": "tmux-256color"}, tmp_path, cols=90, rows=26)
            screen: Screen = TmuxScreen(pane)
            close = pane.close
            sizes = SIZES
        else:
            term = Term(argv, tui_environment(tmp_path), cols=90, rows=26)
            screen = PyteScreen(term)
            close = term.close
            sizes = PYTE_SIZES
        try:
            assert screen.until(lambda: _status(screen.visible()).startswith("● Idle")), screen.scrollback()
            yield App(screen, server, tree, sizes)
        finally:
            close()


def _status(lines: list[str]) -> str:
    shown = [line for line in lines if line.strip()]
    return shown[-1] if shown else ""


def _input(lines: list[str]) -> str:
    """The input row: the last row starting with the prompt mark."""
    return next((line for line in reversed(lines) if line.startswith("❯")), "")


def _paragraphs(prefix: str, count: int, words: int) -> str:
    return "\n\n".join(" ".join(f"{prefix}{k}w{j}" for j in range(words)) for k in range(count))


def _fill(app: App) -> list[str]:
    """A few short prompts and answers, so that the live region sits at the bottom of a full screen."""
    prompts = []
    for i in range(PROMPTS):
        app.server.enqueue(text_reply(_paragraphs(f"a{i}_", 4, SHORT_WORDS).replace("_", "")))
        prompts.append(f"prompt {i}")
        app.screen.keys(f"prompt {i}\r")
        assert app.screen.until(partial(_shown, app.screen, f"a{i}3w{SHORT_WORDS - 1}")), app.screen.scrollback()
        assert app.screen.until(lambda: _status(app.screen.visible()).startswith("● Idle"))
    return prompts


def _shown(screen: Screen, text: str) -> bool:
    return text in "\n".join(screen.scrollback())


def _typed(screen: Screen, text: str) -> bool:
    return _input(screen.visible()).endswith(text)


def _resize_and_type(app: App) -> None:
    """Each size in turn; a digit typed after each shows the program has drawn at that size."""
    typed = ""
    for n, (cols, rows) in enumerate(app.sizes):
        app.screen.resize(cols, rows)
        typed += str(n)
        app.screen.keys(str(n))
        assert app.screen.until(partial(_typed, app.screen, typed)), (cols, rows, app.screen.scrollback())
    app.screen.clear_input()
    assert app.screen.until(lambda: _input(app.screen.visible()) == "❯"), app.screen.scrollback()


def _gated_reply(before: str, after: str, gate: threading.Event) -> Reply:
    """A stream that sends ``before``, waits for ``gate`` (the test's resizes), then sends ``after``."""

    def delta(text: str) -> bytes:
        return sse_event({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]})

    def body() -> Iterator[BodyItem]:
        yield sse_event({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})
        for start in range(0, len(before), 8):
            yield delta(before[start : start + 8])
        gate.wait(120)
        for start in range(0, len(after), 8):
            yield delta(after[start : start + 8])
        yield sse_event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        yield sse_event("[DONE]")

    return Reply(body=body())


def _assert_clean(lines: list[str], prompts: list[str], words: list[str]) -> None:
    text = "\n".join(lines)
    counts = Counter(WORD.findall(text))
    repeated = {word: n for word, n in counts.items() if n != 1}
    assert not repeated, (repeated, text)
    assert sorted(counts) == sorted(words), (set(words) ^ set(counts), text)
    found = WORD.findall(text)
    assert found == words, text  # in order
    assert [line for line in lines if line.startswith("❯")] == [*(f"❯ {p}" for p in prompts), "❯"], text
    assert [line for line in lines if STATUS.match(line)] == [_status(lines)], text


def test_resizing_while_a_block_streams(app: App) -> None:
    _stream_through_resizes(app, OPEN_WORDS)


def test_rows_a_resize_pushes_into_the_history_are_not_drawn_again(app: App) -> None:
    # A tall open paragraph, a much smaller window: its top rows go into the terminal's history before the
    # program hears of the resize (ADR 0035). They are cut from the open block, not drawn a second time.
    if isinstance(app.screen, PyteScreen):
        pytest.skip("pyte drops the rows a shorter screen loses (xterm keeps them): nothing is stranded there")
    app.sizes = STRANDING_SIZES
    _stream_through_resizes(app, TALL_OPEN_WORDS)


def _stream_through_resizes(app: App, open_words: int) -> None:
    prompts = _fill(app)
    committed = _paragraphs("p", 3, SHORT_WORDS)
    words = [f"p3w{j}" for j in range(open_words)]
    before = committed + "\n\n" + " ".join(words[: open_words // 2]) + " "
    after = " ".join(words[open_words // 2 :]) + "\n\n" + _paragraphs("p4_", 2, SHORT_WORDS).replace("_", "")
    gate = threading.Event()
    app.server.enqueue(_gated_reply(before, after, gate))
    app.screen.keys("stream\r")
    prompts.append("stream")
    middle = words[open_words // 2 - 1]
    assert app.screen.until(lambda: middle in "\n".join(app.screen.visible())), app.screen.scrollback()
    assert app.screen.until(lambda: "Streaming" in _status(app.screen.visible()))
    _resize_and_type(app)
    gate.set()
    assert app.screen.until(lambda: "p41w5" in "\n".join(app.screen.scrollback())), app.screen.scrollback()
    assert app.screen.until(lambda: _status(app.screen.visible()).startswith("● Idle"))
    reply = WORD.findall(before + after)
    expected = WORD.findall(
        " ".join(f"a{i}{k}w{j}" for i in range(PROMPTS) for k in range(4) for j in range(SHORT_WORDS))
    )
    lines = app.screen.scrollback()
    # A row cut in the middle of a word by the terminal's history ends the history there, and the rest of the
    # word starts the redrawn row: no word is shown twice, and the reply's text is whole and in order.
    text = "".join("\n".join(lines).split())
    assert "".join(reply) in text, "\n".join(lines)
    found = set(WORD.findall("\n".join(lines)))
    _assert_clean(lines, prompts, [*expected, *(word for word in reply if word in found)])


def test_resizing_while_a_confirmation_waits(app: App) -> None:
    prompts = _fill(app)
    body = "".join(f"line {j} of the new file\n" for j in range(5))
    app.server.enqueue(
        tool_calls_reply([("w1", "write_file", {"path": "new.txt", "content": body})]), text_reply("p0w0 p0w1")
    )
    app.screen.keys("write it\r")
    prompts.append("write it")
    assert app.screen.until(lambda: "a always allow" in "\n".join(app.screen.visible())), app.screen.scrollback()
    _resize_and_type(app)
    assert app.screen.until(lambda: "a always allow" in "\n".join(app.screen.visible())), app.screen.scrollback()
    app.screen.keys("y")
    assert app.screen.until(lambda: "p0w1" in "\n".join(app.screen.scrollback())), app.screen.scrollback()
    assert app.screen.until(lambda: _status(app.screen.visible()).startswith("● Idle"))
    assert (app.tree / "new.txt").read_text() == body
    lines = app.screen.scrollback()
    text = "\n".join(lines)
    # the preview and its key line were live rows: once answered, none of them is left in the scrollback; the one
    # record row of the approval keeps the approved diff, once (issue 37)
    assert "v view all" not in text and "y/Enter" not in text, text
    assert sum("line 0 of the new file" in line for line in lines) == 1, text
    assert sum("✓ wrote new.txt new file" in line for line in lines) == 1, text
    words = WORD.findall(" ".join(f"a{i}{k}w{j}" for i in range(PROMPTS) for k in range(4) for j in range(SHORT_WORDS)))
    _assert_clean(lines, prompts, [*words, "p0w0", "p0w1"])


def test_resizing_while_a_preview_taller_than_the_window_waits(app: App) -> None:
    """Issue 37: a preview taller than the window, resized while it waits, left stale copies of its rows in the
    scrollback (each resize pushed the drawn preview's top into the terminal's history, then drew it again)."""
    if isinstance(app.screen, TmuxScreen):
        app.sizes = STRANDING_SIZES
    prompts = _fill(app)
    body = "".join(f"line {j} of the tall file\n" for j in range(60))
    app.server.enqueue(
        tool_calls_reply([("w1", "write_file", {"path": "tall.txt", "content": body})]), text_reply("p0w0 p0w1")
    )
    app.screen.keys("write it\r")
    prompts.append("write it")
    assert app.screen.until(lambda: "y/Enter" in "\n".join(app.screen.visible())), app.screen.scrollback()
    _resize_and_type(app)
    assert app.screen.until(lambda: "y/Enter" in "\n".join(app.screen.visible())), app.screen.scrollback()
    app.screen.keys("y")
    assert app.screen.until(lambda: "p0w1" in "\n".join(app.screen.scrollback())), app.screen.scrollback()
    assert app.screen.until(lambda: _status(app.screen.visible()).startswith("● Idle"))
    lines = app.screen.scrollback()
    text = "\n".join(lines)
    assert "y/Enter" not in text, text
    # Rows a shorter window pushed into the terminal's history stay there (tmux: no erase reaches them); they are
    # the scrollback's then, never drawn again: the preview's top once at most, then the approval's record row
    # with its collapsed diff. Before, each resize left another copy of the whole preview.
    once = 1 if isinstance(app.screen, TmuxScreen) else 0
    assert sum("v view all" in line for line in lines) <= once, text
    assert sum("more preview lines" in line for line in lines) <= once, text
    counts = Counter(re.findall(r"line \d+ of the tall file", text))
    assert counts and all(n <= 2 for n in counts.values()), (counts, text)
    assert sum("✓ wrote tall.txt new file · +60" in line for line in lines) == 1, text
    words = WORD.findall(" ".join(f"a{i}{k}w{j}" for i in range(PROMPTS) for k in range(4) for j in range(SHORT_WORDS)))
    _assert_clean(lines, prompts, [*words, "p0w0", "p0w1"])
