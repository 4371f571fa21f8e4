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
from prompt_toolkit.output import ColorDepth, Output

from dashfloat.catalogue import call_name
from dashfloat.protocol import (
    AgentToUi,
    ApprovalMode,
    ConfirmRequested,
    Decision,
    PathsFound,
    RewindTo,
    SetApproval,
    ShowLastResult,
    SubmitPrompt,
    TokenReceived,
    TurnEnded,
    UiToAgent,
)
from dashfloat.textsafe import TAB_WIDTH
from dashfloat.ui import _commands as commands
from dashfloat.ui import _ptk_private as ptk
from dashfloat.ui import _queue as queue
from dashfloat.ui._confirm import decide
from dashfloat.ui._frames import frame_mark, frame_marks_on
from dashfloat.ui._history import HistoryCursor, ReverseSearch
from dashfloat.ui._input_window import InputWindow
from dashfloat.ui._jobs_view import listing as jobs_listing
from dashfloat.ui._kept_content import KeptBufferControl
from dashfloat.ui._keys import bindings
from dashfloat.ui._mentions import MentionCompleter, PathCompletion, partial_in
from dashfloat.ui._modes import ACT_ON_PLAN, next_mode
from dashfloat.ui._notify import NOTIFY_LONG_TURN_S, notification
from dashfloat.ui._resize import ResizeGuard
from dashfloat.ui._rows_control import RowsControl, RowsWindow
from dashfloat.ui._screen_diff import install as install_screen_diff
from dashfloat.ui._scrollback import LiveDrawn, Scrollback
from dashfloat.ui._text import Row, clip, sanitize
from dashfloat.ui._theme import Theme
from dashfloat.ui.render import PROMPT_MARK, render_live, render_status
from dashfloat.ui.state import (
    Event,
    Hint,
    InputChanged,
    LocalNotice,
    ModeRequested,
    Notice,
    Refused,
    ShowChanges,
    ShowLast,
    Submitted,
    Tick,
    UiState,
    close_open,
    initial,
    reduce,
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
RESUME_WORDS = "resume this session: dashfloat --resume"
"""Said at exit, before the session's id (issue 37: /exit printed no way back)."""
INPUT_MAX_ROWS = 12
COMPLETION_MENU_ROWS = 8


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
    modes_all: bool = False
    """Shift-Tab's cycle reaches ``all`` too (``[settings] shift_tab_all``: ui/_modes.py)."""
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
        ptk.alt_enter_as_ctrl_j()  # Esc then a quick Enter is no line break (issue 37)
        self.link = link
        self.options = options
        self._turn_started: float | None = None
        self.search: ReverseSearch | None = None
        """The Ctrl-R search while it takes keys (ui/_keys.py)."""
        self._first_prompt = options.first_prompt
        self.clock = clock
        self.state: UiState = initial(clock(), model=options.model, cwd=options.cwd, approval=options.approval)
        self._wake = asyncio.Event()
        self._dirty_flag = True
        self._status_key: tuple[str, ...] = ()
        self._status_rows: list[Row] = []
        self._live_cache: LiveDrawn | None = None
        self._fd: int | None = None
        self._fd_identity: tuple[int, int, int] | None = None
        """The watched fd, and the device and inode of the pipe it was when it was registered."""
        self.history = HistoryCursor()
        """Up and Down through earlier prompts."""
        self.paths = PathCompletion()
        self.completer = merge_completers(
            [
                commands.SlashCompleter(lambda: self.state.prompt_files, lambda: self.state.models),
                MentionCompleter(self.paths),
            ]
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
        # Resizes (ui/_resize.py): SIGWINCH, every frame, every size the renderer reads and every cursor-position
        # report go through the guard, which erases what the terminal re-wrapped and holds frames while a resize
        # settles (ADR 0033, 0035). Its arguments are the application's own, taken before they are replaced.
        self.resize = ResizeGuard(
            self.app,
            options.env,
            draw=ptk.own_redraw(self.app),
            terminal_size=self.app.output.get_size,
            report_cursor_row=self.app.renderer.report_absolute_cursor_row,
            changed=self._changed,
            strand=self._strand,
        )
        ptk.replace_resize_handler(self.app, self.on_resize)
        ptk.replace_redraw(self.app, self.resize.draw)
        ptk.replace_output_size(self.app.output, self.resize.output_size)
        ptk.replace_cursor_row_report(self.app.renderer, self.resize.on_cursor_row)
        self.app.before_render += lambda _: self.resize.before_render()
        # Finished entries (ui/_scrollback.py): drawn live, then printed above the live region once.
        self.scrollback = Scrollback(self.app, self.resize, self._live_window, self._live_rows)
        self.app.after_render += lambda _: self.scrollback.note_drawn()
        self.app.after_render += lambda _: self.resize.after_render()
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

    def _changed(self) -> None:
        self._dirty = True

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
        """At exit the live region is erased; what it still held goes to the scrollback like the rest, then how to
        come back to this session."""
        self.state, entries = take_outbox(close_open(self.state))
        if self.state.session_id:
            entries = (*entries, Notice(f"{RESUME_WORDS} {self.state.session_id}"))
        self.scrollback.print_remaining(entries)

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

    def move_queue(self) -> None:
        """Once the agent is idle: the next queued prompt goes, or (the user stopped the turn) the queue comes back to
        the input (ui/_queue.py)."""
        state, text = queue.next_prompt(self.state)
        if text is not None:
            self.show(state)
            parsed = commands.parse(text, self.state.prompt_files)  # queued as typed: /init, /NAME args
            self._send_prompt(parsed if isinstance(parsed, commands.Prompt) else commands.Prompt(text))
            return
        state, back = queue.given_back(self.state, self.buffer.text)
        if back is not None:
            self.show(state)
            self.set_text(back)

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
        self.move_queue()
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
            or self.scrollback.pending
            or self.search is not None
            or self.resize.waiting()
        )

    def tick(self) -> None:
        """One frame: advance time, commit finished entries, redraw if anything visible changed."""
        size = self.resize.tick_size()
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
            self.scrollback.pending += entries
            self._dirty = True
        if self.scrollback.print_pending():
            self._dirty = True
        status = self._status_text()
        if self._dirty or status != self._status_key:
            self._status_key = status
            self._dirty = False
            # Drawn now, not scheduled: a message read in between would draw rows past the ones this tick kept,
            # and the next tick's committed rows would no longer be the frame's top rows (_scroll_drawn).
            self.resize.draw()

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

    def _mark_frame(self) -> None:
        """After a frame: how much answer text it shows (the renderer has flushed the frame itself)."""
        assert self._shown_chars is not None
        self.app.output.write_raw(frame_mark(self._shown_chars))
        self.app.output.flush()

    # ------------------------------------------------------------ resizes

    def on_resize(self) -> None:
        """SIGWINCH: erase the live region from where the terminal's re-wrap left its top, draw it anew."""
        self.resize.erase_if_resized()
        self.resize.draw()
        self._wake.set()  # an idle tick looks at the new size now

    def _strand(self, lines: list[list[int]], stranded: int, columns: int) -> None:
        """The resize pushed the live region's top rows into the terminal's history: they are the scrollback's."""
        state = self.scrollback.strand(self._live_cache, self.state, lines, stranded, columns)
        if state is not self.state:
            self.show(state)

    # ------------------------------------------------------------ drawing

    def _status_text(self) -> tuple[str, ...]:
        width = self.app.output.get_size().columns
        row = render_status(self.state, self.clock(), width, self.options.home)
        return tuple(t for _, t in row)

    def _live_rows(self) -> list[Row]:
        width = self.app.output.get_size().columns
        # States are immutable, so identity is enough: a keystroke redraw reuses the last rows.
        cache = self._live_cache
        pending = self.scrollback.pending
        if cache is not None and cache[0] is self.state and cache[1] is pending and cache[2] == width:
            return cache[3]
        rows = render_live(self.state, pending + self.state.outbox, width)
        self._live_cache = (self.state, pending, width, rows)
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
        queued = ConditionalContainer(
            Window(FormattedTextControl(self._queue_text), dont_extend_height=True, wrap_lines=False),
            filter=Condition(lambda: bool(self.state.queued)),
        )
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
        return Layout(HSplit([live, hint, prompt, queued, menu, status]), focused_element=prompt)

    def _queue_text(self) -> StyleAndTextTuples:
        width = self.app.output.get_size().columns
        lines = queue.queue_lines(self.state, width)
        out: StyleAndTextTuples = []
        for n, line in enumerate(lines):
            style = "class:hint" if n == len(lines) - 1 else "class:queued"
            out += [("", "\n")] * (n > 0) + [(style, clip(sanitize(line), max(1, width)))]
        return out

    def show(self, state: UiState) -> None:
        """Take ``state`` (made by the pure core from this one) and draw it."""
        self.state = state
        self._dirty = True

    def set_text(self, text: str) -> None:
        """Replace the input's text, the cursor at its end."""
        self.buffer.text = text
        self.buffer.cursor_position = len(text)

    # ------------------------------------------------------------ actions

    def _send_prompt(self, prompt: commands.Prompt) -> None:
        """A prompt goes to the agent; the transcript and the history show it as typed (``/init``)."""
        self.apply(Submitted(prompt.shown or prompt.text))
        self._turn_started = self.clock()
        self.link.send(SubmitPrompt(text=prompt.text))

    def show_last(self) -> None:
        """Ctrl-O or /last: the newest change's whole diff (the UI has it), else the newest result from the agent."""
        if self.state.last_change is not None:
            self.apply(ShowLast())
        else:
            self.link.send(ShowLastResult())

    def cycle_mode(self) -> None:
        """Shift-Tab: the next approval mode; leaving plan mode after a plan offers acting on it as the next prompt."""
        current = self.state.approval
        offer = current == "plan" and self.state.planned and self.buffer.text == ""
        mode = next_mode(current, self.options.modes_all)
        self.apply(ModeRequested(mode))
        self.link.send(SetApproval(mode=mode))
        if offer:
            self.set_text(ACT_ON_PLAN)

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
                if self.state.busy or self.state.queued:  # after what waits: the queue keeps its order
                    queued = queue.enqueue(self.state, text)
                    if queued is None:
                        self.apply(Hint(queue.QUEUE_FULL_HINT))
                        return
                    self.show(queued)
                    self.move_queue()
                else:
                    self._send_prompt(parsed)
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
                # Said and cleared, kept for Up (issue 37): left in the input, the next command was glued on to it.
                self.apply(Refused(text, parsed.error))
            case commands.ShowLast():
                self.apply(Submitted(text))
                self.show_last()
            case commands.ShowJobs():  # background jobs (issue 36)
                self.apply(Submitted(text))
                self.apply(LocalNotice(jobs_listing(self.state.jobs, self.state.now)))
        self.buffer.reset()
        self.history.reset()
        self._ask_paths()  # reset() fires no change event: the mention that was being typed is over


def run_tui(link: AgentLink, options: UiOptions) -> int:
    """Run the terminal UI on the process's terminal until the user quits; the exit code."""
    return asyncio.run(TuiShell(link, options).run_async())
