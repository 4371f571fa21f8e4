"""Provider configuration: flags > environment > ``$XDG_CONFIG_HOME/dashfloat/config.toml`` (docs/providers.md).

The file names providers; the key itself never appears in it, only the variable that holds it.
"""

from __future__ import annotations

import ipaddress
import math
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, Literal, get_args
from urllib.parse import urlsplit

import msgspec

from dashfloat.protocol import (
    MCP_CALL_TIMEOUT_S,
    CommandLimits,
    McpServerConfig,
    ProviderConfig,
    ReasoningEcho,
    ReasoningEffort,
    SandboxMode,
    ToolCallMode,
)
from dashfloat.sandbox_access import Preset, domain_problem, writable_problem

OPENAI_BASE_URL = "https://api.openai.com/v1"
OPENAI_DEFAULT_MODEL = "gpt-4o-mini"
"""Used only when the endpoint is OpenAI's own and no model was given anywhere."""
DEFAULT_IDLE_TIMEOUT_S = 60.0
DEFAULT_SANDBOX_MODE: SandboxMode = "workspace-write"
"""Commands run in the sandbox's workspace-write mode unless ``--sandbox`` or ``[sandbox] mode`` says otherwise."""
FIRST_BYTE_TIMEOUT_LOCAL_S = 600.0
"""A local server reads the whole prompt before its first byte: minutes on a CPU (docs/providers.md)."""
FIRST_BYTE_TIMEOUT_PUBLIC_S = 180.0
"""A hosted API that sends nothing for three minutes is not coming back."""
DEFAULT_COMPACT_AT_PERCENT = 80
"""Automatic compaction when a request would fill this percentage of the window (decision 0031)."""
COMPACT_AT_PERCENT_RANGE = (10, 95)
KEY_ENV = "OPENAI_API_KEY"
LIMITS_RANGES: dict[str, tuple[int, int]] = {
    "max_processes": (16, 2**22),
    "max_memory_mib": (64, 2**40),
    "max_process_memory_mib": (64, 2**40),
    "max_file_mib": (1, 2**40),
}
"""What ``[limits]`` accepts (the defaults are the executor's constants, ADR 0062): below, no command could run (bwrap
and the shell alone take processes and memory); above, the kernel refuses the value (``pids.max`` stops at 2^22, and
a cgroup whose limit cannot be written is not made: the command would run unbounded)."""


# Sampling per provider (issue 39, ADR 0092): temperature, top_p, extra_body.
TEMPERATURE_RANGE: Final = (0.0, 2.0)
"""What ``temperature`` accepts (OpenAI's range; local servers take the same)."""
REQUEST_OWN_FIELDS: Final = frozenset(
    {"model", "messages", "stream", "tools", "stream_options", "max_tokens", "temperature", "top_p", "reasoning_effort"}
)
"""Request fields ``extra_body`` may not set: the request writes them itself, or the provider has a field of its own
for them."""


class ConfigError(Exception):
    """A configuration problem; ``str()`` is one line naming the file, the field and what is wrong."""


class ProviderFlags(msgspec.Struct):
    """The command-line flags that choose a provider (``None``: not given)."""

    provider: str | None = None
    base_url: str | None = None
    model: str | None = None
    reasoning_effort: ReasoningEffort | None = None
    """``--reasoning-effort``: over the provider's own ``reasoning_effort``."""


class ProviderEntry(msgspec.Struct, forbid_unknown_fields=True):
    """One ``[providers.NAME]`` table."""

    base_url: str
    model: str | None = None
    api_key_env: str | None = None
    """The name of the environment variable holding the key (none for local servers)."""
    context_window: int | None = None
    headers: dict[str, str] = {}
    max_tokens: int | None = None
    """The answer bound sent as ``max_tokens``; absent: derived from context_window; 0: never sent."""
    tool_calls: ToolCallMode = "auto"
    """Read tool calls from ``native`` tool_calls only, also from the ``text``, or ``auto`` (docs/providers.md)."""
    reasoning_echo: ReasoningEcho = "auto"
    """Send kept reasoning back: ``auto`` on tool-call turns (DeepSeek requires it), ``always``, ``never``."""
    reasoning_effort: ReasoningEffort | None = None
    """Sent as ``reasoning_effort`` when set: ``low``, ``medium``, ``high``, or ``none`` (thinking off)."""
    temperature: float | None = None
    """Sent as ``temperature`` when set (absent: the server's default; ADR 0092)."""
    top_p: float | None = None
    """Sent as ``top_p`` when set."""
    extra_body: dict[str, Any] = {}
    """Server-specific fields merged into every request (llama.cpp's ``top_k``, ``repeat_penalty``, ...)."""


