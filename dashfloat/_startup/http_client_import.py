"""http.client imported without ``calendar`` (issue 19: idle memory; docs/decisions/0056).

http.client parses every answer's header with the email package, whose ``email._parseaddr`` imports ``calendar``
(with its month and day tables) at import for one function, ``mktime_tz``, which neither http.client nor we ever
call. While http.client is imported, a stand-in module takes its place; the first attribute asked of it imports the
real module and answers from it. It is gone once http.client is in: a later ``import calendar`` anywhere gets the
real module, and ``email._parseaddr``'s reference keeps answering through the stand-in. Nothing is done where
http.client, the email package's address parser or calendar is imported already.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Final

CALENDAR: Final = "calendar"


def _calendar_standin() -> types.ModuleType:
    """A module standing in for ``calendar``, registered as it; the real one is imported when it is first asked for
    an attribute."""
    standin = types.ModuleType(CALENDAR, "Stands in for calendar until it is used.")

    def __getattr__(attribute: str) -> object:
        if sys.modules.get(CALENDAR) is standin:
            del sys.modules[CALENDAR]
        return getattr(importlib.import_module(CALENDAR), attribute)

    standin.__getattr__ = __getattr__  # type: ignore[method-assign]
    sys.modules[CALENDAR] = standin
    return standin


def import_http_client() -> None:
    """Import http.client as described above."""
    if any(name in sys.modules for name in ("http.client", "email._parseaddr", CALENDAR)):
        return
    standin = _calendar_standin()
    try:
        import http.client  # noqa: F401
    finally:
        if sys.modules.get(CALENDAR) is standin:
            del sys.modules[CALENDAR]


import_http_client()
