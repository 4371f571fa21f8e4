"""The prompt's kept content is what prompt_toolkit's BufferControl makes, after any sequence of edits, cursor
moves, selections, completions, focus changes and sizes (ADR 0044)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from prompt_toolkit.application import Application
from prompt_toolkit.application.current import set_app
from prompt_toolkit.buffer import Buffer, CompletionState
from prompt_toolkit.completion import Completion
from prompt_toolkit.enums import EditingMode
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.layout import HSplit, Layout, Window
from prompt_toolkit.layout.controls import BufferControl, UIContent
from prompt_toolkit.layout.processors import TabsProcessor
from prompt_toolkit.output import DummyOutput
from prompt_toolkit.selection import SelectionState

from dashfloat.textsafe import TAB_WIDTH
from dashfloat.ui._kept_content import KEPT_CONTENTS, KeptBufferControl

ops = st.one_of(
    st.tuples(st.just("insert"), st.text(alphabet="ab \t\n❯漢", max_size=6)),
    st.tuples(st.just("left"), st.integers(0, 5)),
    st.tuples(st.just("right"), st.integers(0, 5)),
    st.tuples(st.just("text"), st.text(alphabet="ab\n", max_size=8)),
    st.tuples(st.just("select"), st.booleans()),
    st.tuples(st.just("complete"), st.booleans()),
    st.tuples(st.just("focus"), st.booleans()),
    st.tuples(st.just("vi"), st.booleans()),
    st.tuples(st.just("search"), st.text(alphabet="ab", max_size=2)),
)


def _buffer() -> Buffer:
    buffer = Buffer(multiline=True)
    buffer.load_history_if_not_yet_loaded = lambda: None  # type: ignore[method-assign]  # needs a running loop
    return buffer


def _seen(content: UIContent) -> tuple[object, ...]:
    lines = tuple(tuple(content.get_line(i)) for i in range(content.line_count))
    return lines, content.cursor_position, content.menu_position


def _apply(op: tuple[str, object], buffer: Buffer, app: Application[None], kept: BufferControl) -> None:
    name, arg = op
    if name == "insert":
        buffer.insert_text(str(arg))
    elif name == "left":
        buffer.cursor_left(int(str(arg)))
    elif name == "right":
        buffer.cursor_right(int(str(arg)))
    elif name == "text":
        buffer.text = str(arg)
    elif name == "select":
        buffer.selection_state = SelectionState(0) if arg else None
    elif name == "complete":
        if arg:
            buffer.complete_state = CompletionState(buffer.document, [Completion("xy", 0)], complete_index=0)
        else:
            buffer.complete_state = None
    elif name == "focus":
        app.layout.focus(kept if arg else app.layout.container.children[1])  # type: ignore[attr-defined]
    elif name == "vi":
        app.editing_mode = EditingMode.VI if arg else EditingMode.EMACS
    elif name == "search":
        kept.search_state.text = str(arg)


@settings(max_examples=150, deadline=None)
@given(steps=st.lists(st.tuples(ops, st.integers(1, 12), st.integers(1, 4)), max_size=12), tabs=st.booleans())
def test_kept_content_is_a_fresh_content(steps: list[tuple[tuple[str, object], int, int]], tabs: bool) -> None:
    buffer = _buffer()
    # The app's control has a TabsProcessor (a pasted tab shown as spaces); the default processors alone too.
    kept = KeptBufferControl(buffer, [TabsProcessor(tabstop=TAB_WIDTH, char1=" ", char2=" ")] if tabs else None)
    other = Buffer()
    with create_pipe_input() as pipe:
        app: Application[None] = Application(
            layout=Layout(HSplit([Window(kept), Window(BufferControl(other))])), input=pipe, output=DummyOutput()
        )
        with set_app(app):
            for op, width, height in steps:
                _apply(op, buffer, app, kept)
                for asked in (1, height, 1):  # as a frame asks: for a height, then to draw, and again next frame
                    fresh = BufferControl.create_content(kept, width, asked)  # prompt_toolkit's, made anew
                    assert _seen(kept.create_content(width, asked)) == _seen(fresh)


def test_content_is_kept_while_the_input_is_the_same_and_made_again_when_it_changes() -> None:
    buffer = _buffer()
    kept = KeptBufferControl(buffer)
    with create_pipe_input() as pipe:
        app: Application[None] = Application(layout=Layout(Window(kept)), input=pipe, output=DummyOutput())
        with set_app(app):
            first = kept.create_content(20, 1)
            assert kept.create_content(20, 1) is first
            buffer.insert_text("a")
            assert kept.create_content(20, 1) is not first
            # At most KEPT_CONTENTS sizes are kept: one more starts the store anew.
            kept = KeptBufferControl(buffer)
            app.layout = Layout(Window(kept))
            sizes = [kept.create_content(20, h) for h in range(1, KEPT_CONTENTS + 1)]
            assert kept.create_content(20, 1) is sizes[0]
            kept.create_content(20, KEPT_CONTENTS + 1)
            assert kept.create_content(20, 1) is not sizes[0]
            buffer.complete_state = CompletionState(buffer.document, [Completion("b", 0)])
            assert kept.create_content(20, 1) is not kept.create_content(20, 1)  # made every time
