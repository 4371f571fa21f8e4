"""prompt_toolkit imported without the modules this process never uses (issue 19: idle memory).

prompt_toolkit calls one function of wcwidth: ``wcwidth.wcwidth``, a character's width in cells
(``prompt_toolkit.utils`` imports it). wcwidth's package ``__init__`` (0.9) imports its whole API first — grapheme
segmentation, text wrapping, alignment, escape sequences, SGR state, and the Python tables they read — and then,
where its C extension is installed, binds ``wcwidth`` to the extension's function behind an LRU cache, so those
tables are not even read. While prompt_toolkit is imported, a stand-in package offers that one function, made as
wcwidth's ``__init__`` makes it; it is gone once prompt_toolkit is in, so a later ``import wcwidth`` anywhere finds
the real package. Without the C extension (another wcwidth, another platform), or with ``WCWIDTH_PYTHON`` set
(wcwidth's own switch to its Python code), nothing is done.

Measured in the TUI's main process at idle: ~1.1 MB private less (docs/decisions/0046-idle-memory-floor.md).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
import types
from typing import Final

WCWIDTH_CACHE_ENTRIES: Final = 1024
"""wcwidth's own cache size for the C extension's function (wcwidth 0.9's ``__init__``)."""


def _wcwidth_standin() -> types.ModuleType | None:
    """A ``wcwidth`` package holding only ``wcwidth``, registered in ``sys.modules``; None where it cannot be."""
    if os.environ.get("WCWIDTH_PYTHON"):
        return None  # wcwidth then uses its Python implementation, which needs the package's tables
    spec = importlib.util.find_spec("wcwidth")
    if spec is None or spec.submodule_search_locations is None:
        return None
    standin = types.ModuleType("wcwidth", "Stands in for wcwidth while prompt_toolkit imports.")
    standin.__path__ = list(spec.submodule_search_locations)
    standin.__spec__ = spec
    sys.modules["wcwidth"] = standin
    try:
        from wcwidth._wcwidth_c import wcwidth  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        del sys.modules["wcwidth"]
        return None
    standin.wcwidth = functools.lru_cache(maxsize=WCWIDTH_CACHE_ENTRIES)(wcwidth)  # type: ignore[attr-defined]
    return standin


def import_prompt_toolkit() -> None:
    """Import prompt_toolkit's wcwidth user as described above; nothing to do when wcwidth is already imported."""
    if "wcwidth" in sys.modules or "prompt_toolkit.utils" in sys.modules:
        return  # imported already (the test process): as it was
    standin = _wcwidth_standin()
    try:
        import prompt_toolkit.utils  # noqa: F401
    finally:
        if standin is not None and sys.modules.get("wcwidth") is standin:
            del sys.modules["wcwidth"]


import_prompt_toolkit()
