"""ToolError, in a module of its own: the workspace and sandbox helpers raise it, and
clover_code.tools (which re-exports it) names their types, so neither imports the other."""


class ToolError(Exception):
    """Raised inside a tool for a user/model mistake; the registry turns it into a result."""
