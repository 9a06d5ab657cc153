"""The user's own slash commands (agent/custom_commands.py) as entries of the command table,
and `/skills`. A custom command sends its filled-in template as the user's message; one whose
name a built-in command has is left out, and the clash is said once, when the app starts."""

from __future__ import annotations

from pathlib import Path

from clover_code.agent.custom_commands import CustomCommand, load_commands
from clover_code.ui.terminal_text import one_line, visible
from clover_code.ui.tui.commands.host import CommandHost
from clover_code.ui.tui.commands.table import Command, CommandTable, Handler


def add_custom_commands(table: CommandTable, cwd: Path) -> list[str]:
    """Register each custom command not named like one already in `table`; the clashes, as notes."""
    clashes: list[str] = []
    for custom in load_commands(cwd):
        if table.find(custom.name) is not None:
            clashes.append(f"Your command {visible(custom.name)} ({custom.path}) is not used: "
                           f"the built-in {visible(custom.name)} has that name. Rename the file to use it.")
            continue
        help = f"{one_line(visible(custom.description), 70) or 'a custom command'} ({custom.source})"
        table.register(Command(custom.name, help, _sender(custom), one_line(visible(custom.argument_hint), 30)))
    return clashes


def _sender(custom: CustomCommand) -> Handler:
    def send(app: CommandHost, arg: str) -> None:
        typed = f"{custom.name} {arg}".strip()
        app.send_prompt(custom.expand(arg), typed)

    return send


def list_skills(app: CommandHost, arg: str) -> None:
    from clover_code.tools.skills import find_skills  # the tools' package (pydantic) after the first paint

    skills = find_skills(app.cwd.resolve())
    if not skills:
        app.note("No skills. A skill is a folder with a SKILL.md (front matter name and description) in "
                 "~/.config/clover-code/skills/, .clover/skills/ or .agents/skills/.", "dim")
        return
    lines = [f"  {s.name}  {one_line(visible(s.description), 90)}  [{visible(s.source)}]" for s in skills]
    app.note("Skills (the model loads one's instructions when a task matches it)\n" + "\n".join(lines), "help")
