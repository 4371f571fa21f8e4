"""Asking a server for its context window: a few short requests in worker threads, answered once per model.

The parsers are in ``_window``; this module only makes the requests: a hosted API is asked one (``/models``), a
local server five at once, each with DISCOVERY_TIMEOUT_S.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

import msgspec
import requests

from dashfloat.config import is_local_url
from dashfloat.jsonvalue import JsonValue
from dashfloat.llm import _window as w
from dashfloat.llm._http import process_session
from dashfloat.protocol import DiscoverWindow, ProviderConfig, WindowFound

Probe = Callable[[JsonValue], object]


def _get(
    session: requests.Session, method: str, url: str, headers: dict[str, str], json: JsonValue = None
) -> JsonValue:
    """The decoded JSON body of a 200, or None (any failure means "this server does not say")."""
    try:
        response = session.request(
            method, url, headers=headers, json=json, timeout=(w.DISCOVERY_TIMEOUT_S, w.DISCOVERY_TIMEOUT_S)
        )
        if response.status_code != 200:
            return None
        body: JsonValue = msgspec.json.decode(response.content[: 4 * 1024 * 1024])
        return body
    except (requests.RequestException, msgspec.DecodeError, OSError, ValueError):
        return None


def _probe_alone(method: str, url: str, headers: dict[str, str], json: JsonValue, into: list[JsonValue]) -> None:
    """One probe in a thread of its own, on a Session of its own closed after: no connection is left open at the
    server (llama.cpp's HTTP server holds a thread for each)."""
    session = requests.Session()
    try:
        into.append(_get(session, method, url, headers, json))
    finally:
        session.close()


def _ask_all(asks: list[tuple[str, str, JsonValue]], headers: dict[str, str]) -> list[JsonValue]:
    """Each (method, URL, JSON body)'s answer, all asked at once: the first on this process's Session (the chat
    request that follows reuses its connection), the others each in a thread."""
    answers: list[list[JsonValue]] = [[] for _ in asks[1:]]
    threads = [
        threading.Thread(target=_probe_alone, args=(method, url, headers, body, into), daemon=True)
        for (method, url, body), into in zip(asks[1:], answers, strict=True)
    ]
    for thread in threads:
        thread.start()
    method, url, body = asks[0]
    first = _get(process_session(), method, url, headers, body)
    for thread in threads:
        thread.join()
    return [first, *(into[0] if into else None for into in answers)]


def discover(provider: ProviderConfig, request_id: int = 0, props: dict[str, JsonValue] | None = None) -> WindowFound:
    """Ask the server behind ``provider`` (blocking; a hosted API one request, a local server five at once).

    ``props``: where to leave a local server's ``/props`` body (None when it gave none) under the provider's base
    URL, so that the stream's look at the chat template does not ask again.
    """
    headers = {"Accept": "application/json", **provider.headers}
    key = os.environ.get(provider.api_key_env) if provider.api_key_env else None
    if key:
        headers["Authorization"] = f"Bearer {key}"
    base = provider.base_url.rstrip("/")
    root = w.server_root(base)
    model = provider.model
    local = is_local_url(base)
    probes: list[tuple[str, str, str, Probe]] = [
        ("/models", "GET", f"{base}/models", lambda b: w.openai_models(b, model)),
    ]
    if local:
        probes += [
            ("llama.cpp /props n_ctx", "GET", f"{root}/props", w.llamacpp_props),
            ("LM Studio /api/v0/models", "GET", f"{root}/api/v0/models", lambda b: w.lmstudio_models(b, model)),
            ("Ollama /api/ps context_length", "GET", f"{root}/api/ps", lambda b: w.ollama_ps(b, model)),
        ]
    asks: list[tuple[str, str, JsonValue]] = [(method, url, None) for _, method, url, _ in probes]
    if local:
        asks.append(("POST", f"{root}/api/show", {"model": model}))
    # Asked at once (one after the other they were five round trips to a server that may be busy loading a model),
    # read in this order: the first sane answer wins as before.
    bodies = _ask_all(asks, headers)
    if local and props is not None:
        props[provider.base_url] = bodies[1]
    notices: list[str] = []
    for (detail, _, url, parse), body in zip(probes, bodies, strict=False):
        value = parse(body)
        if (window := w.sane(value)) is not None:
            return WindowFound(request_id, window, "server", detail, "; ".join(notices))
        if w.reported(value):
            notices.append(f"ignored a context window of {value!r} reported by {url}")
    if local:
        value, which = w.ollama_show(bodies[-1])
        if (window := w.sane(value)) is not None:
            return WindowFound(request_id, window, "server", f"Ollama /api/show {which}", "; ".join(notices))
        if w.reported(value):
            notices.append(f"ignored a context window of {value!r} reported by {root}/api/show")
    notice = "; ".join(notices)
    table = w.known_window(model)
    if table is not None:
        return WindowFound(request_id, table, "table", f"known window of {model}", notice)
    return WindowFound(request_id, w.DEFAULT_ASSUMED_WINDOW, "assumed", "nothing reported", notice)


class Discovery:
    """One DiscoverWindow answered from a worker thread; ``done`` is called with the reply."""

    def __init__(
        self,
        ask: DiscoverWindow,
        done: Callable[[DiscoverWindow, WindowFound], None],
        props: dict[str, JsonValue] | None = None,
    ) -> None:
        self._ask = ask
        self._done = done
        self._props = props
        self._thread = threading.Thread(target=self._run, name=f"llm-window-{ask.request_id}", daemon=True)

    def begin(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        try:
            found = discover(self._ask.provider, self._ask.request_id, self._props)
        except Exception as exc:  # answer whatever broke: the agent waits for this reply
            found = WindowFound(
                self._ask.request_id,
                w.DEFAULT_ASSUMED_WINDOW,
                "assumed",
                "discovery failed",
                f"window discovery: {exc}",
            )
        self._done(self._ask, found)
