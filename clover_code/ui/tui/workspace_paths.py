"""The workspace's files, for the editor's `@path` completion."""

from __future__ import annotations

import os
from pathlib import Path

from clover_code.sandbox.gitrun import Git
from clover_code.tools import ToolError

_SKIP_DIRS = {".git", "node_modules", ".venv", "venv", "__pycache__", ".clover", ".mypy_cache"}
MAX_PATHS = 20_000


def workspace_paths(root: Path, git: Git | None = None) -> list[str]:
    """Files for @path completion: git's view (tracked + untracked, not ignored), else a walk.
    `git` is the session's runner (sandboxed, read-only here); None: a sandboxed one."""
    try:
        out = (git or Git(root)).run("ls-files", "-co", "--exclude-standard", writable=(), check=False,
                                     timeout=5)
        if out.code == 0:
            return sorted(out.out.splitlines())[:MAX_PATHS]
    except ToolError:
        pass  # no sandbox here: walk the folder instead
    paths: list[str] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in _SKIP_DIRS]
        rel = os.path.relpath(folder, root)
        paths.extend(f if rel == "." else f"{rel}/{f}" for f in files)
        if len(paths) >= MAX_PATHS:
            break
    return sorted(paths)
