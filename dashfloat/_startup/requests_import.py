"""requests imported without the modules this process never uses (issue 19: idle memory).

The LLM worker imports its HTTP stack after its fork, so every module of it is the worker's own memory. Two of
them we never call, and each drags in more:

- a character-set detector (charset_normalizer, or chardet): requests imports one to guess the encoding of a
  body that declares none, for ``Response.text`` and ``apparent_encoding``. We decode every body ourselves
  (msgspec, ``bytes.decode``). requests supports running without one: it then decodes such a body as UTF-8.
- ``importlib.metadata`` (with zipfile, csv and importlib's resource readers): urllib3's ``http2`` package imports
  its ``version`` at import, to check the h2 package's version when someone turns HTTP/2 on. We never do.

Measured in the worker at idle: 14.6 -> 12.2 MB private (docs/decisions/0046-idle-memory-floor.md).
"""

from __future__ import annotations

import sys
import types
import warnings
from importlib.machinery import ModuleSpec
from typing import Any

UNUSED_TOP_LEVEL: frozenset[str] = frozenset({"charset_normalizer", "chardet"})
"""Packages kept out of this process while requests is imported (requests then falls back to UTF-8)."""

_NO_DETECTOR_WARNING = "Unable to find acceptable character detection dependency"


class _Absent:
    """A meta path finder that says the unused packages are not installed (while requests is imported only)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        if name.partition(".")[0] in UNUSED_TOP_LEVEL:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


def _version(distribution_name: str) -> str:
    """``importlib.metadata.version``, imported when it is first called (urllib3 calls it only to turn HTTP/2 on)."""
    from importlib.metadata import version

    return version(distribution_name)


def import_requests() -> None:
    """Import requests (and urllib3) as described above; nothing to do when it is already imported.

    The stand-ins are gone once requests is in: a later ``import importlib.metadata`` or ``import
    charset_normalizer`` anywhere in the process finds the real module.
    """
    if "requests" in sys.modules:
        return  # imported already (the test process; a worker forked from it): with its detector, as it was
    finder = _Absent()
    standin: types.ModuleType | None = None
    if "importlib.metadata" not in sys.modules:
        standin = types.ModuleType("importlib.metadata", "Stands in for importlib.metadata while requests imports.")
        standin.version = _version  # type: ignore[attr-defined]
        sys.modules["importlib.metadata"] = standin
    sys.meta_path.insert(0, finder)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", _NO_DETECTOR_WARNING)  # requests says it will use UTF-8
            import requests  # noqa: F401
    finally:
        sys.meta_path.remove(finder)
        if standin is not None and sys.modules.get("importlib.metadata") is standin:
            del sys.modules["importlib.metadata"]


import_requests()
