"""Tools: actions on the workspace the agent may take.

Each tool declares its arguments as a pydantic model: that model is the one source
of its JSON schema and of argument validation. Description texts live in
`prompts/tools/<name>.md` (installed as the package clover_code.prompts). The registry
validates a call once and hands back a BoundCall: its kind, what it touches (tools/touches.py),
what the user approves and how it runs. Nothing raises past them: every failure comes back as
a ToolResult or a message the model can read.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, get_args, runtime_checkable

from pydantic import BaseModel, ValidationError

from clover_code import jsonsafe
from clover_code.errors import ToolError as ToolError  # re-exported: tools raise it from here
from clover_code.jsonsafe import JSON, JSONObject
from clover_code.sandbox.policy import SandboxPolicy
from clover_code.tools.touches import UNKNOWN, Touches

if TYPE_CHECKING:
    from clover_code.sandbox.gitrun import Git
    from clover_code.tools.workspace.checkpoints import Checkpoints

# What a tool does, for permissions: reads are free in `ask` mode, the rest ask.
ToolKind = Literal["read", "edit", "shell", "git"]
TOOL_KINDS: tuple[ToolKind, ...] = get_args(ToolKind)


@dataclass
class ToolResult:
    ok: bool
    output: str  # what the model reads
    data: JSONObject = field(default_factory=dict)  # for UIs: diff, exit_code, paths...


class Tool(Protocol):
    # Read-only members: a class attribute (the built-in tools) or one set per instance (an MCP
    # server's tool, tools/mcp) both satisfy them.
    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> ToolKind: ...
    @property
    def Args(self) -> type[BaseModel]: ...

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult: ...


@runtime_checkable
class Declaring(Protocol):
    """A tool that says what a call touches (every tool of clover-code's own does)."""

    def touches(self, args: BaseModel) -> Touches:
        """The paths the call reads and writes and the command it runs; only from `args`
        (nothing is looked up: the answer must not change between asking and running)."""
        ...


@runtime_checkable
class SelfDescribed(Protocol):
    """A tool that brings its own schema and description (an MCP server's tool), instead of an
    Args model and a prompt text of clover-code's."""

    def schema(self) -> JSONObject: ...


@runtime_checkable
class Previewing(Protocol):
    """A tool that can show what a call would do before it runs (an edit's diff)."""

    def preview(self, args: BaseModel, ctx: ToolContext) -> str | Awaitable[str]:
        """ToolError when the call would fail anyway."""
        ...


class WorkspaceAccess(Protocol):
    """What tools use of the workspace: clover_code.tools.workspace.Workspace (a Protocol here,
    since the workspace module imports this one for ToolError)."""

    root: Path

    def resolve(self, path: str) -> Path: ...
    def resolve_for_write(self, path: str) -> Path: ...
    def relative(self, path: Path) -> str: ...
    def note_read(self, path: Path, data: bytes | None = None) -> None: ...
    def note_written(self, path: Path) -> None: ...
    def forget(self, path: Path) -> None: ...
    def check_fresh(self, path: Path) -> None: ...
    def atomic_write(self, path: Path, data: bytes) -> None: ...


@dataclass
class ToolContext:
    """What tools act on."""

    workspace: WorkspaceAccess
    sandbox: bool = True  # run_shell inside bubblewrap
    shell_timeout: float = 120.0
    checkpoints: Checkpoints | None = None  # when in use
    policy: SandboxPolicy = field(default_factory=SandboxPolicy)  # env, hidden paths, limits
    git: Git | None = None  # made at session start; None: one per call
    # Where a tool sends its output as it runs (run_shell): set per call by whoever shows it live.
    on_output: Callable[[str], None] | None = None


def tool_description(name: str) -> str:
    path = resources.files("clover_code.prompts").joinpath("tools", f"{name}.md")
    return path.read_text(encoding="utf-8").strip()


def tool_schema(tool: Tool) -> JSONObject:
    """OpenAI function-tool schema, from the tool's Args model and its prompt text."""
    if isinstance(tool, SelfDescribed):
        return tool.schema()
    params = inline_refs(tool.Args.model_json_schema())
    params.pop("title", None)
    for prop in params.get("properties", {}).values():
        prop.pop("title", None)
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool_description(tool.name), "parameters": params},
    }


