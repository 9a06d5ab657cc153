"""A user's own slash commands: Markdown prompt templates in ~/.config/clover-code/commands/
and the workspace's .clover/commands/ (beside .clover/config.toml) (`review.md` is `/review`; a subfolder namespaces it:
`frontend/review.md` is `/frontend:review`). Front matter gives `description` and
`argument-hint`; the body is the prompt, with `$ARGUMENTS` (everything typed after the name)
and `$1`..`$9` (its words) filled in. The TUI lists them beside the built-in commands and the
headless `--task "/name args"` expands them, both through here.

They are text only, like AGENTS.md: a template becomes the user's message, nothing in it is
ever run. Where the user and the repository both define a name, the user's own wins: a
repository must not be able to change what a user's familiar command sends.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from clover_code.sandbox.own_dirs import config_dir
from clover_code.tools.workspace.docfile import markdown_files, read_doc

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_ARGUMENT = re.compile(r"\$(ARGUMENTS|[1-9])")


@dataclass(frozen=True)
class CustomCommand:
    name: str  # as typed, with its slash: "/frontend:review"
    description: str
    argument_hint: str
    template: str
    source: str  # "user" | "project"
    path: Path

    def expand(self, arguments: str) -> str:
        """The template with `$ARGUMENTS` and `$1`..`$9` filled in (a missing word is empty);
        a template that uses none gets the arguments appended, so nothing typed is lost."""
        words = _words(arguments)

        def fill(match: re.Match[str]) -> str:
            key = match.group(1)
            if key == "ARGUMENTS":
                return arguments
            index = int(key) - 1
            return words[index] if index < len(words) else ""

        text = self.template.strip()
        if arguments and not _ARGUMENT.search(text):
            return f"{text}\n\n{arguments}"
        return _ARGUMENT.sub(fill, text)


def command_folders(cwd: Path) -> list[tuple[str, Path]]:
    """Where commands are read from, the repository's first (the user's override them)."""
    return [("project", cwd.resolve() / ".clover" / "commands"), ("user", config_dir() / "commands")]


def load_commands(cwd: Path) -> list[CustomCommand]:
    """Every command of both folders, one per name (the user's wins), sorted by name."""
    found: dict[str, CustomCommand] = {}
    for source, folder in command_folders(cwd):
        for path in markdown_files(folder, "**/*.md"):
            command = _command(path, folder, source)
            if command is not None:
                found[command.name.lower()] = command
    return sorted(found.values(), key=lambda c: c.name.lower())


def _command(path: Path, folder: Path, source: str) -> CustomCommand | None:
    parts = path.relative_to(folder).with_suffix("").parts
    if not all(_NAME.match(part) for part in parts):
        return None  # a name that could not be typed as one word (spaces, control characters)
    doc = read_doc(path, folder if source == "project" else None)
    if doc is None:
        return None
    description = doc.meta.get("description") or _first_line(doc.body)
    return CustomCommand("/" + ":".join(parts), description, doc.meta.get("argument-hint", ""), doc.body,
                         source, doc.path)


def find_command(commands: list[CustomCommand], name: str) -> CustomCommand | None:
    wanted = name.lower()
    return next((c for c in commands if c.name.lower() == wanted), None)


def expand_line(line: str, cwd: Path) -> str | None:
    """`/name args` as the prompt its custom command makes; None when `line` names none."""
    if not line.startswith("/"):
        return None
    name, _, arguments = line.strip().partition(" ")
    command = find_command(load_commands(cwd), name)
    return command.expand(arguments.strip()) if command is not None else None


def _words(arguments: str) -> list[str]:
    try:
        return shlex.split(arguments)
    except ValueError:  # an unclosed quote: split on spaces rather than refuse what was typed
        return arguments.split()


def _first_line(body: str) -> str:
    line = next((line.strip() for line in body.splitlines() if line.strip()), "")
    return line.lstrip("#").strip()[:80]
