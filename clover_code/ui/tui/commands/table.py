"""The command table: every slash command as one entry (its name, argument, help line, handler
and when it may run), which `/help`, the `/` completion popup and dispatch all read.

Built-in commands fill it (builtin.py); a user's own join it the same way, through `register`.
Each handler is a function of (host, argument), the host being what a command may use of the
app (host.CommandHost); one that waits on the agent or on git runs in a worker so the screen
stays live, and its failures become notes, never tracebacks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from clover_code.settings import ConfigError
from clover_code.ui.terminal_text import visible
from clover_code.ui.tui.commands.host import CommandHost
from clover_code.ui.tui.widgets.completion_popup import Completion

Handler = Callable[[CommandHost, str], None]
STARTING = "The agent is still starting; try again in a moment."
WORKING = "The agent is working: wait, or press Esc to cancel it first."


@dataclass(frozen=True)
class Command:
    name: str  # as typed, with its slash: "/diff"
    help: str  # one line, for /help and the popup
    run: Handler
    argument: str = ""  # as /help shows it: "[N]", "[MESSAGE]"
    needs_agent: bool = False  # refused while the agent starts (or when it could not)
    during_turn: bool = True  # False: refused while a turn runs (Esc stops it first)
    aliases: tuple[str, ...] = ()  # other names it answers to; not listed

    @property
    def usage(self) -> str:
        return f"{self.name} {self.argument}" if self.argument else self.name


class CommandTable:
    def __init__(self, commands: Iterable[Command] = ()) -> None:
        self._listed: list[Command] = []
        self._by_name: dict[str, Command] = {}
        for command in commands:
            self.register(command)

    def register(self, command: Command) -> None:
        """Add `command`; a name that is not one word after a slash, or is taken, is refused."""
        for name in (command.name, *command.aliases):
            if not name.startswith("/") or len(name) < 2 or any(c.isspace() for c in name):
                raise ConfigError(f"command name {name!r} must be one word after a slash, as /deploy")
            if name.lower() in self._by_name:
                raise ConfigError(f"command {name} is already defined")
        self._listed.append(command)
        self._by_name.update({name.lower(): command for name in (command.name, *command.aliases)})

    def __iter__(self) -> Iterator[Command]:
        return iter(self._listed)

    def find(self, name: str) -> Command | None:
        return self._by_name.get(name.lower())

    def run(self, host: CommandHost, line: str) -> None:
        """Run a typed command line: its command with the rest as the argument, if allowed now."""
        name, _, argument = line.strip().partition(" ")
        command = self.find(name)
        if command is None:
            host.note(f"unknown command {name}; /help lists them", "error")
        elif command.needs_agent and host.agent is None:
            host.say(STARTING, severity="warning")
        elif not command.during_turn and host.busy:
            host.say(WORKING, severity="warning")
        else:
            command.run(host, argument.strip())

    def help(self) -> Table:
        """The commands, one row each: usage, then what it does, wrapped in its own column."""
        return two_columns((c.usage, c.help) for c in self._listed)

    def completions(self) -> list[Completion]:
        """What the `/` popup offers, in the help's order."""
        return [Completion(c.name, f"{c.argument}  {c.help}" if c.argument else c.help) for c in self._listed]


def two_columns(rows: Iterable[tuple[str, str]]) -> Table:
    """Rows of (name, what it does), indented, the second column wrapping within itself (a long
    line never wraps back to the left edge). Plain text: a user's own command is not markup."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True)
    grid.add_column()
    for name, does in rows:
        grid.add_row(Padding(Text(visible(name)), (0, 0, 0, 2)), Text(visible(does)))
    return grid
