"""Project instructions: AGENTS.md (and CLOVER.md) from the git root down to the working
directory. Deeper files come later, so they read as the more specific word; all together
are capped at 32 KiB, cut from the end like Codex does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

NAMES = ("AGENTS.md", "CLOVER.md")
MAX_BYTES = 32 * 1024


@dataclass(frozen=True)
class Instructions:
    text: str  # ready for the system prompt; "" when there are none
    files: tuple[Path, ...]  # the files read, root first
    truncated: bool = False


def git_root(cwd: Path) -> Path | None:
    for folder in (cwd, *cwd.parents):
        if (folder / ".git").exists():
            return folder
    return None


def instruction_files(cwd: Path) -> list[Path]:
    cwd = cwd.resolve()
    top = git_root(cwd) or cwd
    folders = [cwd, *cwd.parents]
    folders = list(reversed(folders[: folders.index(top) + 1]))  # root first
    return [f / name for f in folders for name in NAMES if (f / name).is_file()]


def load_instructions(cwd: Path, max_bytes: int = MAX_BYTES) -> Instructions:
    files = instruction_files(Path(cwd))
    parts: list[str] = []
    used, truncated = 0, False
    for path in files:
        try:
            body = path.read_bytes()
        except OSError:
            continue
        rel = path.relative_to(git_root(path.parent) or path.parent).as_posix()
        header = f"# From {rel}\n\n".encode()
        room = max_bytes - used - len(header)
        if room <= 0:
            truncated = True
            break
        if len(body) > room:
            body, truncated = body[:room], True
        parts.append((header + body).decode("utf-8", errors="ignore").strip())
        used += len(header) + len(body)
        if truncated:
            break
    text = "\n\n".join(parts)
    if truncated:
        text += f"\n\n[instructions cut at {max_bytes // 1024} KiB]"
    return Instructions(text, tuple(files), truncated)


APPROVAL_NOTES = {
    "plan": ("only reading and searching tools run, nothing can be changed. Read what the task needs, "
             "then end with a plan and no tool call: numbered steps naming the files, the changes and how "
             "to check them. The user approves the plan before it runs."),
    "ask": "reading is free; the user approves each edit and shell command.",
    "auto-edit": "reads and edits run freely; the user approves each shell command.",
    "full-auto": "every tool runs without asking.",
}


# The skills' listing in the system prompt: name and description of each, at most this much
# (a repository with hundreds of skills must not fill the context); /cost counts it apart.
MAX_SKILLS_CHARS = 8 * 1024
SKILLS_OPEN, SKILLS_CLOSE = "<skills>", "</skills>"
SKILLS_INTRO = ("Skills are instructions for particular kinds of task. When the task matches a skill's "
                "description, call the `skill` tool with its name first and follow what it says.")


def render_skills(skills: Sequence[tuple[str, str]], max_chars: int = MAX_SKILLS_CHARS) -> str:
    """The (name, description) pairs as the system prompt lists them, cut to `max_chars`;
    "" without skills."""
    if not skills:
        return ""
    lines: list[str] = []
    used = 0
    for name, description in skills:
        line = f"- {name}: {description.replace(SKILLS_OPEN, '').replace(SKILLS_CLOSE, '')}"
        if used + len(line) > max_chars:
            lines.append(f"[{len(skills) - len(lines)} more skills not listed: the listing is capped]")
            break
        lines.append(line)
        used += len(line) + 1
    return "\n".join((SKILLS_OPEN, SKILLS_INTRO, *lines, SKILLS_CLOSE))


def skills_section(system: str) -> str:
    """The skills' listing inside a system prompt, tags included; "" when it has none."""
    start = system.rfind(SKILLS_OPEN)  # the listing comes last: an AGENTS.md above may quote the tag
    end = system.find(SKILLS_CLOSE, start)
    return system[start:end + len(SKILLS_CLOSE)] if start >= 0 and end >= 0 else ""


def render_system_prompt(cwd: Path, approval: str, instructions: str = "", sandbox: bool = True,
                         skills: str = "") -> str:
    """prompts/system.md filled in with the workspace facts and the project instructions."""
    import datetime
    import platform
    from importlib import resources

    import jinja2

    source = resources.files("clover_code.prompts").joinpath("system.md").read_text(encoding="utf-8")
    template = jinja2.Environment(keep_trailing_newline=False, autoescape=False).from_string(source)
    root = git_root(Path(cwd).resolve())
    return template.render(
        cwd=Path(cwd).resolve(), git_root=root, approval=approval, approval_note=APPROVAL_NOTES.get(approval, ""),
        platform=platform.system(), date=datetime.date.today().isoformat(), instructions=instructions,
        sandbox=sandbox, skills=skills,
    ).strip()
