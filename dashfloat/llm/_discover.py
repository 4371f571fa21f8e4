"""Asking a server for its context window: a few short GETs in a worker thread, answered once per model.

The parsers are in ``_window``; this module only makes the requests, in an order that costs a hosted API
one request (``/models``) and a local server at most five, each with DISCOVERY_TIMEOUT_S, through one of two
getters. A local plain-HTTP server whose requests ``requests`` would add nothing to (``_route.plain_route``: no
proxy variable, no netrc file) is asked through http.client (``PlainProber``, on the plain route's kept connections,
ADR 0048: at once, whatever the process is still importing, and the chat request after them reuses one); anything
else (a hosted API, TLS, a proxy) through ``requests`` once it is imported (``requests_get``, ADR 0045), whose
kept-alive connection the chat request then reuses.
"""

from __future__ import annotations

import http.client
import os
import socket
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Final
from urllib.parse import urljoin, urlsplit

import msgspec

from dashfloat.config import is_local_url
from dashfloat.jsonvalue import JsonValue
from dashfloat.llm import _window as w
from dashfloat.llm._limits import MAX_REDIRECTS
from dashfloat.llm._route import plain_route
from dashfloat.llm._transport import shutdown
from dashfloat.protocol import DiscoverWindow, ProviderConfig, WindowFound

if TYPE_CHECKING:
    import requests

    from dashfloat._startup.preload import Preload

PROBE_BODY_MAX_BYTES: Final = 4 * 1024 * 1024
"""The most of a discovery answer that is read and decoded (a model list with many entries is well below)."""
REDIRECT_STATUSES: Final = (301, 302, 303, 307, 308)
"""Answers whose Location a probe follows (GET only, within the server's origin, at most MAX_REDIRECTS)."""
_CHUNK_BYTES: Final = 64 * 1024
"""How much of a discovery answer ``requests`` is asked for at a time (checked against PROBE_BODY_MAX_BYTES)."""

Probe = Callable[[JsonValue], object]
Get = Callable[[str, str, dict[str, str], JsonValue], JsonValue]
"""``get(method, url, headers, json_body)``: the decoded JSON body of a 200, or None (any failure: "this server
does not say")."""


def follow(url: str, method: str, status: int, location: str | None) -> str | None:
    """Where a probe's answer sends it next: a GET's redirect within the probed server (as the chat request, a
    redirect to another origin is not followed: it would get the provider's headers), else None."""
    if status not in REDIRECT_STATUSES or not location or method != "GET":
        return None
    target = urljoin(url, location)
    return target if urlsplit(target)[:2] == urlsplit(url)[:2] else None


def requests_get(session: requests.Session) -> Get:
    """The getter through ``requests`` (this process's Session: the chat request that follows reuses the
    connection)."""
    import requests  # lazy: this module is on the serve loop's start path, requests on the stack's thread (ADR 0045)

    def get(method: str, url: str, headers: dict[str, str], json: JsonValue = None) -> JsonValue:
        try:
            return ask(method, url, headers, json)
        except (requests.RequestException, msgspec.DecodeError, OSError, ValueError):
            return None

    def ask(method: str, url: str, headers: dict[str, str], json: JsonValue) -> JsonValue:
        for _ in range(MAX_REDIRECTS + 1):
            with session.request(
                method,
                url,
                headers=headers,
                json=json,
                timeout=(w.DISCOVERY_TIMEOUT_S, w.DISCOVERY_TIMEOUT_S),
                stream=True,  # read up to the cap below, not a body of any size into memory
                allow_redirects=False,  # followed below, within the server only
            ) as response:
                data = bytearray()  # read to its end, a refusal's too: the connection is then kept for the chat
                for chunk in response.iter_content(_CHUNK_BYTES):
                    data += chunk
                    if len(data) > PROBE_BODY_MAX_BYTES:
                        return None  # over the cap: not read further (leaving closes the connection)
            next_url = follow(url, method, response.status_code, response.headers.get("Location"))
            if next_url is not None:
                url = next_url
                continue
            if response.status_code != 200:
                return None
            body: JsonValue = msgspec.json.decode(data)
            return body
        return None

    return get


