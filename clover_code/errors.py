"""Errors whose message is the interface: a user (or the model) reads it and acts on it.

Every layer raises its own kind (a bad setting, an engine to check, a tool call that failed,
a task folder that cannot run); the front ends catch `UserError` and print its message alone,
never a traceback. Anything else that escapes is a bug and is reported as one.
"""


class UserError(Exception):
    """A failure the user can act on; `str(error)` says what to check or change."""


class ToolError(UserError):
    """A tool call (or a command the sandbox refused) failed for a reason the model reads as the
    tool's result. The sandbox raises it too, so it lives here at the base, below both."""
