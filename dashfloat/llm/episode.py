"""The pure episode accumulator: SSE event data in, answer deltas and one finished episode out.

One episode is one streamed completion. ``Episode.feed`` takes the data of one SSE event at a time and
returns the deltas to show; it raises ``StreamError`` for an error the provider reported inside the stream
and for a crossed bound. Every provider quirk of docs/provider-quirks.md that lives in the chunks (not
in the framing or HTTP) is handled here, so each is tested in tests/llm/test_episode.py without a server.
"""

from __future__ import annotations

import contextlib
from typing import Any, Literal

import msgspec

from dashfloat.jsonvalue import JsonObject
from dashfloat.llm._errors import StreamError, clause, context_exceeded, error_text, one_line, says_context_exceeded
from dashfloat.llm._limits import EPISODE_MAX_BYTES, EPISODE_MAX_TOOL_CALLS, REPEAT_MIN_COUNT, REPEAT_RUN_MIN_CHARS
from dashfloat.llm._repeat import Loop, RepetitionGuard
from dashfloat.llm.textcalls import text_tool_calls
from dashfloat.llm.toolcalls import ToolCalls, empty_call
from dashfloat.protocol import AssembledCall, StreamDone, StreamFailed, StreamFailureKind, Usage

DeltaKind = Literal["content", "reasoning", "status", "warning"]
Delta = tuple[DeltaKind, str]


# The common chunk, typed: text in ``choices[0].delta.content`` and nothing else that the general path reads.
# Decoding into these Structs skips building dicts for the fields nobody reads (id, model, created…); every
# field the general path does read is declared, so a chunk that carries anything more (reasoning, tool calls,
# a finish reason, usage, an error) is seen here and left to the general path.
class _FastDelta(msgspec.Struct, gc=False):
    content: str | None = None
    reasoning_content: Any = None
    reasoning: Any = None
    tool_calls: Any = None


class _FastChoice(msgspec.Struct, gc=False):
    delta: _FastDelta | None = None
    finish_reason: Any = None


class _FastChunk(msgspec.Struct, gc=False):
    choices: list[_FastChoice] | None = None
    error: Any = None
    usage: Any = None
    x_groq: Any = None


_FAST_DECODER = msgspec.json.Decoder(_FastChunk)


def _chunk_content(chunk: _FastChunk) -> str | None:
    """The text of a decoded chunk that carries only content (``""``: one that carries nothing the episode keeps);
    None for any other chunk, which the general path then reads."""
    if chunk.error is not None or chunk.usage is not None or chunk.x_groq is not None:
        return None
    if not chunk.choices:
        return ""
    choice = chunk.choices[0]
    if choice.finish_reason:
        return None
    delta = choice.delta
    if delta is None:
        return ""
    if delta.reasoning_content or delta.reasoning or delta.tool_calls:
        return None
    return delta.content or ""


def _content_only(data: str | bytes) -> str | None:
    """The text of a chunk that carries only content (``""``: a chunk that carries nothing the episode keeps);
    None for any other chunk, which the general path then reads."""
    try:
        chunk = _FAST_DECODER.decode(data)
    except (msgspec.DecodeError, RecursionError):  # ValidationError is a DecodeError: not the common shape
        return None
    return _chunk_content(chunk)


