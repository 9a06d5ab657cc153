"""Failures as a user reads them: one line to act on; a bug's traceback kept in the errors
log (clover_code.agent.bug_log). The app and the slash commands both report failures this
way (a module of its own, so neither imports the other for it).
"""

from __future__ import annotations

from clover_code.agent.bug_log import describe_bug
from clover_code.agent.session import SessionError
from clover_code.engine import EngineError
from clover_code.settings import ConfigError
from clover_code.tools import ToolError

# Errors whose message says what to do (a checkpoint's is a ToolError): shown as they are.
ACTIONABLE_ERRORS = (EngineError, ConfigError, ToolError, SessionError)


def describe_error(exc: BaseException) -> str:
    """One line a user can act on; a bug's line says where its traceback was kept."""
    if isinstance(exc, ACTIONABLE_ERRORS):
        return str(exc)
    return describe_bug(exc)
