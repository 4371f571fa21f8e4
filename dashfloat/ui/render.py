"""Rendering as a plain function of state: entries, the live region and the status bar as rows."""

from __future__ import annotations

import re
from typing import assert_never

from prompt_toolkit.formatted_text import FormattedText

from dashfloat.catalogue import call_name, describe_change, summarize_call
from dashfloat.protocol import ChangeRecorded, ConfirmRequested, ConfirmSubject, MalformedCall
from dashfloat.ui._confirm import full_preview_lines, viewer_rows
from dashfloat.ui._jobs_view import status_label
from dashfloat.ui._markdown import render_markdown
from dashfloat.ui._text import (
    Fragment,
    Row,
    clip,
    diff_line_rows,
    format_count,
    hanging_wrap,
    row_width,
    sanitize,
    soft_break,
    width_of,
    wrap,
)
from dashfloat.ui.state import (
    ChangeRecord,
    ChangesTable,
    DecisionRecord,
    Entry,
    FullResult,
    LiveOutput,
    Notice,
    Prose,
    ProseRows,
    Reasoning,
    SessionTable,
    ToolCall,
    ToolResult,
    UiState,
    UserPrompt,
)

CONTINUATION_MARK = "↪ "
"""Starts each further row of a long output line (a hanging indent that also says it: issue 37)."""
EXPAND_KEYS = "Ctrl-O or /last"
CHANGE_DIFF_SHOWN_LINES = 8
"""Diff lines of an approved change kept in its record row (the person has just read them all)."""
FULL_RESULT_MAX_LINES = 5000
"""Lines /last draws (the executor's capture bounds a result already; this guards the screen)."""
_HIDDEN_LINES = re.compile(r"… \d+ more lines?")
"""The agent's marker for the lines between an excerpt's head and tail (agent/_summary.py)."""
TOOL_OUTPUT_MAX_LINES = 30
"""Excerpt lines drawn under a result row (the agent already bounds it; this guards the screen)."""
SUMMARY_MAX_CHARS = 500
"""Longest args summary built; the row then clips it to the terminal width."""
SESSIONS_CWD_MAX_CHARS = 40
"""Characters of a session's directory in a /sessions row (its end is kept: the project's name)."""
SPINNER_FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
SPINNER_STEP_S = 0.1
"""One spinner frame per 100 ms reads as motion without flicker, whatever the tick."""
OUTPUT_INDENT = "    "
PROMPT_MARK = "❯ "
PHASE_WORDS = {
    "idle": "Idle",
    "streaming": "Streaming",
    "compacting": "Compacting the conversation",
    "confirming": "Confirm",
    "running": "Running",
}
WAITING_WORDS = "waiting for the model (prompt processing)"
"""The streaming phase before its first token: a local server may read the prompt for minutes."""
WAITING_WORD = "waiting"
"""The same, on a narrow status bar."""
CONFIRM_SCREEN_PERCENT = 60
"""The inline preview (header, lines and key line) takes at most this share of the screen's rows (``v``: all)."""
CONFIRM_MIN_ROWS = 6
"""…but at least this many rows, when the screen has them."""
CONFIRM_CALL_MIN_COLS = 48
"""A confirmation's header keeps this many columns (or the whole width) for the call, its tool and path or
command, before the summary and the ``v`` key get any; from 88 columns on the summary has its 40."""
STATUS_SAFETY_MIN_WIDTH = 31
"""From this many columns on, the status bar always shows the approval mode (and rules) and the sandbox (and
+net), shortened if it must be (``safety_labels``); every other field goes first. Below, the bar is clipped.
The longest: the spinner, ``edits +999 · read-only +net`` (up to 999 rules)."""
STATUS_MODEL_SHORT_COLS = 16
"""The model's name on a narrow status bar (clipped with …)."""
STATUS_CWD_MIN_COLS = 8
"""The working directory is shown only with this much room (a shorter one says nothing)."""
SANDBOX_SHORT = {"workspace-write": "ws-write"}
"""Sandbox modes on a narrow status bar (the others are short already)."""
DECISION_WORDS = {
    "approve": "✓ approved",
    "approve_always": "✓ approved (always, this session)",
    "reject": "✗ rejected",
    "reject_stop": "✗ rejected and stopped",
    "cancelled": "✗ confirmation cancelled",
}


