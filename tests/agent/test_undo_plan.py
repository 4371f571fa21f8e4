"""Undo / rewind planning, pure: which checkpoints, collapsed per file, newest first, conflicts named."""

from __future__ import annotations

import hashlib

from hypothesis import given, settings
from hypothesis import strategies as st

from dashfloat.agent.undo import (
    CheckpointEntry,
    CommandEntry,
    UndoLog,
    collapse,
    describe_commands,
    plan,
    prompt_turn,
    undo_turn,
)
from dashfloat.protocol import ABSENT_DIGEST, Checkpoint, CommandChanges


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def cp(path: str, before: str | None, after: str) -> Checkpoint:
    """A checkpoint of a write that found ``before`` (None: no file) and left ``after``."""
    if before is None:
        return Checkpoint(path=path, existed=False, after=sha(after))
    return Checkpoint(path=path, existed=True, after=sha(after), before=sha(before), mode=0o644)


def test_undo_picks_the_newest_turn_with_changes_and_walks_back() -> None:
    log = UndoLog()
    log.add(CheckpointEntry(1, "c1", cp("a", None, "a1")))
    log.add(CheckpointEntry(2, "c2", cp("b", "b0", "b1")))
    log.add(CommandEntry(3, "c3", CommandChanges(paths=["out.log"])))
    assert undo_turn(log) == 2
    p = plan(log, 2)
    assert p.turns == (2, 3) and [f.path for f in p.files] == ["b"] and p.commands_changed == ("out.log",)
    log.undone(p.turns)
    assert undo_turn(log) == 1
    log.undone([1])
    assert undo_turn(log) is None


def test_collapse_keeps_the_oldest_pre_image_and_the_newest_result_newest_first() -> None:
    files = collapse([cp("a", "a0", "a1"), cp("b", None, "b1"), cp("a", "a1", "a2")])
    assert [f.path for f in files] == ["a", "b"]
    a, b = files
    assert a.before == sha("a0") and a.expect == sha("a2") and not a.interleaved
    assert not b.existed and b.expect == sha("b1")


def test_a_write_that_found_other_bytes_marks_the_file_interleaved() -> None:
    (a,) = collapse([cp("a", "a0", "a1"), cp("a", "changed by a command", "a2")])
    assert a.interleaved


def test_a_lost_first_pre_image_makes_the_file_unrestorable() -> None:
    lost = Checkpoint(path="big", existed=True, after=sha("x"), mode=0o644, lost="over the cap")
    (big,) = collapse([lost, cp("big", "x", "y")])
    assert big.lost == "over the cap"


def test_rewind_drops_the_records_of_the_turns_that_are_gone() -> None:
    log = UndoLog()
    for turn in (1, 2, 3):
        log.add(CheckpointEntry(turn, f"c{turn}", cp(f"f{turn}", None, "x")))
    log.rewound(1)
    assert [e.turn for e in log.checkpoints] == [1]


def test_prompt_numbers_and_counting_back() -> None:
    assert prompt_turn(1, 3) == 1 and prompt_turn(3, 3) == 3 and prompt_turn(4, 3) is None
    assert prompt_turn(-1, 3) == 3 and prompt_turn(-3, 3) == 1 and prompt_turn(-4, 3) is None
    assert prompt_turn(0, 3) is None


def test_commands_are_described_as_not_restored_and_bounded() -> None:
    log = UndoLog()
    log.add(CommandEntry(1, "c", CommandChanges(paths=[f"p{i}" for i in range(25)], more=3)))
    log.add(CommandEntry(1, "d", CommandChanges(unknown="the workspace has more than 10000 files")))
    lines = describe_commands(plan(log, 1))
    assert lines[0] == "commands in these turns changed these files; they are NOT restored:"
    assert lines[21] == "  … and 8 more"
    assert lines[-1].endswith("the workspace has more than 10000 files")


# ---------------------------------------------------------------- property: a simulated workspace


Op = tuple[str, str, str]  # (kind, path, text): kind "write" by DashFloat, "touch" by someone else

ops = st.lists(
    st.tuples(st.sampled_from(["write", "write", "touch"]), st.sampled_from(["a", "b", "c"]), st.sampled_from("xyz")),
    max_size=12,
)


@settings(max_examples=200, deadline=None)
@given(first=ops, second=ops)
def test_undo_of_the_last_turn_brings_back_every_unconflicted_file(first: list[Op], second: list[Op]) -> None:
    files: dict[str, str] = {}
    log = UndoLog()
    before_first_write: dict[str, str | None] = {}  # turn 2: what DashFloat's first write of a file found
    for turn, turn_ops in ((1, first), (2, second)):
        for index, (kind, path, text) in enumerate(turn_ops):
            new = f"{files.get(path, '')}{text}{turn}{index}"  # every write leaves distinct bytes
            if kind == "write":
                log.add(CheckpointEntry(turn, f"{turn}.{index}", cp(path, files.get(path), new)))
                if turn == 2:
                    before_first_write.setdefault(path, files.get(path))
            files[path] = new
    written = {path for kind, path, _ in second if kind == "write"}
    touched_after_last_write: set[str] = set()
    touched_between: set[str] = set()
    last_kind: dict[str, str] = {}
    seen_write: set[str] = set()
    for kind, path, _ in second:
        if kind == "touch" and path in seen_write:
            touched_after_last_write.add(path)
        if kind == "write":
            if last_kind.get(path) == "touch" and path in seen_write:
                touched_between.add(path)
            seen_write.add(path)
            touched_after_last_write.discard(path)
        last_kind[path] = kind
    undone = undo_turn(log)
    if not written:
        assert undone in (None, 1)
        return
    assert undone == 2
    p = plan(log, 2)
    assert {f.path for f in p.files} == written
    for f in p.files:
        current = ABSENT_DIGEST if f.path not in files else sha(files[f.path])
        conflict = current != f.expect or f.interleaved
        assert conflict == (f.path in touched_after_last_write or f.path in touched_between)
        if not conflict:
            target = before_first_write[f.path]  # a command's change before it is not undone
            assert f.existed == (target is not None)
            if target is not None:
                assert f.before == sha(target)
