"""Sub-agent definitions: Markdown files with front matter, as Claude Code users keep them.

    ---
    name: reviewer
    description: Reviews a change for bugs; give it the files to look at.
    tools: read_file, grep, glob
    ---
    You review code. ...

From ~/.config/clover-code/agents/ and the repository's .clover/agents/ (the repository's win on
a name clash: they are the more specific word). `tools` only narrows what the sub-agent is
offered: what a call may do is still the parent's permissions (agent/subagent.py), so a
repository's definition grants nothing. No `tools`: every tool of the parent but `task`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from clover_code.sandbox.own_dirs import config_dir

GENERAL = "general"  # the definition used when a call names none
MAX_BYTES = 64 * 1024  # a definition is a prompt: past this it is not read
_GENERAL_PROMPT = "Work on the sub-task you are given, then answer with what you found or did."


@dataclass(frozen=True)
class AgentDef:
    name: str
    description: str
    prompt: str  # the body: the sub-agent's own instructions
    tools: tuple[str, ...] | None = None  # None: every tool the parent has (but `task`)
    source: str = ""  # the file it came from ("" for the built-in one)


def agent_folders(root: Path) -> list[Path]:
    """Where definitions live, the user's first (the repository's override them)."""
    return [config_dir() / "agents", root / ".clover" / "agents"]


def load_agent_defs(folders: list[Path]) -> tuple[dict[str, AgentDef], list[str]]:
    """The definitions by name (the built-in `general` first) and a problem per file skipped."""
    found = {GENERAL: AgentDef(GENERAL, "any sub-task: searching, reading, investigating", _GENERAL_PROMPT)}
    problems: list[str] = []
    for folder in folders:
        for path in sorted(folder.glob("*.md")) if folder.is_dir() else ():
            try:
                found_def = parse_agent_def(path)
            except (OSError, UnicodeDecodeError, ValueError) as exc:
                problems.append(f"{path}: {exc}")
                continue
            found[found_def.name] = found_def
    return found, problems


def parse_agent_def(path: Path) -> AgentDef:
    """ValueError when the file is not a definition (no front matter, no name or description)."""
    with path.open("rb") as file:
        data = file.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise ValueError(f"larger than {MAX_BYTES // 1024} KiB")
    fields, body = front_matter(data.decode("utf-8"))
    name, description = fields.get("name", path.stem).strip(), fields.get("description", "").strip()
    if not name or not all(c.isalnum() or c in "-_" for c in name):
        raise ValueError(f"name {name!r} must be letters, digits, - or _")
    if not description:
        raise ValueError("front matter has no description")
    tools = fields.get("tools")
    names = tuple(t.strip().strip("'\"") for t in tools.strip("[] ").split(",") if t.strip()) if tools else None
    return AgentDef(name, description, body.strip() or _GENERAL_PROMPT, names, str(path))


def front_matter(text: str) -> tuple[dict[str, str], str]:
    """`key: value` lines between the opening `---` and the next, and the text after them."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise ValueError("no front matter (a first line of ---)")
    end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() == "---"), None)
    if end is None:
        raise ValueError("front matter is not closed by ---")
    fields = {}
    for line in lines[1:end]:
        key, sep, value = line.partition(":")
        if sep and key.strip():
            fields[key.strip().lower()] = value.strip()
    return fields, "\n".join(lines[end + 1:])


def listing(defs: dict[str, AgentDef]) -> str:
    """What the system prompt says of them: name and description, one a line."""
    return "\n".join(f"- {d.name}: {d.description}" for d in defs.values())
