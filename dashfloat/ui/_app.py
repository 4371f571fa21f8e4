"""The prompt_toolkit application: a thin shell that feeds events to the pure core and draws it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable, Mapping
from typing import Protocol

import msgspec
from msgspec.structs import replace
from prompt_toolkit.application import Application
from prompt_toolkit.buffer import Buffer
from prompt_toolkit.completion import merge_completers
from prompt_toolkit.data_structures import Size
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.input import Input
from prompt_toolkit.key_binding import merge_key_bindings
from prompt_toolkit.key_binding.bindings.basic import load_basic_bindings
from prompt_toolkit.layout import ConditionalContainer, HSplit, Layout, Window
from prompt_toolkit.layout.controls import FormattedTextControl
from prompt_toolkit.layout.dimension import Dimension
from prompt_toolkit.layout.menus import CompletionsMenu
from prompt_toolkit.layout.processors import TabsProcessor
from prompt_toolkit.layout.screen import Screen
from prompt_toolkit.output import ColorDepth, Output
from prompt_toolkit.renderer import CPR_Support

from dashfloat.catalogue import call_name
from dashfloat.protocol import (
    AgentToUi,
    ApprovalMode,
    ConfirmRequested,
    Decision,
    PathsFound,
    RewindTo,
    SubmitPrompt,
    TokenReceived,
    TurnEnded,
    UiToAgent,
)
from dashfloat.textsafe import TAB_WIDTH
from dashfloat.ui import _commands as commands
from dashfloat.ui import _ptk_private as ptk
from dashfloat.ui._frames import frame_mark, frame_marks_on
from dashfloat.ui._history import HistoryCursor, ReverseSearch
from dashfloat.ui._input_window import InputWindow
from dashfloat.ui._kept_content import KeptBufferControl
from dashfloat.ui._keys import bindings
from dashfloat.ui._markdown import render_markdown
from dashfloat.ui._mentions import MentionCompleter, PathCompletion, partial_in
from dashfloat.ui._notify import NOTIFY_LONG_TURN_S, notification
from dashfloat.ui._reflow import (
    overlaid_cells,
    resize_settle_s,
    rows_above_cursor,
    stranded_lines,
    stranded_rows,
    terminal_reflows,
    terminal_wraps_erased_cells,
)
from dashfloat.ui._rows_control import RowsControl, RowsWindow
from dashfloat.ui._screen_diff import install as install_screen_diff
from dashfloat.ui._text import Row, row_width, sanitize
from dashfloat.ui._theme import Theme
from dashfloat.ui.render import PROMPT_MARK, render_entry, render_live, render_status, to_formatted
from dashfloat.ui.state import (
    Entry,
    Event,
    Hint,
    InputChanged,
    LocalNotice,
    ProseRows,
    ShowChanges,
    Submitted,
    Tick,
    UiState,
    close_open,
    decide,
    initial,
    reduce,
    strand_open,
    take_outbox,
)

TICK_S = 1 / 30
"""The only timer. 33 ms keeps every token within one frame of arriving (below what reads as lag)
while capping redraws at 30/s however fast tokens come; the spinner advances every 100 ms on it."""
IDLE_TICK_S = 0.5
"""With nothing moving (no turn, confirmation, resize or hint), the tick waits this long unless something
to draw wakes it at once: an idle session for hours must not wake 30 times a second (1.4 % of a core)."""
ESC_TIMEOUT_S = 0.05
"""How long a lone Esc byte waits to see whether it starts an escape sequence."""
KEY_SEQUENCE_TIMEOUT_S = 0.15
"""How long Esc waits for a following key (Esc Enter is Alt-Enter) before it means Cancel."""
INPUT_MAX_ROWS = 12
ERASE_BELOW = "\r\x1b[2K\x1b[C\x1b[J\r"
"""Erase the cursor's row and all below it, never with ED at the screen's first cell: tmux (scroll-on-clear)
copies a screen erased from its home position into its history, stale frame and all."""
COMPLETION_MENU_ROWS = 8
CPR_WAIT_S = 2.0
"""How long after a resize the erase waits for the cursor-position report it asked for; then it erases
without it (a terminal that stopped answering), and rows in the terminal's history may show twice."""
UNWRAPPED_COLUMNS = 1 << 20
"""A width no row reaches: how a terminal that cuts lines (xterm) keeps each row on a resize."""


