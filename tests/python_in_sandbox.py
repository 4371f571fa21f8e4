"""Whether a sandboxed program can run this checkout's Python: the sandbox gives commands a private ``/tmp``, so a
virtual environment that lives under the machine's ``/tmp`` (a checkout cloned there) is not there inside it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

PYTHON_HIDDEN_IN_SANDBOX = Path(sys.prefix).resolve().is_relative_to("/tmp")
needs_python_in_sandbox = pytest.mark.skipif(
    PYTHON_HIDDEN_IN_SANDBOX,
    reason=f"this Python's environment ({sys.prefix}) is under /tmp, which the sandbox replaces with its own",
)
