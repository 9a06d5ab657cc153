"""The registry validates a call once and hands back a BoundCall: kind, preview, run."""

import asyncio
from typing import ClassVar

from pydantic import BaseModel, field_validator

from clover_code.tools import BoundCall, Registry, ToolContext, ToolError, ToolResult
from clover_code.tools.workspace import Workspace


class Echo:
    name: ClassVar[str] = "echo"
    kind: ClassVar[str] = "shell"
    validations: ClassVar[list[str]] = []

    class Args(BaseModel):
        command: str

        @field_validator("command")
        @classmethod
        def counted(cls, value: str) -> str:
            Echo.validations.append(value)
            return value

    async def run(self, args, ctx) -> ToolResult:
        if args.command == "boom":
            raise ToolError("it went boom")
        return ToolResult(True, args.command)


class Plugin(Echo):
    name: ClassVar[str] = "plugin"
    kind: ClassVar[str] = "network"  # a kind the permission table does not know


def test_a_call_is_validated_once_from_bind_to_result(tmp_path):
    Echo.validations.clear()
    bound = Registry([Echo()]).bind("echo", '{"command": "ls -l"}', ToolContext(Workspace(tmp_path)))
    assert isinstance(bound, BoundCall) and bound.kind == "shell" and bound.arguments == {"command": "ls -l"}
    assert asyncio.run(bound.preview()) == "ls -l"  # a shell call shows its command line
    assert asyncio.run(bound.run()) == ToolResult(True, "ls -l")
    assert Echo.validations == ["ls -l"]


def test_binding_failures_are_messages_and_a_tool_error_is_a_result(tmp_path):
    registry, ctx = Registry([Echo()]), ToolContext(Workspace(tmp_path))
    assert "unknown tool 'nope'" in registry.bind("nope", "{}", ctx)
    assert "invalid arguments for echo" in registry.bind("echo", "{}", ctx)
    assert asyncio.run(registry.bind("echo", {"command": "boom"}, ctx).run()) == ToolResult(False, "it went boom")


def test_an_unknown_kind_counts_as_shell(tmp_path):
    bound = Registry([Plugin()]).bind("plugin", {"command": "x"}, ToolContext(Workspace(tmp_path)))
    assert bound.kind == "shell"
