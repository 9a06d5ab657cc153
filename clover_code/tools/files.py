"""File tools: read_file, write_file, edit_file (exact replace), apply_patch (Codex format).

Every path goes through the Workspace (inside the root; writes never under .git/ or .clover/) and
every change through its stale-read guard and atomic write. Edit tools return a
unified diff in data["diff"] and can `preview` it without writing.
"""

from __future__ import annotations

import asyncio
import difflib
import re
from pathlib import Path
from typing import ClassVar, Generic, TypeVar

from pydantic import BaseModel, Field

from clover_code.tools import ToolContext, ToolError, ToolKind, ToolResult, WorkspaceAccess
from clover_code.tools.touches import UNKNOWN, Touches
from clover_code.tools.workspace.patch import Change, parse_patch, patch_paths, plan_patch
from clover_code.tools.workspace.textdiff import closest_region, unified_diff
from clover_code.tools.workspace.textfile import (
    MAX_LINE_CHARS,
    SNIFF_BYTES,
    count_lines,
    decode,
    encode,
    is_binary,
    numbered_lines,
    to_crlf,
    uses_crlf,
)

DEFAULT_LIMIT = 2000  # lines shown when no limit is given
LINE_NUMBER = re.compile(r"^ *\d+\t")  # the prefix read_file puts on each line


def _missing(ws: WorkspaceAccess, path: Path, given: str) -> ToolError:
    try:
        siblings = [p.name for p in path.parent.iterdir()]
    except OSError:
        siblings = []
    close = difflib.get_close_matches(path.name, siblings, n=3)
    hint = f"; did you mean {', '.join(ws.relative(path.parent / c) for c in close)}?" if close else ""
    return ToolError(f"file not found: {given}{hint}")


def _existing_file(ws: WorkspaceAccess, given: str, write: bool = False) -> Path:
    path = ws.resolve_for_write(given) if write else ws.resolve(given)
    if path.is_dir():
        raise ToolError(f"{given} is a directory, not a file (list_files shows a directory)")
    if not path.exists():
        raise _missing(ws, path, given)
    if not path.is_file():
        raise ToolError(f"{given} is not a regular file (a pipe, socket or device); file tools refuse it")
    return path


# -- read_file ------------------------------------------------------------------------


class ReadFile:
    name: ClassVar[str] = "read_file"
    kind: ClassVar[ToolKind] = "read"

    class Args(BaseModel):
        path: str = Field(description="File path, relative to the workspace root.")
        offset: int = Field(1, ge=1, description="First line to show (1-based). Default 1.")
        limit: int = Field(DEFAULT_LIMIT, ge=1, description=f"Most lines to show. Default {DEFAULT_LIMIT}.")

    def touches(self, args: Args) -> Touches:
        return Touches(reads=(args.path,))

    async def run(self, args: Args, ctx: ToolContext) -> ToolResult:
        return await asyncio.to_thread(self.read, args, ctx.workspace)  # big files must not stall the UI

    def read(self, args: Args, ws: WorkspaceAccess) -> ToolResult:
        path = _existing_file(ws, args.path)
        size = path.stat().st_size
        with open(path, "rb") as fh:
            if is_binary(fh.read(SNIFF_BYTES)):
                ws.note_read(path)  # seen as binary: write_file may replace it
                raise ToolError(f"{args.path} is a binary file ({size:,} bytes); read_file shows text files only")
            fh.seek(0)
            shown, next_line, cut, bad_utf8 = numbered_lines(fh, args.offset, args.limit)
        ws.note_read(path)
        notes = []
        if bad_utf8:
            notes.append("the file is not valid UTF-8; undecodable bytes are shown as \ufffd")
        if cut:
            notes.append(f"lines longer than {MAX_LINE_CHARS} characters were cut")
        total = count_lines(path, size)
        if next_line is not None:
            of = f" of {total}" if total is not None else f" (the file is {size / 1e6:.1f} MB)"
            notes.append(f"showing lines {args.offset}-{next_line - 1}{of}; "
                         f"call read_file with offset={next_line} to read on")
        elif not shown:
            if size == 0:
                return ToolResult(True, f"{args.path} is empty", {"paths": [ws.relative(path)]})
            length = f" ({total} lines)" if total is not None else ""
            raise ToolError(f"offset {args.offset} is past the end of {args.path}{length}")
        text = "\n".join(shown) + "".join(f"\n[{n}]" for n in notes)
        return ToolResult(True, text, {"paths": [ws.relative(path)]})


