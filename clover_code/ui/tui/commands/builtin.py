"""The built-in slash commands, as entries of the command table, and the help that lists them."""

from __future__ import annotations

from rich.console import Group
from textual.widgets import Static

from clover_code.ui.tui import rewind
from clover_code.ui.tui.commands import custom, mcp, session, usage, workspace
from clover_code.ui.tui.commands.host import CommandHost
from clover_code.ui.tui.commands.table import Command, CommandTable, Handler, two_columns

KEYS = (
    ("Enter", "send · Ctrl+J a new line"),
    ("Up/Down", "history, every session's · Ctrl+R searches it"),
    ("/ or @", "a completion list of commands or files: Up/Down choose, Tab completes, Enter runs"),
    ("@path", "attaches the file (or folder)"),
    ("!cmd", "runs a command yourself; the model sees its output"),
    ("Shift+Tab", "cycle the approval mode: ask, auto-edit, plan"),
    ("Esc", "cancel the running generation or tool (queued messages come back to the editor)"),
    ("Ctrl+C", "clear the editor; on an empty one cancel, twice quit · Ctrl+D on an empty one quits"),
    ("PgUp/PgDn", "scroll the transcript"),
    ("Ctrl+Home/End", "the editor's start/end; on an empty editor (as Home/End) the transcript's top/end"),
    ("y / a / n", "answer an approval (arrows, PgUp/PgDn scroll what it shows)"),
)


def builtin_commands() -> CommandTable:
    """A table of the built-in commands (each app has its own: a user's commands join it)."""
    table = CommandTable()

    def show_help(app: CommandHost, arg: str) -> None:
        app.view.mount(Static(Group("Commands", table.help(), "Keys", two_columns(KEYS)), classes="note -help"))
        app.view.scroll_end(animate=False)

    for command in (
        Command("/help", "this help", show_help),
        _idle("/undo", "rewind code and/or conversation to before a message you pick (also Esc Esc)",
              rewind.open_picker, "[N]", aliases=("/rewind",)),
        _idle("/redo", "take the last rewind back", rewind.redo),
        _idle("/diff", "this session's changes since it started, their stat first", workspace.diff),
        _idle("/commit", "commit the work tree; without MESSAGE the model drafts one for you to accept or edit",
              workspace.commit, "[MESSAGE]"),
        Command("/model", "show the engine and model; with NAME, load another model", session.model, "[NAME]"),
        Command("/mode", "show or set the approval mode: plan | ask | auto-edit | full-auto", session.mode,
                "[MODE]", needs_agent=True),
        _idle("/compact", "summarise older turns to free context", session.compact),
        _idle("/clear", "clear the screen and start a fresh conversation", session.clear),
        Command("/resume", "continue an earlier session (without ID: pick one, with a preview)", session.resume,
                "[ID]", during_turn=False),
        Command("/init", "write a starter AGENTS.md for this repository", workspace.init),
        Command("/skills", "the skills the model may load (SKILL.md folders)", custom.list_skills),
        Command("/stats", "turns, tokens, blocks, forward passes and speed of this session", usage.stats),
        Command("/cost", "tokens in and out per turn, what fills the context, estimated cost", usage.cost,
                aliases=("/usage",)),
        Command("/mcp", "your MCP servers: state and tools; allow or deny a repository's .mcp.json", mcp.show,
                "[allow|deny]", needs_agent=True),
        Command("/denoise", "show or hide the live denoise view (also F2)", _toggle_denoise),
        Command("/quit", "leave (also Ctrl+C twice)", _quit, aliases=("/exit",)),
    ):
        table.register(command)
    return table


def _idle(name: str, help: str, run: Handler, argument: str = "", aliases: tuple[str, ...] = ()) -> Command:
    """A command that changes the conversation or the files: it needs the agent, and no turn running."""
    return Command(name, help, run, argument, needs_agent=True, during_turn=False, aliases=aliases)


def _toggle_denoise(app: CommandHost, arg: str) -> None:
    app.action_toggle_denoise()


def _quit(app: CommandHost, arg: str) -> None:
    app.quit()
