"""What a sandboxed command may reach beyond its workspace: the registries' host names and the writable tool caches
(pure: config checks them at start, the executor applies them, the proxy matches hosts; ADR 0082).

Hosts: an allowlist of names (``pypi.org``, or ``*.example.org`` for its subdomains), never an address. Paths: the
named presets' cache directories and the user's own ``[sandbox] writable`` entries, never a credential store, a shell
start-up file, DashFloat's own config and state, a ``.git`` directory, a ``PATH`` directory or the home itself.
"""

from __future__ import annotations

import ipaddress
import os
import posixpath
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Final, Literal

if TYPE_CHECKING:  # the proxy's process imports this module, and starts faster without the whole contract
    from dashfloat.protocol import NetworkMode, SandboxState


DEFAULT_ALLOW_DOMAINS: Final = (
    # Python: the index and its file host
    "pypi.org",
    "files.pythonhosted.org",
    # JavaScript
    "registry.npmjs.org",
    "registry.yarnpkg.com",
    # Rust: the index, the API and the crate files
    "crates.io",
    "index.crates.io",
    "static.crates.io",
    # Go: the module proxy and the checksum database
    "proxy.golang.org",
    "sum.golang.org",
    # Java: Maven Central and Gradle's plugin portal
    "repo.maven.apache.org",
    "repo1.maven.org",
    "plugins.gradle.org",
    "plugins-artifacts.gradle.org",
    # Ruby
    "rubygems.org",
    "index.rubygems.org",
)
"""The package registries of the major ecosystems: what ``--network registries`` reaches unless config changes it."""

DOMAIN_MAX_CHARS: Final = 253
"""The longest host name DNS allows; a longer allowlist entry is malformed."""
_LABEL_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")

Preset = Literal["npm", "cargo", "go", "uv", "pip", "gradle", "maven"]
WRITABLE_PRESETS: Final[Mapping[str, tuple[str, ...]]] = {
    "npm": ("~/.npm",),
    "cargo": ("~/.cargo/registry", "~/.cargo/git"),
    "go": ("~/go/pkg/mod", "~/.cache/go-build"),
    "uv": ("~/.cache/uv",),
    "pip": ("~/.cache/pip",),
    "gradle": ("~/.gradle/caches", "~/.gradle/wrapper"),
    "maven": ("~/.m2/repository",),
}
"""Each preset's cache directories: never the tool's config or credentials (``~/.npmrc``, ``~/.cargo/credentials``,
``~/.m2/settings.xml``, ``~/.gradle/gradle.properties``) nor its ``bin`` (``~/.cargo/bin``, ``~/go/bin``)."""

NEVER_WRITABLE: Final = (
    # credential stores (the sandbox hides most of them: _sandbox.DEFAULT_DENY_READ)
    "~/.ssh",
    "~/.gnupg",
    "~/.aws",
    "~/.azure",
    "~/.kube",
    "~/.docker",
    "~/.netrc",
    "~/.git-credentials",
    "~/.pypirc",
    "~/.npmrc",
    "~/.config/gh",
    "~/.config/gcloud",
    "~/.password-store",
    "~/.local/share/keyrings",
    "~/.cargo/credentials",
    "~/.cargo/credentials.toml",
    "~/.m2/settings.xml",
    "~/.gradle/gradle.properties",
    "~/.gradle/init.d",
    # what runs at the next shell, login or git command, outside any sandbox
    "~/.bashrc",
    "~/.bash_profile",
    "~/.bash_login",
    "~/.bash_logout",
    "~/.profile",
    "~/.zshrc",
    "~/.zshenv",
    "~/.zprofile",
    "~/.zlogin",
    "~/.config/fish",
    "~/.gitconfig",
    "~/.config/git",
    "~/.config/systemd",
    "~/.config/autostart",
    # DashFloat's own rules, config and sessions: a command must not grant itself permissions
    "~/.config/dashfloat",
    "~/.local/state/dashfloat",
)
"""Paths no ``writable`` entry may be, hold or lie in (``~`` is the home): ``writable_problem`` names the one hit."""

SYSTEM_ROOTS: Final = ("/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/proc", "/root", "/sys", "/usr", "/var")
"""Outside the home a ``writable`` entry must be named by the user, and never one of these whole trees."""