# -- edit tools: plan (pure), then commit --------------------------------------------


A = TypeVar("A", bound=BaseModel)


class _EditTool(Generic[A]):
    """Shared by the edit tools: `plan` computes the changes, `run` writes them."""

    name: ClassVar[str]
    kind: ClassVar[ToolKind] = "edit"
    Args: ClassVar[type[BaseModel]]

    def plan(self, args: A, ws: WorkspaceAccess) -> list[Change]:
        raise NotImplementedError

    def touches(self, args: A) -> Touches:
        raise NotImplementedError

    def preview(self, args: A, ctx: ToolContext) -> str:
        """The unified diff the edit would make, without writing; ToolError if it would fail."""
        try:
            return _diff(ctx.workspace, self.plan(args, ctx.workspace))
        except OSError as exc:
            raise ToolError(f"{self.name} failed: {exc.strerror or exc}") from None

    async def run(self, args: A, ctx: ToolContext) -> ToolResult:
        return await asyncio.to_thread(self.apply, args, ctx.workspace)  # big files must not stall the UI

    def apply(self, args: A, ws: WorkspaceAccess) -> ToolResult:
        changes = self.plan(args, ws)
        commit(ws, changes)
        return _result(ws, changes, self.summary(args, changes))

    def summary(self, args: A, changes: list[Change]) -> str:
        raise NotImplementedError


def check_all_fresh(ws: WorkspaceAccess, changes: list[Change]) -> None:
    for path in dict.fromkeys(c.path for c in changes):
        ws.check_fresh(path)


def commit(ws: WorkspaceAccess, changes: list[Change]) -> None:
    check_all_fresh(ws, changes)
    for change in changes:
        if change.new is None:
            change.path.unlink()
            ws.forget(change.path)
        else:
            ws.atomic_write(change.path, change.new)
            ws.note_written(change.path)


def _diff(ws: WorkspaceAccess, changes: list[Change]) -> str:
    return "".join(unified_diff(ws.relative(c.path), c.old, c.new) for c in changes)


def _result(ws: WorkspaceAccess, changes: list[Change], text: str) -> ToolResult:
    paths = list(dict.fromkeys(ws.relative(c.path) for c in changes))
    return ToolResult(True, text, {"diff": _diff(ws, changes), "paths": paths})


# -- write_file -----------------------------------------------------------------------


class WriteFileArgs(BaseModel):
    path: str = Field(description="File path, relative to the workspace root. Parent folders are created.")
    content: str = Field(description="The complete new content of the file.")


class WriteFile(_EditTool[WriteFileArgs]):
    name: ClassVar[str] = "write_file"
    Args = WriteFileArgs

    def touches(self, args: WriteFileArgs) -> Touches:
        return Touches(writes=(args.path,))

    def plan(self, args: WriteFileArgs, ws: WorkspaceAccess) -> list[Change]:
        path = ws.resolve_for_write(args.path)
        if path.is_dir():
            raise ToolError(f"{args.path} is a directory, not a file")
        ws.check_fresh(path)
        old = path.read_bytes() if path.exists() else None
        content = args.content
        if old and not is_binary(old) and uses_crlf(old.decode("utf-8", "replace")) and "\r\n" not in content:
            content = to_crlf(content)  # keep the file's line endings
        return [Change(path, old, encode(content))]

    def summary(self, args: WriteFileArgs, changes: list[Change]) -> str:
        return f"{'created' if changes[0].old is None else 'updated'} {args.path}"


# -- edit_file ------------------------------------------------------------------------


class EditFileArgs(BaseModel):
    path: str = Field(description="File path, relative to the workspace root.")
    old_string: str = Field(description="Exact text to replace, including whitespace and indentation.")
    new_string: str = Field(description="Text to put in its place (must differ from old_string).")
    replace_all: bool = Field(False, description="Replace every occurrence instead of exactly one.")


