"""The protocol's wire: see dashfloat/protocol/__init__.py for the whole contract."""

from __future__ import annotations

import functools
from typing import Any

import msgspec

from dashfloat.protocol._base import Message

# ---------------------------------------------------------------- wire forms

ALL_MESSAGE_TYPES: tuple[type[Message], ...] = tuple(
    cls for cls in Message.__subclasses__() if cls.__module__.startswith(__package__ + ".")
)


@functools.cache
def msgpack_decoder(union: Any) -> msgspec.msgpack.Decoder[Any]:
    """The pipe decoder for one direction's union: one per process (a child forked after it was built uses the one
    it inherits: building it writes msgspec's type information into every message class, ADR 0046)."""
    return msgspec.msgpack.Decoder(union)


def json_decoder(union: Any) -> msgspec.json.Decoder[Any]:
    """The JSON decoder (debugging, standalone executor, headless --json) for one union."""
    return msgspec.json.Decoder(union)


MSGPACK_ENCODER = msgspec.msgpack.Encoder()
JSON_ENCODER = msgspec.json.Encoder()
