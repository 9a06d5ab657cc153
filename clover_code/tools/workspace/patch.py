"""The Codex CLI patch format: parse, then plan the changes in memory (files.py commits them).

Semantics follow Codex's apply_patch: operations apply in order and a failing one
leaves the earlier ones applied; `Add File` and `Move to` overwrite; context lines
match exactly, then ignoring trailing whitespace, then surrounding whitespace, then
with unicode punctuation normalised (context lines keep the file's own text). Beyond
Codex: CRLF files stay CRLF, a file without a final newline keeps lacking one, stacked
`@@` headers narrow down in turn, and a pure addition under an `@@ header` goes right
after that line (Codex appends it at the end of the file).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from clover_code.errors import ToolError
from clover_code.tools import WorkspaceAccess
from clover_code.tools.workspace.textdiff import closest_region
from clover_code.tools.workspace.textfile import decode, encode, uses_crlf

BEGIN, END, EOF_MARK = "*** Begin Patch", "*** End Patch", "*** End of File"
ADD, DELETE, UPDATE, MOVE = "*** Add File:", "*** Delete File:", "*** Update File:", "*** Move to:"


@dataclass
class Chunk:
    headers: list[str] = field(default_factory=list)  # texts after stacked `@@`s, found in turn
    lines: list[tuple[str, str]] = field(default_factory=list)  # (" " | "-" | "+", text)
    at_eof: bool = False

    @property
    def old(self) -> list[str]:
        return [text for sign, text in self.lines if sign != "+"]

    @property
    def new(self) -> list[str]:
        return [text for sign, text in self.lines if sign != "-"]

    def replacement(self, matched: list[str]) -> list[str]:
        """The new lines, with context lines as the file has them (fuzz must not rewrite them)."""
        out, k = [], 0
        for sign, text in self.lines:
            if sign == "+":
                out.append(text)
                continue
            if sign == " ":
                out.append(matched[k] if k < len(matched) else text)
            k += 1
        return out


@dataclass
class FileOp:
    kind: str  # "add" | "delete" | "update"
    path: str
    content: str = ""  # add
    move_to: str | None = None  # update
    chunks: list[Chunk] = field(default_factory=list)  # update

    def label(self) -> str:
        head = {"add": ADD, "delete": DELETE, "update": UPDATE}[self.kind]
        return f"{head} {self.path}"


@dataclass
class Change:
    """One file's change, as planned: `old`/`new` None mean absent before/after."""

    path: Path
    old: bytes | None
    new: bytes | None


# -- parsing --------------------------------------------------------------------


def parse_patch(text: str) -> list[FileOp]:
    lines = text.strip().splitlines()
    if lines and lines[0].startswith("<<") and len(lines) > 2:  # heredoc wrapper: <<'EOF' ... EOF
        lines = lines[1:-1]
    if not lines or lines[0].strip() != BEGIN:
        raise ToolError(f"invalid patch: the first line must be '{BEGIN}'")
    if lines[-1].strip() != END:
        raise ToolError(f"invalid patch: the last line must be '{END}'")
    body, i = lines[1:-1], 0
    ops: list[FileOp] = []
    while i < len(body):
        head = body[i].strip()
        i += 1
        if not head:
            continue
        if head.startswith(ADD):
            op = FileOp("add", _path_of(head, ADD))
            while i < len(body) and body[i].startswith("+"):
                op.content += body[i][1:] + "\n"
                i += 1
        elif head.startswith(DELETE):
            op = FileOp("delete", _path_of(head, DELETE))
        elif head.startswith(UPDATE):
            op = FileOp("update", _path_of(head, UPDATE))
            if i < len(body) and body[i].strip().startswith(MOVE):
                op.move_to = _path_of(body[i].strip(), MOVE)
                i += 1
            i = _parse_chunks(body, i, op)
        else:
            hint = " (every line of an added file starts with '+')" if ops and ops[-1].kind == "add" else ""
            raise ToolError(
                f"invalid patch: {head!r} is not a valid file header; expected "
                f"'{ADD} <path>', '{DELETE} <path>' or '{UPDATE} <path>'{hint}"
            )
        ops.append(op)
    if not ops:
        raise ToolError("invalid patch: no file operations between Begin Patch and End Patch")
    return ops


def patch_paths(ops: list[FileOp]) -> list[str]:
    """Every path the parsed patch writes, deletes or moves to, as written in it."""
    return [path for op in ops for path in (op.path, op.move_to) if path]


def _path_of(line: str, prefix: str) -> str:
    path = line[len(prefix):].strip()
    if not path:
        raise ToolError(f"invalid patch: {prefix!r} needs a path")
    return path


def _is_file_header(line: str) -> bool:
    return line.strip().startswith((ADD, DELETE, UPDATE)) or line.strip() == END


def _parse_chunks(body: list[str], i: int, op: FileOp) -> int:
    chunk: Chunk | None = None
    while i < len(body) and not _is_file_header(body[i]):
        line = body[i]
        if line.startswith("@@"):
            header = line[2:].strip()
            if chunk is not None and not chunk.lines and chunk.headers and header:
                chunk.headers.append(header)  # `@@ class A` then `@@ def m():` narrows down
            else:
                chunk = Chunk(headers=[header] if header else [])
                op.chunks.append(chunk)
        elif line.strip() == EOF_MARK:
            if chunk is None:
                raise ToolError(f"invalid patch: '{EOF_MARK}' before any change in {op.path}")
            chunk.at_eof, chunk = True, None
        elif line[:1] in (" ", "-", "+", ""):
            if chunk is None:
                if op.chunks:  # after End of File, a new chunk needs its @@
                    raise ToolError(f"invalid patch: expected '@@' in {op.path}, got {line!r}")
                chunk = Chunk()
                op.chunks.append(chunk)
            chunk.lines.append((line[:1] or " ", line[1:]))
        else:
            raise ToolError(
                f"invalid patch: unexpected line {line!r} in {op.path}; every line of a hunk starts with "
                "' ' (context), '-' (removed) or '+' (added)"
            )
        i += 1
    if not op.chunks:
        raise ToolError(f"invalid patch: '{UPDATE} {op.path}' has no hunks; nothing to change")
    if any(not c.lines for c in op.chunks):
        raise ToolError(f"invalid patch: '{UPDATE} {op.path}' has an empty '@@' hunk")
    return i