class Episode:
    """Accumulates one streamed completion: content, reasoning, calls, finish reason, usage, its bounds."""

    content_only = staticmethod(_content_only)
    """The fast path's reader (tests compare it with an Episode whose reader declines every chunk)."""

    def __init__(self) -> None:
        self._content: list[str] = []
        self._episode_bytes = 0
        self._calls = ToolCalls()
        self.finish_reason: str | None = None
        self.usage: Usage | None = None
        self.done = False
        """``[DONE]`` arrived: nothing after it belongs to the episode."""
        self.emitted = False
        """Something the user saw or the model said arrived (a retry would repeat it)."""
        self._guards = {"content": RepetitionGuard(), "reasoning": RepetitionGuard()}
        self._loop_cut: int | None = None

    @property
    def content(self) -> str:
        return "".join(self._content)

    @property
    def native_calls(self) -> bool:
        """Whether the provider sent a call in ``tool_calls`` (not written in the text)."""
        return self._calls.distinct_calls > 0

    def calls(self) -> list[AssembledCall]:
        """The tool calls assembled so far."""
        return self._calls.finish()

    def feed(self, data: str) -> list[Delta]:
        """Take one event's data; returns the deltas it carried, in order."""
        if data.strip() == "[DONE]":
            self.done = True
            return []
        content = self.content_only(data)
        if content is not None:
            return self._take_content(content) if content else []
        try:
            chunk = msgspec.json.decode(data)
        except (msgspec.DecodeError, RecursionError):
            chunk = None
        if not isinstance(chunk, dict):
            raise StreamError(
                "malformed_frame",
                f"the provider sent an event that is not a JSON object ({one_line(data, 60)!r}): try again; "
                "if it repeats, the endpoint is not OpenAI-compatible.",
            )
        if chunk.get("error") is not None:
            said = clause(error_text(chunk) or one_line(str(chunk["error"])))
            if says_context_exceeded(data):
                raise context_exceeded(said)
            raise StreamError("provider_error", f"the provider reported an error mid-stream: {said}.")
        self._take_usage(chunk)
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return []  # Azure's filter chunk, a usage-only chunk, an empty keep-alive object
        choice = choices[0]
        delta = choice.get("delta")
        deltas = self._take_delta(delta) if isinstance(delta, dict) else []
        finish = choice.get("finish_reason")
        if isinstance(finish, str) and finish:
            if finish == "error":
                said = clause(error_text(choice) or "no details given")
                raise StreamError("provider_error", f"the provider stopped with an error: {said}.")
            self.finish_reason = finish
        return deltas

    def feed_plain(self, datas: list[bytes]) -> tuple[list[Delta], StreamError | None] | None:
        """Take the data of several events at once (a paced provider's read), when each is a chunk of content only:
        the deltas they carry, merged, and the error feeding them one by one would have raised after those deltas
        (a crossed bound). None, having taken nothing, when any is not such a chunk: feed them one by one."""
        texts: list[str] = []
        reader = self.content_only
        for data in datas:
            text = reader(data)
            if text is None:
                return None
            if text:
                texts.append(text)
        if not texts:
            return [], None
        joined = "".join(texts)
        size = len(joined.encode())
        if self._episode_bytes + size + self._calls.fragment_bytes > EPISODE_MAX_BYTES:
            return None  # one of them crosses the bound: where, the one-by-one path says
        looped = self._guards["content"].feed_many(texts)
        if looped is not None:
            index, loop = looped
            taken = texts[: index + 1]
            self._episode_bytes += sum(len(text.encode()) for text in taken)
            self._content += taken
            self.emitted = True
            shown = "".join(texts[:index])
            return ([("content", shown)] if shown else []), self._looping("content", loop)
        self._episode_bytes += size
        self._content += texts
        self.emitted = True
        return [("content", joined)], None

    def _take_content(self, content: str) -> list[Delta]:
        """``_take_delta`` for a delta of non-empty content only (the fast path's chunk)."""
        self._episode_bytes += len(content.encode())
        self._check_bytes()
        self._content.append(content)
        self.emitted = True
        self._guard("content", content)
        return [("content", content)]

    def _take_delta(self, delta: JsonObject) -> list[Delta]:
        deltas: list[Delta] = []
        content = delta.get("content")
        if isinstance(content, str) and content:
            deltas.append(("content", content))
        # DeepSeek and vLLM say reasoning_content, Ollama and OpenRouter say reasoning: not answer text.
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            deltas.append(("reasoning", reasoning))
        # Checked before keeping the text, so the partial answer is exactly what was shown.
        self._episode_bytes += sum(len(text.encode()) for _, text in deltas)
        self._check_bytes()
        self._content += [text for kind, text in deltas if kind == "content"]
        self.emitted = self.emitted or bool(deltas)
        for kind, text in deltas:
            self._guard(kind, text)
        tool_calls = delta.get("tool_calls")
        if tool_calls:
            self._calls.feed(tool_calls)
            self.emitted = self.emitted or self._calls.distinct_calls > 0
            if self._calls.distinct_calls > EPISODE_MAX_TOOL_CALLS:
                raise StreamError(
                    "too_many_calls",
                    f"the model asked for more than {EPISODE_MAX_TOOL_CALLS} tool calls in one answer; "
                    "the stream was stopped: ask for smaller steps.",
                )
            self._check_bytes()
        return deltas

    def _guard(self, kind: DeltaKind, text: str) -> None:
        """End a stream that loops on one span (a small model can repeat a sentence for minutes)."""
        loop = self._guards[kind].feed(text) if kind in self._guards else None
        if loop is not None:
            raise self._looping(kind, loop)

    def _looping(self, kind: DeltaKind, loop: Loop) -> StreamError:
        """The error for ``loop`` in ``kind``; for content, the answer kept is cut to one copy of its span."""
        span = loop.span
        if kind == "content":
            # Keep one copy of the loop in the answer recorded for the model, not all of them.
            content = self.content
            cut = len(content)
            while cut >= 2 * len(span) and content[cut - 2 * len(span) : cut - len(span)] == span:
                cut -= len(span)
            self._loop_cut = cut
        if loop.run:
            what = f"wrote {span[-loop.unit :]!r} over and over, {REPEAT_RUN_MIN_CHARS} characters of it and more"
        else:
            what = (
                f"repeated the same {len(span)}-character passage {REPEAT_MIN_COUNT} times in a row "
                f"({one_line(span, 60)!r})"
            )
        return StreamError(
            "repeating", f"the model {what}; the stream was stopped: ask again, rephrase, or use a larger model."
        )

    def _check_bytes(self) -> None:
        if self._episode_bytes + self._calls.fragment_bytes > EPISODE_MAX_BYTES:
            raise StreamError(
                "episode_too_large",
                f"the answer grew past {EPISODE_MAX_BYTES // (1024 * 1024)} MiB; the stream was stopped: "
                "ask for a shorter answer or smaller steps.",
            )

    def _take_usage(self, chunk: JsonObject) -> None:
        raw = chunk.get("usage")
        groq = chunk.get("x_groq")
        if not isinstance(raw, dict) and isinstance(groq, dict):
            raw = groq.get("usage")  # Groq reports usage inside x_groq on the finish chunk
        if isinstance(raw, dict):
            # A usage object we cannot read is not worth failing the answer for.
            with contextlib.suppress(msgspec.ValidationError):
                self.usage = msgspec.convert(raw, Usage)

    def finished(self, request_id: int, text_calls: bool = False) -> StreamDone:
        """The episode as a StreamDone once the body ended; truncated without [DONE] or a finish reason.

        ``text_calls``: without native calls, tool calls written in the text become calls (textcalls.py),
        and the answer keeps only the prose around them.
        """
        if not self.done and self.finish_reason is None:
            raise StreamError(
                "truncated",
                "the stream ended before the answer finished (no finish_reason, no [DONE]): try again.",
                "the stream was cut off",
            )
        calls = self.calls()
        content = self.content
        if text_calls and not calls:
            content, calls = text_tool_calls(content)
        if not calls and not content.strip() and self._calls.empty_index is not None:
            # Nothing but empty tool-call items: an error result the model reads, not "returned nothing".
            calls = [empty_call(self._calls.empty_index)]
        reason = self.finish_reason or ("tool_calls" if calls else "stop")
        if reason == "stop" and calls:
            reason = "tool_calls"  # Gemini, Ollama, LocalAI finish tool calls with "stop"
        return StreamDone(request_id, content, calls, reason, self.usage)

    def failed(self, request_id: int, kind: StreamFailureKind, message: str) -> StreamFailed:
        """The episode as a StreamFailed: what arrived before the failure is kept."""
        try:
            calls = self._calls.finish(stream_ended=True)
        except Exception:  # even the partial calls cannot be assembled: answer without them
            calls = []
        content = self.content if self._loop_cut is None else self.content[: self._loop_cut]
        return StreamFailed(request_id, kind, message, content=content, tool_calls=calls)
