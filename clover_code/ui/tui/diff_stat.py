"""A diff's stat: per file the lines added and removed, and the totals (`/diff`'s header), read
from the unified diff git writes (`diff --git` sections, `@@` hunks)."""

from __future__ import annotations

from dataclasses import dataclass

from rich.table import Table
from rich.text import Text

from clover_code.ui.terminal_text import visible


@dataclass
class FileStat:
    path: str
    added: int = 0
    removed: int = 0
    binary: bool = False


def diff_stat(diff: str) -> list[FileStat]:
    """The files of `diff` in its order, each with its lines added and removed."""
    files: list[FileStat] = []
    in_hunk = False
    for line in diff.splitlines():
        if line.startswith("diff --git "):
            files.append(FileStat(line.rsplit(" b/", 1)[-1]))
            in_hunk = False
        elif not files:
            continue
        elif in_hunk and line.startswith("+"):
            files[-1].added += 1
        elif in_hunk and line.startswith("-"):
            files[-1].removed += 1
        elif line.startswith("@@"):
            in_hunk = True
        elif not in_hunk and line.startswith("+++ b/"):
            files[-1].path = line[len("+++ b/"):]  # exact, where the `diff --git` line is ambiguous
        elif not in_hunk and line.startswith("Binary files "):
            files[-1].binary = True
    return files


def stat_view(files: list[FileStat]) -> Table:
    """`path  +3 -1` per file, then `N files changed, +A -R` (git's --stat, counted)."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(overflow="fold")
    grid.add_column(no_wrap=True)
    for f in files:
        grid.add_row(Text(visible(f.path)), _counts(f.added, f.removed, f.binary))
    added, removed = sum(f.added for f in files), sum(f.removed for f in files)
    total = Text(f"{len(files)} file{'s' if len(files) != 1 else ''} changed, ", style="bold")
    grid.add_row(total + _counts(added, removed, False), "")
    return grid


def _counts(added: int, removed: int, binary: bool) -> Text:
    if binary:
        return Text("binary", style="dim")
    return Text.assemble((f"+{added}", "green"), " ", (f"-{removed}", "red"))
