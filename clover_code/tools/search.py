"""Search tools: list_files, glob and grep through ripgrep (symbols and repo_map: code.py).

Listing uses `rg --files`: it honours .gitignore (also outside a git repository),
.ignore and .git/info/exclude, skips .git/, does not follow symlinks, and is fast on
big trees. Hidden files are listed unless ignored.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from pydantic import BaseModel, Field

from clover_code.tools import ToolContext, ToolError, ToolResult
from clover_code.tools.touches import Touches
from clover_code.tools.workspace.listing import RG_COMMON, prefixed, rg_binary, rg_files


def _directory(ctx: ToolContext, path: str) -> tuple[Path, str]:
    """The resolved directory and its workspace-relative name ('.' for the root)."""
    where = ctx.workspace.resolve(path)
    if not where.exists():
        raise ToolError(f"{path} does not exist")
    if not where.is_dir():
        raise ToolError(f"{path} is a file, not a directory; use read_file to read it")
    return where, ctx.workspace.relative(where)


def _glob_filter(glob: str) -> list[str]:
    """rg arguments keeping only files that match `glob`. rg's own --glob overrides ignore rules
    for files, so a plain name glob ('*.py', '!*.md') becomes a file type, which does not."""
    negate = glob.startswith("!")
    body = glob[1:] if negate else glob
    if "/" in body or ":" in body:  # a path glob: anchored to the searched directory
        return ["--glob", glob]
    return ["--type-add", f"cloverglob:{body}", "--type-not" if negate else "--type", "cloverglob"]


def _capped(lines: list[str], limit: int, what: str, hint: str) -> str:
    if len(lines) <= limit:
        return "\n".join(lines)
    return "\n".join(lines[:limit]) + f"\n(showing {limit} of {len(lines)} {what}; {hint})"


class ListFiles:
    name = "list_files"
    kind = "read"

    class Args(BaseModel):
        path: str = Field(".", description="Directory to list, relative to the workspace root.")
        depth: int | None = Field(
            None, ge=1, description="Show entries at most this deep; deeper files are counted per directory."
        )
        limit: int = Field(500, ge=1, le=20_000, description="Most entries to show.")

    def touches(self, args: Args) -> Touches:
        return Touches(reads=(args.path,))

    async def run(self, args: Args, ctx: ToolContext) -> ToolResult:
        where, rel_dir = _directory(ctx, args.path)
        files = await rg_files(where, ".")
        if not files:
            return ToolResult(True, f"no files in {rel_dir} (after .gitignore)", {"count": 0})
        entries = _entries(files, args.depth) if args.depth else files
        lines = [prefixed(rel_dir, entry) for entry in entries]
        hint = "narrow it with path or depth, or use glob"
        return ToolResult(True, _capped(lines, args.limit, "entries", hint), {"count": len(files)})


def _entries(files: list[str], depth: int) -> list[str]:
    """Files at most `depth` deep, and `dir/ (N files)` for each directory cut at that depth."""
    shallow: list[str] = []
    deep: dict[str, int] = {}
    for name in files:
        parts = name.split("/")
        if len(parts) <= depth:
            shallow.append(name)
        else:
            folder = "/".join(parts[:depth]) + "/"
            deep[folder] = deep.get(folder, 0) + 1
    entries = shallow + [f"{folder} ({n} file{'s' if n > 1 else ''})" for folder, n in deep.items()]
    return sorted(entries)


class Glob:
    name = "glob"
    kind = "read"

    class Args(BaseModel):
        pattern: str = Field(
            ..., min_length=1,
            description="Glob with .gitignore syntax: '*.py' matches at any depth, 'src/**/*.ts' under path/src.",
        )
        path: str = Field(".", description="Directory to search from, relative to the workspace root.")
        limit: int = Field(500, ge=1, le=20_000, description="Most paths to show.")

    def touches(self, args: Args) -> Touches:
        return Touches(reads=(args.path,), label=args.pattern)

    async def run(self, args: Args, ctx: ToolContext) -> ToolResult:
        import pathspec

        where, rel_dir = _directory(ctx, args.path)
        spec = pathspec.GitIgnoreSpec.from_lines([args.pattern])
        files = [prefixed(rel_dir, name) for name in spec.match_files(await rg_files(where, "."))]
        if not files:
            return ToolResult(True, f"no files match {args.pattern!r} in {rel_dir}", {"count": 0})
        hint = "use a narrower pattern or path"
        return ToolResult(True, _capped(files, args.limit, "files", hint), {"count": len(files)})


class Grep:
    name = "grep"
    kind = "read"

    class Args(BaseModel):
        pattern: str = Field(..., min_length=1, description="Regular expression (Rust regex syntax), or text.")
        path: str = Field(".", description="File or directory to search, relative to the workspace root.")
        glob: str | None = Field(None, description="Only files matching this glob, e.g. '*.py'; '!*.md' excludes.")
        fixed_strings: bool = Field(False, description="Search the pattern as literal text, not a regex.")
        ignore_case: bool = Field(False, description="Match regardless of case.")
        context: int = Field(0, ge=0, le=20, description="Lines of context around each match.")
        files_only: bool = Field(False, description="List only the files that match.")
        max_matches: int = Field(200, ge=1, le=5000, description="Stop after this many matches.")

    def touches(self, args: Args) -> Touches:
        return Touches(reads=(args.path,), label=args.pattern)

    async def run(self, args: Args, ctx: ToolContext) -> ToolResult:
        target = ctx.workspace.resolve(args.path)
        if not target.exists():
            raise ToolError(f"{args.path} does not exist")
        cwd, operand = (target, []) if target.is_dir() else (target.parent, [target.name])
        rel_dir = ctx.workspace.relative(cwd)
        argv = [rg_binary(), *RG_COMMON, "--null", "--line-number", "--with-filename", "--no-heading",
                "--color=never", "--max-columns=400", "--max-columns-preview"]
        argv += ["--fixed-strings"] * args.fixed_strings + ["--ignore-case"] * args.ignore_case
        argv += ["--files-with-matches"] * args.files_only
        argv += [f"--context={args.context}"] * bool(args.context)
        argv += _glob_filter(args.glob) if args.glob else []
        argv += ["--regexp", args.pattern, "--", *operand]
        proc = await asyncio.create_subprocess_exec(
            *argv, cwd=cwd, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert proc.stdout is not None and proc.stderr is not None  # both PIPE
        stdout = proc.stdout
        errors = asyncio.ensure_future(proc.stderr.read())  # drained alongside, so rg never blocks on it
        reader = _MatchReader(rel_dir, args.max_matches, args.files_only)
        try:
            while not reader.full and (chunk := await stdout.read(1 << 16)):
                reader.feed(chunk)
            if reader.full:
                _kill(proc)  # enough matches: the rest of the tree need not be searched
            err = (await errors).decode("utf-8", "replace").strip()
            await proc.wait()
        except BaseException:  # cancelled: leave no rg behind
            _kill(proc)
            errors.cancel()
            raise
        return _grep_result(args, reader, proc.returncode, err)


def _kill(proc: asyncio.subprocess.Process) -> None:
    try:
        proc.kill()
    except ProcessLookupError:  # it had just exited
        pass


class _MatchReader:
    """Turns `rg --null` output into `path:line:text` lines, up to a number of matches, in
    path order: rg's own order follows its threads and the directory's, so one search would
    show its files in another order each run (and on each machine)."""

    def __init__(self, rel_dir: str, limit: int, files_only: bool):
        self.rel_dir, self.limit, self.files_only = rel_dir, limit, files_only
        self.by_file: dict[str, list[str]] = {}  # a file's lines in rg's order, which is line order
        self.matches = 0
        self.full = False  # one match past the limit was seen: the result is capped
        self.grouped = False  # rg separated context groups with `--`: so will the result
        self._file: str | None = None  # the file of the latest line
        self._rest = b""
        self._sep = b"\0" if files_only else b"\n"  # `-l --null` ends each path with NUL only

    def feed(self, chunk: bytes) -> None:
        records = (self._rest + chunk).split(self._sep)
        self._rest = records.pop()
        for record in records:
            if self.full:
                return
            self._take(record.decode("utf-8", "replace"))

    def _take(self, record: str) -> None:
        if self.files_only:
            self._count()
            if not self.full:
                self.by_file[prefixed(self.rel_dir, record)] = []
            return
        path, nul, rest = record.partition("\0")
        if not nul:  # `--` between context groups
            self.grouped = True
            if self._file is not None:
                self.by_file[self._file].append(record)
            return
        digits = len(rest) - len(rest.lstrip("0123456789"))
        is_match = rest[digits : digits + 1] == ":"
        if is_match:
            self._count()
            if self.full:
                return
        sep = ":" if is_match else "-"
        self._file = prefixed(self.rel_dir, path)
        self.by_file.setdefault(self._file, []).append(f"{self._file}{sep}{rest}")

    def _count(self) -> None:
        self.matches += 1
        self.full = self.matches > self.limit

    def finish(self) -> list[str]:
        if self._rest and not self.full:
            self._take(self._rest.decode("utf-8", "replace"))
            self._rest = b""
        lines: list[str] = []
        for path in sorted(self.by_file):
            block = self.by_file[path] or [path]  # files_only: the path alone
            while block and block[-1] == "--":
                block.pop()
            lines += ["--"] * (self.grouped and bool(lines)) + block
        return lines


def _grep_result(args: Grep.Args, reader: _MatchReader, code: int | None, err: str) -> ToolResult:
    lines = reader.finish()
    if not reader.full and code == 2 and not lines:
        if "regex parse error" in err or "error parsing" in err:
            raise ToolError(
                f"invalid regex {args.pattern!r}:\n{err}\n"
                "Escape special characters (\\( \\[ \\.) or set fixed_strings=true to search for the text as is."
            )
        raise ToolError(f"grep failed: {err or f'rg exited with {code}'}")
    unit = "files" if args.files_only else "matches"
    if not lines:
        return ToolResult(True, f"no matches for {args.pattern!r}", {"matches": 0, "capped": False})
    text = "\n".join(lines)
    if reader.full:
        text += (f"\n(capped at {args.max_matches} {unit}; there are more: narrow the pattern, path or glob, "
                 "or raise max_matches)")
    elif code == 2 and err:
        text += f"\n(some files could not be searched: {err.splitlines()[0]})"
    count = min(reader.matches, args.max_matches)
    return ToolResult(True, text, {"matches": count, "capped": reader.full})


TOOLS = [ListFiles(), Glob(), Grep()]
