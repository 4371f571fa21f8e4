"""prompt_toolkit imported without the modules this process never uses (issue 19: idle memory).

prompt_toolkit's package ``__init__`` imports its shortcuts (the prompt session, dialogs, progress bars with an XML
parser, choice input, widgets) for the names it re-exports, whichever submodule one imports. The UI imports only
submodules: the package is registered without running its ``__init__``, which runs, as an import would have, the
first time one of its own names is asked for (``from prompt_toolkit import Application``, ``__version__``).

prompt_toolkit calls one function of wcwidth: ``wcwidth.wcwidth``, a character's width in cells
(``prompt_toolkit.utils`` imports it). wcwidth's package ``__init__`` (0.9) imports its whole API first — grapheme
segmentation, text wrapping, alignment, escape sequences, SGR state, and the Python tables they read — and then,
where its C extension is installed, binds ``wcwidth`` to the extension's function behind an LRU cache, so those
tables are not even read. While prompt_toolkit is imported, a stand-in package offers that one function, made as
wcwidth's ``__init__`` makes it; it is gone once prompt_toolkit is in, so a later ``import wcwidth`` anywhere finds
the real package. Without the C extension (another wcwidth, another platform), or with ``WCWIDTH_PYTHON`` set
(wcwidth's own switch to its Python code), nothing is done.

Measured in the TUI's main process at idle: the shortcuts ~0.8 MB and wcwidth's package ~1.0 MB private (ADR 0046).
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


def _package_without_init(name: str) -> None:
    """Register package ``name`` with its ``__init__`` not run yet: it runs when a name of its own is asked for."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return  # not a package on disk: imported as usual
    package = importlib.util.module_from_spec(spec)
    loader = spec.loader
    ran = False

    def __getattr__(attribute: str) -> object:
        nonlocal ran
        if not ran:
            ran = True
            loader.exec_module(package)  # its own module __getattr__ (for __version__) replaces this one
            return getattr(package, attribute)
        raise AttributeError(f"module {name!r} has no attribute {attribute!r}")

    package.__getattr__ = __getattr__  # type: ignore[method-assign]
    sys.modules[name] = package


def import_prompt_toolkit() -> None:
    """Import prompt_toolkit as described above; nothing to do when it is already imported."""
    if "prompt_toolkit" in sys.modules:
        return  # imported already (the test process): as it was
    _package_without_init("prompt_toolkit")
    standin = None if "wcwidth" in sys.modules else _wcwidth_standin()
    try:
        import prompt_toolkit.utils  # noqa: F401
    finally:
        if standin is not None and sys.modules.get("wcwidth") is standin:
            del sys.modules["wcwidth"]


import_prompt_toolkit()
