"""The model's context window: what each kind of server says (pure parsers), a table, a default.

Resolution (docs/providers.md, decision 0030): the config's ``context_window`` (the agent's business);
else the server, asked once per base URL and model; else the table of well-known hosted models; else
DEFAULT_ASSUMED_WINDOW, labelled "assumed". Every parser takes a decoded JSON body and returns a number of
tokens or None; a number outside the sane range is reported, never used.
"""

from __future__ import annotations

from typing import Final

from dashfloat.jsonvalue import JsonObject, JsonValue

WINDOW_MIN_TOKENS: Final = 512
"""A smaller reported window is nonsense (no chat model with tools fits), so it is ignored."""
WINDOW_MAX_TOKENS: Final = 10_000_000
"""A larger reported window is nonsense too (no model has one), so it is ignored."""
DEFAULT_ASSUMED_WINDOW: Final = 32768
"""When nothing is known, labelled "assumed". The local servers that run small windows report theirs (llama.cpp,
LM Studio, Ollama, vLLM), so this meets hosted models missing from the table, nearly all of which have 32k or
more; a smaller real window is met by the context-exceeded recovery, which lowers it to what was refused."""
OLLAMA_DEFAULT_NUM_CTX: Final = 4096
"""Ollama's num_ctx when neither the model nor the loaded runner sets one: it silently cuts the front
of longer prompts, so this, not the model's trained length, is the real window."""
DISCOVERY_TIMEOUT_S: Final = 3.0
"""Connect and read timeout of each discovery request: a window is worth a short wait, not a long one."""
DISCOVERY_DEADLINE_S: Final = 15.0
"""The whole discovery's bound (its five probes, each silent for DISCOVERY_TIMEOUT_S): past it the agent is answered
as if the server said nothing, so its first request goes out. A read timeout alone does not bound a server that
drips a byte within each timeout (a body or a header that never ends)."""

KNOWN_WINDOWS: Final[tuple[tuple[str, int], ...]] = (
    # (model-name prefix, tokens); the longest matching prefix wins. Public model pages, 2025.
    ("gpt-5", 400_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("claude-", 200_000),
    ("gemini-1.5-pro", 2_097_152),
    ("gemini-1.5-flash", 1_048_576),
    ("gemini-2", 1_048_576),
    ("deepseek-chat", 65_536),
    ("deepseek-reasoner", 65_536),
    ("llama-3.3-70b-versatile", 131_072),
    ("llama-3.1-8b-instant", 131_072),
    ("mistral-large", 131_072),
    ("codestral", 256_000),
    ("grok-", 131_072),
)


def sane(tokens: object) -> int | None:
    """``tokens`` as a window, or None when it is not a plausible one (0, negative, absurd, not a number)."""
    if isinstance(tokens, bool) or not isinstance(tokens, int | float):
        return None
    if tokens != tokens or not WINDOW_MIN_TOKENS <= tokens <= WINDOW_MAX_TOKENS:
        return None
    return int(tokens)


def reported(tokens: object) -> bool:
    """Whether a field held a number at all (so that a nonsense one earns a notice)."""
    return isinstance(tokens, int | float) and not isinstance(tokens, bool)


def known_window(model: str) -> int | None:
    """The table's window for ``model`` (an ``org/name`` id is looked up by its name)."""
    name = model.rsplit("/", 1)[-1].lower()
    best: tuple[int, int] | None = None
    for prefix, tokens in KNOWN_WINDOWS:
        if name.startswith(prefix) and (best is None or len(prefix) > best[0]):
            best = (len(prefix), tokens)
    return best[1] if best else None


def server_root(base_url: str) -> str:
    """The server's root URL: the base URL without its trailing ``/v1`` (where /props and /api live)."""
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def _entries(body: JsonValue) -> list[JsonObject]:
    if not isinstance(body, dict):
        return []
    data = body.get("data")
    if not isinstance(data, list):
        data = body.get("models")
    return [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []


def _entry_for(body: JsonValue, model: str, keys: tuple[str, ...] = ("id",)) -> JsonObject | None:
    wanted = {model, f"{model}:latest"}
    for entry in _entries(body):
        if any(entry.get(k) in wanted for k in keys):
            return entry
    return None


MODELS_LISTED_MAX: Final = 500
"""Model ids kept from one ``GET /models`` answer (OpenRouter lists a few hundred); more are left out."""
MODEL_ID_MAX_CHARS: Final = 200
"""A longer id is no model name a person types: left out of the list."""


def model_ids(body: JsonValue) -> list[str]:
    """The ids a ``GET /models`` answer lists (``data[].id``), in its order, at most MODELS_LISTED_MAX."""
    ids: list[str] = []
    for entry in _entries(body):
        name = entry.get("id")
        if isinstance(name, str) and name and len(name) <= MODEL_ID_MAX_CHARS and name not in ids:
            ids.append(name)
            if len(ids) == MODELS_LISTED_MAX:
                break
    return ids


def openai_models(body: JsonValue, model: str) -> object:
    """``GET /v1/models``: vLLM's ``max_model_len``, OpenRouter's ``context_length`` (or its
    ``top_provider.context_length``), Groq's ``context_window``; None when the entry says nothing."""
    entry = _entry_for(body, model)
    if entry is None:
        return None
    for key in ("max_model_len", "context_length", "context_window"):
        if key in entry:
            return entry[key]
    top = entry.get("top_provider")
    if isinstance(top, dict) and "context_length" in top:
        return top["context_length"]
    return None


def llamacpp_props(body: JsonValue) -> object:
    """llama.cpp server ``GET /props``: ``default_generation_settings.n_ctx`` (per slot), else ``n_ctx``."""
    if not isinstance(body, dict):
        return None
    settings = body.get("default_generation_settings")
    if isinstance(settings, dict) and "n_ctx" in settings:
        return settings["n_ctx"]
    return body.get("n_ctx")


def lmstudio_models(body: JsonValue, model: str) -> object:
    """LM Studio ``GET /api/v0/models``: ``loaded_context_length`` when loaded, else ``max_context_length``."""
    entry = _entry_for(body, model)
    if entry is None:
        return None
    if "loaded_context_length" in entry:
        return entry["loaded_context_length"]
    return entry.get("max_context_length")


def ollama_ps(body: JsonValue, model: str) -> object:
    """Ollama ``GET /api/ps``: the ``context_length`` the loaded runner was started with (its num_ctx)."""
    entry = _entry_for(body, model, ("name", "model"))
    return None if entry is None else entry.get("context_length")


def ollama_show(body: JsonValue) -> tuple[object, str]:
    """Ollama ``POST /api/show``: the model's ``num_ctx`` parameter if set; else the smaller of its
    trained ``<arch>.context_length`` and Ollama's default num_ctx. Returns (tokens, which)."""
    if not isinstance(body, dict):
        return None, ""
    for line in str(body.get("parameters") or "").splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "num_ctx":
            try:
                return int(parts[1]), "num_ctx parameter"
            except ValueError:
                return None, ""
    info = body.get("model_info")
    if isinstance(info, dict):
        for key, value in info.items():
            if isinstance(key, str) and key.endswith(".context_length"):
                trained = sane(value)
                if trained is None:
                    return value, "context_length"
                return min(trained, OLLAMA_DEFAULT_NUM_CTX), f"default num_ctx (the model allows {trained})"
    return None, ""