class AgentLink(Protocol):
    """The runtime's end of the UI <-> agent pipe, in the UI process."""

    def fileno(self) -> int:
        """Readable when messages are waiting; may change after ``receive``."""
        ...

    def send(self, message: UiToAgent) -> None:
        """Send one message; never raises."""
        ...

    def receive(self) -> list[AgentToUi]:
        """Drain waiting messages without blocking; never raises (a dead agent is reported and restarted)."""
        ...


class UiOptions(msgspec.Struct):
    """What the UI knows before the agent says AgentReady."""

    no_color: bool
    approval: ApprovalMode
    model: str
    cwd: str
    home: str | None = msgspec.field(default_factory=lambda: os.environ.get("HOME"))
    """The home directory, to shorten the cwd to ``~/...`` ($HOME: the UI reads no files)."""
    theme: Theme = msgspec.field(default_factory=Theme)
    notify: bool = True
    """The bell (and OSC 9/777) when a confirmation waits or a long turn ends (--no-notify: off)."""
    first_prompt: str | None = None
    """Sent as if typed and entered once the agent is first ready (``dashfloat PROMPT``)."""
    idle_tick_s: float = IDLE_TICK_S
    """How long an idle tick waits without a change (tests set it long, to show that changes wake it)."""
    env: Mapping[str, str] = msgspec.field(default_factory=lambda: dict(os.environ))
    """Which notification escapes the terminal understands is read from here, and whether to mark frames
    (``DASHFLOAT_FRAME_MARKS``, for benchmarks: ui/_frames.py)."""