def expand_home(path: str, home: str) -> str:
    """``path`` with a leading ``~`` made ``home``, normalised (links are not followed)."""
    if path == "~" or path.startswith("~/"):
        path = home.rstrip("/") + path[1:]
    return posixpath.normpath(path) if path else path


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def writable_problem(path: str, home: str, path_dirs: Sequence[str] = (), named: bool = True) -> str:
    """Why ``path`` (as written: absolute or ``~/…``) can never be writable, or ``""``. ``path_dirs``: the ``PATH``
    directories (a program planted there would run outside the sandbox); ``named``: written by the user (outside the
    home only a named path may be writable)."""
    if not (path.startswith("/") or path == "~" or path.startswith("~/")):
        return "is not an absolute path or one under ~/"
    home_real = os.path.realpath(home) if home else ""
    # Links followed: a ~/.cache that is a link to ~/.ssh is ~/.ssh.
    real = os.path.realpath(expand_home(path, home))
    if ".git" in real.split("/"):
        return "is inside a .git directory (its hooks and config run programs at your next git command)"
    if home_real and real == home_real:
        return "is the whole home directory"
    for never in NEVER_WRITABLE:
        denied = os.path.realpath(expand_home(never, home))
        if _within(real, denied):
            return f"is {never} or inside it: a credential store, a start-up file or DashFloat's own"
        if _within(denied, real):
            return f"holds {never}: a credential store, a start-up file or DashFloat's own"
    for entry in path_dirs:
        if entry.startswith("/") and _within(os.path.realpath(entry), real):
            return f"holds the PATH directory {entry} (a program planted there would run outside the sandbox)"
    inside_home = bool(home_real) and _within(real, home_real)
    if not inside_home and (real in SYSTEM_ROOTS or (bool(home_real) and _within(home_real, real))):
        return "is a system directory (or holds the home)"
    if not inside_home and not named:
        return "is outside the home directory (only a path you name in [sandbox] writable may be)"
    return ""


def writable_paths(
    presets: Iterable[str], named: Iterable[str], home: str, path_dirs: Sequence[str] = ()
) -> tuple[list[str], list[str]]:
    """The absolute paths the presets and the user's entries make writable (in order, once each), and a line for each
    one dropped because it can never be (config refuses these at start; a link made since is caught here)."""
    kept: list[str] = []
    dropped: list[str] = []
    wanted = [(path, False) for preset in presets for path in WRITABLE_PRESETS.get(preset, ())]
    wanted += [(path, True) for path in named]
    for path, by_name in wanted:
        problem = writable_problem(path, home, path_dirs, named=by_name)
        if problem:
            dropped.append(f"{path} {problem}")
            continue
        real = os.path.realpath(expand_home(path, home))
        if real not in kept:
            kept.append(real)
    return kept, dropped


def is_ip_literal(host: str) -> bool:
    """Whether ``host`` is an address rather than a name (``10.0.0.1``, ``[::1]``, ``::1``)."""
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def domain_problem(entry: str) -> str:
    """Why ``entry`` is no allowlist entry (``pypi.org``, ``*.example.org``), or ``""``."""
    name = entry.removeprefix("*.")
    if not name:
        return "is empty"
    if is_ip_literal(name):
        return "is an address: the allowlist holds host names"
    if len(name) > DOMAIN_MAX_CHARS:
        return f"is longer than {DOMAIN_MAX_CHARS} characters"
    if name != name.lower():
        return "has upper-case letters (write host names in lower case)"
    labels = name.split(".")
    if "*" in name:
        return "has a * other than a leading '*.'"
    if len(labels) < 2 or any(not label or label.startswith("-") or label.endswith("-") for label in labels):
        return "is not a host name such as pypi.org or *.example.org"
    if any(set(label) - _LABEL_CHARS for label in labels):
        return "has characters a host name cannot hold"
    return ""


def domain_matches(host: str, entry: str) -> bool:
    """Whether ``host`` is ``entry`` (or, for ``*.example.org``, one of its subdomains)."""
    host = host.lower().rstrip(".")
    if entry.startswith("*."):
        return host.endswith(entry[1:])
    return host == entry


def allowed_domains(allow: Iterable[str], deny: Iterable[str], defaults: bool = True) -> list[str]:
    """The allowlist in force: the defaults (``defaults``) and ``allow``, less the entries ``deny`` names exactly."""
    denied = set(deny)
    found = [*(DEFAULT_ALLOW_DOMAINS if defaults else ()), *allow]
    return [entry for entry in dict.fromkeys(found) if entry not in denied]


def host_allowed(host: str, allow: Sequence[str], deny: Sequence[str]) -> str:
    """Why the proxy refuses ``host``, or ``""`` when it lets it through: an address, a name ``deny`` matches, or one
    no ``allow`` entry does."""
    if is_ip_literal(host):
        return f"{host} is an address: the sandbox's proxy reaches host names on its allowlist only"
    if any(domain_matches(host, entry) for entry in deny):
        return f"{host} is denied ([sandbox] deny_domains)"
    if not any(domain_matches(host, entry) for entry in allow):
        return f"{host} is not on the sandbox's allowlist ([sandbox] allow_domains)"
    return ""


