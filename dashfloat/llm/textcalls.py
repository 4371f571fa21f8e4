"""Tool calls written as text, for models whose server passes no native ``tool_calls`` (issue 18 §3).

Three written forms are read (docs/decisions/0014-text-tool-calls.md):

- ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (Hermes and Qwen templates) and
- ``[TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]`` or ``[TOOL_CALLS]name[ARGS]{...}`` (Mistral):
  the marker says a call was meant, so a malformed one is still a call, with an error for the model;
- a fenced block (```` ```json ````, ```` ```tool_call ```` or bare), a ``<tools>`` block, or a whole answer, that
  starts with a call attempt: an object with a ``"name"`` string and ``"arguments"`` (or ``"parameters"``). A call
  attempt is a call whatever it names and whatever its arguments (ADR 0079): an unknown tool or arguments that do
  not fit become an error result the model reads, never prose it is not told about. A block that starts
  ``{"name":`` but is no JSON is a broken call, answered the same way. Other JSON (a list, a larger object, JSON
  in a sentence) stays prose.

What follows the calls inside their block (one call per line, then often a result the model invented before any
call ran) is read as more calls while it is calls and dropped from there on. The prose around blocks is kept.
"""

from __future__ import annotations

import re

import msgspec

from dashfloat.jsonvalue import JsonValue
from dashfloat.protocol import AssembledCall
from dashfloat.tool_args import assemble, explained

_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.DOTALL)
_FENCED = re.compile(
    r"```[ \t]*(?:json|tool_call|tool_code)?[ \t]*\n?(.*?)\n?[ \t]*```|<tools>\s*(.*?)\s*(?:</tools>|\Z)", re.DOTALL
)
_CALL_START = re.compile(r'\{\s*"name"\s*:')
"""How a call attempt begins: a block that starts so and does not decode is a broken call, not prose."""
_BROKEN_NAME = re.compile(r'\{\s*"name"\s*:\s*"([A-Za-z_][\w.-]{0,63})"')
"""The name at the start of a call that does not decode."""
_CALL_EXTRA_KEYS = frozenset({"type", "id"})
"""Keys a written call may carry beside name and arguments (copied from the OpenAI shape) and still be a call."""
_INVENTED = re.compile(r"<tool_response>.*?(?:</tool_response>|\Z)", re.DOTALL)
"""A result written by the model itself after its call (Hermes and Qwen form): no call had run yet."""
_MARKER = "[TOOL_CALLS]"
_MISTRAL_ARGS = re.compile(r"\s*([A-Za-z_][\w.-]*)\[ARGS\]")
_ARG_KEYS = ("arguments", "parameters")  # Llama templates write "parameters"


def _decode(text: str) -> JsonValue | msgspec.UnsetType:
    try:
        value: JsonValue = msgspec.json.decode(text)
    except (msgspec.DecodeError, RecursionError):
        return msgspec.UNSET
    return value


def _attempt(value: JsonValue, whole: bool = False) -> bool:
    """Whether ``value`` is written as a call: a name and arguments (anything else about it may be wrong). In a
    block, other keys than OpenAI's make it an example; an answer that is nothing but the object is a call."""
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return False
    arg_keys = [key for key in _ARG_KEYS if key in value]
    return len(arg_keys) == 1 and (whole or set(value) - {"name", *arg_keys} <= _CALL_EXTRA_KEYS)


def _block_calls(block: str, first_index: int, whole: bool = False) -> list[AssembledCall]:
    """The calls a block starts with (none: the block is prose). JSON values are read one after another; the first
    that is no call attempt ends the calls, and it and the rest are dropped (a result the model made up)."""
    import json  # here: an idle LLM worker keeps json's modules out (ADR 0090)

    raw = json.JSONDecoder()
    text = block.strip()
    calls: list[AssembledCall] = []
    at = 0
    while at < len(text):
        try:
            value, end = raw.raw_decode(text, at)
        except (json.JSONDecodeError, RecursionError):
            if _CALL_START.match(text, at):
                calls.append(_broken(first_index + len(calls), text[at : at + 80]))
            break
        if not _attempt(value, whole):
            break
        calls.append(_marked_call(value, first_index + len(calls)))
        at = end
        while at < len(text) and text[at] in " \t\r\n,":
            at += 1
    return calls


