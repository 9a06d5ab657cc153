"""A real MCP server, built with the `mcp` SDK, for the MCP tests: run as
`python -m tests.support.mcp_server stdio` or `... http PORT`.

Tools: `lookup` (annotated read-only), `record` (writes a line to the file RECORD_FILE names:
proof from outside that it ran), `crash` (the process dies mid-call), `big` (long output),
`picture` (an image). START_MARKER, when set, names a file written at start-up: proof from outside
that the server was started at all."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.utilities.types import Image
from mcp.types import ToolAnnotations

server = MCPServer("testkit")


@server.tool(description="Look a word up in the glossary.", annotations=ToolAnnotations(read_only_hint=True))
def lookup(word: str) -> str:
    return f"{word}: a word the glossary knows"


@server.tool(description="Record a line in the team log.")
def record(line: str) -> str:
    with open(os.environ["RECORD_FILE"], "a", encoding="utf-8") as f:
        f.write(line + "\n")
    return f"recorded {line!r}"


@server.tool(description="Stop the server at once.")
def crash() -> str:
    os._exit(3)


@server.tool(description="Return a long text.", annotations=ToolAnnotations(read_only_hint=True))
def big(lines: int) -> str:
    return "\n".join(f"line {i}" for i in range(lines))


@server.tool(description="Return a picture.", annotations=ToolAnnotations(read_only_hint=True))
def picture() -> Image:
    return Image(data=b"\x89PNG\r\n\x1a\nfake", format="png")


def main() -> None:
    marker = os.environ.get("START_MARKER")
    if marker:
        Path(marker).write_text(f"started {os.getpid()}\n")
    if sys.argv[1] == "http":
        server.run("streamable-http", port=int(sys.argv[2]))
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
