"""Tool calls written as text, for models whose server passes no native ``tool_calls`` (issue 18 §3).

Three written forms are read (docs/decisions/0014-text-tool-calls.md):

- ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (Hermes and Qwen templates) and
- ``[TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]`` or ``[TOOL_CALLS]name[ARGS]{...}`` (Mistral):
  the marker says a call was meant, so a malformed one is still a call, with an error for the model;
- a fenced block (```` ```json ````, ```` ```tool_call ```` or bare) or a whole answer that is one JSON object:
  an explanation may show such JSON, so it runs only when the whole block is exactly
  ``{"name": <one of the five tools>, "arguments": {valid arguments}}``; anything else stays prose.

The prose around the calls is kept as the answer's content.
"""

from __future__ import annotations

import re
from typing import Final

import msgspec

from dashfloat.catalogue import parameter_schemas
from dashfloat.jsonvalue import JsonObject, JsonValue
from dashfloat.protocol import AssembledCall
from dashfloat.tool_args import assemble

_SCHEMAS: Final = parameter_schemas()
_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.DOTALL)
_FENCED = re.compile(r"```[ \t]*(?:json|tool_call|tool_code)?[ \t]*\n?(.*?)\n?[ \t]*```", re.DOTALL)
_MARKER = "[TOOL_CALLS]"
_MISTRAL_ARGS = re.compile(r"\s*([A-Za-z_][\w.-]*)\[ARGS\]")
_ARG_KEYS = ("arguments", "parameters")  # Llama templates write "parameters"


def _decode(text: str) -> JsonValue | msgspec.UnsetType:
    try:
        value: JsonValue = msgspec.json.decode(text)
    except (msgspec.DecodeError, RecursionError):
        return msgspec.UNSET
    return value


def _type_ok(value: JsonValue, schema: JsonValue) -> bool:
    assert isinstance(schema, dict)
    kind = schema.get("type")
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    return True


def _valid_call(value: JsonValue | msgspec.UnsetType) -> tuple[str, JsonObject] | None:
    """``(name, args)`` when ``value`` is exactly a call of a known tool with valid arguments."""
    if not isinstance(value, dict) or len(value) != 2 or "name" not in value:
        return None
    arg_key = next((key for key in _ARG_KEYS if key in value), None)
    name = value["name"]
    args: JsonValue | msgspec.UnsetType = value.get(arg_key) if arg_key else None
    if isinstance(args, str):
        args = _decode(args)
    if not isinstance(name, str) or name not in _SCHEMAS or not isinstance(args, dict):
        return None
    schema = _SCHEMAS[name]
    properties, required = schema["properties"], schema["required"]
    assert isinstance(properties, dict) and isinstance(required, list)
    if any(key not in properties or not _type_ok(v, properties[key]) for key, v in args.items()):
        return None
    if any(key not in args for key in required if isinstance(key, str)):
        return None
    return name, args


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
        return assemble(call_id, name, None, "the arguments written in the text are not a JSON object")
    return assemble(call_id, name, args)


def _broken(index: int, what: str) -> AssembledCall:
    return assemble(f"text_call_{index}", "", None, f"the tool call written in the text is not valid JSON: {what!r}")


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
        prose = _TAGGED.sub("", content)
    elif _MARKER in content:
        before, _, rest = content.partition(_MARKER)
        calls = _mistral(rest, 0)
        prose = before
    else:
        kept: list[str] = []
        last = 0
        for match in _FENCED.finditer(content):
            found = _valid_call(_decode(match.group(1).strip()))
            if found is None:
                continue  # JSON shown in an explanation, or a near miss: it stays prose and never runs
            kept.append(content[last : match.start()])
            last = match.end()
            calls.append(assemble(f"text_call_{len(calls)}", *found))
        if calls:
            kept.append(content[last:])
            prose = "".join(kept)
        elif (found := _valid_call(_decode(content.strip()))) is not None:
            calls, prose = [assemble("text_call_0", *found)], ""
    if not calls:
        return content, []
    return re.sub(r"\n{3,}", "\n\n", prose).strip(), calls