# -- matching -------------------------------------------------------------------

_PUNCT = str.maketrans({
    **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
    **dict.fromkeys("\u2018\u2019\u201a\u201b", "'"),
    **dict.fromkeys("\u201c\u201d\u201e\u201f", '"'),
    **dict.fromkeys("\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000", " "),
})
# From strict to loose, as Codex tries them.
_NORMALISERS = (
    lambda s: s,
    str.rstrip,
    str.strip,
    lambda s: s.translate(_PUNCT).strip(),
)


def seek(lines: list[str], pattern: list[str], start: int, at_eof: bool) -> int | None:
    """Index where `pattern` occurs in `lines`, from `start` (or only at the end with at_eof)."""
    if not pattern:
        return start
    if len(pattern) > len(lines):
        return None
    first = len(lines) - len(pattern) if at_eof else start
    for norm in _NORMALISERS:
        want = [norm(p) for p in pattern]
        for i in range(first, len(lines) - len(pattern) + 1):
            if all(norm(lines[i + j]) == want[j] for j in range(len(pattern))):
                return i
    return None


def apply_chunks(text: str, chunks: list[Chunk], name: str) -> str:
    """The text after the chunks; keeps CRLF and a missing final newline."""
    eol = "\r\n" if uses_crlf(text) else "\n"
    final_newline = text.endswith("\n") or not text
    lines = text.replace("\r\n", "\n").split("\n")
    if lines[-1] == "":
        lines.pop()
    edits: list[tuple[int, int, list[str]]] = []
    index = 0
    for chunk in chunks:
        for header in chunk.headers:
            found = seek(lines, [header], index, False)
            if found is None:
                raise ToolError(f"could not find the line '@@ {header}' in {name}" + (
                    " after the previous hunk; hunks must be in file order" if index else ""))
            index = found + 1
        old = chunk.old
        if not old:  # pure addition: after the @@ line, else at the end
            edits.append((index if chunk.headers else len(lines), 0, chunk.new))
            continue
        found = seek(lines, old, index, chunk.at_eof)
        if found is None and old[-1] == "":  # a trailing blank context line the file lacks
            old = old[:-1]
            found = seek(lines, old, index, chunk.at_eof)
        if found is None:
            raise ToolError(f"could not find these lines in {name}:\n" + "\n".join(chunk.old) + "\n"
                            + closest_region(lines, chunk.old)
                            + "\nMake the context and '-' lines match the file exactly.")
        new = chunk.replacement(lines[found:found + len(old)])
        if len(old) < len(chunk.old) and new and new[-1] == "" and chunk.lines[-1][0] == " ":
            new.pop()  # the blank context line dropped above
        edits.append((found, len(old), new))
        index = found + len(old)
    # Bottom up, so earlier indices stay valid; at one index the later edit goes first.
    for _, (start, count, new) in sorted(enumerate(edits), key=lambda e: (e[1][0], e[0]), reverse=True):
        lines[start:start + count] = new
    out = eol.join(lines)
    return out + eol if lines and final_newline else out


# -- planning ---------------------------------------------------------------------


class Planner:
    """Applies operations to an in-memory overlay of the tree, recording Changes in order."""

    def __init__(self, workspace: WorkspaceAccess, resolved: dict[str, Path]):
        self.ws, self.resolved = workspace, resolved
        self.overlay: dict[Path, bytes | None] = {}
        self.changes: list[Change] = []

    def read(self, path: Path) -> bytes | None:
        if path in self.overlay:
            return self.overlay[path]
        if path.is_dir():
            raise ToolError(f"{self.ws.relative(path)} is a directory, not a file")
        return path.read_bytes() if path.exists() else None

    def put(self, path: Path, data: bytes | None) -> None:
        self.changes.append(Change(path, self.read(path), data))
        self.overlay[path] = data

    def apply(self, op: FileOp) -> None:
        path = self.resolved[op.path]
        if op.kind == "add":
            self.put(path, encode(op.content))
            return
        data = self.read(path)
        if data is None:
            verb = "delete" if op.kind == "delete" else "update"
            raise ToolError(f"cannot {verb} {op.path}: no such file")
        if op.kind == "delete":
            self.put(path, None)
            return
        text = apply_chunks(decode(op.path, data), op.chunks, op.path)
        target = self.resolved[op.move_to] if op.move_to else path
        self.put(target, encode(text))
        if target != path:
            self.put(path, None)


def plan_patch(ops: list[FileOp], workspace: WorkspaceAccess) -> tuple[list[Change], str | None]:
    """Changes of the operations that succeed, in order, and the first failure's message."""
    resolved: dict[str, Path] = {}
    for op in ops:  # every path is checked before anything is planned
        for name in filter(None, (op.path, op.move_to)):
            resolved[name] = workspace.resolve_for_write(name)
    planner = Planner(workspace, resolved)
    for n, op in enumerate(ops, 1):
        try:
            planner.apply(op)
        except ToolError as exc:
            return planner.changes, f"operation {n} ({op.label()}) failed: {exc}"
    return planner.changes, None
