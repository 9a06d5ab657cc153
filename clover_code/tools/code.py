"""Code tools through tree-sitter: symbols (definitions in a file or directory) and repo_map
(the ranked map of the whole tree, fitted to a token budget; codemap/)."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path

from pydantic import BaseModel, Field

from clover_code.tools import ToolContext, ToolError, ToolResult
from clover_code.tools.codemap.ranking import CodeMap
from clover_code.tools.codemap.tags import EXTENSIONS, language_for
from clover_code.tools.touches import ROOT, Touches
from clover_code.tools.workspace.listing import rg_files


class CodeMaps:
    """One CodeMap per workspace root, shared by symbols and repo_map."""

    def __init__(self) -> None:
        self._maps: dict[Path, CodeMap] = {}
        self._lock = threading.Lock()

    def get(self, root: Path) -> CodeMap:
        with self._lock:
            if root not in self._maps:
                self._maps[root] = CodeMap(root, root / ".clover" / "cache")
            return self._maps[root]


SUPPORTED = ", ".join(sorted(EXTENSIONS))


async def _source_files(where: Path, rel_dir: str) -> list[str]:
    return await rg_files(where, rel_dir)


class Symbols:
    name = "symbols"
    kind = "read"

    def __init__(self, maps: CodeMaps | None = None):
        self.maps = maps or CodeMaps()

    class Args(BaseModel):
        path: str = Field(".", description="A source file, or a directory to search, relative to the workspace root.")
        name: str | None = Field(None, description="Only definitions whose name contains this (case-insensitive).")
        limit: int = Field(300, ge=1, le=5000, description="Most definitions to show.")

    def touches(self, args: Args) -> Touches:
        return Touches(reads=(args.path,))

    async def run(self, args: Args, ctx: ToolContext) -> ToolResult:
        target = ctx.workspace.resolve(args.path)
        if not target.exists():
            raise ToolError(f"{args.path} does not exist")
        if target.is_dir():
            rels = await _source_files(target, ctx.workspace.relative(target))
        else:
            rels = [ctx.workspace.relative(target)]
            if language_for(rels[0]) is None:
                suffix = os.path.splitext(rels[0])[1] or "(no extension)"
                raise ToolError(f"symbols has no grammar for {suffix} files; it reads {SUPPORTED}")
        tags = await asyncio.to_thread(self.maps.get(ctx.workspace.root).tags, rels)
        needle = (args.name or "").lower()
        lines, shown, total = [], 0, 0
        for rel in sorted(tags):
            found = [d for d in tags[rel].definitions if needle in d.name.lower()]
            total += len(found)
            found = found[: max(0, args.limit - shown)]
            if found:
                shown += len(found)
                lines.append(f"{rel}:")
                lines += [f"{d.line + 1:>6} {d.text}" for d in found]
        if not lines:
            what = f" named like {args.name!r}" if args.name else ""
            return ToolResult(True, f"no definitions{what} found in {args.path}", {"count": 0})
        if total > shown:
            lines.append(f"(showing {shown} of {total} definitions; narrow path or name)")
        return ToolResult(True, "\n".join(lines), {"count": total})


class RepoMap:
    name = "repo_map"
    kind = "read"

    def __init__(self, maps: CodeMaps | None = None):
        self.maps = maps or CodeMaps()

    class Args(BaseModel):
        focus: list[str] = Field(
            default_factory=list, description="Files in play; the map leans toward what they use and what uses them."
        )
        identifiers: list[str] = Field(
            default_factory=list, description="Names the task is about (functions, classes)."
        )
        max_tokens: int = Field(1024, ge=64, le=32_000, description="Token budget of the map.")

    def touches(self, args: Args) -> Touches:
        """The whole tree is read; the focus files are what the map is about."""
        return Touches(reads=(ROOT, *args.focus))

    async def run(self, args: Args, ctx: ToolContext) -> ToolResult:
        ws = ctx.workspace
        focus = [ws.relative(ws.resolve(path)) for path in args.focus]
        rels = await _source_files(ws.root, ".")
        text = await asyncio.to_thread(
            self.maps.get(ws.root).render, rels, focus, args.identifiers, args.max_tokens
        )
        if not text:
            if not any(language_for(rel) for rel in rels):
                return ToolResult(True, f"no source files this map reads ({SUPPORTED}) in the workspace")
            return ToolResult(True, f"max_tokens={args.max_tokens} is too small to show any definition")
        return ToolResult(True, text.rstrip("\n"))


_MAPS = CodeMaps()  # symbols and repo_map share one tag cache per workspace
TOOLS = [Symbols(_MAPS), RepoMap(_MAPS)]
