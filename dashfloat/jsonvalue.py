"""The type of decoded JSON that DashFloat reads but does not own: provider chunks and bodies, schemas.

A recursive alias for mypy only: msgspec cannot decode into it on Python 3.11 (it rejects the forward
reference), so a decode is typed ``Any`` at the call and lands in a variable of this type at once.
"""

from __future__ import annotations

JsonValue = str | int | float | bool | None | list["JsonValue"] | dict[str, "JsonValue"]
"""A JSON value, as decoded."""
JsonObject = dict[str, JsonValue]
"""A JSON object, as decoded."""
