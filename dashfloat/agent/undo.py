"""Undo and rewind planning, pure: which checkpoints a request reverts, per file, newest first.

The agent keeps, for the current session, every checkpoint (a write/edit that landed) and every command's
changes, tied to the turn (1-based user prompt number) that made them. Reverting a turn consumes its records;
rewinding drops the records of the turns that are gone. The executor then previews and applies the plan.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Sequence

import msgspec

from dashfloat.protocol import ABSENT_DIGEST, Checkpoint, CommandChanges, RestoreFile

CHANGED_PATHS_SHOWN_MAX = 20
"""Files named in the "commands changed these, not restored" part of a preview; then "and N more"."""


class CheckpointEntry(msgspec.Struct, frozen=True):
    """A checkpoint of turn ``turn``, made by tool call ``call_id``."""

    turn: int
    call_id: str
    checkpoint: Checkpoint
    cwd: str = ""
    """The working directory the path is relative to."""


class CommandEntry(msgspec.Struct, frozen=True):
    """The workspace changes an execute_command of turn ``turn`` made (call ``call_id``)."""

    turn: int
    call_id: str
    changes: CommandChanges
    cwd: str = ""


class UndoLog(msgspec.Struct):
    """The live (not yet reverted) checkpoints and command changes of one session, oldest first."""

    checkpoints: list[CheckpointEntry] = msgspec.field(default_factory=list)
    commands: list[CommandEntry] = msgspec.field(default_factory=list)

    def add(self, entry: CheckpointEntry | CommandEntry) -> None:
        if isinstance(entry, CheckpointEntry):
            self.checkpoints.append(entry)
        else:
            self.commands.append(entry)

    def undone(self, turns: Iterable[int]) -> None:
        """The changes of ``turns`` were reverted (or deliberately skipped): they are no longer undoable."""
        gone = set(turns)
        self.checkpoints = [e for e in self.checkpoints if e.turn not in gone]
        self.commands = [e for e in self.commands if e.turn not in gone]

    def rewound(self, kept_turns: int) -> None:
        """The conversation now has ``kept_turns`` prompts: records of later turns are gone with them."""
        self.checkpoints = [e for e in self.checkpoints if e.turn <= kept_turns]
        self.commands = [e for e in self.commands if e.turn <= kept_turns]


class Plan(msgspec.Struct, frozen=True):
    """What one undo or rewind reverts: files (newest change first) and what commands changed meanwhile."""

    turns: tuple[int, ...]
    files: tuple[RestoreFile, ...]
    commands_changed: tuple[str, ...] = ()
    commands_more: int = 0
    commands_unknown: tuple[str, ...] = ()


def undo_turn(log: UndoLog) -> int | None:
    """The turn /undo reverts: the newest one whose file changes are not reverted yet."""
    return max((e.turn for e in log.checkpoints), default=None)


def plan(log: UndoLog, first_turn: int) -> Plan:
    """Revert every change of turns >= ``first_turn``."""
    entries = [e for e in log.checkpoints if e.turn >= first_turn]
    commands = [e for e in log.commands if e.turn >= first_turn]
    turns = sorted({e.turn for e in entries} | {e.turn for e in commands})
    changed: list[str] = []
    more = 0
    unknown: list[str] = []
    for command in commands:
        more += command.changes.more
        if command.changes.unknown and command.changes.unknown not in unknown:
            unknown.append(command.changes.unknown)
        for path in command.changes.paths:
            if path not in changed:
                changed.append(path)
    return Plan(tuple(turns), tuple(collapse([e.checkpoint for e in entries])), tuple(changed), more, tuple(unknown))


def other_cwds(log: UndoLog, first_turn: int, cwd: str) -> list[str]:
    """Working directories other than ``cwd`` that changes of turns >= ``first_turn`` were made in."""
    here = os.path.normpath(cwd)
    found: list[str] = []
    entries: list[CheckpointEntry | CommandEntry] = [*log.checkpoints, *log.commands]
    for entry in entries:
        if entry.turn >= first_turn and entry.cwd and os.path.normpath(entry.cwd) != here and entry.cwd not in found:
            found.append(entry.cwd)
    return found


def _state_before(checkpoint: Checkpoint) -> str | None:
    """The digest of what was there before, or None when it is not known (a pre-image too large to hash)."""
    if not checkpoint.existed:
        return ABSENT_DIGEST
    return checkpoint.before


def collapse(checkpoints: Sequence[Checkpoint]) -> list[RestoreFile]:
    """One restore per file (oldest pre-image, newest result), ordered newest change first.

    ``checkpoints`` are in the order the mutations landed.
    """
    by_path: dict[str, list[Checkpoint]] = {}
    newest: dict[str, int] = {}
    for index, checkpoint in enumerate(checkpoints):
        by_path.setdefault(checkpoint.path, []).append(checkpoint)
        newest[checkpoint.path] = index
    files: list[RestoreFile] = []
    for path in sorted(by_path, key=lambda p: newest[p], reverse=True):
        chain = by_path[path]
        first, last = chain[0], chain[-1]
        # Each write must have found what the previous one left; if not, something else wrote in between.
        interleaved = any(
            (before := _state_before(later)) is not None and before != earlier.after
            for earlier, later in itertools.pairwise(chain)
        )
        files.append(
            RestoreFile(
                path=path,
                existed=first.existed,
                expect=last.after,
                before=first.before,
                mode=first.mode,
                created_dirs=list(first.created_dirs),
                lost=first.lost,
                interleaved=interleaved,
            )
        )
    return files


def describe_commands(plan: Plan) -> list[str]:
    """The lines saying what commands of these turns changed, and that it is not restored."""
    lines: list[str] = []
    if plan.commands_changed or plan.commands_more:
        shown = list(plan.commands_changed[:CHANGED_PATHS_SHOWN_MAX])
        more = len(plan.commands_changed) - len(shown) + plan.commands_more
        lines.append("commands in these turns changed these files; they are NOT restored:")
        lines += [f"  {path}" for path in shown]
        if more:
            lines.append(f"  … and {more} more")
    for reason in plan.commands_unknown:
        lines.append(f"commands ran in these turns and are NOT undone; {reason}")
    return lines


def prompt_turn(prompt: int, count: int) -> int | None:
    """The 1-based turn a /rewind number names (negative: counted back from the newest), None if none."""
    turn = count + 1 + prompt if prompt < 0 else prompt
    return turn if 1 <= turn <= count else None