class Settings(msgspec.Struct, forbid_unknown_fields=True):
    """The ``[settings]`` table."""

    idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S
    """Fail a stream when the provider sends no event for this long, once it has started answering."""
    read_only_commands: bool = True
    """Run the read-only allowlist (ls, cat, rg, git status, ...) without asking (docs/permissions.md)."""
    first_byte_timeout_s: float | None = None
    """Fail a request whose first event takes longer; None: 600 s for local hosts, 180 s for others."""
    compact_at_percent: int = DEFAULT_COMPACT_AT_PERCENT
    """Compact the conversation automatically when a request would fill this much of the window."""
    shift_tab_all: bool = False
    """Shift-Tab's mode cycle reaches ``all`` too (issue 37; off: ask → edits → plan, ``/approve all`` still works)."""


class SandboxSettings(msgspec.Struct, forbid_unknown_fields=True):
    """The ``[sandbox]`` table (docs/tools.md "The command sandbox")."""

    mode: SandboxMode = DEFAULT_SANDBOX_MODE
    network: bool = False
    """Give the network to commands that run without a keypress too (as ``--network``)."""
    deny_read: list[str] = []
    """Paths hidden from sandboxed commands, on top of the built-in credential stores (``~`` is $HOME)."""
    pass_env: list[str] = []
    """Variables every command gets although their names look secret (``*TOKEN*`` …, ``dashfloat.command_env``)."""
    # The registries and the tool caches (issue 35, ADR 0082; checked by sandbox_access's rules below).
    allow_domains: list[str] = []
    """Hosts ``--network registries`` reaches besides the default registries (``pypi.org``, ``*.example.org``)."""
    deny_domains: list[str] = []
    """Hosts it never reaches, default registries included."""
    writable: list[str] = []
    """Extra paths every workspace-write command may write (absolute or ``~/…``; never a credential store)."""
    writable_presets: list[Preset] = []
    """Tool caches made writable by name: npm, cargo, go, uv, pip, gradle, maven."""


class LimitsSettings(msgspec.Struct, forbid_unknown_fields=True):
    """The ``[limits]`` table: a command's bounds (README "What a command may use"); absent: the defaults."""

    max_processes: int | None = None
    max_memory_mib: int | None = None
    max_process_memory_mib: int | None = None
    max_file_mib: int | None = None


# hooks (ADR 0088): ``[[hooks.EVENT]]`` arrays of tables, in config.toml and in a project's .dashfloat/hooks.toml

HOOK_TIMEOUT_MAX_S: Final = 600.0
"""The longest ``timeout`` a hook may be given (a hook holds its call, or the prompt, until it ends)."""
HOOKS_PER_EVENT_MAX: Final = 32
"""Hooks one file may give one event; a longer list is refused (a config file, not a pipeline)."""


class HookEntry(msgspec.Struct, forbid_unknown_fields=True):
    """One ``[[hooks.EVENT]]`` table: a command, the tools it is for, its timeout in seconds."""

    command: str
    matcher: str = ""
    """A regular expression a tool's whole name must match (empty or ``*``: every tool); tool events only."""
    timeout: float | None = None


class HooksTable(msgspec.Struct, forbid_unknown_fields=True):
    """The ``[hooks]`` table: one array of hooks per event (Claude Code's event names)."""

    PreToolUse: list[HookEntry] = []
    PostToolUse: list[HookEntry] = []
    UserPromptSubmit: list[HookEntry] = []
    Stop: list[HookEntry] = []
    SessionStart: list[HookEntry] = []


