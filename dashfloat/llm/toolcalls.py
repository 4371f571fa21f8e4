"""The pure tool-call accumulator: stream deltas in, assembled calls out (seed §1, issue 3 §3).

Providers deviate from the OpenAI fragment shape in many ways (docs/provider-quirks.md); every rule
below exists for one of them and has a test in tests/llm/test_toolcalls.py.
"""

from __future__ import annotations

import re

import msgspec

from dashfloat.jsonvalue import JsonObject, JsonValue
from dashfloat.protocol import AssembledCall
from dashfloat.tool_args import assemble

_ERROR_EXCERPT_CHARS = 80
WRITTEN_MAX_CHARS = 500
"""Of arguments that are no JSON object, what a call carries to its row (the row shows one line of it)."""


_STRUCTURE = re.compile(r'[{}\[\]"\\]')
"""What changes the nesting of JSON text: brackets, quotes, and the backslash that escapes a quote."""


class _Call:
    """One call being assembled. Its arguments are followed as they arrive (``_scan``: each fragment once), so that
    whether they are one whole object is known without decoding them all again at every fragment."""

    __slots__ = (
        "_begun",
        "_closed_at",
        "_depth",
        "_escaped",
        "_in_string",
        "_length",
        "_not_object",
        "_parts",
        "_whole",
        "id",
        "index",
        "name",
        "seq",
    )

    _parts: list[str]
    _closed_at: int | None
    _whole: bool | None

    def __init__(self, index: int, seq: int) -> None:
        self.index = index
        self.seq = seq
        self.id = ""
        self.name = ""
        self._reset("")

    @property
    def args(self) -> str:
        """The arguments so far (kept as the fragments that came, joined when read: ``+=`` on an attribute copies the
        whole string every time)."""
        if len(self._parts) > 1:
            self._parts = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""

    @property
    def length(self) -> int:
        return self._length

    def _reset(self, args: str) -> None:
        self._parts = []
        self._length = 0
        self._depth = 0
        self._begun = self._in_string = self._escaped = self._not_object = False
        self._closed_at = None
        """Where the first top-level object's closing bracket ends, once it has."""
        self._whole = None
        """Whether ``args[:_closed_at]`` decodes to an object (decoded once)."""
        self.append(args)

    def replace(self, args: str) -> None:
        self._reset(args)

    def append(self, args: str) -> None:
        start = self._length
        if args:
            self._parts.append(args)
            self._length += len(args)
        self._scan(args, start)

    def _scan(self, text: str, start: int) -> None:
        if self._not_object or not text:
            return
        if self._closed_at is not None:
            self._not_object = bool(text.strip())  # text after the object: no longer one object
            return
        skip = 0
        if not self._begun:
            head = text.lstrip()
            if not head:
                return  # only white space so far
            self._begun = True
            if head[0] != "{":
                self._not_object = True
                return
            skip = len(text) - len(head)
        elif self._escaped:
            skip = 1
        self._escaped = False
        for match in _STRUCTURE.finditer(text, skip):
            at = match.start()
            if at < skip:
                continue
            char = match.group()
            if self._in_string:
                if char == "\\":
                    if at + 1 == len(text):
                        self._escaped = True  # the escaped character comes with the next fragment
                    skip = at + 2
                elif char == '"':
                    self._in_string = False
                continue
            if char == '"':
                self._in_string = True
            elif char in "{[":
                self._depth += 1
            elif char in "}]":
                self._depth -= 1
                if self._depth <= 0:
                    self._closed_at = start + at + 1
                    self._not_object = bool(text[at + 1 :].strip())
                    return

    def whole_object(self) -> bool:
        """Whether the arguments so far are one whole JSON object (``_complete_object``), decoding them at most once."""
        if self._not_object or self._closed_at != self._length:
            return False
        if self._whole is None:
            self._whole = _complete_object(self.args)
        return self._whole


def _text(value: JsonValue) -> str:
    """A fragment field as text: strings as they are, anything else absent."""
    return value if isinstance(value, str) else ""


def _complete_object(text: str) -> bool:
    """Whether ``text`` already holds a whole JSON object (so more text would not extend it)."""
    if not text.endswith("}"):
        return False
    try:
        return isinstance(msgspec.json.decode(text), dict)
    except (msgspec.DecodeError, RecursionError):
        return False