class PlainProber:
    """A discovery's probes through the plain route's connections (``_plain.PLAIN``: kept alive between them and
    for the chat request that follows, replaced when the server closed one); ``get`` has the contract of the
    ``requests`` getter: the JSON body of a 200, else None."""

    def __init__(self, timeout_s: float) -> None:
        self._timeout_s = timeout_s
        self._aborted = False
        self._socket: socket.socket | None = None
        """The socket of the request being answered (http.client lets go of it while a closing answer is read)."""

    def get(self, method: str, url: str, headers: dict[str, str], json: JsonValue = None) -> JsonValue:
        if self._aborted:
            return None
        try:
            return self._ask(method, url, headers, json)
        except (OSError, http.client.HTTPException, msgspec.DecodeError, ValueError):
            return None  # the connection was closed with its answer: not reused for the next probe

    def _on_socket(self, sock: socket.socket) -> None:
        self._socket = sock
        if self._aborted:  # the deadline came while this connected
            shutdown(sock)

    def _ask(self, method: str, url: str, headers: dict[str, str], json: JsonValue) -> JsonValue:
        # Lazy: the serve loop imports this module as it starts; a process on the requests route never needs _plain.
        from dashfloat.llm._plain import PLAIN

        body = None if json is None else msgspec.json.encode(json)
        sent = {**headers, "Content-Type": "application/json"} if body is not None else headers
        for _ in range(MAX_REDIRECTS + 1):
            response = PLAIN.request(method, url, sent, body, self._timeout_s, self._timeout_s, self._on_socket)
            try:
                data = bytearray()  # read to its end, a refusal's too: the connection is then kept
                for read in response.reads():
                    data += read
                    if len(data) > PROBE_BODY_MAX_BYTES:
                        return None  # over the cap: not read further (closing drops the connection)
            finally:
                response.close()
            next_url = follow(url, method, response.status, response.header("Location"))
            if next_url is not None:
                url = next_url
                continue
            if response.status != 200:
                return None
            decoded: JsonValue = msgspec.json.decode(data)
            return decoded
        return None

    def abort(self) -> None:
        """From another thread (the discovery's deadline): end a read blocked on the server, and ask nothing more."""
        self._aborted = True
        sock = self._socket
        if sock is not None:
            shutdown(sock)

    def close(self) -> None:
        """Nothing to release: the connections belong to the process's plain route."""


def discover(
    provider: ProviderConfig, request_id: int = 0, props: dict[str, JsonValue] | None = None, get: Get | None = None
) -> WindowFound:
    """Ask the server behind ``provider`` (blocking; at most a few short requests).

    ``props``: where to leave a local server's ``/props`` answer (None when it gave none) under the provider's base
    URL, when the probes got that far, so that the stream's look at the chat template does not ask again.
    ``get``: how to ask (None: through this process's ``requests`` Session).
    """
    if get is None:
        from dashfloat.llm._http import process_session  # lazy: requests, once the stack's import is done (ADR 0045)

        get = requests_get(process_session())
    headers = {"Accept": "application/json", **provider.headers}
    key = os.environ.get(provider.api_key_env) if provider.api_key_env else None
    if key:
        headers["Authorization"] = f"Bearer {key}"
    base = provider.base_url.rstrip("/")
    root = w.server_root(base)
    model = provider.model
    probes: list[tuple[str, str, str, JsonValue, Probe]] = [
        ("/models", "GET", f"{base}/models", None, lambda b: w.openai_models(b, model)),
    ]
    props_url = f"{root}/props"
    if is_local_url(base):
        probes += [
            ("llama.cpp /props n_ctx", "GET", props_url, None, w.llamacpp_props),
            ("LM Studio /api/v0/models", "GET", f"{root}/api/v0/models", None, lambda b: w.lmstudio_models(b, model)),
            ("Ollama /api/ps context_length", "GET", f"{root}/api/ps", None, lambda b: w.ollama_ps(b, model)),
        ]
    notices: list[str] = []
    listed: list[str] = []
    """The ids ``/models`` listed: /model lists and checks them (the same question, asked once)."""
    for detail, method, url, body, parse in probes:
        answer = get(method, url, headers, body)
        if url == props_url and props is not None:
            props[provider.base_url] = answer
        if not listed:
            listed = w.model_ids(answer)
        value = parse(answer)
        if (window := w.sane(value)) is not None:
            return WindowFound(request_id, window, "server", detail, "; ".join(notices), models=listed)
        if w.reported(value):
            notices.append(f"ignored a context window of {value!r} reported by {url}")
    if is_local_url(base):
        value, which = w.ollama_show(get("POST", f"{root}/api/show", headers, {"model": model}))
        if (window := w.sane(value)) is not None:
            found = WindowFound(request_id, window, "server", f"Ollama /api/show {which}", "; ".join(notices))
            return msgspec.structs.replace(found, models=listed)
        if w.reported(value):
            notices.append(f"ignored a context window of {value!r} reported by {root}/api/show")
    return msgspec.structs.replace(unreported(model, request_id, "nothing reported", "; ".join(notices)), models=listed)