def check_hooks(path: Path, table: HooksTable) -> None:
    """ConfigError naming the file and the field of the first hook that cannot run as written."""
    for event in msgspec.structs.fields(HooksTable):
        entries: list[HookEntry] = getattr(table, event.name)
        if len(entries) > HOOKS_PER_EVENT_MAX:
            raise ConfigError(f"{path}: hooks.{event.name}: {len(entries)} hooks, more than {HOOKS_PER_EVENT_MAX}")
        for index, entry in enumerate(entries):
            field = f"{path}: hooks.{event.name}[{index}]"
            if not entry.command.strip() or "\0" in entry.command:
                raise ConfigError(f"{field}.command: must be a command line")
            if entry.matcher not in ("", "*"):
                try:
                    re.compile(entry.matcher)
                except re.error as exc:
                    raise ConfigError(f"{field}.matcher: {entry.matcher!r} is not a regular expression: {exc}") from exc
            if entry.timeout is not None and not (
                math.isfinite(entry.timeout) and 0 < entry.timeout <= HOOK_TIMEOUT_MAX_S
            ):
                raise ConfigError(
                    f"{field}.timeout: must be a number of seconds above 0, at most {HOOK_TIMEOUT_MAX_S:g}"
                )


class ConfigFile(msgspec.Struct, forbid_unknown_fields=True):
    """The whole config.toml."""

    default_provider: str | None = None
    providers: dict[str, ProviderEntry] = {}
    settings: Settings = msgspec.field(default_factory=Settings)
    sandbox: SandboxSettings = msgspec.field(default_factory=SandboxSettings)
    limits: LimitsSettings = msgspec.field(default_factory=LimitsSettings)
    mcp: McpTable = msgspec.field(default_factory=lambda: McpTable())
    hooks: HooksTable = msgspec.field(default_factory=HooksTable)


def config_path(env: Mapping[str, str]) -> Path:
    """Where the config file lives for this environment."""
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or os.path.expanduser("~")) / ".config")
    return Path(base) / "dashfloat" / "config.toml"


_AT = re.compile(r"^(?P<what>.*?)(?: - at `\$(?P<path>[^`]*)`)?$")


def _fields_at(prefix: str, where: str) -> list[str]:
    """The field names the table at ``prefix`` + ``where`` takes (for a suggestion when one is misspelt)."""
    if prefix:
        return [f.name for f in msgspec.structs.fields(ProviderEntry)]
    tables: dict[str, type[msgspec.Struct]] = {
        "": ConfigFile,
        ".settings": Settings,
        ".sandbox": SandboxSettings,
        ".limits": LimitsSettings,
        ".hooks": HooksTable,
    }
    table = tables.get(where)
    return [] if table is None else [f.name for f in msgspec.structs.fields(table)]


_TOML_TYPES: Final = {
    "str": "a string",
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "object": "a table",
    "array": "an array",
}
"""msgspec's JSON names for a config value's type, as a TOML file's reader knows them (null has none: absent)."""


def in_toml_words(what: str) -> str:
    """msgspec's ``Expected `int | null`, got `str``` as ``Expected an integer, got a string``; else unchanged."""
    types = re.fullmatch(r"Expected `([^`]*)`, got `([^`]*)`", what)
    if types is None:
        return what
    expected = [_TOML_TYPES.get(name, name) for name in types.group(1).split(" | ") if name != "null"]
    got = _TOML_TYPES.get(types.group(2), types.group(2))
    return f"Expected {' or '.join(expected) or 'nothing'}, got {got}"


def _field_error(path: Path, prefix: str, exc: msgspec.ValidationError) -> ConfigError:
    """msgspec's ``Expected `str`, got `int` - at `$.model``` as ``file: providers.x.model: expected a string, got an
    integer`` (the field's dotted name, the types in TOML's words)."""
    match = _AT.match(str(exc))
    what = in_toml_words(match.group("what") if match else str(exc))
    where = (match.group("path") or "") if match else ""
    unknown = re.match(r"Object contains unknown field `([^`]*)`", what)
    if unknown:
        import difflib  # only for a misspelt field: not on every start's path (issue 19)

        close = difflib.get_close_matches(unknown.group(1), _fields_at(prefix, where), n=2, cutoff=0.6)
        where += "." + unknown.group(1)
        what = f"unknown field (did you mean {' or '.join(close)}?)" if close else "unknown field"
        if unknown.group(1) == "api_key":
            what = "keys are never stored in the file: export the key and name its variable in api_key_env"
    missing = re.match(r"Object missing required field `([^`]*)`", what)
    if missing:
        where += "." + missing.group(1)
        what = "required field is missing"
    field = ".".join(p for p in (prefix, where.strip(".")) if p) or "(top level)"
    for name, choices in (
        ("tool_calls", ToolCallMode),
        ("reasoning_echo", ReasoningEcho),
        ("reasoning_effort", ReasoningEffort),
    ):
        if field.endswith(f".{name}") and what.startswith("Invalid enum value"):
            what += f" (use one of: {', '.join(get_args(choices))})"
    return ConfigError(f"{path}: {field}: {what.replace('`', '')[:1].lower() + what.replace('`', '')[1:]}")


