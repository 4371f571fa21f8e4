"""The sandbox's registry proxy: its own process, outside the sandbox, started by the executor (ADR 0082).

``python -m dashfloat.netproxy CONFIG_JSON`` serves; ``forward_source`` is what each proxied command runs inside its
sandbox to reach it. Nothing here is imported on any process's idle path.
"""

import functools
import os

FORWARD_SCRIPT = os.path.join(os.path.dirname(__file__), "_forward.py")
"""The in-sandbox forwarder (``_forward.py``: the standard library only)."""


@functools.cache
def forward_source() -> str:
    """The forwarder's source, run with ``python -c`` in the sandbox (where this file may not be visible)."""
    with open(FORWARD_SCRIPT, encoding="utf-8") as file:
        return file.read()


__all__ = ["FORWARD_SCRIPT", "forward_source"]
