"""The real TUI leaves markdown-it-py and pygments' lexers unimported until an answer needs them, dataclasses
until then too, and pygments' styles, wcwidth's package, prompt_toolkit's shortcuts and minidom unimported (issue 19:
idle memory; docs/decisions/0042, 0046, 0053, 0056). Python reports each import on stderr (PYTHONPROFILEIMPORTTIME),
which in a pty is the screen's byte stream; the children send their stderr to the log once started, so what shows is
the main process's."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from dashfloat.testing.sse_server import ScriptedServer, text_reply
from tests.e2e import dashfloat_argv
from tests.pty_harness import WAIT_S, Terminal

LAZY = (b"markdown_it", b"pygments.lexers")
NEVER = (b"pygments.styles", b"wcwidth.grapheme", b"prompt_toolkit.shortcuts", b"xml.dom.minidom", b"difflib")
"""pygments' style machinery: the theme writes its code palette out (dashfloat/ui/_theme.py); wcwidth's package:
prompt_toolkit gets its one function without it; prompt_toolkit's shortcuts: its package ``__init__`` is not run
(dashfloat/_startup/prompt_toolkit_import.py, ADR 0046); minidom: only prompt_toolkit's HTML() parses with it;
difflib: only a misspelt command's suggestion needs it (ADR 0053)."""
OUT_AT_IDLE = (b"dataclasses", b"pygments")
"""The UI's records are msgspec Structs (ADR 0056); markdown-it-py's tokens, imported with the first answer, are
dataclasses, so it is held out at idle only; pygments' package comes with the first code block's lexer (its token
types only name a highlighted token's style class)."""


def imported(raw: bytes, module: bytes) -> bool:
    """Whether the import-time report names ``module`` (``import time: self | cumulative | name``)."""
    return re.search(rb"import time:[^\n]*\|\s+" + re.escape(module) + rb"\s", raw) is not None


def wait_raw(term: Terminal, module: bytes) -> bool:
    """Pump until the stream reports ``module`` imported or WAIT_S passes (a condition, not a sleep)."""
    for _ in range(int(WAIT_S / 0.05)):
        if imported(bytes(term.raw), module):
            return True
        if not term.pump(0.05):
            break
    return imported(bytes(term.raw), module)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as scripted:
        yield scripted


def test_markdown_and_lexers_are_imported_by_the_first_answer_not_at_idle(
    tree: Path, isolated_env: dict[str, str], server: ScriptedServer
) -> None:
    env = {**isolated_env, "PYTHONPROFILEIMPORTTIME": "1"}
    term = Terminal(dashfloat_argv(server, tree), env, cols=100, rows=30)
    try:
        assert term.wait_for("Idle", visible_only=True, timeout_s=WAIT_S), term.text()
        term.settle(quiet_s=0.5)
        raw = bytes(term.raw)
        assert imported(raw, b"prompt_toolkit.application")  # the report reaches us: its absence below means something
        for module in (*LAZY, *NEVER, *OUT_AT_IDLE):
            assert not imported(raw, module), module

        server.enqueue(text_reply("Some **bold** words.\n\n```python\nprint('lexed')\n```\n"))
        term.send("go\r")
        assert wait_raw(term, b"markdown_it"), bytes(term.raw)[-2000:]
        assert wait_raw(term, b"pygments.lexers.python"), bytes(term.raw)[-2000:]
        assert term.wait_for("print('lexed')", timeout_s=WAIT_S), term.text()
        assert term.wait_for("Some bold words.", timeout_s=WAIT_S), term.text()  # rendered, not shown raw
        for module in NEVER:  # code was highlighted and coloured, text measured, without them
            assert not imported(bytes(term.raw), module), module
    finally:
        term.close()