def _check_url(where: str, url: str) -> str:
    """``url`` without its trailing slash; ``where`` names what set it (``file: field``, a flag, a variable)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"{where}: {url!r} is not an http:// or https:// URL")
    return url.rstrip("/")


ENV_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""What ``[sandbox] pass_env`` entries must look like: a variable's name, never a pattern."""

TOML_MAX_BYTES = 1024 * 1024
"""The largest configuration or rule file read (a real one is a few hundred bytes); a larger one is an error."""


def read_toml(path: Path) -> dict[str, Any] | None:
    """A TOML file of ours as a table, or None when it does not exist; any other failure names the file.

    A project's own file comes from a repository someone else wrote: it is read only if it is a regular file (a FIFO
    would hang the start, a link to /dev/zero never end), at most TOML_MAX_BYTES, and nesting too deep for the parser
    is an error like any other."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror}") from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ConfigError(f"{path}: (file): not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as file:
            raw = file.read(TOML_MAX_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror}") from exc
    finally:
        os.close(fd)
    if len(raw) > TOML_MAX_BYTES:
        raise ConfigError(f"{path}: (file): larger than {TOML_MAX_BYTES} bytes")
    # Imported here: every process imports this module before the agent's fork, and only the main process reads a
    # file, only when there is one (issue 19).
    import tomllib

    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: (file): not UTF-8 text") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: (file): not valid TOML: {exc}") from exc
    except RecursionError as exc:
        raise ConfigError(f"{path}: (file): not valid TOML: nested too deeply") from exc


def load_config(env: Mapping[str, str]) -> ConfigFile | None:
    """The decoded config file, or None when there is none."""
    path = config_path(env)
    document = read_toml(path)
    if document is None:
        return None
    providers = document.pop("providers", {})
    if not isinstance(providers, dict):
        raise ConfigError(f"{path}: providers: expected a table of [providers.NAME] tables")
    try:
        config = msgspec.convert(document, ConfigFile)
    except msgspec.ValidationError as exc:
        raise _field_error(path, "", exc) from exc
    entries: dict[str, ProviderEntry] = {}
    for name, table in providers.items():
        try:
            entry = msgspec.convert(table, ProviderEntry)
        except msgspec.ValidationError as exc:
            raise _field_error(path, f"providers.{name}", exc) from exc
        entry.base_url = _check_url(f"{path}: providers.{name}.base_url", entry.base_url)
        if entry.context_window is not None and entry.context_window <= 0:
            raise ConfigError(f"{path}: providers.{name}.context_window: must be a positive number of tokens")
        if entry.max_tokens is not None and entry.max_tokens < 0:
            raise ConfigError(f"{path}: providers.{name}.max_tokens: must be a number of tokens (0: never sent)")
        _check_sampling(f"{path}: providers.{name}", entry)
        entries[name] = entry
    config.providers = entries
    if not (math.isfinite(config.settings.idle_timeout_s) and config.settings.idle_timeout_s > 0):
        raise ConfigError(f"{path}: settings.idle_timeout_s: must be a positive number of seconds")
    first_byte = config.settings.first_byte_timeout_s
    if first_byte is not None and not (math.isfinite(first_byte) and first_byte > 0):
        raise ConfigError(f"{path}: settings.first_byte_timeout_s: must be a positive number of seconds")
    low, high = COMPACT_AT_PERCENT_RANGE
    if not low <= config.settings.compact_at_percent <= high:
        raise ConfigError(f"{path}: settings.compact_at_percent: must be between {low} and {high}")
    for field, (low, high) in LIMITS_RANGES.items():
        value = getattr(config.limits, field)
        if value is not None and not low <= value <= high:
            raise ConfigError(f"{path}: limits.{field}: must be between {low} and {high}")
    check_hooks(path, config.hooks)
    for index, name in enumerate(config.sandbox.pass_env):
        if not ENV_NAME.fullmatch(name):
            raise ConfigError(f"{path}: sandbox.pass_env[{index}]: {name!r} is not an environment variable's name")
    _check_sandbox_access(path, config.sandbox, env)
    check_mcp(path, config.mcp)
    if config.default_provider is not None and config.default_provider not in entries:
        raise ConfigError(
            f"{path}: default_provider: no provider named {config.default_provider!r} "
            f"(known: {', '.join(sorted(entries)) or 'none'})"
        )
    return config


def _check_sandbox_access(path: Path, sandbox: SandboxSettings, env: Mapping[str, str]) -> None:
    """``[sandbox]``'s domains and writable paths (issue 35), a malformed one named with its field."""
    for field in ("allow_domains", "deny_domains"):
        for index, entry in enumerate(getattr(sandbox, field)):
            if problem := domain_problem(entry):
                raise ConfigError(f"{path}: sandbox.{field}[{index}]: {entry!r} {problem}")
    home = env.get("HOME") or os.path.expanduser("~")
    path_dirs = env.get("PATH", "").split(os.pathsep)
    for index, entry in enumerate(sandbox.writable):
        if problem := writable_problem(entry, home, path_dirs):
            raise ConfigError(f"{path}: sandbox.writable[{index}]: {entry!r} {problem}")


