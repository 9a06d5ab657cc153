"""Tree-sitter tagging: the definitions and references in one source file.

Per-language queries are data files in `queries/<language>.scm`; their captures are
named `name.definition.<kind>` or `name.reference.<kind>`. Grammars come from the
single-language wheels (tree-sitter-python, ...), loaded on first use.
"""

from __future__ import annotations

import importlib
import os
import threading
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import tree_sitter

# language -> (grammar module, its language function, query files applied in order)
LANGUAGES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "python": ("tree_sitter_python", "language", ("python",)),
    "javascript": ("tree_sitter_javascript", "language", ("ecmascript", "javascript")),
    "typescript": ("tree_sitter_typescript", "language_typescript", ("ecmascript", "typescript")),
    "tsx": ("tree_sitter_typescript", "language_tsx", ("ecmascript", "typescript")),
    "go": ("tree_sitter_go", "language", ("go",)),
    "rust": ("tree_sitter_rust", "language", ("rust",)),
    "java": ("tree_sitter_java", "language", ("java",)),
    "c": ("tree_sitter_c", "language", ("c",)),
    "cpp": ("tree_sitter_cpp", "language", ("c", "cpp")),
}

EXTENSIONS: dict[str, str] = {
    ".py": "python", ".pyi": "python",
    ".js": "javascript", ".jsx": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".go": "go", ".rs": "rust", ".java": "java", ".c": "c",
    # .h is shared by C and C++; the C++ grammar reads plain C headers well enough.
    ".h": "cpp", ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp",
}

MAX_FILE_BYTES = 1_000_000  # larger sources are generated or minified: not worth a map entry
MAX_LINE_CHARS = 160


class Definition(NamedTuple):
    name: str
    kind: str  # class, function, method, type, ...
    line: int  # 0-based
    text: str  # the source line, tabs expanded, cut to MAX_LINE_CHARS


@dataclass
class FileTags:
    definitions: list[Definition] = field(default_factory=list)
    references: dict[str, int] = field(default_factory=dict)  # identifier -> count


def language_for(path: str) -> str | None:
    return EXTENSIONS.get(os.path.splitext(path)[1].lower())  # splitext: ~10x cheaper than a Path


class _Grammar:
    """A language's parser and compiled query. Parsers are not thread-safe: one per thread."""

    def __init__(self, name: str):
        import tree_sitter

        module, function, query_files = LANGUAGES[name]
        self.language = tree_sitter.Language(getattr(importlib.import_module(module), function)())
        source = "\n".join(_query_text(q) for q in query_files)
        self.query = tree_sitter.Query(self.language, source)
        self._local = threading.local()

    def parser(self) -> tree_sitter.Parser:
        parser: tree_sitter.Parser | None = getattr(self._local, "parser", None)
        if parser is None:
            import tree_sitter

            parser = self._local.parser = tree_sitter.Parser(self.language)
        return parser


def _query_text(name: str) -> str:
    return resources.files("clover_code.tools.codemap").joinpath("queries", f"{name}.scm").read_text(encoding="utf-8")


_grammars: dict[str, _Grammar] = {}
_grammars_lock = threading.Lock()


def grammar(name: str) -> _Grammar:
    with _grammars_lock:
        if name not in _grammars:
            _grammars[name] = _Grammar(name)
        return _grammars[name]


def extract(source: bytes, language: str) -> FileTags:
    """Definitions (in source order) and reference counts of one file."""
    import tree_sitter

    g = grammar(language)
    tree = g.parser().parse(source)
    captures = tree_sitter.QueryCursor(g.query).captures(tree.root_node)
    lines = source.split(b"\n")
    tags = FileTags()
    defined_at: dict[int, Definition] = {}  # start byte -> definition
    for capture, nodes in captures.items():
        role, _, kind = capture.removeprefix("name.").partition(".")
        if role != "definition":
            continue
        for node in nodes:
            if node.start_byte not in defined_at:  # a name matched by two patterns counts once
                row = node.start_point[0]
                name = _node_text(node)
                defined_at[node.start_byte] = Definition(name, kind, row, _line_text(lines[row]))
    tags.definitions = [defined_at[at] for at in sorted(defined_at)]
    for capture, nodes in captures.items():
        if not capture.startswith("name.reference"):
            continue
        refs = tags.references
        for node in nodes:
            if node.start_byte not in defined_at:
                name = _node_text(node)
                refs[name] = refs.get(name, 0) + 1
    return tags


def _node_text(node: tree_sitter.Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")  # text is None only for a tree parsed without source


def _line_text(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace").rstrip().expandtabs(4)
    return text if len(text) <= MAX_LINE_CHARS else text[: MAX_LINE_CHARS - 1] + "…"
