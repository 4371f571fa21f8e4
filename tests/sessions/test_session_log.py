"""The session log on real files in a temporary XDG tree, including a writer killed with SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dashfloat
from dashfloat.protocol import (
    ChatMessage,
    ConversationEntry,
    FunctionCall,
    ToolCallRecord,
    ToolCancelled,
    ToolReply,
    ToolResult,
    Usage,
    WriteFileResult,
)
from dashfloat.sessions.log import (
    FORMAT_VERSION,
    HEADER_MAX_BYTES,
    NOTICE_MAX_ITEMS,
    TITLE_MAX_CHARS,
    SessionError,
    SessionHeader,
    SessionWriter,
    find_session,
    list_sessions,
    load,
    new_header,
    new_session_id,
    newest_for_cwd,
    repair_conversation,
)
from dashfloat.sessions.state import sessions_dir, state_dir

REPO_ROOT = Path(dashfloat.__file__).resolve().parent.parent


def user(text: str) -> ChatMessage:
    return ChatMessage(role="user", content=text)


def assistant(text: str | None = None, *call_ids: str) -> ChatMessage:
    calls = [ToolCallRecord(id=i, function=FunctionCall(name="read_file", arguments='{"path":"a"}')) for i in call_ids]
    return ChatMessage(role="assistant", content=text, tool_calls=calls or None)


DONE = WriteFileResult(path="a", bytes=1, created=True)
CANCELLED = ToolCancelled()


def tool(call_id: str, result: ToolResult = DONE) -> ToolReply:
    return ToolReply(call_id=call_id, name="read_file", result=result)


def assert_valid_conversation(messages: list[ConversationEntry]) -> None:
    """What every provider requires: each call answered once, right after its assistant message."""
    pending: set[str] = set()
    for m in messages:
        if isinstance(m, ToolReply):
            assert m.call_id in pending, f"orphan or duplicate tool result {m.call_id}"
            pending.discard(m.call_id)
            continue
        assert not pending, f"unanswered calls {pending} before a {m.role} message"
        pending = {c.id for c in m.tool_calls or []}
    assert not pending, f"unanswered calls {pending} at the end"


def header(cwd: str = "/project", **overrides: object) -> SessionHeader:
    h = new_header(cwd=cwd, provider="local", model="m1", dashfloat_version="0.1.0")
    return msgspec.structs.replace(h, **overrides)


def write_raw(path: Path, lines: list[dict[str, object] | str], end: str = "\n") -> None:
    text = "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines)
    path.write_text(text + end)


def header_dict(**overrides: object) -> dict[str, object]:
    raw: dict[str, object] = json.loads(msgspec.json.encode(header()))
    return {**raw, **overrides}


def message_line(m: ChatMessage) -> dict[str, object]:
    return {"kind": "message", "message": json.loads(msgspec.json.encode(m))}


@pytest.fixture
def sdir(tmp_path: Path) -> Path:
    return sessions_dir({"XDG_STATE_HOME": str(tmp_path / "state"), "HOME": str(tmp_path / "home")})


# ---------------------------------------------------------------- locations and ids


def test_state_dir_follows_xdg_and_defaults_to_home(tmp_path: Path) -> None:
    assert state_dir({"XDG_STATE_HOME": "/x/state", "HOME": "/h"}) == Path("/x/state/dashfloat")
    assert state_dir({"HOME": "/h"}) == Path("/h/.local/state/dashfloat")
    # The XDG spec says relative values are invalid and must be ignored.
    assert state_dir({"XDG_STATE_HOME": "rel/state", "HOME": "/h"}) == Path("/h/.local/state/dashfloat")
    assert sessions_dir({"XDG_STATE_HOME": "/x"}) == Path("/x/dashfloat/sessions")


def test_session_ids_sort_by_creation_time() -> None:
    from datetime import UTC, datetime

    early = new_session_id(datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC))
    late = new_session_id(datetime(2024, 1, 2, 3, 4, 6, tzinfo=UTC))
    assert early.startswith("20240102-030405-") and len(early) == len("20240102-030405-") + 6
    assert early < late
    h = new_header(cwd="/p", provider="p", model="m", dashfloat_version="v", now=datetime(2024, 1, 2, tzinfo=UTC))
    assert h.created == "2024-01-02T00:00:00+00:00" and h.format == FORMAT_VERSION


# ---------------------------------------------------------------- writing


def test_create_append_load_round_trip_with_private_permissions(sdir: Path) -> None:
    h = header()
    messages: list[ConversationEntry] = [
        user("hi"),
        assistant(None, "c1", "c2"),
        tool("c1"),
        tool("c2"),
        assistant("done"),
    ]
    with SessionWriter.create(sdir, h) as w:
        w.append(messages[0])
        w.append_many(messages[1:4])
        w.append_usage(1, Usage(10, 5, 15))
        w.append(messages[4])
        path = w.path
    assert path == sdir / f"{h.id}.jsonl"
    assert stat.S_IMODE(sdir.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    loaded = load(path)
    assert loaded.header == h
    assert loaded.messages == messages
    assert [(u.turn, u.usage) for u in loaded.usage] == [(1, Usage(10, 5, 15))]
    assert loaded.notices == []
    kinds = [json.loads(line)["kind"] for line in path.read_text().splitlines()]
    assert kinds == ["header", "message", "message", "tool_result", "tool_result", "usage", "message"]


def test_an_existing_wide_sessions_dir_is_tightened(sdir: Path) -> None:
    sdir.mkdir(parents=True, mode=0o755)
    os.chmod(sdir, 0o755)
    SessionWriter.create(sdir, header()).close()
    assert stat.S_IMODE(sdir.stat().st_mode) == 0o700


def test_create_refuses_bad_ids_and_duplicates(sdir: Path) -> None:
    with pytest.raises(SessionError, match="invalid session id"):
        SessionWriter.create(sdir, header(id="../escape"))
    h = header()
    SessionWriter.create(sdir, h).close()
    with pytest.raises(SessionError, match="already exists"):
        SessionWriter.create(sdir, h)
    # The session file appears whole (header included) or not at all: no temp is left beside it either way (its
    # lock file stays: unlinking one would let two processes lock two files of one name, sessions/_lock.py).
    assert sorted(p.name for p in sdir.iterdir()) == [f"{h.id}.jsonl", f"{h.id}.lock"]
    assert load(sdir / f"{h.id}.jsonl").header == h


def test_a_closed_writer_refuses_appends(sdir: Path) -> None:
    w = SessionWriter.create(sdir, header())
    w.close()
    w.close()  # idempotent
    with pytest.raises(SessionError, match="closed"):
        w.append(user("late"))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.text(), min_size=1, max_size=5))
def test_any_text_round_trips_one_line_per_message(sdir: Path, texts: list[str]) -> None:
    # Newlines, U+2028 and control characters must never split a JSON line.
    with SessionWriter.create(sdir, header()) as w:
        w.append_many(user(t) for t in texts)
    assert load(w.path).messages == [user(t) for t in texts]
    assert len(w.path.read_bytes().split(b"\n")) == len(texts) + 2


# ---------------------------------------------------------------- refusals


def test_a_newer_format_is_refused_and_left_untouched(sdir: Path) -> None:
    sdir.mkdir(parents=True)
    path = sdir / "future.jsonl"
    write_raw(path, [{**header_dict(format=FORMAT_VERSION + 1), "shiny": "new"}, {"kind": "hologram"}])
    before = path.read_bytes()
    expected = rf"future\.jsonl: written by a newer DashFloat \(format {FORMAT_VERSION + 1}\); upgrade"
    with pytest.raises(SessionError, match=expected):
        load(path)
    with pytest.raises(SessionError, match=expected):
        SessionWriter.open_existing(path)
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    "content",
    [
        "",
        "hello world\n",
        '{"kind": "message", "message": {"role": "user", "content": "x"}}\n',
        '{"kind": "header", "format": "1"}\n',
        '{"kind": "header", "format": 1, "id": 3}\n',
        "\x00\xff binary",
    ],
)
def test_a_file_that_is_not_a_session_is_refused_with_its_name(sdir: Path, content: str) -> None:
    sdir.mkdir(parents=True)
    path = sdir / "junk.jsonl"
    path.write_text(content, encoding="latin-1")
    with pytest.raises(SessionError, match=r"junk\.jsonl: not a DashFloat session") as info:
        SessionWriter.open_existing(path)
    assert "\n" not in str(info.value)


def test_the_header_bound_is_crossed_by_one_byte(sdir: Path) -> None:
    sdir.mkdir(parents=True)
    base = len(msgspec.json.encode(header(cwd="")))
    fits, too_long = sdir / "fits.jsonl", sdir / "long.jsonl"
    fits.write_bytes(msgspec.json.encode(header(cwd="x" * (HEADER_MAX_BYTES - base))) + b"\n")
    too_long.write_bytes(msgspec.json.encode(header(cwd="x" * (HEADER_MAX_BYTES - base + 1))) + b"\n")
    assert load(fits).header.cwd == "x" * (HEADER_MAX_BYTES - base)
    with pytest.raises(SessionError, match=r"long\.jsonl: not a DashFloat session"):
        load(too_long)


# ---------------------------------------------------------------- repair


def test_a_torn_last_line_is_dropped_with_one_notice_and_truncated_on_reopen(sdir: Path) -> None:
    with SessionWriter.create(sdir, header()) as w:
        w.append_many([user("one"), assistant("two")])
    path = w.path
    good = path.read_bytes()
    with open(path, "ab") as f:
        f.write(b'{"kind":"message","message":{"role":"us')
    loaded = load(path)
    assert loaded.messages == [user("one"), assistant("two")]
    assert len(loaded.notices) == 1 and "torn last line" in loaded.notices[0]
    writer, reopened = SessionWriter.open_existing(path)
    assert reopened.notices == loaded.notices
    assert path.read_bytes() == good
    writer.append(user("three"))
    writer.close()
    again = load(path)
    assert again.messages == [user("one"), assistant("two"), user("three")]
    assert again.notices == []


def test_an_invalid_terminated_last_line_counts_as_torn(sdir: Path) -> None:
    sdir.mkdir(parents=True)
    path = sdir / "s.jsonl"
    write_raw(path, [header_dict(), message_line(user("a")), '{"kind":"mess'])
    loaded = load(path)
    assert loaded.messages == [user("a")]
    assert [n for n in loaded.notices if "torn" in n] == loaded.notices and len(loaded.notices) == 1


def test_trailing_dangling_calls_get_cancelled_results_in_call_order(sdir: Path) -> None:
    with SessionWriter.create(sdir, header()) as w:
        w.append_many([user("go"), assistant("calling", "c1", "c2", "c3"), tool("c2")])
    loaded = load(w.path)
    assert loaded.messages[3:] == [tool("c1", CANCELLED), tool("c3", CANCELLED)]
    assert len(loaded.notices) == 1 and "c1, c3" in loaded.notices[0]
    assert_valid_conversation(loaded.messages)
    writer, _ = SessionWriter.open_existing(w.path)
    writer.close()
    again = load(w.path)
    assert again.messages == loaded.messages and again.notices == []


def test_results_missing_mid_file_are_inserted_before_the_next_message(sdir: Path) -> None:
    messages = [user("a"), assistant(None, "c1"), user("b"), assistant("ok")]
    with SessionWriter.create(sdir, header()) as w:
        w.append_many(messages)
        w.append_usage(1, Usage(1, 2, 3))
    loaded = load(w.path)
    assert loaded.messages == [
        user("a"),
        assistant(None, "c1"),
        tool("c1", CANCELLED),
        user("b"),
        assistant("ok"),
    ]
    writer, _ = SessionWriter.open_existing(w.path)
    writer.append(user("c"))
    writer.close()
    again = load(w.path)
    assert again.notices == []
    assert again.messages == [*loaded.messages, user("c")]
    assert [u.turn for u in again.usage] == [1]
    assert stat.S_IMODE(w.path.stat().st_mode) == 0o600
    # no temp file left behind (the lock file stays: sessions/_lock.py)
    assert sorted(p.name for p in sdir.iterdir()) == [w.path.name, w.path.with_suffix(".lock").name]


def test_orphan_tool_results_are_dropped_with_a_notice(sdir: Path) -> None:
    with SessionWriter.create(sdir, header()) as w:
        w.append_many([tool("ghost"), user("a"), assistant(None, "c1"), tool("c1"), tool("c1"), assistant("x")])
    loaded = load(w.path)
    assert loaded.messages == [user("a"), assistant(None, "c1"), tool("c1"), assistant("x")]
    assert loaded.notices == [f"{w.path.name}: dropped 2 tool results matching no call: ghost, c1"]


def test_a_corrupt_middle_line_is_skipped_and_removed_on_reopen(sdir: Path) -> None:
    sdir.mkdir(parents=True)
    path = sdir / "s.jsonl"
    write_raw(
        path,
        [
            header_dict(),
            message_line(user("a")),
            "{oops",
            {"kind": "alien"},
            header_dict(),
            message_line(user("b")),
        ],
    )
    loaded = load(path)
    assert loaded.messages == [user("a"), user("b")]
    assert loaded.notices == ["s.jsonl: skipped 3 unreadable lines: 3, 4, 5"]
    SessionWriter.open_existing(path)[0].close()
    assert load(path).notices == []
    assert load(path).messages == [user("a"), user("b")]


def test_a_header_without_its_newline_is_repaired_before_appending(sdir: Path) -> None:
    sdir.mkdir(parents=True)
    path = sdir / "s.jsonl"
    write_raw(path, [header_dict()], end="")
    writer, loaded = SessionWriter.open_existing(path)
    assert loaded.messages == []
    writer.append(user("a"))
    writer.close()
    assert load(path).messages == [user("a")]


def test_notices_name_a_bounded_number_of_ids() -> None:
    ids = [f"c{i}" for i in range(NOTICE_MAX_ITEMS + 2)]
    repaired, notices = repair_conversation([user("a"), assistant(None, *ids)])
    assert len(repaired) == 2 + len(ids)
    assert notices == [f"marked {len(ids)} unanswered tool calls as cancelled: c0, c1, c2, c3, c4 and 2 more"]
    _, exact = repair_conversation([user("a"), assistant(None, *ids[:NOTICE_MAX_ITEMS])])
    assert "more" not in exact[0]


_call_ids = st.sampled_from(["a", "b", "c", "d"])
_message = st.one_of(
    st.builds(user, st.sampled_from(["u1", "u2"])),
    st.builds(lambda ids: assistant("t", *dict.fromkeys(ids)), st.lists(_call_ids, max_size=3)),
    st.builds(tool, _call_ids),
)


@given(st.lists(_message, max_size=12))
def test_repair_always_yields_a_valid_conversation(messages: list[ConversationEntry]) -> None:
    repaired, notices = repair_conversation(messages)
    assert_valid_conversation(repaired)
    assert [m for m in repaired if isinstance(m, ChatMessage)] == [m for m in messages if isinstance(m, ChatMessage)]
    # Every result that answered a pending call survives; only synthesized ones are new.
    kept = [m for m in repaired if isinstance(m, ToolReply) and m.result != CANCELLED]
    assert all(m in messages for m in kept)
    assert repair_conversation(repaired) == (repaired, [])
    assert (repaired == messages) == (notices == [])


@settings(max_examples=60, deadline=None)
@given(messages=st.lists(_message, min_size=1, max_size=8), data=st.data())
def test_a_file_cut_at_any_byte_after_the_header_loads_the_complete_prefix(
    tmp_path_factory: pytest.TempPathFactory, messages: list[ConversationEntry], data: st.DataObject
) -> None:
    sdir = tmp_path_factory.mktemp("cut")
    with SessionWriter.create(sdir, header()) as w:
        w.append_many(messages)
    whole = w.path.read_bytes()
    header_end = whole.index(b"\n") + 1
    cut = data.draw(st.integers(header_end, len(whole)))
    w.path.write_bytes(whole[:cut])
    complete = whole[:cut].count(b"\n") - 1  # message lines that kept their newline
    loaded = load(w.path)
    assert loaded.messages == repair_conversation(messages[:complete])[0]
    assert_valid_conversation(loaded.messages)
    assert sum("torn last line" in n for n in loaded.notices) == (0 if whole[:cut].endswith(b"\n") else 1)


# ---------------------------------------------------------------- a writer killed mid-line

_CHILD = """
import json, os, signal, sys
from pathlib import Path
import msgspec
from dashfloat.sessions.log import SessionWriter, new_header
from dashfloat.protocol import ChatMessage, ToolReply


