"""Start-up and memory tricks, each in one module with its reason and the test that guards it (ADR 0090).

Why they exist: a start's time and the four processes' idle memory (issue 19's targets; bench/results.md). Only
these modules shape imports or forks; ordinary modules import what they use, heavy ones where first used, and
tests/startup/test_import_budget.py names any process that imports at idle what its budget keeps out.

- ``fork``: how a child is forked to share the most with its parent (``FORK``, ``start_sharing``).
- ``kept_out``: msgspec and shutil imported without what they drag in for nothing, not interruptible by Ctrl-C.
- ``openssl``: OpenSSL loaded before the agent's fork, shared by all four processes.
- ``lazy``: package exports imported on first use (PEP 562).
- ``preload``: a process's heavy imports on a thread while it already answers its pipe.
- ``requests_import``: requests without a charset detector nor ``importlib.metadata`` (the LLM worker).
- ``http_client_import``: http.client without ``calendar`` (the LLM worker).
- ``prompt_toolkit_import``: prompt_toolkit without its shortcuts, wcwidth's package nor minidom (the TUI).
"""

__all__: list[str] = []