def to_formatted(rows: list[Row] | tuple[Row, ...]) -> FormattedText:
    """Rows joined by newlines, as prompt_toolkit formatted text."""
    out: list[Fragment] = []
    for i, row in enumerate(rows):
        if i:
            out.append(("", "\n"))
        out.extend(row)
    return FormattedText(out)


def plain(rows: list[Row] | tuple[Row, ...]) -> list[str]:
    """The text of each row, without styles (tests and benchmarks read this)."""
    return ["".join(t for _, t in row) for row in rows]


# ---------------------------------------------------------------- entries


def args_summary(call: ConfirmSubject | MalformedCall) -> str:
    """The argument part of a tool row (``lib/foo.py``, ``pytest -q``), as the headless printer says it."""
    return summarize_call(call, width=SUMMARY_MAX_CHARS).removeprefix(call_name(call)).strip()


def _continues(entry: Entry) -> bool:
    """Entries that the next one continues directly (no blank row after them)."""
    return isinstance(entry, ToolCall | DecisionRecord | ProseRows)


def render_entry(entry: Entry, width: int) -> list[Row]:
    """The rows one finished entry takes in the scrollback."""
    rows = _entry_rows(entry, width)
    return rows if _continues(entry) else [*rows, ()]


def _prompt_rows(text: str, width: int) -> list[Row]:
    """A prompt as sent, line by line: each line's indentation kept, its continuation rows under its text (a
    word wrap of the whole prompt dropped the leading spaces of a pasted snippet's lines)."""
    rows: list[Row] = []
    for line in sanitize(text).split("\n"):
        rest = line.lstrip(" ")
        # An indent leaves at least half the row, and room for a wide character, to the text.
        lead = " " * max(0, min(len(line) - len(rest), width // 2, width - 2))
        wrapped = wrap([("class:user", rest)], max(1, width - len(lead))) if rest else [()]
        rows += [(("class:user", lead), *row) if lead else row for row in wrapped]
    return rows


def _entry_rows(entry: Entry, width: int) -> list[Row]:
    match entry:
        case UserPrompt():
            body = _prompt_rows(entry.text, width - 2)
            return [(("class:user.mark", PROMPT_MARK if i == 0 else "  "), *r) for i, r in enumerate(body)]
        case Prose():
            return list(render_markdown(entry.source, width))
        case Reasoning():
            return _reasoning_rows(entry.text, width)
        case ProseRows():
            return list(entry.rows)
        case ToolCall():
            return [_tool_row("class:accent", entry.args, width)]
        case ToolResult():
            return _result_rows(entry, width)
        case DecisionRecord():
            style = "class:tool" if entry.decision.startswith("approve") else "class:dim"
            text = f"{DECISION_WORDS[entry.decision]} {call_name(entry.subject)} {args_summary(entry.subject)}"
            return [((style, clip(sanitize(text), width)),)]
        case Notice():
            style = {"info": "class:dim", "warning": "class:warning", "error": "class:error"}[entry.level]
            return hanging_wrap(sanitize(entry.text), style, width, ("class:dim", "· "))
        case SessionTable():
            return _sessions_rows(entry, width)
        case ChangeRecord():
            if entry.approved_here:  # the approval's one row: the diff the person approved, collapsed (issue 37)
                return _change_rows(entry.change, width, with_diff=True, shown=CHANGE_DIFF_SHOWN_LINES)
            return _change_rows(entry.change, width, with_diff=entry.full or entry.change.approved_by != "keypress")
        case FullResult():
            return _full_result_rows(entry, width)
        case ChangesTable():
            return _changes_table(entry.changes, width)
        case _:
            assert_never(entry)


def change_line(change: ChangeRecorded) -> str:
    """The one line a landed mutation leaves in the transcript."""
    return describe_change(change.name, change.path, change.summary, change.approved_by, change.rule)


def _change_rows(change: ChangeRecorded, width: int, with_diff: bool, shown: int | None = None) -> list[Row]:
    """The change's line, and its diff: all of it, or (an approval's record) its first ``shown`` lines and how to see
    the rest."""
    line = change_line(change)
    if shown is not None:  # the one row of the person's own approval (issue 37)
        line = line.replace("✎", "✓", 1).replace("approved by keypress", "approved by you")
    rows: list[Row] = [(("class:dim", "  "), ("class:tool", clip(sanitize(line), max(1, width - 2))))]
    if with_diff:
        lines = change.diff if shown is None else change.diff[:shown]
        for line in lines:
            rows.extend(((_diff_style(line), OUTPUT_INDENT + p),) for p in diff_line_rows(sanitize(line), width - 4))
        if len(change.diff) > len(lines):
            more = len(change.diff) - len(lines)
            text = f"{OUTPUT_INDENT}… {more} more diff {'line' if more == 1 else 'lines'} · {EXPAND_KEYS} shows all"
            rows.append((("class:dim", clip(text, width)),))
    return rows


def _full_result_rows(entry: FullResult, width: int) -> list[Row]:
    """/last: every line the agent kept of the newest result, under a row naming it."""
    lines = entry.output.rstrip("\n").split("\n") if entry.output.strip() else []
    head = f"  → {entry.status} · {entry.name} · all {len(lines)} {'line' if len(lines) == 1 else 'lines'} kept"
    return [
        (("class:dim", clip(sanitize(head), width)),),
        *_verbatim(entry.output, width, "class:dim", FULL_RESULT_MAX_LINES),
    ]


def _changes_table(changes: tuple[ChangeRecorded, ...], width: int) -> list[Row]:
    files = [c for c in changes if c.name != "execute_command"]
    if not files:
        return [(("class:dim", "· no file changed in this session yet"),)]
    by_path: dict[str, list[ChangeRecorded]] = {}
    for change in files:
        by_path.setdefault(change.path, []).append(change)
    rows: list[Row] = [(("class:md.strong", f"{len(by_path)} files changed in this session"),)]
    for path, group in by_path.items():
        count = f"{len(group)} change{'s' * (len(group) != 1)}"
        rows.append((("class:md.strong", clip(sanitize(f"{path} · {count}"), width)),))
        for change in group:
            rows.extend(_change_rows(change, width, with_diff=True))
    return rows


def _reasoning_rows(text: str, width: int) -> list[Row]:
    body = wrap([("class:reasoning", sanitize(text))], width - 2)
    return [(("class:dim", "┆ "), *r) for r in body]


def _tool_row(glyph_style: str, call: ConfirmSubject | MalformedCall, width: int) -> Row:
    name = sanitize(call_name(call)).replace("\n", " ")  # the model chooses the name: it may hold control characters
    summary = sanitize(args_summary(call)).replace("\n", " ")
    room = width - 2 - width_of(name) - 1
    if room < 1 or not summary:
        return ((glyph_style, "⚙ "), ("class:tool.name", clip(name, max(1, width - 2))))
    return ((glyph_style, "⚙ "), ("class:tool.name", name), ("class:dim", " " + clip(summary, room)))


def _verbatim(text: str, width: int, style: str, max_lines: int = TOOL_OUTPUT_MAX_LINES) -> list[Row]:
    """Tool output as it is: never Markdown, lines broken by columns, at most ``max_lines``.

    A long line's further rows start with ``CONTINUATION_MARK`` under its text, so they never read as lines of
    their own (issue 37); the excerpt's marker of lines not shown says how to see them."""
    lines = sanitize(text.rstrip("\n")).split("\n") if text.strip() else []
    shown = lines[:max_lines]
    rows: list[Row] = []
    room = max(1, width - len(OUTPUT_INDENT))
    for line in shown:
        if _HIDDEN_LINES.fullmatch(line):
            rows.append(((style, clip(f"{OUTPUT_INDENT}{line} · {EXPAND_KEYS} shows all", width)),))
            continue
        first, *rest = soft_break(line, room)
        rows.append(((style, OUTPUT_INDENT + first),))
        if rest:
            more_room = max(1, room - len(CONTINUATION_MARK))
            for piece in soft_break("".join(rest), more_room):
                rows.append(((style, OUTPUT_INDENT), ("class:dim", CONTINUATION_MARK), (style, piece)))
    if len(lines) > len(shown):
        more = len(lines) - len(shown)
        rows.append(((style, f"{OUTPUT_INDENT}… {more} more {'line' if more == 1 else 'lines'}"),))
    return rows


def _result_rows(entry: ToolResult, width: int) -> list[Row]:
    match entry.status:
        case "ok":
            head, body = "→ ok", entry.output
        case "rejected":
            head, body = "→ rejected", entry.output
        case "cancelled":
            head, body = "→ cancelled", entry.output
        case "error":
            first, _, rest = entry.output.strip().partition("\n")
            head, body = f"→ error: {first}", rest
        case _:
            assert_never(entry.status)
    style = "class:error" if entry.status == "error" else "class:dim"
    return [(("class:dim", "  "), (style, clip(sanitize(head), width - 2))), *_verbatim(body, width, "class:dim")]


def _sessions_rows(entry: SessionTable, width: int) -> list[Row]:
    if not entry.sessions:
        return [(("class:dim", "· no saved sessions"),)]
    header = ("id", "last activity", "msgs", "cwd", "title")
    cells = [header] + [
        (s.id, s.last_activity, str(s.messages), _tail(sanitize(s.cwd), SESSIONS_CWD_MAX_CHARS), s.title)
        for s in entry.sessions
    ]
    widths = [max(width_of(sanitize(c[i])) for c in cells) for i in range(4)]
    rows: list[Row] = []
    for n, cell in enumerate(cells):
        text = "  ".join(sanitize(c).ljust(w) for c, w in zip(cell[:4], widths, strict=True))
        text = f"{text}  {sanitize(cell[4]).replace(chr(10), ' ')}"
        rows.append((("class:md.strong" if n == 0 else "", clip(text, width)),))
    return rows


def _tail(text: str, limit: int) -> str:
    """The end of a long path (the project's name is at the end), marked with a leading …."""
    return text if len(text) <= limit else "…" + text[-(limit - 1) :]


# ---------------------------------------------------------------- the live region and the status bar


def render_live(state: UiState, pending: tuple[Entry, ...], width: int) -> list[Row]:
    """What is still changing: entries not yet printed, the open answer, a pending confirmation."""
    rows: list[Row] = []
    for entry in pending:
        rows.extend(render_entry(entry, width))
    if state.held_call is not None:
        rows.extend(render_entry(state.held_call, width))
    if state.held_decision is not None:  # an approval waiting to become its change's one row
        rows.extend(render_entry(state.held_decision, width))
    budget = state.live_budget()
    if state.live_output is not None:
        rows.extend(_live_output_rows(state.live_output, state.now, width)[-budget:])
    if state.open_reasoning:  # its tail, like an open answer: a long reasoning keeps moving (all of it is
        rows.extend(_reasoning_rows(state.open_reasoning.strip("\n"), width)[-budget:])  # printed when it ends)
    if state.open_prose.strip():
        open_rows = render_markdown(state.open_prose.rstrip(), width)[state.open_skip :]
        rows.extend(open_rows[-budget:])
    if state.confirm is not None:
        rows.extend(confirm_block(state, width))
    return rows


def confirm_block(state: UiState, width: int) -> list[Row]:
    """The pending confirmation's live rows, less those a resize left in the terminal's history (never its keys)."""
    block = _confirm_rows(state, width, state.live_budget())
    return block[min(state.confirm_stranded, len(block) - 1) :]


def _live_output_rows(live: LiveOutput, now: float, width: int) -> list[Row]:
    """A running command's newest lines, one row each (clipped, never wrapped), under an elapsed-time line."""
    lines = [*live.lines, live.partial] if live.partial else list(live.lines)
    count = live.total_lines + (1 if live.partial else 0)
    noun = "line" if count == 1 else "lines"
    head = f"  ⋯ running {format_elapsed(max(0.0, now - live.since))} · {format_count(count)} {noun}"
    rows: list[Row] = [(("class:dim", clip(head, width)),)]
    room = max(1, width - len(OUTPUT_INDENT))
    rows.extend((("class:dim", OUTPUT_INDENT + clip(sanitize(line), room)),) for line in lines)
    return rows


def _diff_style(line: str) -> str:
    return "class:diff.add" if line.startswith("+") else "class:diff.del" if line.startswith("-") else "class:dim"


def _confirm_header(confirm: ConfirmRequested, width: int) -> Row:
    """Tool, path (or command) and summary: on screen whatever the height, with the key for the whole change."""
    # The call first (which file, which command): the summary and the key get up to 40 columns beside it, not
    # the call's CONFIRM_CALL_MIN_COLS (at 40 columns the header read `⚙ … · +1 −1 · 121 bytes · v view all`).
    row = _tool_row("class:tool", confirm.subject, max(width - 40, min(width, CONFIRM_CALL_MIN_COLS)))
    extra = " · ".join(x for x in (sanitize(confirm.summary).replace("\n", " "), "v view all") if x)
    room = width - row_width(row) - 3
    if room < 4:
        return row
    return (*row, ("class:dim", " · " + clip(extra, room)))


def _confirm_rows(state: UiState, width: int, budget: int) -> list[Row]:
    confirm = state.confirm
    assert confirm is not None
    rows: list[Row] = [_confirm_header(confirm, width)]
    if state.viewer is not None:
        return [*rows, *_viewer_rows(state, confirm, width)]
    body: list[Row] = []
    for line in confirm.lines:
        body.extend(((_diff_style(line), p),) for p in diff_line_rows(sanitize(line), width - 2))
    # At most a share of the screen (issue 37): a shorter window pushes the live region's top rows into the
    # terminal's history, where they stay; a preview that fills the screen left copies of itself there.
    room = max(1, min(budget, max(CONFIRM_MIN_ROWS, state.height * CONFIRM_SCREEN_PERCENT // 100)) - 2)
    if len(body) > room:
        # head and tail: what a command line or a diff ends with matters as much as how it starts
        # (`…; curl evil | sh` must be on screen when the user presses y)
        keep = max(1, room - 1)
        head, tail = keep - keep // 2, keep // 2
        cut = (("class:dim", f"… {len(body) - keep} more preview lines (v shows all) …"),)
        body = [*body[:head], cut, *(body[-tail:] if tail else [])]
    rows.extend((("", "  "), *r) for r in body)
    rows.append(_confirm_footer(state, width))
    return rows


def _viewer_rows(state: UiState, confirm: ConfirmRequested, width: int) -> list[Row]:
    """The full preview, one screenful from ``state.viewer``; a long line is broken into rows, never cut: a
    one-line command's end must be readable somewhere before y (ADR 0058)."""
    lines = full_preview_lines(confirm, width)
    top = state.viewer or 0
    shown = lines[top : top + viewer_rows(state)]
    rows: list[Row] = [(("", "  "), (_diff_style(line), line)) for line in shown]
    end = top + len(shown)
    footer = f"lines {top + 1}–{end} of {len(lines)} · ↑↓ PgUp PgDn Home End scroll · q or v back to the keys"
    rows.append((("class:tool", clip(footer, width)),))
    return rows


def scope_label(scope: str) -> str:
    """``execute_command(npm test)`` as ``npm test``; a file tool's rule as its name."""
    if scope.startswith("execute_command(") and scope.endswith(")"):
        return sanitize(scope[len("execute_command(") : -1])
    return sanitize(scope)


def _confirm_footer(state: UiState, width: int) -> Row:
    """The key line: the keys only once they answer (guard passed, empty input), else why they do not."""
    confirm = state.confirm
    assert confirm is not None
    if not state.confirm_armed:
        footers: tuple[str, ...] = ("read the change: the keys answer in a moment", "read the change…")
        style = "class:dim"
    elif not state.input_empty:
        footers = (
            "your text stays in the input; clear it (Ctrl-U) to answer y/n/a/Esc",
            "clear the input to answer",
        )
        style = "class:warning"
    elif confirm.scope:
        footers = (
            f"y/Enter approve · n reject · Esc reject & stop · a always allow {scope_label(confirm.scope)}",
            f"y yes · n no · Esc stop · a always {scope_label(confirm.scope)}",
            "y yes · n no · Esc stop · a always",
        )
        style = "class:tool"
    else:
        why = sanitize(confirm.no_scope) or "cannot be scoped"
        footers = (
            f"y/Enter approve · n reject · Esc reject & stop · (no always: {why})",
            "y/Enter approve · n reject · Esc reject & stop",
            "y yes · n no · Esc stop",
        )
        style = "class:tool"
    footer = next((f for f in footers if width_of(f) <= width), footers[-1])
    return ((style, clip(footer, width)),)


def format_elapsed(seconds: float) -> str:
    """3.2s, 1m05s (59.97 s is 1m00s, not 60.0s)."""
    if seconds < 59.95:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m{secs:02d}s"


def shorten_cwd(cwd: str, home: str | None, width: int) -> str:
    """``~`` for the home directory, then leading components cut to one letter, then a left cut."""
    if home and (cwd == home or cwd.startswith(home.rstrip("/") + "/")):
        cwd = "~" + cwd[len(home.rstrip("/")) :]
    parts = cwd.split("/")
    i = 0
    while width_of("/".join(parts)) > width and i < len(parts) - 1:
        if len(parts[i]) > 1 and parts[i] != "~":
            parts[i] = parts[i][0]
        i += 1
    text = "/".join(parts)
    if width_of(text) > width:
        text = "…" + clip(text[::-1], max(0, width - 1), ellipsis="")[::-1]
    return text


def context_text(state: UiState, short: bool = False) -> str:
    """``12.3k / 128k`` when the window is known, ``12.3k tokens`` otherwise; ``short``: ``12.3k/128k``,
    ``12.3k/~32.8k`` for an assumed window, ``12.3k tok``."""
    used = format_count(state.context_tokens) if state.context_tokens is not None else "0"
    assumed = state.window_source == "assumed"
    if state.context_window and short:
        return f"{used}/{'~' * assumed}{format_count(state.context_window)}"
    if state.context_window:
        return f"{used} / {format_count(state.context_window)}{' (assumed)' * assumed}"
    return f"{used} tok" if short else f"{used} tokens"


def safety_labels(state: UiState, tier: int) -> list[str]:
    """What the status bar says of the approval mode and the command sandbox, at ``tier`` of shortening: 0
    ``approve: edits +2 rules · sandbox: workspace-write +net``, 1 ``approve: edits +2 · sandbox: ws-write +net``,
    2 ``edits +2 · ws-write +net``. Never less: these say what runs without asking, and how confined."""
    rules = ""
    if state.rules:
        rules = f" +{state.rules}" + (f" rule{'s' * (state.rules != 1)}" if tier == 0 else "")
    labels = [("approve: " if tier < 2 else "") + state.approval + rules]
    sandbox = state.sandbox
    if sandbox is not None:
        net = " +net" if sandbox.network and sandbox.mode != "off" else ""
        mode = sandbox.mode if tier == 0 else SANDBOX_SHORT.get(sandbox.mode, sandbox.mode)
        if sandbox.unavailable:
            labels.append("NOT sandboxed")
        elif tier < 2 or sandbox.mode == "off":
            labels.append(f"sandbox: {mode}{net}" if tier < 2 else "sandbox off")
        else:
            labels.append(f"{mode}{net}")
    return labels


def _status_head(state: UiState, now: float, detail: int) -> str:
    """The phase: ``⠇ Streaming 3.2s · waiting for the model (prompt processing)`` at ``detail`` 0, then the wait
    said in one word (1), not said (2), and no elapsed time or long phase word (3)."""
    phase = "confirming" if state.confirm is not None else state.phase
    jobs = status_label(state.jobs)  # running background jobs (issue 36): `` · 2 jobs``
    if phase == "idle":
        return f"● {PHASE_WORDS[phase]}{jobs}"
    elapsed = max(0.0, now - state.phase_since)
    frame = SPINNER_FRAMES[int(elapsed / SPINNER_STEP_S) % len(SPINNER_FRAMES)]
    if detail >= 3:
        return f"{frame} {PHASE_WORDS[phase].split()[0]}{jobs}"
    head = f"{frame} {PHASE_WORDS[phase]} {format_elapsed(elapsed)}{jobs}"
    if phase == "streaming" and not state.answered and detail < 2:
        head += f" · {(state.waiting or WAITING_WORDS) if detail == 0 else WAITING_WORD}"
    return head


def render_status(state: UiState, now: float, width: int, home: str | None) -> Row:
    """The status bar: phase, spinner and elapsed; model; context; approval mode; sandbox; cwd.

    Narrower, it gives up first the cwd, the wait's words, then shortens and drops the model and the context, then
    the elapsed time; the approval mode and the sandbox are shortened last and never dropped from
    ``STATUS_SAFETY_MIN_WIDTH`` on (the phase's word is clipped instead)."""
    phase = "confirming" if state.confirm is not None else state.phase
    phase_style = {"idle": "class:status.idle", "confirming": "class:tool"}.get(phase, "class:accent")
    model = state.model or "…"
    context = context_text(state)
    short_context = context_text(state, short=True)
    layouts: list[tuple[int, list[str]]] = [
        (0, [model, context, *safety_labels(state, 0)]),
        (1, [model, context, *safety_labels(state, 0)]),
        (2, [model, context, *safety_labels(state, 0)]),
        (2, [clip(model, STATUS_MODEL_SHORT_COLS), short_context, *safety_labels(state, 0)]),
        (2, [short_context, *safety_labels(state, 0)]),
        (2, safety_labels(state, 0)),
        (2, safety_labels(state, 1)),
        (3, safety_labels(state, 1)),
        (3, safety_labels(state, 2)),
    ]
    sep = " · "
    head, segments, whole = _status_head(state, now, 3), safety_labels(state, 2), False
    for at, (detail, fields) in enumerate(layouts):
        candidate = _status_head(state, now, detail)
        if width_of(candidate + "".join(sep + s for s in fields)) <= width:
            head, segments, whole = candidate, fields, at == 0
            break
    room = width - width_of(head + "".join(sep + s for s in segments)) - width_of(sep)
    if whole and room >= STATUS_CWD_MIN_COLS:  # the cwd is the first to go
        segments = [*segments, shorten_cwd(state.cwd, home, room)]
    rest = width_of("".join(sep + s for s in segments))
    if width_of(head) + rest > width:
        head = clip(head, max(1, width - rest))  # the phase's word before the safety labels
    row: list[Fragment] = [(phase_style, head)]
    # Any mode but ask is coloured (issue 37): what runs without a key must not read like the rest of the bar.
    mode_labels = {safety_labels(state, tier)[0] for tier in range(3)} if state.approval != "ask" else set()
    for seg in segments:
        row.append(("class:status.sep", sep))
        row.append((f"class:status.mode.{state.approval}" if seg in mode_labels else "class:status", seg))
    out: Row = tuple(row)
    if row_width(out) > width:
        out = ((phase_style, clip("".join(t for _, t in out), width)),)
    return out
