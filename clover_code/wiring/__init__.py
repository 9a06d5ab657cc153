"""The composition root: command-line flags, config files and the environment become
settings (flags.py), settings become an engine, tools and an agent (assemble.py), and
each mode of `clover-code` is started with what it needs (modes.py). The only layer
that knows every other one; nothing below imports it.
"""