def _marked_call(value: JsonValue | msgspec.UnsetType, index: int) -> AssembledCall:
    """A call the text marked as one: valid or not, it goes to the model (an error result if broken)."""
    call_id = f"text_call_{index}"
    if not isinstance(value, dict):
        return assemble(call_id, "", None, "the tool call written in the text is not a JSON object")
    name = value.get("name")
    name = name if isinstance(name, str) else ""
    arg_key = next((key for key in _ARG_KEYS if key in value), None)
    args: JsonValue | msgspec.UnsetType = value.get(arg_key) if arg_key else {}
    if isinstance(args, str):
        args = _decode(args) if args.strip() else {}
    if not name:
        return assemble(call_id, "", None, "the tool call written in the text has no name")
    if not isinstance(args, dict):
        return assemble(call_id, name, None, explained(name, "the arguments written in the text are not a JSON object"))
    return assemble(call_id, name, args)


def _broken(index: int, what: str) -> AssembledCall:
    """A call that is no JSON: named when its start names it (the conversation then shows which tool it meant, not
    ``unknown``, a name the model copied next time), answered with what that tool takes."""
    error = f"the tool call written in the text is not valid JSON: {what!r}"
    named = _BROKEN_NAME.match(what.strip())
    if named is None:
        return assemble(f"text_call_{index}", "", None, error)
    return assemble(f"text_call_{index}", named.group(1), None, explained(named.group(1), error))


def _mistral(rest: str, first_index: int) -> list[AssembledCall]:
    """What follows ``[TOOL_CALLS]``: a JSON list or object, or ``name[ARGS]{...}`` pairs."""
    stripped = rest.strip()
    value = _decode(stripped)
    if isinstance(value, list):
        return [_marked_call(item, first_index + i) for i, item in enumerate(value)]
    if value is not msgspec.UNSET:
        return [_marked_call(value, first_index)]
    calls: list[AssembledCall] = []
    parts = _MISTRAL_ARGS.split(rest)
    # split gives ["", name1, args1, name2, args2, ...] when the text is name[ARGS]{...} pairs
    if len(parts) >= 3 and not parts[0].strip():
        for i in range(1, len(parts) - 1, 2):
            raw_args = parts[i + 1].replace(_MARKER, "").strip()
            args = _decode(raw_args) if raw_args else {}
            written = {"name": parts[i], "arguments": None if isinstance(args, msgspec.UnsetType) else args}
            calls.append(_marked_call(written, first_index + len(calls)))
        return calls
    return [_broken(first_index, stripped[:80])]


def text_tool_calls(content: str) -> tuple[str, list[AssembledCall]]:
    """The prose and the tool calls written in ``content`` (no calls: ``content`` unchanged)."""
    calls: list[AssembledCall] = []
    prose = content
    if "<tool_call>" in content:
        for match in _TAGGED.finditer(content):
            value = _decode(match.group(1))
            calls.append(
                _broken(len(calls), match.group(1)[:80]) if value is msgspec.UNSET else _marked_call(value, len(calls))
            )
        prose = _INVENTED.sub("", _TAGGED.sub("", content))
    elif _MARKER in content:
        before, _, rest = content.partition(_MARKER)
        calls = _mistral(rest, 0)
        prose = before
    else:
        kept: list[str] = []
        last = 0
        for match in _FENCED.finditer(content):
            found = _block_calls(match.group(1) or match.group(2) or "", len(calls))
            if not found:
                continue  # JSON shown in an explanation: it stays prose and never runs
            kept.append(content[last : match.start()])
            last = match.end()
            calls += found
        if calls:
            kept.append(content[last:])
            prose = "".join(kept)
        elif content.lstrip().startswith("{") and (found := _block_calls(content, 0, whole=True)):
            calls, prose = found, ""
    if not calls:
        return content, []
    return re.sub(r"\n{3,}", "\n\n", prose).strip(), calls
