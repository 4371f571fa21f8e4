"""OpenSSL, loaded by the main process before it forks the agent (issue 19: idle memory).

Every process under the main one loads OpenSSL: ``hashlib`` and ``secrets`` in the agent and the executor, ``ssl`` in
the LLM worker. Loaded once, before the agent's fork, its pages (the library's and its initialisation's) are shared by
all four processes instead of copied into each (~1-1.5 MB a process), and ``ssl`` leaves the LLM worker's critical
path. Nothing here is used by the caller: it is imported for the loading. Guarded by tests/startup/
test_import_budget.py (``_ssl`` and ``_hashlib`` imported by the main process, before the fork, in all four).
"""

from __future__ import annotations


def preload_openssl() -> None:
    """Load OpenSSL's modules now (a no-op once they are in)."""
    import hashlib  # noqa: F401
    import secrets  # noqa: F401
    import ssl  # noqa: F401
