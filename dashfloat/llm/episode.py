"""The pure episode accumulator: SSE event data in, answer deltas and one finished episode out.

One episode is one streamed completion. ``Episode.feed`` takes the data of one SSE event at a time and
returns the deltas to show; it raises ``StreamError`` for an error the provider reported inside the stream
and for a crossed bound. Every provider quirk of docs/provider-quirks.md that lives in the chunks (not
in the framing or HTTP) is handled here, so each is tested in tests/llm/test_episode.py without a server.
"""

from __future__ import annotations

import contextlib
from typing import Any, Final, Literal

import msgspec

from dashfloat.jsonvalue import JsonObject
from dashfloat.llm._errors import StreamError, clause, context_exceeded, error_text, one_line, says_context_exceeded
from dashfloat.llm._limits import (
    EPISODE_MAX_BYTES,
    EPISODE_MAX_TOOL_CALLS,
    REASONING_CUT_MARKER,
    REASONING_KEEP_MAX_BYTES,
    REPEAT_RUN_MIN_CHARS,
)
from dashfloat.llm._repeat import Loop, RepetitionGuard
from dashfloat.llm.textcalls import text_tool_calls
from dashfloat.llm.toolcalls import ToolCalls, empty_call
from dashfloat.protocol import AssembledCall, ReasoningField, StreamDone, StreamFailed, StreamFailureKind, Usage

DeltaKind = Literal["content", "reasoning", "status", "warning"]
Delta = tuple[DeltaKind, str]

THINK_OPEN: Final = "<think>"
THINK_CLOSE: Final = "</think>"
THINK_UNCLOSED_NOTE: Final = (
    "the model's <think> block did not close within {kib} KiB: the rest of its text is shown as the answer"
)


def _utf8_prefix(text: str, limit: int) -> str:
    """The longest prefix of ``text`` whose UTF-8 form is at most ``limit`` bytes."""
    return text.encode()[: max(0, limit)].decode(errors="ignore")


