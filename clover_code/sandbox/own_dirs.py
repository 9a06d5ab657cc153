"""Where clover-code keeps its own files on the host: the user's XDG folders, never a workspace.

config (settings, maybe an api key), state (prompt history, errors log, live-session locks),
cache (shadow checkpoint repositories of every folder worked in) and data. Each module that
writes one asks here; the sandbox hides them all from commands (bwrap.hidden_paths).
"""

from __future__ import annotations

import os
from pathlib import Path

APP = "clover-code"
# XDG variable -> its default under the home folder
BASES = {"XDG_CONFIG_HOME": ".config", "XDG_STATE_HOME": ".local/state", "XDG_CACHE_HOME": ".cache",
         "XDG_DATA_HOME": ".local/share"}


def _base(variable: str) -> Path:
    return Path(os.environ.get(variable) or os.path.join(os.path.expanduser("~"), BASES[variable]))


def config_dir() -> Path:
    return _base("XDG_CONFIG_HOME") / APP


def state_dir() -> Path:
    return _base("XDG_STATE_HOME") / APP


def cache_dir() -> Path:
    return _base("XDG_CACHE_HOME") / APP


def data_dir() -> Path:
    return _base("XDG_DATA_HOME") / APP


def own_dirs() -> tuple[Path, ...]:
    """Every folder clover-code may keep files in: where the environment puts them now, and the
    defaults under the home folder, which a run with another environment may have filled."""
    home = os.path.expanduser("~")
    found = [_base(variable) / APP for variable in BASES]
    found += [Path(home) / default / APP for default in BASES.values()]
    return tuple(dict.fromkeys(found))
