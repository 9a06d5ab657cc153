"""What one tool call touches, as its tool declares it for the arguments given.

Permissions match allow rules against it, and the UIs name a call by it, so no one outside
the tools guesses from argument keys which value is a path or a command. A tool that declares
nothing (a tool from elsewhere, such as an MCP server) gets UNKNOWN: what it reads, writes or
runs cannot be vouched for, so no path or command rule covers it and it counts as a write.
"""

from __future__ import annotations

from dataclasses import dataclass

ROOT = "."  # the whole workspace, as a path names it


@dataclass(frozen=True)
class Touches:
    reads: tuple[str, ...] = ()  # workspace paths read, as the call names them
    writes: tuple[str, ...] = ()  # workspace paths written, created, deleted or moved to
    runs: str | None = None  # the command line the call runs (run_shell); None: no command
    # How UIs name the call when neither its command nor its paths say it best (a pattern searched
    # for, a commit's message); "" otherwise.
    label: str = ""
    known: bool = True  # False: the tool declared nothing (UNKNOWN)

    @property
    def summary(self) -> str:
        """The call in a few words: its label, else its command, else the paths it writes or reads
        (the workspace root, which every tool may touch, says nothing and is left out)."""
        if self.label or self.runs:
            return self.label or self.runs or ""
        return " ".join(p for p in (self.writes or self.reads) if p != ROOT)


UNKNOWN = Touches(known=False)
