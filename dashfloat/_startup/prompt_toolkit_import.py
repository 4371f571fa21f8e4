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

prompt_toolkit's ``formatted_text.html`` imports ``xml.dom.minidom`` at import for one call, ``parseString`` in
``HTML()``, which the UI never makes. While prompt_toolkit is imported, a stand-in module takes its place; the
first attribute asked of it imports the real module and answers from it. It too is gone once prompt_toolkit is in:
a later ``import xml.dom.minidom`` anywhere gets the real module.

Measured in the TUI's main process at idle: the shortcuts ~0.8 MB and wcwidth's package ~1.0 MB private (ADR 0046),
minidom with its helpers ~0.35 MB (ADR 0053).
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


MINIDOM: Final = "xml.dom.minidom"


def _minidom_standin() -> types.ModuleType | None:
    """A module standing in for ``xml.dom.minidom``, registered as it; the real one is imported when the stand-in is
    first asked for an attribute. None when minidom is imported already."""
    if MINIDOM in sys.modules:
        return None
    import xml.dom  # the package (small); the stand-in must be its attribute for ``import xml.dom.minidom as m``

    standin = types.ModuleType(MINIDOM, "Stands in for xml.dom.minidom until it is used.")

    def __getattr__(attribute: str) -> object:
        if sys.modules.get(MINIDOM) is standin:
            del sys.modules[MINIDOM]
        real = importlib.import_module(MINIDOM)
        return getattr(real, attribute)

    standin.__getattr__ = __getattr__  # type: ignore[method-assign]
    sys.modules[MINIDOM] = standin
    xml.dom.minidom = standin
    return standin


def _drop_minidom_standin(standin: types.ModuleType) -> None:
    """Unregister the stand-in (whoever imported it keeps it: it answers from the real module)."""
    import xml.dom

    if sys.modules.get(MINIDOM) is standin:
        del sys.modules[MINIDOM]
    if getattr(xml.dom, "minidom", None) is standin:
        del xml.dom.minidom


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
    minidom = _minidom_standin()
    try:
        import prompt_toolkit.application  # most of the rest, formatted_text's html among it
        import prompt_toolkit.utils  # noqa: F401
    finally:
        if standin is not None and sys.modules.get("wcwidth") is standin:
            del sys.modules["wcwidth"]
        if minidom is not None:
            _drop_minidom_standin(minidom)


import_prompt_toolkit()
