"""One /undo or /rewind as a small state machine: reverse preview, confirmations, apply, report.

Pure: it returns what to send (to the executor, to the UI) and the core sends it. The main confirmation
shows the whole reverse change; each conflicting file then gets a confirmation of its own, so a file changed
since DashFloat wrote it is only overwritten when the user says so for that file.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from dashfloat.agent import undo
from dashfloat.agent.undo import Plan, describe_commands
from dashfloat.catalogue import call_name
from dashfloat.protocol import (
    ApplyRestore,
    ConfirmRequested,
    Decision,
    Message,
    PreviewRestore,
    RestoreApplied,
    RestoreConflict,
    RestoreEnded,
    RestoreFile,
    RestoreOutcome,
    RestorePreview,
    RestorePreviewed,
    RewindConversation,
    SystemEntry,
    UndoChanges,
)

Step = Literal["start", "previewing", "confirm", "conflict", "applying", "done"]
Out = list[tuple[Literal["ui", "executor"], Message]]

RESTORE_NO_SCOPE = "a restore is confirmed each time"
PROMPT_EXCERPT_MAX_CHARS = 60

_WORDS = {
    "restore": "restore",
    "delete": "delete (DashFloat created it)",
    "unchanged": "already as it was before",
    "conflict": "CONFLICT",
    "missing": "cannot restore",
    "unrestorable": "cannot restore",
    "error": "cannot restore",
}


def begin(
    prompt: int | None,
    session_id: str,
    current_session: str,
    prompts: list[str],
    log: undo.UndoLog,
    cwd: str,
    store: str,
    next_ref: Callable[[], int],
    headless: bool,
) -> RestoreFlow | Out:
    """/undo (``prompt`` None) or /rewind ``prompt`` of the prompt list of ``session_id``: its flow, planned, or
    why there is nothing to restore (what to tell the user: a refusal, or nothing to undo)."""
    if session_id and session_id != current_session:
        current = current_session or "a new session"
        return _refused(
            f"refused: that prompt list is of session {session_id}, and this is {current}; "
            "/rewind lists this session's prompts"
        )
    if prompt is None:
        first = undo.undo_turn(log)
        if first is None:
            text = "nothing to undo: no file change of this session is left to revert"
            return [("ui", SystemEntry(text=text)), ("ui", RestoreEnded(outcome="nothing"))]
    else:
        found = undo.prompt_turn(prompt, len(prompts))
        if found is None:
            if prompt < 0:
                return _refused(f"cannot go back {-prompt} turns: this session has {len(prompts)}")
            return _refused(f"no prompt {prompt} to rewind to: this session has {len(prompts)}")
        first = found
    elsewhere = undo.other_cwds(log, first, cwd)
    if elsewhere:
        return _refused(
            f"refused: changes of these turns were made in {elsewhere[0]}, not in {cwd}; "
            "run DashFloat there to restore them"
        )
    typed = prompts[first - 1] if prompt is not None else None
    return RestoreFlow(next_ref, undo.plan(log, first), first, typed, store, headless=headless)


def _files(n: int) -> str:
    return f"{n} file{'s' if n != 1 else ''}"


def _refused(text: str) -> Out:
    return [("ui", SystemEntry(text=text, level="error")), ("ui", RestoreEnded(outcome="refused"))]


def _excerpt(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= PROMPT_EXCERPT_MAX_CHARS else text[: PROMPT_EXCERPT_MAX_CHARS - 1] + "…"


class RestoreFlow:
    """One undo (``text`` None) or rewind (``text`` is the prompt going back into the input, or to stdout when
    ``headless``: ``dashfloat --rewind N`` has no input)."""

    def __init__(
        self,
        next_ref: Callable[[], int],
        plan: Plan,
        first_turn: int,
        text: str | None,
        store: str,
        headless: bool = False,
    ) -> None:
        self.next_ref = next_ref
        self.headless = headless
        self.plan = plan
        self.first_turn = first_turn
        self.text = text
        self.store = store
        self.step: Step = "start"
        self.ref = 0
        self.previews: list[RestorePreview] = []
        self.chosen: list[int] = []  # indices of files to restore
        self.conflicts: list[int] = []  # conflicting files still to ask about
        self.declined_conflicts: list[int] = []
        self.applied = False
        self.ended: RestoreEnded | None = None

    @property
    def files(self) -> tuple[RestoreFile, ...]:
        return self.plan.files

    @property
    def what(self) -> str:
        if self.text is None:
            turns = self.plan.turns
            which = f"turn {turns[0]}" if len(turns) <= 1 else f"turns {turns[0]}-{turns[-1]}"
            return f"undo of {which}"
        return f"rewind to just before prompt {self.first_turn} (“{_excerpt(self.text)}”)"

    # ------------------------------------------------------------ steps

    def start(self) -> Out:
        if not self.files:
            return self._confirm_main()
        self.step = "previewing"
        self.ref = self.next_ref()
        return [("executor", PreviewRestore(ref=self.ref, store=self.store, files=list(self.files)))]

    def on_executor(self, message: RestorePreviewed | RestoreApplied) -> Out:
        if message.ref != self.ref:
            return []  # a late reply of a restore already given up
        if isinstance(message, RestorePreviewed) and self.step == "previewing":
            self.previews = list(message.files)
            return self._confirm_main()
        if isinstance(message, RestoreApplied) and self.step == "applying":
            return self._finish(message.outcomes)
        return []

    def on_decision(self, ref: int, decision: Decision) -> Out:
        if ref != self.ref or self.step not in ("confirm", "conflict"):
            return []
        approve = decision in ("approve", "approve_always")
        if decision == "reject_stop" or (self.step == "confirm" and not approve):
            # Headless, a reject of the main preview is the preview without --yes (runtime/_restore_cli.py).
            return self._decline("preview" if self.headless and self.step == "confirm" else "declined")
        if self.step == "confirm":
            self.chosen = [i for i, p in enumerate(self.previews) if p.status in ("restore", "delete")]
            self.conflicts = [i for i, p in enumerate(self.previews) if p.status == "conflict"]
        else:
            index = self.conflicts.pop(0)
            (self.chosen if approve else self.declined_conflicts).append(index)
        if self.conflicts:
            return self._confirm_conflict(self.conflicts[0])
        return self._apply()

    def cancel(self) -> Out:
        """Esc: before anything is written, the whole restore is declined; while applying, it finishes."""
        if self.step in ("start", "previewing", "confirm", "conflict"):
            return self._decline("cancelled")
        return []

    def executor_died(self, reason: str) -> Out:
        if self.step == "previewing":
            return self._end(
                RestoreEnded(outcome="declined"),
                f"the executor stopped while previewing the {self.what} ({reason}): nothing was restored",
            )
        if self.step == "applying":
            return self._end(
                RestoreEnded(outcome="skipped", skipped=[self.files[i].path for i in self.chosen]),
                f"the executor stopped during the {self.what} ({reason}): some files may be restored; "
                "/undo again shows what is left",
            )
        return []

    # ------------------------------------------------------------ building the messages

    def _confirm_main(self) -> Out:
        self.step = "confirm"
        self.ref = self.next_ref()
        lines = [f"{self.what}: {self._count()}"]
        for file, preview in zip(self.files, self.previews, strict=True):
            word = _WORDS[preview.status]
            if preview.status in ("restore", "delete"):
                lines.append(f"── {file.path}: {word}")
                lines += preview.lines
            elif preview.status == "conflict":
                lines.append(f"── {file.path}: {word}: {preview.reason}; you are asked about it next")
            else:
                lines.append(f"── {file.path}: {word}: {preview.reason}" if preview.reason else f"── {file.path}")
        lines += describe_commands(self.plan)
        if self.text is not None:
            back = "is printed on stdout, to edit and send again" if self.headless else "returns to the input"
            lines.append(f"the conversation goes back to just before prompt {self.first_turn}; its text {back}")
        subject: UndoChanges | RewindConversation = RewindConversation(prompt=self.first_turn)
        if self.text is None:
            subject = UndoChanges(turns=list(self.plan.turns))
        name = call_name(subject)
        message = ConfirmRequested(
            ref=self.ref, id=f"{name}-{self.ref}", subject=subject, lines=lines, no_scope=RESTORE_NO_SCOPE
        )
        return [("ui", message)]

    def _count(self) -> str:
        if not self.files:
            return "no file changes to restore"
        acts = sum(1 for p in self.previews if p.status in ("restore", "delete"))
        conflicts = sum(1 for p in self.previews if p.status == "conflict")
        cannot = sum(1 for p in self.previews if p.status in ("missing", "unrestorable", "error"))
        parts = [f"{acts} file{'s' if acts != 1 else ''} to restore"]
        if conflicts:
            parts.append(f"{conflicts} conflicting")
        if cannot:
            parts.append(f"{cannot} that cannot be restored")
        return ", ".join(parts)

    def _confirm_conflict(self, index: int) -> Out:
        self.step = "conflict"
        self.ref = self.next_ref()
        file, preview = self.files[index], self.previews[index]
        lines = [f"{file.path} was {preview.reason}.", "restore it anyway (your change there is lost)?", *preview.lines]
        message = ConfirmRequested(
            ref=self.ref,
            id=f"conflict-{self.ref}",
            subject=RestoreConflict(path=file.path),
            lines=lines,
            no_scope=RESTORE_NO_SCOPE,
        )
        return [("ui", message)]

    def _apply(self) -> Out:
        if not self.chosen:
            return self._finish([])
        self.step = "applying"
        self.ref = self.next_ref()
        self.chosen.sort()  # the plan's order: newest change first
        files = [self.files[i] for i in self.chosen]
        digests = [self.previews[i].digest for i in self.chosen]
        return [("executor", ApplyRestore(ref=self.ref, store=self.store, files=files, digests=digests))]

    def _skipped(self, outcomes: list[RestoreOutcome]) -> list[str]:
        skipped: list[str] = []
        for i, preview in enumerate(self.previews):
            if preview.status in ("missing", "unrestorable", "error"):
                skipped.append(f"{preview.path}: {preview.reason}")
            elif i in self.declined_conflicts:
                skipped.append(f"{preview.path}: {preview.reason}; kept as it is")
        skipped += [f"{o.path}: {o.error}" for o in outcomes if not o.ok]
        return skipped

    def _finish(self, outcomes: list[RestoreOutcome]) -> Out:
        self.applied = True
        done = [o.path for o in outcomes if o.ok]
        created = {p.path for p in self.previews if p.status == "delete"}
        # A file DashFloat created is deleted, not restored: said so (issue 37: "/undo said restored").
        deleted = [path for path in done if path in created]
        restored = [path for path in done if path not in created]
        skipped = self._skipped(outcomes)
        counts = [f"restored {_files(len(restored))}"] if restored or not deleted else []
        counts += [f"deleted {_files(len(deleted))} DashFloat had created"] if deleted else []
        lines = [f"{self.what}: {', '.join(counts)}"]
        lines += [f"  {'deleted' if path in created else 'restored'} {path}" for path in done]
        if skipped:
            lines.append(f"skipped {len(skipped)}:")
            lines += [f"  {s}" for s in skipped]
        lines += describe_commands(self.plan)
        outcome: Literal["restored", "skipped"] = "skipped" if skipped else "restored"
        return self._end(RestoreEnded(outcome=outcome, restored=len(done), skipped=skipped), "\n".join(lines))

    def _decline(self, why: Literal["declined", "preview", "cancelled"]) -> Out:
        """Nothing applied, in the words of why: refused at the preview, a preview only (headless, no --yes), or
        cancelled (issue 37: a preview was said to be "declined")."""
        words = {
            "declined": f"{self.what} declined: nothing was restored",
            "preview": f"{self.what}: a preview only; nothing was restored",
            "cancelled": f"{self.what} cancelled: nothing was restored",
        }
        return self._end(RestoreEnded(outcome="declined"), words[why])

    def _end(self, ended: RestoreEnded, text: str) -> Out:
        self.step = "done"
        self.ended = ended
        level: Literal["info", "warning"] = "warning" if ended.outcome == "skipped" else "info"
        return [("ui", SystemEntry(text=text, level=level))]
