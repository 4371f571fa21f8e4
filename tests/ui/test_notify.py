"""Which notification escape a terminal gets, as a pure function of the environment."""

from __future__ import annotations

from dashfloat.ui._notify import BELL, NOTIFY_MAX_CHARS, notification, osc_flavour


def test_each_terminal_family_gets_what_it_understands() -> None:
    assert osc_flavour({"TERM_PROGRAM": "iTerm.app"}) == "9"
    assert osc_flavour({"WT_SESSION": "x"}) == "9"
    assert osc_flavour({"VTE_VERSION": "7600"}) == "777"
    assert osc_flavour({"TERM": "foot"}) == "777"
    assert osc_flavour({"TERM": "xterm-256color"}) is None
    assert osc_flavour({"TERM_PROGRAM": "iTerm.app", "TMUX": "/tmp/t"}) is None


def test_the_text_cannot_end_the_escape_early_or_grow_without_bound() -> None:
    text = "a\x07b\x1b]c;" + "x" * 500
    sent = notification(text, {"VTE_VERSION": "1"})
    assert sent.startswith(BELL + "\x1b]777;notify;DashFloat;a b ]c,") and sent.endswith(BELL)
    assert sent.count("\x07") == 2 and sent.count("\x1b") == 1
    assert len(sent) <= NOTIFY_MAX_CHARS + 40
    assert notification("hi", {}) == BELL
