"""What the agent says of saved sessions it cannot read (real files), and how its /usage table reads on screen."""

from __future__ import annotations

import re
from pathlib import Path

from dashfloat.agent import AgentCore, AgentOptions
from dashfloat.agent._journal import SessionJournal
from dashfloat.agent._reports import core_usage
from dashfloat.protocol import ListSessions, SessionsListed, SystemEntry, Usage
from dashfloat.ui.render import plain, render_entry
from dashfloat.ui.state import Notice
from tests.agent.test_core import PROVIDER, make_core, take


def test_sessions_in_the_tui_names_a_file_it_could_not_read(tmp_path: Path) -> None:
    """ADR 0058: /sessions left a session with a corrupt header out without a word, as `dashfloat sessions` did."""
    journal = SessionJournal(tmp_path, str(tmp_path), PROVIDER)
    journal.sessions_dir.mkdir(parents=True)
    corrupt = journal.sessions_dir / "20991231-000000-badbad.jsonl"
    corrupt.write_text("{oops\n")
    core = AgentCore(AgentOptions(provider=PROVIDER, cwd=str(tmp_path)), journal)
    core.on_ui(ListSessions())
    out = take(core, "ui")
    assert out[0] == SessionsListed(sessions=[])
    said = f"skipped {corrupt}: not a DashFloat session (the first line is not a session header)"
    assert SystemEntry(text=said, level="warning") in out


def test_the_usage_table_keeps_its_columns_on_screen() -> None:
    """Found in tmux: /usage's rows were 3 columns left of their headings: the turn number was right-aligned in
    4 columns, and a notice's lines lose their leading spaces on screen (`· 1    1180          56   1236`)."""
    core = make_core()
    core.turn_usage = [Usage(1180, 56, 1236), Usage(1799, 33, 1832), *[Usage(5, 5, 10)] * 8]
    rows = plain(render_entry(Notice(core_usage(core)), 100))
    header = next(i for i, row in enumerate(rows) if "turn  prompt" in row)

    def columns(row: str) -> list[int]:  # the turn's start, then each number's end (numbers are right-aligned)
        words = list(re.finditer(r"\S+", row))
        return [words[1].start(), *(w.end() for w in words[2:])]

    for row in rows[header + 1 : header + 11]:
        assert columns(row) == columns(rows[header]), (rows[header], row)