def with_access(
    state: SandboxState,
    network_mode: NetworkMode,
    allow: Sequence[str],
    deny: Sequence[str],
    presets: Sequence[str],
    writable: Sequence[str],
    env: Mapping[str, str],
) -> SandboxState:
    """The session's sandbox with its network mode, allowlist and writable paths (``[sandbox]`` and ``--network``)."""
    home = env.get("HOME") or os.path.expanduser("~")
    paths, _ = writable_paths(presets, writable, home, env.get("PATH", "").split(os.pathsep))
    import msgspec

    return msgspec.structs.replace(
        state,
        network=network_mode == "on",
        network_mode=network_mode,
        allow_domains=allowed_domains(allow, deny) if network_mode == "registries" else [],
        deny_domains=sorted(set(deny)),
        writable=paths,
    )


# ---- /status (issue 35; issue 37's StatusFacts takes sandbox_detail and network_detail, one line each)


def sandbox_detail(state: SandboxState) -> str:
    """``/status``'s line of what a sandboxed command may write besides its working directory."""
    if state.mode == "off" or state.unavailable:
        return ""
    if state.mode == "read-only":
        return "writable: a private /tmp only"
    paths = ", ".join(["the working directory (not .git's hooks, config, info)", "a private /tmp", *state.writable])
    return f"writable: {paths}"


def network_detail(state: SandboxState) -> str:
    """``/status``'s line of the network mode and the allowlist."""
    if state.mode == "off" or state.unavailable:
        return ""
    if state.network_mode == "on":
        return "network: all of it, for every command (--network on)"
    if state.network_mode == "off":
        return "network: only for commands you approve with a key (--network off)"
    hosts = ", ".join(state.allow_domains) or "none"
    denied = f"; denied: {', '.join(state.deny_domains)}" if state.deny_domains else ""
    return (
        "network: package registries through the proxy for commands run without a key, all of it for those you "
        f"approve (--network registries); allowed hosts: {hosts}{denied}"
    )


def sandbox_status_lines(state: SandboxState) -> list[str]:
    """``/status``'s sandbox lines in one place: the mode, the writable paths, the network mode and the allowlist."""
    if state.unavailable:
        return [f"sandbox: NOT sandboxed ({state.unavailable})"]
    return [line for line in (f"sandbox: {state.mode}", sandbox_detail(state), network_detail(state)) if line]


# ---- "always for this program": a sandbox grant as a permission rule (issue 35, ADR 0082)

SANDBOX_RULE_TOOL: Final = "sandbox"
"""``sandbox(npm write /home/me/.npm)``, ``sandbox(npm network)``: what every later command of that program gets."""
_NO_GRANT_PROGRAMS: Final = frozenset(
    {"sh", "bash", "zsh", "dash", "ksh", "fish", "env", "sudo", "doas", "su", "xargs", "exec", "eval", "command",
     "nohup", "timeout", "nice", "time", "setsid", "busybox", "cd"}
)  # fmt: skip
"""Programs that run other programs: a grant to them would be a grant to anything."""


def line_program(command: str) -> str:
    """The program of a plain command line (its first word's base name): what "always for this program" names;
    ``""`` for a line with shell syntax (its other commands would get the grant too, as an allow rule never covers
    such a line), one that starts with an assignment or a wrapper."""
    import shlex

    if set(command) & set(";&|<>`$(){}\n\r"):
        return ""
    try:
        words = shlex.split(command)
    except ValueError:
        return ""
    first = words[0] if words else ""
    program = posixpath.basename(first)
    if not program or "=" in first or program in _NO_GRANT_PROGRAMS:
        return ""
    return program


def sandbox_rule_problem(words: Sequence[str], effect: str) -> str:
    """Why ``sandbox(WORDS)`` is no rule (``""`` when it is): ``PROGRAM network`` or ``PROGRAM write PATH``, allow
    only."""
    if effect != "allow":
        return "a sandbox grant can only allow (to refuse a host, use [sandbox] deny_domains)"
    shape_ok = len(words) == 2 and words[1] == "network"
    shape_ok = shape_ok or (len(words) == 3 and words[1] == "write" and words[2].startswith(("/", "~/")))
    if not shape_ok:
        return "expected sandbox(PROGRAM network) or sandbox(PROGRAM write /absolute/path)"
    if line_program(words[0]) != words[0]:
        return f"{words[0]!r} is not a program a grant can name (a wrapper or a shell runs anything)"
    return ""


def granted(prefixes: Iterable[Sequence[str]], command: str, home: str) -> tuple[list[str], bool]:
    """What the sandbox rules (their words) grant ``command``: the writable paths and the network of those naming its
    program."""
    program = line_program(command)
    writable: list[str] = []
    network = False
    for words in prefixes:
        if not program or not words or words[0] != program:
            continue
        if len(words) == 2 and words[1] == "network":
            network = True
        elif len(words) == 3 and words[1] == "write":
            writable.append(expand_home(words[2], home))
    return list(dict.fromkeys(writable)), network