def entry(text):  # a ToolReply has a call_id, a ChatMessage never does
    return msgspec.json.decode(text, type=ToolReply if b'"call_id"' in text.encode() else ChatMessage)


sdir, cut = Path(sys.argv[1]), int(sys.argv[2])
messages = [entry(m) for m in sys.argv[3].split("\\n")]
torn = entry(sys.argv[4])
writer = SessionWriter.create(sdir, new_header(cwd="/p", provider="p", model="m", dashfloat_version="t"))
for m in messages:
    writer.append(m)
kind = ("tool_result", "reply") if isinstance(torn, ToolReply) else ("message", "message")
line = msgspec.json.encode({"kind": kind[0], kind[1]: torn}) + b"\\n"
fd = os.open(writer.path, os.O_WRONLY | os.O_APPEND)
os.write(fd, line[: max(1, min(cut, len(line) - 1))])
os.kill(os.getpid(), signal.SIGKILL)
"""


@settings(max_examples=12, deadline=None)
@given(messages=st.lists(_message, min_size=1, max_size=8), torn=_message, cut=st.integers(1, 400))
def test_a_writer_killed_mid_line_loses_nothing_before_it(
    tmp_path_factory: pytest.TempPathFactory, messages: list[ConversationEntry], torn: ConversationEntry, cut: int
) -> None:
    sdir = tmp_path_factory.mktemp("kill") / "sessions"
    lines = "\n".join(msgspec.json.encode(m).decode() for m in messages)
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(sdir), str(cut), lines, msgspec.json.encode(torn).decode()],
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        timeout=30,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    (path,) = sdir.glob("*.jsonl")
    expected, repair_notices = repair_conversation(messages)
    loaded = load(path)
    assert loaded.messages == expected
    assert len([n for n in loaded.notices if "torn last line" in n]) == 1
    assert len(loaded.notices) == 1 + len(repair_notices)
    assert_valid_conversation(loaded.messages)
    writer, _ = SessionWriter.open_existing(path)
    writer.append(user("after"))
    writer.close()
    again = load(path)
    assert again.notices == [] and again.messages == [*expected, user("after")]


# ---------------------------------------------------------------- finding sessions

NOT_A_SESSION = "not a DashFloat session (the first line is not a session header)"


def _session(sdir: Path, cwd: str, prompts: list[str], mtime: float, **h: object) -> Path:
    with SessionWriter.create(sdir, header(cwd=cwd, **h)) as w:
        w.append_many(user(p) for p in prompts)
    os.utime(w.path, (mtime, mtime))
    return w.path


def test_list_sessions_newest_first_with_titles_and_junk_skipped(sdir: Path) -> None:
    assert list_sessions(sdir) == []  # no directory yet
    long_prompt = "word " * 40
    old = _session(sdir, "/a", ["  first\n prompt ", "second"], 1_700_000_000)
    new = _session(sdir, "/b", [long_prompt], 1_700_000_100)
    empty = _session(sdir, "/c", [], 1_600_000_000)
    (sdir / "junk.jsonl").write_text("not a session\n")
    (sdir / "notes.txt").write_text("hello")
    (sdir / "dir.jsonl").mkdir()
    (sdir / "newer.jsonl").write_text(json.dumps(header_dict(format=FORMAT_VERSION + 1)) + "\n")
    rows = list_sessions(sdir)
    assert [r.id for r in rows] == [p.name.removesuffix(".jsonl") for p in (new, old, empty)]
    assert rows[1].title == "first prompt" and rows[1].messages == 2 and rows[1].cwd == "/a"
    assert rows[1].last_activity == "2023-11-14T22:13:20+00:00"
    assert len(rows[0].title) == TITLE_MAX_CHARS and rows[0].title.endswith("…")
    assert rows[2].title == "" and rows[2].messages == 0
    skipped: list[str] = []
    list_sessions(sdir, skipped)  # ADR 0058: said, naming each file (it was silent)
    newer = f"written by a newer DashFloat (format {FORMAT_VERSION + 1}); upgrade to resume it"
    assert sorted(skipped) == [
        f"skipped {sdir / 'dir.jsonl'}: cannot read the session: Is a directory",
        f"skipped {sdir / 'junk.jsonl'}: {NOT_A_SESSION}",
        f"skipped {sdir / 'newer.jsonl'}: {newer}",
    ]


def test_title_exactly_at_the_bound_is_not_truncated(sdir: Path) -> None:
    _session(sdir, "/a", ["x" * TITLE_MAX_CHARS], 1)
    assert list_sessions(sdir)[0].title == "x" * TITLE_MAX_CHARS


def test_find_session_by_id_or_unambiguous_prefix(sdir: Path) -> None:
    a = _session(sdir, "/a", [], 1, id="20240101-000000-aaaaaa")
    b = _session(sdir, "/a", [], 2, id="20240101-000000-abbbbb")
    c = _session(sdir, "/a", [], 3, id="20240202-000000-cccccc")
    assert find_session(sdir, "20240101-000000-aaaaaa") == a
    assert find_session(sdir, "20240101-000000-ab") == b
    assert find_session(sdir, "202402") == c
    with pytest.raises(SessionError, match=r"ambiguous session prefix '20240101': matches .*aaaaaa, .*abbbbb$"):
        find_session(sdir, "20240101")
    with pytest.raises(SessionError, match=r"no session '1999' in .*sessions"):
        find_session(sdir, "1999")
    with pytest.raises(SessionError, match="no session id given"):
        find_session(sdir, " ")


def test_an_exact_id_wins_over_longer_ids_it_prefixes(sdir: Path) -> None:
    short = _session(sdir, "/a", [], 1, id="abc")
    _session(sdir, "/a", [], 2, id="abcd")
    assert find_session(sdir, "abc") == short


def test_newest_for_cwd_picks_the_latest_activity_in_that_directory(sdir: Path) -> None:
    assert newest_for_cwd(sdir, "/a") is None
    _session(sdir, "/a", ["x"], 100)
    latest = _session(sdir, "/a", ["y"], 300)
    _session(sdir, "/b", ["z"], 400)
    (sdir / "junk.jsonl").write_text("junk")
    assert newest_for_cwd(sdir, "/a") == latest
    assert newest_for_cwd(sdir, "/a/") == latest
    assert newest_for_cwd(sdir, "/c") is None
    skipped: list[str] = []
    assert newest_for_cwd(sdir, "/a", skipped) == latest
    assert skipped == [f"skipped {sdir / 'junk.jsonl'}: {NOT_A_SESSION}"]


# ---------------------------------------------------------------- write failures

_FULL_DISK_CHILD = """
import os, resource, signal, sys
from pathlib import Path
from dashfloat.sessions.log import SessionError, SessionWriter, new_header
from dashfloat.protocol import ChatMessage

header = new_header(cwd="/p", provider="p", model="m", dashfloat_version="t")
writer = SessionWriter.create(Path(sys.argv[1]), header)
writer.append(ChatMessage(role="user", content="kept"))
size = writer.path.stat().st_size
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # get EFBIG instead of a signal
resource.setrlimit(resource.RLIMIT_FSIZE, (size + 10, resource.RLIM_INFINITY))
try:
    writer.append(ChatMessage(role="user", content="x" * 100))
except SessionError as exc:
    print(exc)
print(writer.path.stat().st_size - size)
"""


def test_a_failed_write_takes_its_partial_line_back(sdir: Path) -> None:
    # The file-size limit makes the kernel accept 10 bytes of the line, then refuse the rest.
    proc = subprocess.run(
        [sys.executable, "-c", _FULL_DISK_CHILD, str(sdir)],
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 0, proc.stderr
    error, growth = proc.stdout.splitlines()
    assert "cannot write the session log: File too large" in error and ".jsonl" in error
    assert growth == "0"
    (path,) = sdir.glob("*.jsonl")
    loaded = load(path)
    assert loaded.messages == [user("kept")] and loaded.notices == []
