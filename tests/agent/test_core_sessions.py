"""What the agent says of saved sessions it cannot read (real files)."""

from __future__ import annotations

from pathlib import Path

from dashfloat.agent import AgentCore, AgentOptions
from dashfloat.agent._journal import SessionJournal
from dashfloat.protocol import ListSessions, SessionsListed, SystemEntry
from tests.agent.test_core import PROVIDER, take


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
