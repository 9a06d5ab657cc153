"""Listing a workspace's files the way the search tools see them: through ripgrep, which
honours .gitignore (also outside a git repository), .ignore and .git/info/exclude, skips
.git/, does not follow symlinks, and is fast on big trees."""

from __future__ import annotations

import asyncio
import functools
import os
import shutil
import sys
from pathlib import Path

from clover_code.errors import ToolError

RG_COMMON = ("--no-config", "--hidden", "--no-require-git", "--glob", "!.git")


@functools.cache
def rg_binary() -> str:
    """The `rg` of the ripgrep wheel in this venv, else one on PATH."""
    local = Path(sys.executable).parent / "rg"
    if local.is_file() and os.access(local, os.X_OK):
        return str(local)
    found = shutil.which("rg")
    if found is None:
        raise ToolError("ripgrep (rg) is not installed; install the ripgrep==14.1.0 wheel into this environment")
    return found


def prefixed(rel_dir: str, name: str) -> str:
    return name if rel_dir == "." else f"{rel_dir}/{name}"


async def rg_files(where: Path, rel_dir: str) -> list[str]:
    """Files under `where` that ignore rules keep, workspace-relative, sorted."""
    proc = await asyncio.create_subprocess_exec(
        rg_binary(), "--files", "--null", *RG_COMMON, cwd=where, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    if proc.returncode == 2 and not out:  # 1: no files; 2 with output: some unreadable folder
        raise ToolError(f"listing files failed: {err.decode('utf-8', 'replace').strip()}")
    names = out.decode("utf-8", "replace").split("\0")[:-1]  # NUL-separated: any file name is safe
    return sorted(prefixed(rel_dir, name) for name in names)