class KeptReasoning:
    """An answer's reasoning as kept: the field it came in, its text up to REASONING_KEEP_MAX_BYTES (then marked),
    and OpenRouter's ``reasoning_details`` merged by index (dropped whole past the same cap: a cut signature is
    worthless)."""

    def __init__(self) -> None:
        self.field: ReasoningField | None = None
        self._parts: list[str] = []
        self._bytes = 0
        self.cut = False
        self._details: dict[int, dict[str, Any]] = {}
        self._details_bytes = 0
        self._details_dropped = False

    def add(self, field: ReasoningField, text: str) -> None:
        """Keep ``text``, which came in ``field`` (the first field seen names the whole answer's)."""
        if self.field is None:
            self.field = field
        if self.cut or not text:
            return
        size = len(text.encode())
        room = REASONING_KEEP_MAX_BYTES - self._bytes
        if size > room:
            text, self.cut = _utf8_prefix(text, room), True
            size = room
        self._parts.append(text)
        self._bytes += size

    def add_details(self, items: Any) -> None:
        """Merge one delta's ``reasoning_details`` (text fragments joined per index, other keys the last one)."""
        if self._details_dropped or not isinstance(items, list):
            return
        self._details_bytes += len(msgspec.json.encode(items))
        if self._details_bytes > REASONING_KEEP_MAX_BYTES:
            self._details_dropped = True
            self._details.clear()
            return
        for position, item in enumerate(items):
            if not isinstance(item, dict):
                continue
            index = item.get("index")
            key = index if isinstance(index, int) and not isinstance(index, bool) else len(self._details) + position
            merged = self._details.setdefault(key, {})
            for name, value in item.items():
                if name in ("text", "summary", "data") and isinstance(value, str):
                    merged[name] = merged.get(name, "") + value
                else:
                    merged[name] = value

    @property
    def text(self) -> str:
        """The kept text, marked where it was cut."""
        kept = "".join(self._parts)
        return kept + REASONING_CUT_MARKER.format(kib=REASONING_KEEP_MAX_BYTES // 1024) if self.cut else kept

    @property
    def details(self) -> str:
        """The merged ``reasoning_details`` as JSON text ("" when none came)."""
        if not self._details:
            return ""
        return msgspec.json.encode([self._details[key] for key in sorted(self._details)]).decode()


def _close_prefix_len(text: str) -> int:
    """The length of the longest end of ``text`` that is the start of THINK_CLOSE (a tag split across chunks)."""
    for size in range(min(len(text), len(THINK_CLOSE) - 1), 0, -1):
        if THINK_CLOSE.startswith(text[-size:]):
            return size
    return 0


class ThinkSplit:
    """Reasoning written at the start of the answer text (``<think>…</think>``, llama.cpp's ``--reasoning-format
    none`` and many Qwen templates) told apart from the answer as the text streams, whatever its chunking.

    ``start``: the text so far is blank or the start of THINK_OPEN; ``inside``: reasoning until THINK_CLOSE (or
    REASONING_KEEP_MAX_BYTES of it, then the rest is the answer, with a note); ``after``: blank text after the
    block is dropped; ``prose``: the answer, passed on as it comes (a ``<think>`` there is prose).
    ``inside_first``: the server wrote a close tag without an open one before (its template opens the block), so
    text that is not an open tag is reasoning from the start.
    """

    def __init__(self, inside_first: bool = False) -> None:
        self.state: Literal["start", "inside", "after", "prose"] = "start"
        self.inside_first = inside_first
        self.opened = False
        """An open tag began the text."""
        self.closed = False
        """The block's close tag came."""
        self._held = ""
        self._bytes = 0
        self.overflowed = False
        """The block did not close within the cap: the rest of the text is the answer."""

    def feed(self, text: str) -> list[Delta]:
        """The deltas ``text`` makes, given all the text before it."""
        if self.state == "prose":
            return [("content", text)]
        held, self._held = self._held + text, ""
        if self.state == "after":
            answer = held.lstrip()
            if answer:
                self.state = "prose"
                return [("content", answer)]
            return []
        lead: list[Delta] = []
        if self.state == "start":
            stripped = held.lstrip()
            blank = held[: len(held) - len(stripped)]
            lead = [("content", blank)] if blank else []  # blank text is passed on: it may be the whole answer
            if stripped.startswith(THINK_OPEN):
                self.state, self.opened = "inside", True
                held = stripped[len(THINK_OPEN) :]
            elif THINK_OPEN.startswith(stripped):
                self._held = stripped  # an open tag still arriving (or nothing yet)
                return lead
            elif self.inside_first:
                held = stripped
                self.state = "inside"
            else:
                self.state = "prose"
                return [*lead, ("content", stripped)]
        end = held.find(THINK_CLOSE)
        if end >= 0:
            out = lead + self._reason(held[:end])
            if self.overflowed:  # the cap was crossed before the close tag: all the rest is the answer
                return [*out, ("content", held[end:])]
            self.state, self.closed = "after", True
            return out + self.feed(held[end + len(THINK_CLOSE) :])
        keep = _close_prefix_len(held)
        self._held = held[len(held) - keep :]
        out = lead + self._reason(held[: len(held) - keep])
        if self.overflowed and self._held:
            out.append(("content", self._held))
            self._held = ""
        return out

    def settles_as_prose(self, text: str) -> bool:
        """Whether ``text``, coming next, is answer text as a whole (then the split passes the rest on as it comes)."""
        if self.state == "start" and not self._held and not self.inside_first:
            stripped = text.lstrip()
            if stripped and not stripped.startswith(THINK_OPEN) and not THINK_OPEN.startswith(stripped):
                self.state = "prose"
        return self.state == "prose"

    def _reason(self, text: str) -> list[Delta]:
        """``text`` as reasoning up to the cap; past it, the block is taken as unclosed and the rest is the answer."""
        if not text:
            return []
        size = len(text.encode())
        room = REASONING_KEEP_MAX_BYTES - self._bytes
        if size <= room:
            self._bytes += size
            return [("reasoning", text)]
        kept = _utf8_prefix(text, room)
        self._bytes = REASONING_KEEP_MAX_BYTES
        self.state, self.overflowed = "prose", True
        out: list[Delta] = [("reasoning", kept)] if kept else []
        note = THINK_UNCLOSED_NOTE.format(kib=REASONING_KEEP_MAX_BYTES // 1024)
        return [*out, ("warning", note), ("content", text[len(kept) :])]

    def flush(self) -> list[Delta]:
        """What is held once the text has ended: an unfinished open tag is the answer, a close tag's start
        reasoning."""
        held, self._held = self._held, ""
        if not held:
            return []
        if self.state == "start":
            return [("content", held)]
        if self.state == "inside":
            return self._reason(held)
        return []


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
    prompt_progress: Any = None


_FAST_DECODER = msgspec.json.Decoder(_FastChunk)


def _chunk_content(chunk: _FastChunk) -> str | None:
    """The text of a decoded chunk that carries only content (``""``: one that carries nothing the episode keeps);
    None for any other chunk, which the general path then reads."""
    if chunk.error is not None or chunk.usage is not None or chunk.x_groq is not None:
        return None
    if chunk.prompt_progress is not None:
        return None  # llama.cpp's reading progress: the general path keeps it
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


def _detail(usage: JsonObject, group: str, name: str) -> int | None:
    """``usage[group][name]`` when it is a count (OpenAI's ``*_tokens_details``); None when not reported."""
    details = usage.get(group)
    value = details.get(name) if isinstance(details, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


class Episode:
    """Accumulates one streamed completion: content, reasoning, calls, finish reason, usage, its bounds."""

    content_only = staticmethod(_content_only)
    """The fast path's reader (tests compare it with an Episode whose reader declines every chunk)."""

    def __init__(self, think_inside_first: bool = False) -> None:
        self._content: list[str] = []
        self.reasoning = KeptReasoning()
        self._think = ThinkSplit(think_inside_first)
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
        self._read: tuple[int, int, int] | None = None
        """The last ``prompt_progress`` not yet taken: (processed, total, cached)."""

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
        self._take_progress(chunk)
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
        if not self._think.settles_as_prose(joined):
            return None  # the answer may begin with a <think> block: one by one, through the split
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
        if self._think.state != "prose":
            return self._take_delta({"content": content})
        self._episode_bytes += len(content.encode())
        self._check_bytes()
        self._content.append(content)
        self.emitted = True
        self._guard("content", content)
        return [("content", content)]

    def _take_delta(self, delta: JsonObject) -> list[Delta]:
        deltas: list[Delta] = []
        # DeepSeek and llama.cpp say reasoning_content, vLLM, Ollama and OpenRouter say reasoning: not answer text.
        field: ReasoningField = "reasoning_content"
        reasoning = delta.get(field)
        if not (isinstance(reasoning, str) and reasoning):
            field, reasoning = "reasoning", delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            deltas.append(("reasoning", reasoning))
        details = delta.get("reasoning_details")
        if details:
            self.reasoning.add_details(details)
        content = delta.get("content")
        split: list[Delta] = []
        if isinstance(content, str) and content:
            split = self._think.feed(content)
            deltas += split
        # Checked before keeping the text, so the partial answer is exactly what was shown.
        self._episode_bytes += sum(len(text.encode()) for kind, text in deltas if kind != "warning")
        self._check_bytes()
        if isinstance(reasoning, str) and reasoning:
            self.reasoning.add(field, reasoning)
        self._keep(split)
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

    def _keep(self, split: list[Delta]) -> None:
        """Keep what the <think> split made of the answer text: the answer, and the reasoning it held."""
        for kind, text in split:
            if kind == "content":
                self._content.append(text)
            elif kind == "reasoning":
                self.reasoning.add("think", text)

    def flush(self) -> list[Delta]:
        """Once the body has ended: the text the <think> split still held, as deltas to show (and kept)."""
        split = self._think.flush()
        self._keep(split)
        self.emitted = self.emitted or bool(split)
        return split

    @property
    def closed_only(self) -> bool:
        """The answer's text closed a reasoning block it never opened (its template opens it): the next answer's
        reasoning starts at once (``ThinkSplit.inside_first``)."""
        return self._think.closed and not self._think.opened

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
                f"repeated the same {len(span)}-character passage {loop.copies} times in a row ({one_line(span, 60)!r})"
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

    def _take_progress(self, chunk: JsonObject) -> None:
        read = chunk.get("prompt_progress")
        if not isinstance(read, dict):
            return
        counts = [read.get(key) for key in ("processed", "total", "cache")]
        if all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in counts):
            processed, total, cached = (int(n) for n in counts if isinstance(n, int))
            self._read = (processed, total, cached)

    def take_progress(self) -> tuple[int, int, int] | None:
        """The prompt-reading progress (processed, total, cached) the last event carried (llama.cpp's
        ``prompt_progress``, ADR 0092), once; None when it carried none."""
        read, self._read = self._read, None
        return read

    def _take_usage(self, chunk: JsonObject) -> None:
        raw = chunk.get("usage")
        groq = chunk.get("x_groq")
        if not isinstance(raw, dict) and isinstance(groq, dict):
            raw = groq.get("usage")  # Groq reports usage inside x_groq on the finish chunk
        if isinstance(raw, dict):
            # A usage object we cannot read is not worth failing the answer for.
            with contextlib.suppress(msgspec.ValidationError):
                usage = msgspec.convert(raw, Usage)
                cached = _detail(raw, "prompt_tokens_details", "cached_tokens")
                if cached is None:  # DeepSeek's own name for it
                    cached = _detail({"usage": raw}, "usage", "prompt_cache_hit_tokens")
                reasoning = _detail(raw, "completion_tokens_details", "reasoning_tokens")
                self.usage = msgspec.structs.replace(usage, cached_tokens=cached, reasoning_tokens=reasoning)

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
        self.flush()
        calls = self.calls()
        content = self.content
        think = self._think
        reasoning, field = self.reasoning.text, self.reasoning.field
        if field == "think" and not think.opened and not think.closed:
            # Read as reasoning only because this server's template opened the block last time; no close tag came,
            # so it was the answer.
            content, reasoning, field = reasoning + content, "", None
        elif field is None and not think.opened and THINK_CLOSE in content:
            # A close tag with no open tag: the block was opened by the template. What came before it is reasoning.
            head, _, content = content.partition(THINK_CLOSE)
            think.closed = True
            kept = KeptReasoning()
            kept.add("think", head)
            reasoning, field, content = kept.text, "think", content.lstrip()
        if text_calls and not calls:
            content, calls = text_tool_calls(content)
        if not calls and not content.strip() and self._calls.empty_index is not None:
            # Nothing but empty tool-call items: an error result the model reads, not "returned nothing".
            calls = [empty_call(self._calls.empty_index)]
        reason = self.finish_reason or ("tool_calls" if calls else "stop")
        if reason == "stop" and calls:
            reason = "tool_calls"  # Gemini, Ollama, LocalAI finish tool calls with "stop"
        return StreamDone(
            request_id,
            content,
            calls,
            reason,
            self.usage,
            reasoning=reasoning,
            reasoning_field=field,
            reasoning_details=self.reasoning.details,
        )

    def failed(self, request_id: int, kind: StreamFailureKind, message: str) -> StreamFailed:
        """The episode as a StreamFailed: what arrived before the failure is kept."""
        try:
            calls = self._calls.finish(stream_ended=True)
        except Exception:  # even the partial calls cannot be assembled: answer without them
            calls = []
        content = self.content if self._loop_cut is None else self.content[: self._loop_cut]
        return StreamFailed(request_id, kind, message, content=content, tool_calls=calls)
