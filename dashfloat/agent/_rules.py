"""The permission rules in force: this session's grants ("always allow"), then the saved ones; /permissions' edits.

Each edit returns what to tell the user (``SystemEntry``s) and whether the rule count on the status bar changed; the
core sends them. Decision record: docs/decisions/0026-permissions.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dashfloat.permissions import Rule, SourcedRule
from dashfloat.protocol import SystemEntry

if TYPE_CHECKING:
    from dashfloat.agent._journal import Journal


class Rules:
    """Session grants first, then the saved rules (the user's file, then the project's deny rules)."""

    def __init__(self, saved: list[SourcedRule], path: str) -> None:
        self.session: list[SourcedRule] = []
        """Grants made with "always allow" in this session: revoked by /approve ask, /clear, /permissions."""
        self.saved = list(saved)
        self.path = path
        """The user's rule file, rewritten by /permissions remove and save (empty: never written)."""

    def all(self) -> list[SourcedRule]:
        """Every rule in force, in /permissions' numbering."""
        return [*self.session, *self.saved]

    def grant(self, scope: Rule) -> SystemEntry:
        """ "Always allow" at a confirmation: ``scope`` runs unasked for the rest of the session."""
        self.session.append(SourcedRule(scope, "allow", "session"))
        text = f"{scope.text()} runs without asking for the rest of this session (/permissions to revoke)"
        return SystemEntry(text=text)

    def revoke(self) -> SystemEntry:
        """/approve ask and /clear: the session's grants end."""
        names = ", ".join(r.rule.text() for r in self.session)
        self.session = []
        return SystemEntry(text=f"session grants revoked: {names}")

    def remove(self, number: int, file: Journal) -> tuple[list[SystemEntry], bool]:
        """/permissions remove N: a session grant, or a rule of the user's file (rewritten)."""
        sourced, said = self._numbered(number)
        if sourced is None:
            return said, False
        if sourced in self.session:
            self.session.remove(sourced)
            return [SystemEntry(text=f"removed {sourced.effect} {sourced.rule.text()} (session)")], True
        if sourced.source != self.path:
            text = f"{sourced.rule.text()} comes from {sourced.source}: edit that file to remove it"
            return [SystemEntry(text=text, level="warning")], False
        problem = self._write([r for r in self.saved if r is not sourced], file)
        if problem is not None:
            return [problem], False
        return [SystemEntry(text=f"removed {sourced.effect} {sourced.rule.text()} from {self.path}")], True

    def save(self, number: int, file: Journal) -> tuple[list[SystemEntry], bool]:
        """/permissions save N: a session grant written to the user's file."""
        sourced, said = self._numbered(number)
        if sourced is None:
            return said, False
        if sourced not in self.session:
            return [SystemEntry(text=f"rule {number} is already saved in {sourced.source}", level="warning")], False
        saved = SourcedRule(sourced.rule, sourced.effect, self.path)
        problem = self._write([*self.saved, saved], file)
        if problem is not None:
            return [problem], False
        self.session.remove(sourced)
        return [SystemEntry(text=f"saved {saved.effect} {saved.rule.text()} in {self.path}")], True

    def _numbered(self, number: int) -> tuple[SourcedRule | None, list[SystemEntry]]:
        rules = self.all()
        if 1 <= number <= len(rules):
            return rules[number - 1], []
        return None, [SystemEntry(text=f"no rule {number}: /permissions lists {len(rules)}", level="error")]

    def _write(self, rules: list[SourcedRule], file: Journal) -> SystemEntry | None:
        """Keep ``rules`` as the saved ones, the user's among them written to its file; else the problem."""
        if not self.path:
            return SystemEntry(text="rules are not saved in this run", level="error")
        ours = [r for r in rules if r.source == self.path]
        try:
            file.save_rules(self.path, ours)
        except OSError as exc:
            return SystemEntry(text=f"cannot write {self.path}: {exc.strerror or exc}", level="error")
        self.saved = rules
        return None
