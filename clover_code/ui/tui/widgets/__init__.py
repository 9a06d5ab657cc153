"""TUI widgets, one per module. None of them talks to an engine or the agent."""
