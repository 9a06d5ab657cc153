"""An MCP server's tool as a clover-code tool: named `mcp__SERVER__TOOL`, described and shaped
by the server (its description and input schema go to the model as they are), a read when the
server annotates it `readOnlyHint`, otherwise a call that may change anything (it asks as a
command does). Its result is the text and structured content the server answers, cut as shell
output is; images and resources become a one-line note."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from mcp import types
from pydantic import BaseModel, ConfigDict

from clover_code.jsonsafe import JSONObject
from clover_code.tools import ToolContext, ToolKind, ToolResult
from clover_code.tools.mcp.naming import tool_name
from clover_code.tools.shell import OutputCap
from clover_code.tools.touches import Touches

if TYPE_CHECKING:
    from clover_code.tools.mcp.connection import McpConnection

class McpArguments(BaseModel):
    """Whatever object the model sends: the server checks it against its own schema."""

    model_config = ConfigDict(extra="allow")


class McpTool:
    Args = McpArguments

    def __init__(self, connection: McpConnection, spec: types.Tool) -> None:
        self.connection, self.spec = connection, spec
        self.server = connection.spec.name
        self.name = tool_name(self.server, spec.name)
        read_only = spec.annotations is not None and spec.annotations.read_only_hint is True
        self.kind: ToolKind = "read" if read_only else "shell"

    def schema(self) -> JSONObject:
        parameters: JSONObject = dict(self.spec.input_schema) or {"type": "object", "properties": {}}
        description = self.spec.description or self.spec.title or self.spec.name
        return {"type": "function",
                "function": {"name": self.name, "description": f"{description} (MCP server {self.server})",
                             "parameters": parameters}}

    def touches(self, args: BaseModel) -> Touches:
        """Nothing a read-only tool names is a workspace path; what any other does is unknown."""
        return Touches(label=f"{self.server}/{self.spec.name}", known=self.kind == "read")

    def preview(self, args: BaseModel, ctx: ToolContext) -> str:
        arguments = json.dumps(args.model_dump(), indent=2, ensure_ascii=False)
        return f"MCP server {self.server} ({self.connection.spec.shown}), tool {self.spec.name}:\n{arguments}"

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        result = await self.connection.call(self.spec.name, args.model_dump())
        output = result_text(result)
        return ToolResult(not result.is_error, output, {"server": self.server, "tool": self.spec.name})


def result_text(result: types.CallToolResult) -> str:
    """What the model reads: text parts, structured content when no text says it, one line per
    image or resource; cut in the middle as long shell output is."""
    parts: list[str] = []
    for item in result.content:
        if isinstance(item, types.TextContent):
            parts.append(item.text)
        elif isinstance(item, (types.ImageContent, types.AudioContent)):
            parts.append(f"[{item.type}: {item.mime_type}, {len(item.data) * 3 // 4:,} bytes, not shown]")
        elif isinstance(item, types.ResourceLink):
            parts.append(f"[resource: {item.uri}]")
        elif isinstance(item, types.EmbeddedResource):
            parts.append(f"[resource: {item.resource.uri}]")
    if result.structured_content is not None and not any(isinstance(i, types.TextContent) for i in result.content):
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, indent=1))
    cap = OutputCap()
    cap.feed("\n".join(parts).encode("utf-8", errors="replace"))
    return cap.text() or "(no output)"