def _check_sampling(where: str, entry: ProviderEntry) -> None:
    """``temperature``, ``top_p`` and ``extra_body`` of one provider, each refused by name when out of its range."""
    low, high = TEMPERATURE_RANGE
    if entry.temperature is not None and not (math.isfinite(entry.temperature) and low <= entry.temperature <= high):
        raise ConfigError(f"{where}.temperature: must be between {low:g} and {high:g}")
    if entry.top_p is not None and not (math.isfinite(entry.top_p) and 0 < entry.top_p <= 1):
        raise ConfigError(f"{where}.top_p: must be above 0 and at most 1")
    for key in entry.extra_body:
        if key in REQUEST_OWN_FIELDS:
            own = key in ("max_tokens", "temperature", "top_p", "reasoning_effort")
            fix = f"set the provider's own {key} instead" if own else "DashFloat writes it itself"
            raise ConfigError(f"{where}.extra_body.{key}: not allowed here: {fix}")


def _pick_entry(
    flags: ProviderFlags, env: Mapping[str, str], config: ConfigFile | None
) -> tuple[str, ProviderEntry] | None:
    path = config_path(env)
    entries = config.providers if config else {}
    for source, name in (
        ("--provider", flags.provider),
        ("DASHFLOAT_PROVIDER", env.get("DASHFLOAT_PROVIDER")),
    ):
        if name:
            if name not in entries:
                known = ", ".join(sorted(entries)) or "none"
                raise ConfigError(f"{path}: providers.{name}: no such provider (asked for by {source}; known: {known})")
            return name, entries[name]
    if config and config.default_provider:
        return config.default_provider, entries[config.default_provider]
    if len(entries) == 1:
        return next(iter(entries.items()))
    if entries:
        raise ConfigError(
            f"{path}: default_provider: several providers and no default: set default_provider "
            f"or pass --provider ({', '.join(sorted(entries))})"
        )
    return None