def inline_refs(schema: JSONObject) -> JSONObject:
    """The schema with each `#/$defs/NAME` replaced by that definition (a nested model's, such as
    todo_write's items): the call grammar and the model read one self-contained schema."""
    defs = schema.pop("$defs", None)
    if not isinstance(defs, dict):
        return schema

    def resolve(node: JSON, depth: int = 0) -> JSON:
        if isinstance(node, list):
            return [resolve(item, depth) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and depth < 8:  # a self-referring one stops
            found = defs.get(ref.removeprefix("#/$defs/"))
            if isinstance(found, dict):
                return resolve(found, depth + 1)
        # a title pydantic gives every model and field says nothing the name does not
        return {key: resolve(value, depth) for key, value in node.items()
                if not (key == "title" and isinstance(value, str))}

    resolved = resolve(schema)
    return resolved if isinstance(resolved, dict) else schema


@dataclass(frozen=True)
class BoundCall:
    """A call whose arguments passed validation, bound to its tool and workspace."""

    tool: Tool
    args: BaseModel
    ctx: ToolContext

    @property
    def kind(self) -> ToolKind:
        kind = self.tool.kind
        if kind not in TOOL_KINDS:
            return "shell"  # a kind no one knows is treated as the riskiest
        if kind == "read" and not isinstance(self.tool, Declaring):
            return "edit"  # what it writes is unknown: it is not free to run as a read is
        return kind

    @functools.cached_property
    def touches(self) -> Touches:
        if not isinstance(self.tool, Declaring):
            return UNKNOWN
        try:
            return self.tool.touches(self.args)
        except Exception:  # a declaration that fails vouches for nothing (and must not end the session)
            return UNKNOWN

    @property
    def arguments(self) -> JSONObject:
        return self.args.model_dump()

    async def preview(self) -> str:
        """What the user approves: the edit's diff, the command line, or the arguments.
        ToolError when the call would fail anyway."""
        if isinstance(self.tool, Previewing):
            out = self.tool.preview(self.args, self.ctx)
            return await out if inspect.isawaitable(out) else str(out)
        if self.kind == "shell" and isinstance(command := getattr(self.args, "command", None), str):
            return command
        return json.dumps(self.arguments, indent=2, ensure_ascii=False)

    async def run(self) -> ToolResult:
        """The tool's result; a failure of any kind is a result too (only cancellation escapes)."""
        name = self.tool.name
        try:
            return await self.tool.run(self.args, self.ctx)
        except ToolError as exc:
            return ToolResult(False, str(exc))
        except OSError as exc:
            return ToolResult(False, f"{name} failed: {exc.strerror or exc}")
        except Exception as exc:  # a bug in a tool must not end the session
            return ToolResult(False, f"{name} failed unexpectedly: {type(exc).__name__}: {exc}")


class Registry:
    def __init__(self, tools: list[Tool]):
        self.tools = {t.name: t for t in tools}

    def add(self, tools: list[Tool]) -> list[Tool]:
        """Add tools that arrive later (an MCP server's, once it is up); those whose name is
        taken are left out. The ones added."""
        added = [t for t in tools if t.name not in self.tools]
        self.tools.update({t.name: t for t in added})
        return added

    def schemas(self) -> list[JSONObject]:
        return [tool_schema(t) for t in self.tools.values()]

    def bind(self, name: str, arguments: str | JSONObject, ctx: ToolContext) -> BoundCall | str:
        """The call, validated, ready to check and run; or a message telling the model what was wrong."""
        args = self.validate(name, arguments)
        return args if isinstance(args, str) else BoundCall(self.tools[name], args, ctx)

    def validate(self, name: str, arguments: str | JSONObject) -> BaseModel | str:
        """Parsed arguments, or a message telling the model what was wrong."""
        tool = self.tools.get(name)
        if tool is None:
            return f"unknown tool {name!r}; available tools: {', '.join(sorted(self.tools))}"
        if isinstance(arguments, str):
            try:
                arguments = jsonsafe.loads(arguments) if arguments.strip() else {}  # never RecursionError
            except json.JSONDecodeError as exc:
                return f"arguments of {name} are not valid JSON: {exc}"
        if not isinstance(arguments, dict):
            return f"arguments of {name} must be a JSON object"
        try:
            return tool.Args.model_validate(arguments)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or '(arguments)'}: {e['msg']}" for e in exc.errors()
            )
            return f"invalid arguments for {name}: {problems}"

    async def call(self, name: str, arguments: str | JSONObject, ctx: ToolContext) -> ToolResult:
        """Bind and run in one go (a UI's own call, e.g. /commit); no permission is asked."""
        bound = self.bind(name, arguments, ctx)
        return ToolResult(False, bound) if isinstance(bound, str) else await bound.run()


# The tool families: each module at the top of clover_code/tools/ exports TOOLS: list[Tool]
# (the subpackages hold what they are built on). Imported on demand so that
# `import clover_code.tools` stays light; a family that fails to import is a bug, not a skip.
TOOL_MODULES = ("files", "search", "code", "shell", "git", "todo")


def default_registry() -> Registry:
    import importlib

    tools: list[Tool] = []
    for name in TOOL_MODULES:
        tools.extend(importlib.import_module(f"clover_code.tools.{name}").TOOLS)
    return Registry(tools)
