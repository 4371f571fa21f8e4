"""Saved permission rules: the user's file (allow and deny, rewritten by /permissions) and a project's (deny only).

User:    ``$XDG_CONFIG_HOME/dashfloat/permissions.toml``  ``allow = [...]``, ``deny = [...]``
Project: ``<workspace>/.dashfloat/permissions.toml``       ``deny = [...]`` only: a cloned repository must never
grant itself permissions, so an ``allow`` there is an error, not ignored (ADR 0026).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from dashfloat.config import ConfigError, config_path, read_toml
from dashfloat.permissions import RuleError, SourcedRule, parse_rule

PROJECT_PERMISSIONS = Path(".dashfloat") / "permissions.toml"
RULES_MAX = 500
"""Rules read from one file; a longer list is refused (a config file, not a database)."""
_HEADER = (
    "# DashFloat permission rules (docs/permissions.md). /permissions rewrites this file: comments are not kept.\n"
    '# allow = ["execute_command(npm test)", "edit_file"]   deny = ["execute_command(git push)"]   deny wins.\n'
)


def user_permissions_path(env: Mapping[str, str]) -> Path:
    """The user's rule file, beside config.toml."""
    return config_path(env).parent / "permissions.toml"


def _rules(path: Path, document: dict[str, Any], effect: Literal["allow", "deny"]) -> list[SourcedRule]:
    texts = document.get(effect, [])
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise ConfigError(f"{path}: {effect}: expected a list of rule strings")
    if len(texts) > RULES_MAX:
        raise ConfigError(f"{path}: {effect}: {len(texts)} rules, more than {RULES_MAX}")
    out: list[SourcedRule] = []
    for text in texts:
        try:
            out.append(SourcedRule(parse_rule(text, effect), effect, str(path)))
        except RuleError as exc:
            raise ConfigError(f"{path}: {effect}: {text!r}: {exc}") from exc
    return out


def load_rules(env: Mapping[str, str], cwd: str) -> list[SourcedRule]:
    """The user's rules, then the project's deny rules; ConfigError names the file, the rule and the problem."""
    rules: list[SourcedRule] = []
    user = user_permissions_path(env)
    document = read_toml(user)
    if document is not None:
        unknown = sorted(set(document) - {"allow", "deny"})
        if unknown:
            raise ConfigError(f"{user}: {unknown[0]}: unknown field (the file holds allow and deny)")
        rules += _rules(user, document, "allow") + _rules(user, document, "deny")
    project = Path(cwd) / PROJECT_PERMISSIONS
    document = read_toml(project)
    if document is not None:
        if "allow" in document:
            raise ConfigError(
                f"{project}: allow: a project file may only add deny rules "
                "(a cloned repository must never grant itself permissions); move allow rules to "
                f"{user}"
            )
        unknown = sorted(set(document) - {"deny"})
        if unknown:
            raise ConfigError(f"{project}: {unknown[0]}: unknown field (a project file holds deny only)")
        rules += _rules(project, document, "deny")
    return rules


def save_user_rules(path: Path, rules: list[SourcedRule]) -> None:
    """Rewrite the user's file with ``rules`` (atomically: a crash leaves the old file or the new one)."""
    allow = [r.rule.text() for r in rules if r.effect == "allow"]
    deny = [r.rule.text() for r in rules if r.effect == "deny"]
    import json  # only here: no process imports it on the way to the first request (issue 19)

    # JSON strings with ASCII escapes are valid TOML basic strings.
    text = _HEADER + f"allow = {json.dumps(allow)}\ndeny = {json.dumps(deny)}\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text(text, encoding="utf-8")
    os.replace(temp, path)