def resolve_provider(flags: ProviderFlags, env: Mapping[str, str]) -> ProviderConfig | None:
    """The provider to use, or None when nothing at all is configured (the caller runs the offline demo).

    Precedence, field by field: a flag, then the environment, then the file. A provider chosen with
    ``--provider`` is taken as written in the file: only other flags change it, not the environment.
    """
    config = load_config(env)
    picked = _pick_entry(flags, env, config)
    by_flag = flags.provider is not None
    env_url = None if by_flag else env.get("OPENAI_BASE_URL")
    env_model = None if by_flag else env.get("DASHFLOAT_MODEL")
    base_url = flags.base_url or env_url or (picked[1].base_url if picked else None)
    model = flags.model or env_model or (picked[1].model if picked else None)
    if picked is None and base_url is None and model is None and not env.get(KEY_ENV):
        return None
    origin = "--base-url" if flags.base_url else "OPENAI_BASE_URL" if env_url else None
    base_url = _check_url(origin or f"{config_path(env)}: base_url", base_url or OPENAI_BASE_URL)
    if model is None:
        if base_url != OPENAI_BASE_URL:
            # Named by where the URL came from: a config file that does not exist has no model to add.
            where = f"{config_path(env)}: providers.{picked[0]}.model" if picked else (origin or "base_url")
            raise ConfigError(
                f"{where}: no model for {base_url}: pass --model NAME, set DASHFLOAT_MODEL, or add model to the "
                "provider"
            )
        model = OPENAI_DEFAULT_MODEL
    if picked is not None:
        name, entry = picked
        effort = flags.reasoning_effort or entry.reasoning_effort
        return ProviderConfig(
            name=name,
            base_url=base_url,
            model=model,
            api_key_env=entry.api_key_env,
            context_window=entry.context_window,
            context_window_from=(
                f"configured, providers.{name}.context_window in {config_path(env)}"
                if entry.context_window is not None
                else ""
            ),
            headers=dict(entry.headers),
            max_tokens=entry.max_tokens,
            tool_calls=entry.tool_calls,
            reasoning_echo=entry.reasoning_echo,
            reasoning_effort=effort,
            temperature=entry.temperature,
            top_p=entry.top_p,
            extra_body=dict(entry.extra_body),
        )
    name = "openai" if base_url == OPENAI_BASE_URL else (urlsplit(base_url).netloc or "custom")
    return ProviderConfig(
        name=name, base_url=base_url, model=model, api_key_env=KEY_ENV, reasoning_effort=flags.reasoning_effort
    )


def idle_timeout_s(env: Mapping[str, str]) -> float:
    """The stream idle timeout: ``DASHFLOAT_IDLE_TIMEOUT_S``, else ``[settings]``, else 60 s."""
    raw = env.get("DASHFLOAT_IDLE_TIMEOUT_S")
    if raw:
        try:
            value = float(raw)
        except ValueError:
            value = -1.0
        if not (math.isfinite(value) and value > 0):
            raise ConfigError(f"DASHFLOAT_IDLE_TIMEOUT_S: {raw!r} is not a positive number of seconds")
        return value
    config = load_config(env)
    return config.settings.idle_timeout_s if config else DEFAULT_IDLE_TIMEOUT_S


def shift_tab_all(env: Mapping[str, str]) -> bool:
    """Whether Shift-Tab's mode cycle reaches ``all``: ``[settings] shift_tab_all``, default false (issue 37)."""
    config = load_config(env)
    return config.settings.shift_tab_all if config else False


def read_only_commands(env: Mapping[str, str]) -> bool:
    """Whether read-only commands run unasked: ``[settings] read_only_commands``, default true."""
    config = load_config(env)
    return config.settings.read_only_commands if config else True


def sandbox_settings(env: Mapping[str, str]) -> SandboxSettings:
    """The ``[sandbox]`` table, or its defaults when there is no config file."""
    config = load_config(env)
    return config.sandbox if config else SandboxSettings()


def provider_key_envs(env: Mapping[str, str], current: ProviderConfig) -> list[str]:
    """Every variable a provider's key is read from (``KEY_ENV``, the current provider's, every configured one's):
    no command ever gets one, whatever ``[sandbox] pass_env`` says."""
    config = load_config(env)
    named = [KEY_ENV, current.api_key_env or ""]
    named += [entry.api_key_env or "" for entry in (config.providers.values() if config else ())]
    return sorted({name for name in named if name})


def command_limits(env: Mapping[str, str]) -> CommandLimits:
    """The ``[limits]`` table, or the defaults when there is no config file."""
    config = load_config(env)
    return msgspec.convert(msgspec.to_builtins(config.limits), CommandLimits) if config else CommandLimits()


def idle_timeout_from(env: Mapping[str, str]) -> str:
    """Which setting the idle timeout came from, as a person would change it (empty: the default)."""
    if env.get("DASHFLOAT_IDLE_TIMEOUT_S"):
        return "DASHFLOAT_IDLE_TIMEOUT_S (set in the environment)"
    config = load_config(env)
    if config and config.settings.idle_timeout_s != DEFAULT_IDLE_TIMEOUT_S:
        return f"settings.idle_timeout_s in {config_path(env)}"
    return ""


