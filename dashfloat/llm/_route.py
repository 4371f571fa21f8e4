"""Which transport a request takes (ADR 0048): the plain route's rule, the start's guess of it, and the choice.

``_transport`` says what a transport is and knows no implementation; ``_plain`` (http.client) and ``_http``
(requests) implement it, and this module alone names them. A request takes the plain route when ``requests``
would add nothing: ``http://`` to a local host, no proxy variable, no netrc file (the window probes' rule, ADR
0045), unless FORCE_REQUESTS_ENV is set; everything else (TLS, hosted APIs, proxies, netrc) goes through requests.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

from dashfloat.config import ConfigError, ProviderFlags, is_local_url, resolve_provider
from dashfloat.llm._transport import Transport

FORCE_REQUESTS_ENV: Final = "DASHFLOAT_HTTP_VIA_REQUESTS"
"""Set (to anything) in the LLM process's environment: every request goes through requests, the plain route never
(tests and the bench compare the two routes with it). It can only choose the route that handles everything."""
PROXY_VARIABLES: Final = ("http_proxy", "all_proxy")
"""Environment variables (either case) that make ``requests`` send a plain-HTTP request through a proxy."""
DEMO_BASE_URL: Final = "http://127.0.0.1/v1"
"""Where the offline demo model answers (its port is chosen as it starts): a local plain-HTTP server."""
PROVIDER_FLAGS: Final = ("--provider", "--base-url", "--model")


def plain_probes(base_url: str, env: Mapping[str, str], home: Path | None = None) -> bool:
    """Whether the discovery may ask ``base_url`` through http.client: a local plain-HTTP server, and nothing in
    the environment that ``requests`` would have used (a proxy, a netrc file)."""
    if urlsplit(base_url).scheme != "http" or not is_local_url(base_url):
        return False
    if any(env.get(name) or env.get(name.upper()) for name in PROXY_VARIABLES):
        return False
    if env.get("NETRC"):
        return False
    home = home if home is not None else Path(env.get("HOME") or Path.home())
    return not any((home / name).exists() for name in (".netrc", "_netrc"))


def plain_route(base_url: str, env: Mapping[str, str], home: Path | None = None) -> bool:
    """Whether requests to ``base_url`` go through http.client: the window probes' rule (a local plain-HTTP server,
    no proxy variable, no netrc file), unless FORCE_REQUESTS_ENV is set."""
    return not env.get(FORCE_REQUESTS_ENV) and plain_probes(base_url, env, home)


def provider_flags(argv: Sequence[str]) -> ProviderFlags | None:
    """The flags that choose the provider, as written in ``argv`` (``--flag VALUE`` or ``--flag=VALUE``); None for
    ``--demo``. What the command line will decide: argparse takes no abbreviations, and the words after the first
    ``--`` are a prompt (``cli.parse_args``)."""
    found: dict[str, str] = {}
    if "--" in argv:
        argv = argv[: list(argv).index("--")]
    for index, arg in enumerate(argv):
        if arg == "--demo":
            return None
        name, equals, value = arg.partition("=")
        if name in PROVIDER_FLAGS:
            if not equals:
                value = argv[index + 1] if index + 1 < len(argv) else ""
            found[name] = value
    return ProviderFlags(found.get("--provider"), found.get("--base-url"), found.get("--model"))


def expects_plain_route(argv: Sequence[str], env: Mapping[str, str]) -> bool:
    """Whether this run's provider will take the plain route, read from the command line, the environment and the
    configuration as the main process will read them. The LLM process asks as it starts, before its options come,
    to import one route's stack only (ADR 0048); a wrong guess costs the other route's import when a request needs
    it, never the wrong route (each request takes its own, ``transport_for``). A configuration that cannot be read
    says requests (the run will stop on it anyway)."""
    flags = provider_flags(argv)
    if flags is None:
        return plain_route(DEMO_BASE_URL, env)
    try:
        provider = resolve_provider(flags, env)
    except (ConfigError, OSError, ValueError):
        return False
    return plain_route(provider.base_url if provider is not None else DEMO_BASE_URL, env)


def transport_for(base_url: str, env: Mapping[str, str]) -> Transport:
    """This process's transport for ``base_url``; each implementation is imported the first time a request takes
    its route, on the stream's thread (the serve loop imports this module as it starts)."""
    if plain_route(base_url, env):
        from dashfloat.llm._plain import PLAIN  # lazy: a process on the requests route never imports it (ADR 0048)

        return PLAIN
    from dashfloat.llm._http import REQUESTS  # lazy: requests never on the serve loop's path (ADR 0045, 0048)

    return REQUESTS