class TuiShell:
    """Owns the Application, the tick and the reader; every decision is made by the pure core."""

    def __init__(
        self,
        link: AgentLink,
        options: UiOptions,
        *,
        input: Input | None = None,
        output: Output | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        install_screen_diff()  # the new rows of a frame written as runs, not cell by cell (ADR 0040)
        self.link = link
        self.options = options
        self._turn_started: float | None = None
        self.search: ReverseSearch | None = None
        """The Ctrl-R search while it takes keys (ui/_keys.py)."""
        self._first_prompt = options.first_prompt
        self.clock = clock
        self.state: UiState = initial(clock(), model=options.model, cwd=options.cwd, approval=options.approval)
        self.pending: tuple[Entry, ...] = ()
        """Entries taken from the outbox, drawn live until they are printed into the scrollback."""
        self._wake = asyncio.Event()
        self._dirty_flag = True
        self._status_key: tuple[str, ...] = ()
        self._status_rows: list[Row] = []
        self._live_cache: tuple[UiState, tuple[Entry, ...], int, list[Row]] | None = None
        self._fd: int | None = None
        self._fd_identity: tuple[int, int, int] | None = None
        """The watched fd, and the device and inode of the pipe it was when it was registered."""
        self.history = HistoryCursor()
        """Up and Down through earlier prompts."""
        self.paths = PathCompletion()
        self.completer = merge_completers(
            [commands.SlashCompleter(lambda: self.state.prompt_files), MentionCompleter(self.paths)]
        )
        self.buffer = Buffer(multiline=True, completer=self.completer, complete_while_typing=True, name="input")
        self.buffer.on_text_changed += self.on_text_changed
        self.buffer.on_text_changed += self._ask_paths
        self.buffer.on_cursor_position_changed += self._ask_paths
        self.app: Application[int] = Application(
            layout=self._layout(),
            key_bindings=merge_key_bindings([load_basic_bindings(), bindings(self)]),
            style=options.theme.style(options.no_color),
            full_screen=False,
            input=input,
            output=output,
            color_depth=ColorDepth.DEPTH_1_BIT if options.no_color else None,
            mouse_support=False,
            erase_when_done=True,
        )
        self.app.ttimeoutlen = ESC_TIMEOUT_S
        self.app.timeoutlen = KEY_SEQUENCE_TIMEOUT_S
        self._reflows = terminal_reflows(options.env)
        self._settle_s = resize_settle_s(options.env)
        self._wraps_erased = terminal_wraps_erased_cells(options.env)
        self._kept_widths: dict[int, int] = {}
        """Per row of the live region: the widest drawing since the renderer last erased from the region's top,
        which the terminal still holds as cells (what tmux re-wraps on a resize)."""
        self._resized_at = 0.0
        self._probe_sent: float | None = None
        self._probe_row: int | None = None
        self._size_seen: Size | None = None
        self._settle_until = 0.0
        # prompt_toolkit's own resize erase counts the rows it drew, not the rows the terminal re-wrapped
        # them into (ADR 0033); a key or the tick may also draw before SIGWINCH is handled. Every redraw
        # goes through _redraw, which holds it while a resize settles (ADR 0035).
        ptk.replace_resize_handler(self.app, self.on_resize)
        self._draw = ptk.own_redraw(self.app)
        ptk.replace_redraw(self.app, self._redraw)
        self._frame_size: Size | None = None
        self._terminal_size = self.app.output.get_size
        ptk.replace_output_size(self.app.output, self._output_size)
        self.app.before_render += lambda _: self._before_render()
        self._report_cursor_row = self.app.renderer.report_absolute_cursor_row
        ptk.replace_cursor_row_report(self.app.renderer, self._on_cursor_row)
        self._drawn: tuple[Screen, list[Row]] | None = None
        """The renderer's screen after the last frame, and the live rows that frame drew at its top."""
        self.app.after_render += lambda _: self._note_drawn()
        self.app.after_render += lambda _: self._after_render()
        self._shown_chars: int | None = 0 if frame_marks_on(options.env) else None
        """Answer text received so far, when frames are marked (None: not marked)."""
        if self._shown_chars is not None:
            self.app.after_render += lambda _: self._mark_frame()

    @property
    def _dirty(self) -> bool:
        """Something visible changed: the next tick draws. Setting it wakes an idle tick at once."""
        return self._dirty_flag

    @_dirty.setter
    def _dirty(self, value: bool) -> None:
        self._dirty_flag = value
        if value:
            self._wake.set()

    # ------------------------------------------------------------ running

    async def run_async(self) -> int:
        """Run until the user quits; the exit code."""
        loop = asyncio.get_running_loop()
        try:
            return await self.app.run_async(pre_run=self._start)
        finally:
            if self._fd is not None:
                loop.remove_reader(self._fd)
                self._fd = self._fd_identity = None
            self._print_remaining()

    def _print_remaining(self) -> None:
        """At exit the live region is erased; what it still held goes to the scrollback like the rest."""
        self.state, entries = take_outbox(close_open(self.state))
        batch, self.pending = self.pending + entries, ()
        if batch:
            width = self.app.output.get_size().columns
            rows = [scrub(row) for entry in batch for row in render_entry(entry, width)]
            self.app.print_text([*to_formatted(rows), ("", "\n")])

    def _start(self) -> None:
        self._watch(self.link.fileno())
        self.app.create_background_task(self._tick_loop())

    def _watch(self, fd: int) -> None:
        # Checked after every receive, even under the same number: a restarted agent's new pipe often reuses the
        # closed one's fd number, which epoll has silently dropped. A new pipe is a new inode; the same pipe keeps
        # its registration (registering anew on each of a paced stream's reads cost ~5 % of the UI's CPU).
        status = os.fstat(fd)
        identity = (fd, status.st_dev, status.st_ino)
        if identity == self._fd_identity:
            return
        loop = asyncio.get_running_loop()
        if self._fd is not None:
            loop.remove_reader(self._fd)
        self._fd, self._fd_identity = fd, identity
        loop.add_reader(fd, self._on_readable)

    def _on_readable(self) -> None:
        """The pipe reader: update state, mark dirty; the tick draws."""
        messages = self.link.receive()
        for message in messages:
            if self._shown_chars is not None and isinstance(message, TokenReceived):
                self._shown_chars += len(message.text)
            self.apply(message)
            self._notify(message)
            if isinstance(message, PathsFound) and self.paths.answer(message):
                self.show_paths()
        if self._first_prompt is not None and self.state.ready:
            # `dashfloat PROMPT`: entered as if typed, so a /command or an @mention in it works as typed ones do
            self.set_text(self._first_prompt)
            self._first_prompt = None
            self.submit()
        if self.state.input_restore is not None:
            # a rewind gave the prompt back: into the input, to edit and resend
            self.set_text(self.state.input_restore)
            self.state = replace(self.state, input_restore=None)
        if messages:
            self._watch(self.link.fileno())
        if any(isinstance(message, TurnEnded) for message in messages):
            self.tick()  # the end of an answer is drawn at once, not up to a tick later (issue 19)

    async def _tick_loop(self) -> None:
        loop = asyncio.get_running_loop()
        due = loop.time()
        while True:
            if self._quiet():
                # Nothing moves: wait for a change (a message, a key, a resize mark the UI dirty) or IDLE_TICK_S.
                # No await separates the last tick from this clear, so no change can slip in between.
                self._wake.clear()
                # asyncio.timeout, not wait_for: on 3.11 wait_for can turn the app's cancellation at exit into a
                # TimeoutError, which would be swallowed here and keep the loop (and the exit) waiting.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.options.idle_tick_s):
                        await self._wake.wait()
                due = loop.time()
            else:
                # A fixed rate: the tick draws, and sleeping a whole tick after that would stretch it by the
                # frame's time. A late tick is not made up with a burst.
                due = max(due + TICK_S, loop.time())
                await asyncio.sleep(due - loop.time())
            self.tick()

    def _quiet(self) -> bool:
        """Whether no frame is due until something changes: nothing animates, waits for time, or is left to draw."""
        state = self.state
        return not (
            self._dirty
            or state.busy
            or state.live_output is not None
            or state.last_ctrl_c is not None
            or state.hint is not None
            or state.outbox
            or self.pending
            or self.search is not None
            or self._probe_sent is not None
            or time.monotonic() < self._settle_until
        )

    def tick(self) -> None:
        """One frame: advance time, commit finished entries, redraw if anything visible changed."""
        size = self.app.output.get_size()
        if self._settling() and (drawn_at := ptk.frame_size(self.app.renderer)) is not None:
            size = drawn_at  # the region is still to be erased as it was drawn: keep its size
        self.on_text_changed()
        before = self.state
        self.state = reduce(before, Tick(self.clock(), size.columns, size.rows))
        if self.search is not None and self.state.hint is None:
            # The turn's end cleared the hint line; a search still taking keys must keep saying so.
            self.state = reduce(self.state, Hint(self.search.prompt(self.state.history)))
        # Only time moved unless the tick committed rows or the screen changed size.
        if (self.state.open_skip, self.state.hint, self.state.width, self.state.height, self.state.confirm_armed) != (
            before.open_skip,
            before.hint,
            before.width,
            before.height,
            before.confirm_armed,
        ):
            self._dirty = True
        self.state, entries = take_outbox(self.state)
        if entries:
            self.pending += entries
            self._dirty = True
        self._print_pending()
        status = self._status_text()
        if self._dirty or status != self._status_key:
            self._status_key = status
            self._dirty = False
            # Drawn now, not scheduled: a message read in between would draw rows past the ones this tick kept,
            # and the next tick's committed rows would no longer be the frame's top rows (_scroll_drawn).
            self._redraw()

    def on_text_changed(self, _: Buffer | None = None) -> None:
        """Tell the core whether the input is empty, when that changed."""
        # Also called by the tick and before a decision key: Buffer.reset() does not fire on_text_changed.
        if (self.buffer.text == "") != self.state.input_empty:
            self.apply(InputChanged(empty=self.buffer.text == ""))

    def _ask_paths(self, _: Buffer | None = None) -> None:
        """@ completion: ask the executor (through the agent) for the mention at the cursor; never waits."""
        request = self.paths.ask(partial_in(self.buffer.document))
        if request is not None:
            self.link.send(request)

    def show_paths(self) -> None:
        """The newest answer arrived: open (or refresh) the menu with it, unless the user is choosing in it."""
        state = self.buffer.complete_state
        if state is not None and state.complete_index is not None:
            return
        self.buffer.start_completion(select_first=False)

    def _notify(self, message: object) -> None:
        """The bell (and OSC 9/777) when a confirmation waits, or a long turn is over."""
        text = None
        if isinstance(message, ConfirmRequested):
            text = f"DashFloat: {call_name(message.subject)} waits for your key"
        elif isinstance(message, TurnEnded) and self._turn_started is not None:
            if self.clock() - self._turn_started >= NOTIFY_LONG_TURN_S:
                text = f"DashFloat: turn {message.outcome}"
            self._turn_started = None
        if text is not None and self.options.notify and self.app.is_running:
            self.app.output.write_raw(notification(text, self.options.env))
            self.app.output.flush()

    def apply(self, event: Event) -> None:
        """Feed ``event`` to the pure core."""
        self.state = reduce(self.state, event)
        self._dirty = True

    def _print_pending(self) -> None:
        """Print finished entries above the live region, once; they then belong to the scrollback.

        Not ``run_in_terminal``: that switches the tty to cooked mode while printing, so keys typed
        meanwhile would be echoed and Enter would arrive as a newline. Erase, print, redraw is all
        it needs, and it stays in raw mode.
        """
        if not self.pending or not self.app.is_running or self._settling():
            return
        self._erase_if_resized()
        batch, self.pending = self.pending, ()
        width = self.app.output.get_size().columns
        rows = [scrub(row) for entry in batch for row in render_entry(entry, width)]
        if self._scroll_drawn(rows, width):
            self._dirty = True
            return
        renderer, output = self.app.renderer, self.app.output
        # Back to the top of the live region, then overwrite it (each row cleared whole first) and erase
        # only what is left below. renderer.erase() would erase downwards from the region's top, and when that
        # is the screen's top row tmux (scroll-on-clear) copies the stale frame into its history.
        cursor = ptk.frame_cursor(renderer)
        output.cursor_backward(cursor.x)
        output.cursor_up(cursor.y)
        output.reset_attributes()
        text: StyleAndTextTuples = []
        for row in rows:
            # The whole line first: tmux re-wraps a row by every cell written on it since (ADR 0035).
            text.extend([("[ZeroWidthEscape]", "\x1b[2K"), *row, ("", "\n")])
        self.app.print_text(text)
        output.erase_down()
        output.enable_autowrap()
        output.flush()
        renderer.reset()
        renderer.request_absolute_cursor_position()
        self._dirty = True

    def _note_drawn(self) -> None:
        screen = self.app.renderer.last_rendered_screen
        self._drawn = (screen, self._live_rows()) if screen else None

    def _scroll_drawn(self, rows: list[Row], width: int) -> bool:
        """When the rows to print are exactly the top rows the last frame drew, leave them where they are: the
        region's top moves below them and the renderer diffs the next frame against what stays on screen.

        A stream that overflows the screen commits rows every tick; printing them again and redrawing the whole
        region from an erased screen was the largest cost of a frame (issue 19, ADR 0036). Any doubt (another
        frame drew since, a row that wraps, the live rows not at the region's top) prints them as before.
        """
        renderer, drawn, count = self.app.renderer, self._drawn, len(rows)
        screen, info = renderer.last_rendered_screen, self._live_window.render_info
        if drawn is None or screen is None or drawn[0] is not screen or drawn[1][:count] != rows or info is None:
            return False
        cursor = ptk.frame_cursor(renderer)
        if ptk.window_top(info) or info.vertical_scroll or info.window_height < count or cursor.y < count:
            return False
        if any(row_width(row) > width for row in rows):
            return False
        ptk.move_region_top_down(renderer, count)
        self._kept_widths = {y - count: width for y, width in self._kept_widths.items() if y >= count}
        self._drawn = None
        return True

    def _mark_frame(self) -> None:
        """After a frame: how much answer text it shows (the renderer has flushed the frame itself)."""
        assert self._shown_chars is not None
        self.app.output.write_raw(frame_mark(self._shown_chars))
        self.app.output.flush()

    # ------------------------------------------------------------ resizing

    def on_resize(self) -> None:
        """SIGWINCH: erase the live region from where the terminal's re-wrap left its top, draw it anew."""
        self._erase_if_resized()
        self._redraw()
        self._wake.set()  # an idle tick looks at the new size now

    def _redraw(self, render_as_done: bool = False) -> None:
        """Every frame: none while a resize settles (the tick draws once it has: ``_dirty``).

        The frame is drawn at the size just checked, even if the window changes while it is drawn: a size read
        anew by the renderer would draw the new size over a region not yet erased for it (seen under load).
        """
        if not render_as_done and self._settling():
            self._dirty = True
            return
        self._frame_size = self._size_seen
        try:
            self._draw(render_as_done)
        finally:
            self._frame_size = None

    def _output_size(self) -> Size:
        """The terminal's size; during a frame, the size that frame was checked at."""
        return self._frame_size or self._terminal_size()

    def _settling(self) -> bool:
        """Whether the live region must not be drawn yet: a resize is still to be erased, or settles.

        Inside tmux a resize reaches the program up to 250 ms after tmux re-wrapped its screen, so a frame
        drawn soon after one resize may meet the re-wrap of the next one, unannounced (ADR 0035).
        """
        return self._erase_if_resized() or time.monotonic() < self._settle_until

    def _before_render(self) -> None:
        self._erase_if_resized()
        if self.app.renderer.last_rendered_screen is None:
            # A reset renderer draws after erasing from the region's top (ED from the first column): the
            # terminal forgets every cell below, so the rows hold only what is drawn from now on.
            self._kept_widths.clear()

    def _after_render(self) -> None:
        """Note how wide each row was drawn (tmux re-wraps by the widest drawing, not by the last frame)."""
        screen = self.app.renderer.last_rendered_screen
        if not self._wraps_erased or screen is None:
            return
        has_style = ptk.styles_drawn(self.app.renderer)
        kept = self._kept_widths
        for y in range(screen.height):
            width = drawn_width(screen, y, has_style)
            if width > kept.get(y, 0):
                kept[y] = width

    def _on_cursor_row(self, row: int) -> None:
        """A cursor-position report: the answer to the probe sent after a resize, else the renderer's."""
        if self._probe_sent is not None and self._probe_row is None:
            self._probe_row = row
            self._erase_if_resized()
            self._dirty = True
            return
        self._report_cursor_row(row)

    def _erase_if_resized(self) -> bool:
        """Erase the live region if the window changed size since it was drawn; whether that still waits.

        First the cursor's row is asked for (CPR, where the terminal answers them): rows of the region that
        went into the terminal's history are then known, and are not drawn again (ADR 0035).
        """
        size = self.app.output.get_size()
        now = time.monotonic()
        if size != self._size_seen:
            if self._size_seen is not None:
                self._resized_at = now
                if self._settle_s:
                    self._settle_until = now + self._settle_s
            self._size_seen = size
        renderer = self.app.renderer
        last = ptk.frame_size(renderer)
        if last is None or last == size:
            return False
        if renderer.cpr_support == CPR_Support.SUPPORTED and now - self._resized_at < CPR_WAIT_S:
            if self._probe_sent is None:
                if renderer.waiting_for_cpr:
                    return True  # the renderer's own request is answered first: ask after it
                self._probe_sent, self._probe_row = now, None
                self.app.output.ask_for_cpr()
                return True
            if self._probe_row is None:
                return True
        self._erase(size, self._probe_row)
        self._probe_sent = self._probe_row = None
        return False

    def _erase(self, size: Size, cursor_row: int | None) -> None:
        renderer = self.app.renderer
        screen, cursor, output = renderer.last_rendered_screen, ptk.frame_cursor(renderer), self.app.output
        up, lines = cursor.y, []
        if screen is not None:
            has_style = ptk.styles_drawn(renderer)
            if self._wraps_erased:
                lines = [
                    overlaid_cells([1] * self._kept_widths.get(y, 0), drawn_cells(screen, y, has_style))
                    for y in range(cursor.y + 1)
                ]
            else:
                lines = [drawn_cells(screen, y, has_style) for y in range(cursor.y + 1)]
        columns = size.columns if self._reflows else UNWRAPPED_COLUMNS
        if self._reflows and lines:
            up = rows_above_cursor(lines, cursor.y, cursor.x, columns)
        if cursor_row is not None:
            stranded = stranded_rows(up, cursor_row)
            if stranded:
                self._strand(lines[: cursor.y], stranded, columns)
                up -= stranded
        output.write_raw("\r")
        output.cursor_up(up)
        output.write_raw(ERASE_BELOW)
        output.reset_attributes()
        output.enable_autowrap()
        output.flush()
        renderer.reset(leave_alternate_screen=False)
        renderer.request_absolute_cursor_position()
        self._dirty = True

    def _strand(self, lines: list[list[int]], stranded: int, columns: int) -> None:
        """The region's top ``stranded`` rows are in the terminal's history, so they are the scrollback's now:
        entries waiting to be printed there (``strand_pending``) and the open block's rows (``strand_open``).
        Other live rows there (a tool row, a preview: rare) are drawn again."""
        cache = self._live_cache
        state = self.state
        if cache is None or cache[2] != state.width:
            return
        rows, width = cache[3], cache[2]
        whole_lines, cells = stranded_lines(lines, stranded, columns)
        done = y = 0  # live rows wholly in the history; a row wider than the screen took more lines
        while done < len(rows) and y + (span := max(1, -(-row_width(rows[done]) // max(1, width)))) <= whole_lines:
            y += span
            done += 1
        partial = cells if done < len(rows) and y == whole_lines else 0
        drawn_pending = cache[1]
        if drawn_pending and self.pending[: len(drawn_pending)] == drawn_pending:
            self.pending = strand_pending(drawn_pending, done, width) + self.pending[len(drawn_pending) :]
        drawn_state = cache[0]
        if not drawn_state.open_prose.strip():
            return
        prose = render_markdown(drawn_state.open_prose.rstrip(), width)[drawn_state.open_skip :]
        starts = range(len(rows) - len(prose), -1, -1)
        start = next((i for i in starts if tuple(rows[i : i + len(prose)]) == prose), None)
        if start is None or not prose or done < start:
            return  # not all of the block was drawn (taller than its budget), or none of it is in the history
        whole = min(done - start, len(prose))
        cells = partial if whole < len(prose) else 0
        # Text may have arrived since that frame: only what it drew is in the history.
        if state.open_skip != drawn_state.open_skip or not state.open_prose.startswith(drawn_state.open_prose.rstrip()):
            return
        now = render_markdown(state.open_prose.rstrip(), width)[state.open_skip :]
        same = 0
        while same < min(len(now), len(prose)) and now[same] == prose[same]:
            same += 1
        if whole > same:  # the first row that changed since (the last one grew): its drawn part only
            drawn, grown = _text_of(prose[same]), _text_of(now[same]) if same < len(now) else ""
            whole, cells = same, len(drawn) if grown.startswith(drawn) else 0
        elif cells and (whole >= len(now) or _text_of(now[whole])[:cells] != _text_of(prose[whole])[:cells]):
            cells = 0
        self.state = strand_open(state, whole, cells)
        self._dirty = True

    # ------------------------------------------------------------ drawing

    def _status_text(self) -> tuple[str, ...]:
        width = self.app.output.get_size().columns
        row = render_status(self.state, self.clock(), width, self.options.home)
        return tuple(t for _, t in row)

    def _live_rows(self) -> list[Row]:
        width = self.app.output.get_size().columns
        # States are immutable, so identity is enough: a keystroke redraw reuses the last rows.
        cache = self._live_cache
        if cache is not None and cache[0] is self.state and cache[1] is self.pending and cache[2] == width:
            return cache[3]
        rows = render_live(self.state, self.pending + self.state.outbox, width)
        self._live_cache = (self.state, self.pending, width, rows)
        return rows

    def _status(self) -> list[Row]:
        """The status bar's row; the same list while it reads the same (its control keeps its cells: ADR 0044)."""
        width = self.app.output.get_size().columns
        row = render_status(self.state, self.clock(), width, self.options.home)
        if self._status_rows and self._status_rows[0] == row:
            return self._status_rows
        self._status_rows = [row]
        return self._status_rows

    def _layout(self) -> Layout:
        self._live_window = RowsWindow(RowsControl(self._live_rows), wrap_lines=True, dont_extend_height=True)
        live = ConditionalContainer(self._live_window, filter=Condition(lambda: bool(self._live_rows())))
        hint = ConditionalContainer(
            Window(FormattedTextControl(lambda: [("class:hint", self.state.hint or "")]), height=1),
            filter=Condition(lambda: self.state.hint is not None),
        )

        def prefix(line: int, wrap_count: int) -> StyleAndTextTuples:
            return [("class:prompt", PROMPT_MARK)] if line == 0 and wrap_count == 0 else [("", "  ")]

        prompt = InputWindow(
            # A pasted tab shows as the spaces it stands for (the transcript's echo expands it too), not as ^I.
            KeptBufferControl(self.buffer, [TabsProcessor(tabstop=TAB_WIDTH, char1=" ", char2=" ")]),
            get_line_prefix=prefix,
            wrap_lines=True,
            height=Dimension(min=1, max=INPUT_MAX_ROWS),
            dont_extend_height=True,
        )
        status = RowsWindow(RowsControl(self._status), height=1, style="class:status")  # copied a row at a time
        menu = CompletionsMenu(max_height=COMPLETION_MENU_ROWS)
        return Layout(HSplit([live, hint, prompt, menu, status]), focused_element=prompt)

    def show(self, state: UiState) -> None:
        """Take ``state`` (made by the pure core from this one) and draw it."""
        self.state = state
        self._dirty = True

    def set_text(self, text: str) -> None:
        """Replace the input's text, the cursor at its end."""
        self.buffer.text = text
        self.buffer.cursor_position = len(text)

    # ------------------------------------------------------------ actions

    def decide(self, value: Decision) -> None:
        """Answer the pending confirmation with one keypress."""
        self.state, reply = decide(self.state, value)
        self._dirty = True
        if reply is not None:
            self.link.send(reply)

    def submit(self) -> None:
        """Enter: a prompt goes to the agent, a slash command is run, the input is cleared."""
        text = self.buffer.text
        if not text.strip():
            return
        parsed = commands.parse(text, self.state.prompt_files)
        match parsed:
            case commands.Prompt():
                if self.state.busy:
                    self.apply(Hint("busy — Esc cancels; your text is kept"))
                    return
                self.apply(Submitted(parsed.text))
                self._turn_started = self.clock()
                self.link.send(SubmitPrompt(text=parsed.text))
            case commands.Send():
                self.apply(Submitted(text))
                message = parsed.message
                if isinstance(message, RewindTo):
                    # the number is one of the list shown last: the agent refuses it for another session
                    message = RewindTo(prompt=message.prompt, session_id=self.state.prompts_session or "")
                self.link.send(message)
            case commands.ShowHelp():
                self.apply(Submitted(text))
                self.apply(LocalNotice(commands.help_text(self.state.prompt_files)))
            case commands.ShowDiff():
                self.apply(Submitted(text))
                self.apply(ShowChanges())
            case commands.Exit():
                self.app.exit(result=0)
                return
            case commands.Invalid():
                self.apply(LocalNotice(parsed.error, "error"))
                return
        self.buffer.reset()
        self.history.reset()
        self._ask_paths()  # reset() fires no change event: the mention that was being typed is over


def scrub(row: Row) -> Row:
    """The last guard before the scrollback: no fragment may carry a line break or a control character.

    The live region shows control characters in caret form, but printed text goes to the terminal as is.
    """
    if "".join([text for _, text in row]).isprintable():
        return row  # what sanitize leaves as it is (no line break either): a streamed paragraph's rows, every tick
    return tuple((style, sanitize(text.replace("\n", " "))) for style, text in row)


def _text_of(row: Row) -> str:
    return "".join(text for _, text in row)


def strand_pending(pending: tuple[Entry, ...], rows: int, width: int) -> tuple[Entry, ...]:
    """Entries waiting to be printed, less their top ``rows`` rows (drawn at ``width``) that a resize pushed
    into the terminal's history: a whole entry there is printed already, of one cut across only the rest is."""
    left: list[Entry] = []
    for entry in pending:
        drawn = render_entry(entry, width)
        if rows >= len(drawn):
            rows -= len(drawn)
        elif rows > 0:
            left.append(ProseRows(tuple(drawn[rows:])))
            rows = 0
        else:
            left.append(entry)
    return tuple(left)


def drawn_width(screen: Screen, y: int, has_style: Mapping[str, bool] | None) -> int:
    """The columns prompt_toolkit wrote on row ``y`` (``drawn_cells``' total), found from the row's end: per frame."""
    row = screen.data_buffer[y]
    if not row:
        return 0
    x = max(row)
    while x >= 0:
        ch = row.get(x)
        if ch is not None and (ch.char != " " or (has_style is not None and has_style[ch.style])):
            return x + max(1, ch.width)
        x -= 1
    return 0


def drawn_cells(screen: Screen, y: int, has_style: Mapping[str, bool] | None) -> list[int]:
    """The widths of the cells prompt_toolkit wrote on row ``y`` (it skips trailing unstyled blanks)."""
    row = screen.data_buffer[y]
    written = [x for x, ch in row.items() if ch.char != " " or (has_style is not None and has_style[ch.style])]
    end = max(written, default=-1)
    cells: list[int] = []
    x = 0
    while x <= end:
        width = max(1, row[x].width)
        cells.append(width)
        x += width
    return cells


def run_tui(link: AgentLink, options: UiOptions) -> int:
    """Run the terminal UI on the process's terminal until the user quits; the exit code."""
    return asyncio.run(TuiShell(link, options).run_async())
