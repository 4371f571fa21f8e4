"""Package exports imported on first use (PEP 562), so importing a package for one name costs only that name.

Start-up matters (issue 19): the main process needs ``AgentOptions`` before it forks the agent, not the agent's
whole code; the agent imports the rest itself, in parallel with the main process's UI imports.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping


def lazy_exports(package: str, homes: Mapping[str, str]) -> Callable[[str], object]:
    """A module ``__getattr__`` for ``package``: ``homes`` maps each exported name to its submodule, or to
    ``submodule:name`` when the package exports it under another name."""
    namespace = importlib.import_module(package).__dict__

    def __getattr__(name: str) -> object:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = home.partition(":")
        value = getattr(importlib.import_module(f"{package}.{module}"), attribute or name)
        namespace[name] = value  # later lookups are plain attribute reads
        return value

    return __getattr__
