"""``python -m dashfloat.mcp FD``: the MCP host, served over the socket ``FD`` the executor passed (ADR 0086)."""

import sys
from multiprocessing.connection import Connection

from dashfloat.mcp import serve

serve(Connection(int(sys.argv[1])))