class EditFile(_EditTool[EditFileArgs]):
    name: ClassVar[str] = "edit_file"
    Args = EditFileArgs

    def touches(self, args: EditFileArgs) -> Touches:
        return Touches(reads=(args.path,), writes=(args.path,))

    def plan(self, args: EditFileArgs, ws: WorkspaceAccess) -> list[Change]:
        if args.old_string == args.new_string:
            raise ToolError("old_string and new_string are the same; nothing to change")
        if not args.old_string:
            raise ToolError("old_string is empty; to create or overwrite a whole file use write_file")
        path = _existing_file(ws, args.path, write=True)
        ws.check_fresh(path)
        data = path.read_bytes()
        text = decode(args.path, data)
        old, new = args.old_string, args.new_string
        if old not in text and uses_crlf(text):  # the model writes \n; the file has \r\n
            old, new = to_crlf(old), to_crlf(new)
        count = text.count(old)
        if count == 0:
            raise ToolError(_not_found(args.path, text, args.old_string))
        if count > 1 and not args.replace_all:
            lines = _match_lines(text, old)
            raise ToolError(
                f"old_string matches {count} times in {args.path} (at lines {', '.join(map(str, lines))}); "
                "include more surrounding lines to make it unique, or set replace_all=true"
            )
        return [Change(path, data, encode(text.replace(old, new)))]

    def summary(self, args: EditFileArgs, changes: list[Change]) -> str:
        return f"edited {args.path}"


def _not_found(name: str, text: str, wanted: str) -> str:
    want = wanted.replace("\r\n", "\n").strip("\n").split("\n")
    if all(LINE_NUMBER.match(line) for line in want):
        return (f"old_string was not found in {name}: it starts its lines with read_file's line numbers, "
                "which are not part of the file; leave them out and retry.")
    region = closest_region(text.replace("\r\n", "\n").split("\n"), want)
    return (f"old_string was not found in {name}. {region}\n"
            "Copy old_string exactly from the file (whitespace and indentation included) and retry.")


def _match_lines(text: str, needle: str, most: int = 10) -> list[int]:
    lines: list[int] = []
    start = text.find(needle)
    while start != -1 and len(lines) < most:
        lines.append(text.count("\n", 0, start) + 1)
        start = text.find(needle, start + len(needle))
    return lines


# -- apply_patch ----------------------------------------------------------------------


class ApplyPatchArgs(BaseModel):
    patch: str = Field(description="The whole patch, from '*** Begin Patch' to '*** End Patch'.")


class ApplyPatch(_EditTool[ApplyPatchArgs]):
    name: ClassVar[str] = "apply_patch"
    Args = ApplyPatchArgs

    def touches(self, args: ApplyPatchArgs) -> Touches:
        """From the parse that applies the patch, so no header is read one way here and another
        way when it runs; a patch that does not parse vouches for no path (and fails when run)."""
        try:
            ops = parse_patch(args.patch)
        except ToolError:
            return UNKNOWN
        return Touches(reads=tuple(op.path for op in ops if op.kind != "add"), writes=tuple(patch_paths(ops)))

    def plan(self, args: ApplyPatchArgs, ws: WorkspaceAccess) -> list[Change]:
        changes, failure = plan_patch(parse_patch(args.patch), ws)
        if failure:
            raise ToolError(failure + " Nothing was changed.")
        return changes

    def apply(self, args: ApplyPatchArgs, ws: WorkspaceAccess) -> ToolResult:
        changes, failure = plan_patch(parse_patch(args.patch), ws)
        commit(ws, changes)  # as Codex: operations before a failing one stay applied
        if not failure:
            return _result(ws, changes, "Success. Updated the following files:\n" + _listing(ws, changes))
        if not changes:
            return ToolResult(False, failure + " Nothing was changed.")
        result = _result(ws, changes, f"{failure} The operations before it were applied:\n{_listing(ws, changes)}")
        result.ok = False
        return result


def _listing(ws: WorkspaceAccess, changes: list[Change]) -> str:
    final: dict[Path, Change] = {}
    for c in changes:  # one line per file, from its first state to its last
        first = final.get(c.path, c)
        final[c.path] = Change(c.path, first.old, c.new)
    def letter(c: Change) -> str:
        return "A" if c.old is None else "D" if c.new is None else "M"

    return "\n".join(f"{letter(c)} {ws.relative(c.path)}" for c in final.values()
                     if c.old is not None or c.new is not None)


TOOLS = [ReadFile(), WriteFile(), EditFile(), ApplyPatch()]
