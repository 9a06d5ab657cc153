"""How a `clover-code` process ends: the exit codes the README documents, and which
run outcome maps to which. One home, shared by the entry point and every mode."""

from __future__ import annotations

from typing import Literal

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_ENGINE, EXIT_LIMIT, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 130

# How a headless run ended, as its JSON result's `exit_reason` says.
ExitReason = Literal["done", "gave_up", "error", "engine_error", "max_turns", "cancelled", "bad_input"]

EXIT_CODES: dict[ExitReason, int] = {
    "done": EXIT_OK,
    "gave_up": EXIT_FAILED,
    "error": EXIT_FAILED,
    "engine_error": EXIT_ENGINE,
    "max_turns": EXIT_LIMIT,
    "cancelled": EXIT_INTERRUPTED,
    "bad_input": EXIT_USAGE,
}
