"""An MCP server written with the SDK for the failure cases (ADR 0086): a crash mid-call, a huge result, a hang,
an image, a tool error, an attempt to plant git hooks, and a flood of tools (``FLOOD_TOOLS=N`` in its environment)."""

from __future__ import annotations

import base64
import mmap
import os
import socket
import time

from mcp.server.fastmcp import Context, FastMCP
from mcp.server.fastmcp.utilities.types import Image

server = FastMCP("fail")


@server.tool()
def echo(text: str) -> str:
    """Say the text back."""
    return text


@server.tool()
def crash() -> str:
    """Exit in the middle of the call."""
    os._exit(3)


@server.tool()
def huge(size: int) -> str:
    """Answer with size bytes of text, numbered lines."""
    line = "0123456789" * 7 + "\n"
    return (line * (size // len(line) + 1))[:size]


@server.tool()
def hang() -> str:
    """Never answer."""
    while True:
        time.sleep(60)


@server.tool()
def picture() -> Image:
    """Answer with a small PNG image."""
    return Image(
        data=base64.b64decode(
            "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
        ),
        format="png",
    )


@server.tool()
def hog(mib: int) -> str:
    """Map that many MiB of private writable memory (nothing is touched): 'mapped', or why it was refused."""
    try:
        mmap.mmap(-1, mib * 2**20, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS).close()
    except OSError as exc:
        return f"refused: {exc.strerror}"
    return "mapped"


@server.tool()
def fail() -> str:
    """Raise an error the client sees as the tool's error."""
    raise ValueError("this tool always fails")


@server.tool()
def whoami() -> str:
    """The process id and whether the network is reachable (a sandboxed server has none)."""
    interfaces = ",".join(sorted(name for _, name in socket.if_nameindex()))
    return f"pid={os.getpid()} interfaces={interfaces} secret={os.environ.get('SECRET_FOR_TEST', '-')}"


@server.tool()
def plant(where: str = ".") -> str:
    """Try to plant a git hook and config in ``where`` (and write a file beside them): what happened."""
    said = [f"cwd={os.getcwd()}"]
    os.chdir(where)
    for path in (".git/hooks/pre-commit", ".git/config", ".git/info/attributes", ".git/commondir", "planted.txt"):
        try:
            with open(path, "a") as file:
                file.write("#!/bin/sh\necho planted\n")
            said.append(f"{path}: written")
        except OSError as exc:
            said.append(f"{path}: {exc.strerror}")
    try:
        os.rename(".git/hooks", ".git/hooks-moved")  # a mount point: it cannot be moved away and replaced
        said.append(".git/hooks: moved")
    except OSError as exc:
        said.append(f".git/hooks: {exc.strerror}")
    proxy = os.environ.get("HTTPS_PROXY", "-")
    try:
        socket.create_connection(("127.0.0.1", 3128), timeout=5).close()
        said.append(f"proxy={proxy} listening")
    except OSError:
        said.append(f"proxy={proxy} closed")
    return "; ".join(said)


@server.tool()
def fill(size: int) -> str:
    """Write a file of ``size`` bytes in the working directory: 'written', or why not."""
    try:
        with open("filled.bin", "wb") as file:
            file.write(b"x" * size)
    except OSError as exc:
        return exc.strerror or str(exc)
    return "written"


@server.tool()
def header(key: str, ctx: Context) -> str:  # type: ignore[type-arg]
    """The HTTP request's header of that name (served over HTTP only)."""
    request = ctx.request_context.request
    return str(request.headers.get(key, "-")) if request is not None else "-"


for i in range(int(os.environ.get("FLOOD_TOOLS", "0"))):

    def flood(value: str, i: int = i) -> str:
        return f"flood {i}: {value}"

    server.add_tool(flood, name=f"flood_{i:03d}", description=f"Flood tool number {i}: " + "a long description " * 20)


if __name__ == "__main__":
    if os.environ.get("HTTP_PORT"):
        server.settings.port = int(os.environ["HTTP_PORT"])
        server.settings.log_level = "ERROR"
        server.run("streamable-http")
    else:
        server.run("stdio")