def unreported(model: str, request_id: int, detail: str, notice: str) -> WindowFound:
    """The answer when the server says nothing usable: the table's window for ``model``, else the assumed one."""
    table = w.known_window(model)
    if table is not None:
        return WindowFound(request_id, table, "table", f"known window of {model}", notice)
    return WindowFound(request_id, w.DEFAULT_ASSUMED_WINDOW, "assumed", detail, notice)


class Discovery:
    """One DiscoverWindow answered from a worker thread; ``done`` is called with the reply, once, within
    DISCOVERY_DEADLINE_S (a timer answers for a discovery still asking then; its late answer is dropped).
    ``stack``: the HTTP stack's import; a local plain-HTTP server is asked through http.client at once, else
    the thread waits for it."""

    def __init__(
        self,
        ask: DiscoverWindow,
        done: Callable[[DiscoverWindow, WindowFound], None],
        props: dict[str, JsonValue] | None = None,
        stack: Preload | None = None,
    ) -> None:
        self._ask = ask
        self._done = done
        self._props = props
        self._stack = stack
        self._lock = threading.Lock()
        self._answered = False
        self._prober: PlainProber | None = None
        self._thread = threading.Thread(target=self._run, name=f"llm-window-{ask.request_id}", daemon=True)
        self._deadline = threading.Timer(w.DISCOVERY_DEADLINE_S, self._expire)
        self._deadline.daemon = True

    def begin(self) -> None:
        self._deadline.start()
        self._thread.start()

    def _claim(self) -> bool:
        """Whether this caller answers: the first to ask (the thread or the deadline) does, the other not."""
        with self._lock:
            answered, self._answered = self._answered, True
        return not answered

    def _answer(self, found: WindowFound) -> None:
        if self._claim():
            self._deadline.cancel()
            self._done(self._ask, found)

    def _expire(self) -> None:
        if not self._claim():
            return
        if (prober := self._prober) is not None:
            prober.abort()  # its blocked read ends; the thread's answer, after this one, is dropped
        late = f"window discovery: {self._ask.provider.base_url} gave no answer within {w.DISCOVERY_DEADLINE_S:g} s"
        self._done(self._ask, unreported(self._ask.provider.model, self._ask.request_id, "no answer in time", late))

    def _run(self) -> None:
        provider, request_id = self._ask.provider, self._ask.request_id
        try:
            if plain_route(provider.base_url, os.environ):
                prober = self._prober = PlainProber(w.DISCOVERY_TIMEOUT_S)
                try:
                    found = discover(provider, request_id, self._props, prober.get)
                finally:
                    prober.close()
            else:
                if self._stack is not None:
                    self._stack.wait()
                found = discover(provider, request_id, self._props)
        except Exception as exc:  # answer whatever broke: the agent waits for this reply
            found = WindowFound(
                self._ask.request_id,
                w.DEFAULT_ASSUMED_WINDOW,
                "assumed",
                "discovery failed",
                f"window discovery: {exc}",
            )
        self._answer(found)
