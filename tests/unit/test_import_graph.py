"""The layer map as a test: imports only go down, and no module imports itself round a cycle.

    wiring   clover_code.cli, .config, .wiring.*      flags, files, env -> objects
    eval     clover_code.eval.*                       a mode beside wiring: runs the `clover-code`
                                                      process per task and engine, checks, reports
    ui       clover_code.ui.*                         consume agent events
    agent    clover_code.agent.*                      the loop, permissions, context
    settings clover_code.settings                     what the user chose, as data
    engine   clover_code.engine.*   tools  clover_code.tools.*   (siblings: neither imports the other)
    base     clover_code, .jsonsafe, .tokens, .credentials, .errors, .sandbox.*, .models, .prompts

Every import counts, also those inside functions and under TYPE_CHECKING: a lazy import is
still an arrow a reader has to follow.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "clover_code"
# eval ranks with wiring: cli and wiring.modes start it like any mode, and it composes engines and
# runs the agent as the wiring does (by starting `clover-code --task`), so it may use what wiring
# may use; the cycle test keeps the two from importing each other round a loop.
RANKS = {"base": 0, "engine": 1, "tools": 1, "settings": 2, "agent": 3, "ui": 4, "wiring": 5, "eval": 5}
BASE = {"clover_code", "clover_code.jsonsafe", "clover_code.tokens", "clover_code.credentials", "clover_code.errors"}
# What the UIs may not import: they never build an engine or parse model markup themselves.
UI_FORBIDDEN = ("clover_code.engine.embedded", "clover_code.engine.wire.remote", "clover_code.engine.wire.server",
                "clover_code.engine.scripted", "clover_code.engine.markup")
HEAVY = ("torch", "transformers", "textual")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imports_of(path: Path, name: str) -> set[str]:
    """Every module `path` imports (absolute names), wherever the import statement sits."""
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def graph() -> dict[str, set[str]]:
    """module -> the package modules it imports."""
    known = modules()
    return {name: {m for m in imports_of(path, name) if m in known and m != name} for name, path in known.items()}


def layer(name: str) -> str:
    if name in BASE or name.startswith(("clover_code.models", "clover_code.prompts", "clover_code.sandbox")):
        return "base"
    wiring = ("clover_code.cli", "clover_code.config", "clover_code.__main__")
    if name in wiring or name.startswith("clover_code.wiring"):
        return "wiring"
    if name == "clover_code.settings":
        return "settings"
    return name.split(".")[1]


def test_every_module_has_a_layer():
    assert {layer(name) for name in modules()} <= set(RANKS)


def test_imports_only_go_down():
    upward = sorted(f"{a} ({layer(a)}) -> {b} ({layer(b)})" for a, targets in graph().items() for b in targets
                    if RANKS[layer(b)] > RANKS[layer(a)])
    assert upward == []


def test_engine_and_tools_never_import_each_other():
    crossing = sorted(f"{a} -> {b}" for a, targets in graph().items() for b in targets
                      if {layer(a), layer(b)} == {"engine", "tools"})
    assert crossing == []


def test_ui_never_builds_an_engine_or_a_parser():
    found = sorted(f"{a} -> {b}" for a, targets in graph().items() if layer(a) == "ui" for b in targets
                   if b.startswith(UI_FORBIDDEN))
    assert found == []


def test_the_agent_knows_no_screen_and_no_torch():
    heavy = sorted(f"{name} -> {m}" for name, path in modules().items() if layer(name) == "agent"
                   for m in imports_of(path, name) if m.split(".")[0] in HEAVY)
    assert heavy == []


def test_no_import_cycles():
    edges = graph()
    cycles: list[list[str]] = []
    state: dict[str, str] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = "open"
        for target in sorted(edges[node]):
            if state.get(target) == "open":
                cycles.append(trail[trail.index(target):] + [target])
            elif target not in state:
                visit(target, [*trail, target])
        state[node] = "done"

    for start in sorted(edges):
        if start not in state:
            visit(start, [start])
    assert [" -> ".join(c) for c in cycles] == []


def test_only_the_sandbox_imports_gitpython():
    """GitPython left to itself starts host git; sandbox/gitpython.py binds it to the sandboxed git."""
    found = sorted(f"{name} -> {m}" for name, path in modules().items() if name != "clover_code.sandbox.gitpython"
                   for m in imports_of(path, name) if m.split(".")[0] == "git")
    assert found == []
