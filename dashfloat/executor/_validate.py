"""Argument validation against the tool catalogue: names, presence, types, ranges, defaults."""

from __future__ import annotations

import math
from typing import Any

from dashfloat.catalogue import EDIT_FILE, TOOL_NAMES, TOOLS

_SCHEMAS: dict[str, dict[str, Any]] = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}


def _check(tool: str, key: str, value: Any, schema: dict[str, Any]) -> str | None:
    kind = schema["type"]
    if kind == "string":
        return None if isinstance(value, str) else f"{tool}: {key} must be a string"
    if kind == "number":
        if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
            return f"{tool}: {key} must be a number"
        low, high = schema.get("minimum"), schema.get("maximum")
        if low is not None and value < low:
            return f"{tool}: {key} must be >= {low:g}, got {value:g}"
        if high is not None and value > high:
            return f"{tool}: {key} must be <= {high:g}, got {value:g}"
        return None
    if kind == "integer":
        # bool is an int subclass in Python but not a JSON integer.
        if not isinstance(value, int) or isinstance(value, bool):
            return f"{tool}: {key} must be an integer"
        low, high = schema.get("minimum"), schema.get("maximum")
        if low is not None and value < low:
            return f"{tool}: {key} must be >= {low}, got {value}"
        if high is not None and value > high:
            return f"{tool}: {key} must be <= {high}, got {value}"
        return None
    raise AssertionError(f"catalogue type {kind!r} has no validator")  # a catalogue edit forgot us


def validate(name: Any, args: Any) -> dict[str, Any] | str:
    """The normalized arguments (defaults filled in) of a call, or the error message saying why not."""
    if not isinstance(name, str) or name not in TOOL_NAMES:
        return f"unknown tool: {name!r} (tools: {', '.join(TOOL_NAMES)})"
    if not isinstance(args, dict):
        return f"{name}: arguments must be a JSON object"
    schema = _SCHEMAS[name]
    properties: dict[str, Any] = schema["properties"]
    unknown = sorted(str(k) for k in args if k not in properties)
    if unknown:
        return f"{name}: unknown parameter(s): {', '.join(unknown)}"
    normalized: dict[str, Any] = {}
    for key, prop in properties.items():
        if key not in args:
            if key in schema["required"]:
                return f"{name}: missing required parameter {key}"
            normalized[key] = prop.get("default")  # None: the runtime's own default (execute_command's timeout)
            continue
        error = _check(name, key, args[key], prop)
        if error:
            return error
        normalized[key] = args[key]
    if name == EDIT_FILE:
        if normalized["search_block"] == "":
            return "edit_file: search_block is empty (it would match everywhere)"
        if normalized["search_block"] == normalized["replace_block"]:
            return "edit_file: search_block and replace_block are identical (the edit would change nothing)"
    return normalized
