"""The built-in slash commands, as entries of the command table, and the help that lists them."""

from __future__ import annotations

from clover_code.ui.tui import rewind
from clover_code.ui.tui.commands import mcp, session, usage, workspace
from clover_code.ui.tui.commands.host import CommandHost
from clover_code.ui.tui.commands.table import Command, CommandTable, Handler

KEYS = """\
Keys
  Enter send · Ctrl+J newline · Up/Down history (all sessions) · Ctrl+R search it
  / a command and @ a file open a completion list: Up/Down choose, Tab complete, Enter run
  @path attaches the file (or folder) · !cmd runs a command yourself; the model sees its output
  Shift+Tab cycle the approval mode: ask, auto-edit, read-only (plan)
  Esc cancel the running generation or tool (queued messages come back to the editor)
  Ctrl+C clear the editor; on an empty one cancel, twice quit · Ctrl+D on an empty one quit
  PgUp/PgDn scroll the transcript · Ctrl+Home/End (Home/End on an empty editor) its top/end
  y / a / n answer an approval (arrows, PgUp/PgDn scroll what it shows)"""


def builtin_commands() -> CommandTable:
    """A table of the built-in commands (each app has its own: a user's commands join it)."""
    table = CommandTable()

    def show_help(app: CommandHost, arg: str) -> None:
        app.note(f"Commands\n{table.help()}\n{KEYS}", "help")

    for command in (
        Command("/help", "this help", show_help),
        _idle("/undo", "rewind code and/or conversation to before a message you pick (also Esc Esc)",
              rewind.open_picker, "[N]", aliases=("/rewind",)),
        _idle("/redo", "take the last rewind back", rewind.redo),
        _idle("/diff", "this session's changes since it started", workspace.diff),
        _idle("/commit", "commit the work tree", workspace.commit, "[MESSAGE]"),
        Command("/model", "show the engine and model; with NAME, load another model", session.model, "[NAME]"),
        Command("/mode", "show or set the approval mode: read-only | ask | auto-edit | full-auto", session.mode,
                "[MODE]", needs_agent=True),
        _idle("/compact", "summarise older turns to free context", session.compact),
        _idle("/clear", "clear the screen and start a fresh conversation", session.clear),
        Command("/resume", "continue an earlier session (without ID: pick one, with a preview)", session.resume,
                "[ID]", during_turn=False),
        Command("/init", "write a starter AGENTS.md for this repository", workspace.init),
        Command("/stats", "tokens, blocks, forward passes and speed of this session", usage.stats),
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
