"""Slash commands: one table of entries (table.py) that `/help`, the `/` popup and dispatch all
read; the built-in entries (builtin.py) and their handlers by what they act on (session.py,
workspace.py, usage.py; rewinds in ui/tui/rewind.py); what a handler may use of the app
(host.py). Nothing is imported here: a module of the package loads only what it names."""
