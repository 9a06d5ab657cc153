"""Nothing edits sys.path: the tests import what they share from one package (tests.support) and
the maintainer scripts run as modules (`python -m tools.bench.bench_agent`), both from the
repository root that pytest's `pythonpath` and `python -m` put on the path."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MUTATORS = {"insert", "append", "extend", "remove", "clear", "pop", "__setitem__"}


def is_sys_path(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "path"
            and isinstance(node.value, ast.Name) and node.value.id == "sys")


def path_edits(source: str) -> list[int]:
    """Lines that change sys.path: a mutating call, an item or slice assigned, or a new list."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS \
                and is_sys_path(node.func.value):
            lines.append(node.lineno)
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if is_sys_path(target) or (isinstance(target, ast.Subscript) and is_sys_path(target.value)):
                    lines.append(node.lineno)
    return lines


def test_the_check_sees_each_kind_of_edit():
    for edit in ("sys.path.insert(0, 'x')", "sys.path[:0] = ['x']", "sys.path += ['x']", "sys.path = ['x']"):
        assert path_edits(f"import sys\n{edit}\n") == [2], edit
    assert path_edits("import sys\nprint(sys.path[0])\n") == []


def test_no_test_or_script_edits_sys_path():
    found = [f"{path.relative_to(ROOT)}:{line}"
             for folder in ("tests", "tools", "clover_code") for path in sorted((ROOT / folder).rglob("*.py"))
             for line in path_edits(path.read_text(encoding="utf-8"))]
    assert found == [], "import from tests.support or run the script with `python -m tools....` instead"


def test_shared_test_helpers_live_in_the_support_package():
    """Every module of tests/ outside tests/support/ is a test file, a conftest or a data generator
    run by path (which imports no helper)."""
    scripts = {"tests/agent/old_logs/make_before_issue_33.py", "tests/e2e/sessions/make_sessions.py",
               "tests/interop/llama_server.py"}
    strays = [str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("*.py")
              if "support" not in p.relative_to(ROOT / "tests").parts[:1]
              and not p.name.startswith("test_") and p.name != "conftest.py"
              and str(p.relative_to(ROOT)) not in scripts]
    assert strays == [], "shared test code belongs in tests/support/"
