"""Skills (the open SKILL.md format): a folder whose SKILL.md has front matter `name` and
`description` and, below it, instructions for one kind of task. They are found in the user's
~/.config/clover-code/skills/ and the repository's .clover/skills/ and .agents/skills/; the
system prompt lists each one's name and description only, and the `skill` tool hands the model
a skill's body when it decides it needs it.

A skill is text, like AGENTS.md: clover-code never runs anything in it. Scripts a skill
mentions run, if the model runs them, through the ordinary sandboxed shell like any command.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, cast

from pydantic import BaseModel, Field

from clover_code.sandbox.own_dirs import config_dir
from clover_code.tools import Tool, ToolContext, ToolError, ToolKind, ToolResult
from clover_code.tools.touches import Touches
from clover_code.tools.workspace.docfile import markdown_files, read_doc

# The open format's limits: a name of lower-case words joined by hyphens, a one-paragraph description.
_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
MAX_NAME = 64
MAX_DESCRIPTION = 1024


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    path: Path  # its SKILL.md, real path
    source: str  # the folder it was found in, as the user knows it: "~/.config/...", ".agents/skills"


def skill_folders(root: Path) -> list[tuple[str, Path, bool]]:
    """Where skills are found (source, folder, whether the repository wrote it), the one that
    wins a shared name first: the user's own, then the repository's (`root`: a real path)."""
    return [(f"{config_dir()}/skills", config_dir() / "skills", False),
            (".clover/skills", root / ".clover" / "skills", True),
            (".agents/skills", root / ".agents" / "skills", True)]


def find_skills(root: Path) -> list[Skill]:
    """Every skill with a valid name and a description, one per name, sorted by name."""
    found: dict[str, Skill] = {}
    for source, folder, untrusted in skill_folders(root.resolve()):
        for path in markdown_files(folder, "*/SKILL.md"):
            skill = _skill(path, folder if untrusted else None, source)
            if skill is not None and skill.name not in found:
                found[skill.name] = skill
    return sorted(found.values(), key=lambda s: s.name)


def _skill(path: Path, inside: Path | None, source: str) -> Skill | None:
    doc = read_doc(path, inside)
    if doc is None:
        return None
    name = doc.meta.get("name") or path.parent.name
    description = " ".join(doc.meta.get("description", "").split())[:MAX_DESCRIPTION]
    if not _NAME.match(name) or len(name) > MAX_NAME or not description:
        return None  # a model could not tell when to load it (or the name could not be typed)
    return Skill(name, description, doc.path, source)


class SkillTool:
    """`skill(name)`: a listed skill's instructions. The skills are those found when the agent was
    built, so a skill appears in the prompt and loads from the same file."""

    name: ClassVar[str] = "skill"
    kind: ClassVar[ToolKind] = "read"

    def __init__(self, skills: list[Skill]) -> None:
        self.skills = {s.name: s for s in skills}

    class Args(BaseModel):
        name: str = Field(description="The skill's name, as the system prompt lists it.")

    def touches(self, args: Args) -> Touches:
        return Touches(label=f"skill {args.name}")  # its own file only: no workspace path

    async def run(self, args: Args, ctx: ToolContext) -> ToolResult:
        skill = self.skills.get(args.name)
        if skill is None:
            raise ToolError(f"no skill named {args.name!r}; the skills are: {', '.join(sorted(self.skills)) or 'none'}")
        doc = read_doc(skill.path, skill.path.parent)
        if doc is None:
            raise ToolError(f"the skill {args.name}'s SKILL.md can no longer be read")
        where = _folder_for_model(skill, ctx.workspace.root)
        cut = "\n\n[SKILL.md cut at 64 KiB]" if doc.truncated else ""
        return ToolResult(True, f"Skill {skill.name} (folder: {where})\n\n{doc.body.strip()}{cut}",
                          {"skill": skill.name, "source": skill.source})


def _folder_for_model(skill: Skill, root: Path) -> str:
    """The skill's folder as the shell reaches it: relative to the workspace for a repository's
    skill; a user's skill lives in clover-code's config folder, which the sandbox hides."""
    folder = skill.path.parent
    if folder.is_relative_to(root):
        return folder.relative_to(root).as_posix()
    return f"{folder} (outside the workspace: the sandboxed shell cannot reach its files)"


def skill_tool(skills: list[Skill]) -> Tool:
    """The `skill` tool for the registry. A cast as for every family (default_registry imports
    them untyped): `run` takes its own Args, which the registry validates a call into first."""
    return cast(Tool, SkillTool(skills))