def is_local_url(url: str) -> bool:
    """Loopback, private and link-local hosts (and ``localhost``): local servers, patient deadlines."""
    host = urlsplit(url).hostname or ""
    if host == "localhost" or host.endswith((".localhost", ".local")):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


def first_byte_timeout_s(env: Mapping[str, str], base_url: str) -> float:
    """The first-byte deadline: ``[settings] first_byte_timeout_s``, else by host (local or public)."""
    config = load_config(env)
    configured = config.settings.first_byte_timeout_s if config else None
    if configured is not None:
        return configured
    return FIRST_BYTE_TIMEOUT_LOCAL_S if is_local_url(base_url) else FIRST_BYTE_TIMEOUT_PUBLIC_S


# MCP client (ADR 0086): ``[mcp.servers.NAME]`` in config.toml (and in a project's .dashfloat/mcp.toml, approved once)

MCP_SERVER_NAME: Final = re.compile(r"[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*")
"""A server's name: it is part of every tool's ``mcp__<server>__<tool>`` name, so no ``__`` and nothing a provider
refuses in a function name."""
MCP_SERVER_NAME_MAX_CHARS: Final = 24
MCP_CALL_TIMEOUT_MAX_S: Final = 3600.0
"""The longest ``timeout_s`` a server may be given."""


class McpServerEntry(msgspec.Struct, forbid_unknown_fields=True):
    """One ``[mcp.servers.NAME]`` table: a stdio server (``command``, ``args``, ``env``) or an HTTP one (``url``)."""

    command: str = ""
    args: list[str] = []
    env: dict[str, str] = {}
    """Variables the server gets besides the few the SDK passes (HOME, PATH, USER, ...): never the whole environment."""
    url: str = ""
    headers_env: dict[str, str] = {}
    """HTTP headers, each read from the environment variable named: ``{ Authorization = "GITHUB_MCP_TOKEN" }``."""
    start: Literal["lazy", "startup"] = "startup"
    sandbox: bool = True
    network: bool = False
    timeout_s: float = MCP_CALL_TIMEOUT_S


class McpTable(msgspec.Struct, forbid_unknown_fields=True):
    """The ``[mcp]`` table."""

    servers: dict[str, McpServerEntry] = {}


def check_mcp(path: Path, table: McpTable) -> None:
    """Each server's name and fields, a bad one named with its table."""
    for name, entry in table.servers.items():
        where = f"{path}: mcp.servers.{name}"
        if not MCP_SERVER_NAME.fullmatch(name) or len(name) > MCP_SERVER_NAME_MAX_CHARS:
            raise ConfigError(
                f"{where}: a server's name is letters, digits, - and single _ (at most {MCP_SERVER_NAME_MAX_CHARS})"
            )
        if bool(entry.command) == bool(entry.url):
            raise ConfigError(f"{where}: give either command (a stdio server) or url (an HTTP server)")
        if entry.url:
            _check_url(f"{where}.url", entry.url)
        if not (math.isfinite(entry.timeout_s) and 0 < entry.timeout_s <= MCP_CALL_TIMEOUT_MAX_S):
            raise ConfigError(f"{where}.timeout_s: must be above 0 and at most {MCP_CALL_TIMEOUT_MAX_S:g} seconds")
        for header, variable in entry.headers_env.items():
            if not ENV_NAME.fullmatch(variable):
                raise ConfigError(f"{where}.headers_env.{header}: {variable!r} is not an environment variable's name")


def mcp_configs(table: McpTable, source: str) -> list[McpServerConfig]:
    """The servers of one ``[mcp]`` table, as the executor runs them."""
    return [
        McpServerConfig(name=name, source=source, **{f: getattr(e, f) for f in e.__struct_fields__})
        for name, e in table.servers.items()
    ]


def mcp_servers(env: Mapping[str, str]) -> list[McpServerConfig]:
    """The user's MCP servers (``[mcp.servers.NAME]`` in config.toml); none without a config file."""
    config = load_config(env)
    return mcp_configs(config.mcp, str(config_path(env))) if config else []


def compact_at_percent(env: Mapping[str, str]) -> int:
    """The automatic compaction threshold, percent of the window."""
    config = load_config(env)
    return config.settings.compact_at_percent if config else DEFAULT_COMPACT_AT_PERCENT