class ToolCalls:
    """Accumulates ``choices[0].delta.tool_calls`` lists; ``finish()`` gives the calls in index order."""

    def __init__(self) -> None:
        self._calls: list[_Call] = []
        self._by_id: dict[str, _Call] = {}
        self._latest_at: dict[int, _Call] = {}
        self._last: _Call | None = None
        self.fragment_bytes = 0
        """Bytes of ids, names and arguments received, counted per fragment (repeats included)."""
        self.empty_index: int | None = None
        """The index of the first item that carried nothing (id, name and arguments all null or empty)."""

    @property
    def distinct_calls(self) -> int:
        """How many distinct calls were started (a call split into many fragments is one)."""
        return len(self._calls)

    def feed(self, deltas: JsonValue) -> ToolCalls:
        """Merge one chunk's tool-call list; anything that is not a list of objects is ignored."""
        if isinstance(deltas, list):
            for item in deltas:
                if isinstance(item, dict):
                    self._feed_one(item)
        return self

    def _feed_one(self, item: JsonObject) -> None:
        function = item.get("function")
        if not isinstance(function, dict):
            function = {}
        call_id = _text(item.get("id"))
        name = _text(function.get("name"))
        raw_args = function.get("arguments")
        args = raw_args if isinstance(raw_args, str) else ""
        if raw_args is not None and not isinstance(raw_args, str):
            # MiniMax and others send the arguments as a JSON value instead of a string.
            args = msgspec.json.encode(raw_args).decode()
        self.fragment_bytes += len(call_id.encode()) + len(name.encode()) + len(args.encode())
        raw_index = item.get("index")
        index = raw_index if isinstance(raw_index, int) and not isinstance(raw_index, bool) else None
        if not (call_id or name or args):
            # A phantom item (empty id, no function): it carries nothing, so it starts nothing; an answer
            # made of nothing else is still a call the model tried to make (Episode.finished).
            if self.empty_index is None:
                self.empty_index = index if index is not None else 0
            return
        call = self._target(call_id, index, name)
        if call is None:
            call = self._start(index)
        if call_id and not call.id:
            call.id = call_id
        if call_id:
            self._by_id.setdefault(call_id, call)  # an id that changes per fragment keeps naming this call
        if name and name != call.name:
            call.name += name  # empty so far, or the name arriving in pieces; a repeat is skipped above
        self._append_args(call, args)
        self._last = call

    def _target(self, call_id: str, index: int | None, name: str) -> _Call | None:
        """The call this fragment continues, or None when it starts a new one."""
        if call_id:
            # An id seen before continues its call (ids repeated on every fragment, LiteLLM's summary
            # chunk); a new id is a new call even at a used index (Ollama reports every call at 0).
            known = self._by_id.get(call_id)
            if known is not None or index is None:
                return known
            at_index = self._latest_at.get(index)
            if at_index is None:
                return None
            # A new id without a name at a used index continues that call (ids that change on every
            # fragment); with a name it is a new call (Ollama reports every call at index 0).
            return at_index if not at_index.id or not name else None
        # No index at all (Gemini, older Ollama): a fragment continues the latest call.
        existing = self._latest_at.get(index) if index is not None else self._last
        if existing is None:
            return None
        if name and existing.name and existing.whole_object():
            return None  # a whole new named call where the previous one is already complete
        return existing

    def _start(self, index: int | None) -> _Call:
        if index is None:
            index = max((c.index for c in self._calls), default=-1) + 1
        call = _Call(index, len(self._calls))
        self._calls.append(call)
        self._latest_at[index] = call
        return call

    @staticmethod
    def _append_args(call: _Call, args: str) -> None:
        if not args:
            return
        if call.length <= 2 and call.args in ("", "{}") and args.startswith("{") and _complete_object(args):
            # A whole object replaces nothing or the "{}" placeholder some gateways send first.
            call.replace(args)
        elif len(args) == call.length and args == call.args and _complete_object(args):
            return  # a duplicate summary chunk repeating the whole call
        else:
            call.append(args)

    def finish(self, stream_ended: bool = False) -> list[AssembledCall]:
        """The assembled calls in index order (ties in arrival order), each with a reason if unusable.
        ``stream_ended``: the stream failed, so the call that was arriving last, if its arguments are no JSON
        object, was cut off rather than malformed."""
        ordered = sorted(self._calls, key=lambda c: (c.index, c.seq))
        return [self._assemble(c, cut=stream_ended and c is self._last) for c in ordered]

    @staticmethod
    def _assemble(call: _Call, cut: bool = False) -> AssembledCall:
        call_id = call.id or f"call_{call.index}_{call.seq}"
        args, error = _parse_args(call.args)
        if not call.name:
            error = "the tool call has no function name"
        cut = cut and (args is None or not call.args.strip())  # no JSON object yet, or nothing of it at all
        if not cut and args is not None:
            return assemble(call_id, call.name, args, error)
        written = call.args[:WRITTEN_MAX_CHARS]
        if cut and not call.args.strip():
            error = "it was cut off before any of its arguments came"
        elif cut:
            came = repr(call.args[:_ERROR_EXCERPT_CHARS]) + ("…" if len(call.args) > _ERROR_EXCERPT_CHARS else "")
            error = f"its arguments were cut off after {len(call.args)} characters: {came}"
        return assemble(call_id, call.name, None, error, written=written, cut=cut)


EMPTY_CALL_ERROR = (
    "the tool call arrived empty: its id, function name and arguments were all null or missing; "
    "call the tool again with its name and arguments"
)


def empty_call(index: int) -> AssembledCall:
    """The error call an answer made only of empty tool-call items becomes: the model reads why it did nothing."""
    return assemble(f"call_{index}_empty", "", None, EMPTY_CALL_ERROR)


def _parse_args(text: str) -> tuple[JsonObject | None, str | None]:
    if not text.strip():
        return {}, None  # a tool without parameters: some providers send no arguments at all
    try:
        value = msgspec.json.decode(text)
    except RecursionError:
        return None, "the arguments are nested too deeply to decode"
    except msgspec.DecodeError:
        rest = text[2:]
        if text.startswith("{}") and rest.strip():
            try:  # "{}" sent first, then the real object: one step only, never a recursion
                value = msgspec.json.decode(rest)
            except (msgspec.DecodeError, RecursionError):
                value = None
            if isinstance(value, dict):
                return value, None
        excerpt = text[:_ERROR_EXCERPT_CHARS]
        return None, f"the arguments are not valid JSON: {excerpt!r}"
    if not isinstance(value, dict):
        return None, f"the arguments are not a JSON object (got {type(value).__name__})"
    return value, None
