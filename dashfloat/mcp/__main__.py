"""``python -m dashfloat.mcp FD [FDS]``: the MCP host, served over the socket ``FD`` the executor passed; ``FDS``
(``3,7,9``) the descriptors it passed for the sandboxed servers' bwrap lines (ADR 0086)."""

import sys
from multiprocessing.connection import Connection

from dashfloat.mcp import serve

held = frozenset(int(n) for n in sys.argv[2].split(",") if n) if len(sys.argv) > 2 else frozenset()
serve(Connection(int(sys.argv[1])), held)
