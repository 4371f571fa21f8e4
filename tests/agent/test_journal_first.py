"""A new session's file is created with its first entry in it (ADR 0052): durable before the request it starts,
with one fsync of the file and one of the directory, not a third for the entry (real files)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dashfloat.agent._journal import SessionJournal
from dashfloat.protocol import ChatMessage, ProviderConfig, Usage
from dashfloat.sessions.log import load

PROVIDER = ProviderConfig(name="t", base_url="http://127.0.0.1:9/v1", model="m")


def _contents(path: Path) -> list[str | None]:
    return [m.content for m in load(path).messages if isinstance(m, ChatMessage)]


def test_the_first_entry_is_written_with_the_header_in_two_fsyncs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[int] = []
    real_fsync = os.fsync

    def counting(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting)
    journal = SessionJournal(tmp_path, str(tmp_path), PROVIDER)
    journal.record(ChatMessage(role="user", content="one"))
    assert len(synced) == 2  # the file (header and entry), its directory
    [path] = journal.sessions_dir.glob("*.jsonl")
    assert path.stem == journal.session_id and _contents(path) == ["one"]
    journal.record(ChatMessage(role="assistant", content="two"))
    assert len(synced) == 3 and _contents(path) == ["one", "two"]  # appended and fsynced, as before


def test_a_session_begun_by_something_else_still_records_its_entries_after_it(tmp_path: Path) -> None:
    journal = SessionJournal(tmp_path, str(tmp_path), PROVIDER)
    journal.record_usage(1, Usage(10, 2, 12))
    journal.record(ChatMessage(role="user", content="one"))
    [path] = journal.sessions_dir.glob("*.jsonl")
    loaded = load(path)
    assert _contents(path) == ["one"] and [u.usage for u in loaded.usage] == [Usage(10, 2, 12)]


def test_a_session_that_cannot_be_created_says_so_once(tmp_path: Path) -> None:
    blocked = tmp_path / "state"
    blocked.write_text("a file where the state directory should be")
    journal = SessionJournal(blocked, str(tmp_path), PROVIDER)
    journal.record(ChatMessage(role="user", content="one"))
    warning = journal.take_warning()
    assert warning is not None and "the session is not being saved" in warning
    journal.record(ChatMessage(role="user", content="two"))
    assert journal.take_warning() is None and journal.session_id == ""
