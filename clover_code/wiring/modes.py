"""Each mode of `clover-code`, started with its settings and the builders it needs.

cli.py parses argv and calls one of these; a ConfigError (bad flags, config or --cwd)
ends the run with exit 2 and one line, in the mode's own format.
"""

from __future__ import annotations

import argparse
import sys

from clover_code.settings import ConfigError
from clover_code.ui.exit_codes import EXIT_USAGE
from clover_code.wiring.flags import settings_for


def run_tui(args: argparse.Namespace) -> int:
    try:
        cwd, settings = settings_for("tui", args)
    except ConfigError as exc:
        return _usage(str(exc))
    from clover_code.ui.tui.app import run_app
    from clover_code.wiring.assemble import build_agent

    return run_app(settings, cwd, build_agent, resume=args.resume, prompt=args.prompt)


def run_headless(args: argparse.Namespace) -> int:
    from clover_code.ui import headless

    try:
        cwd, settings = settings_for("headless", args)
    except ConfigError as exc:
        return headless.early_exit(args.output_format, EXIT_USAGE, "bad_input", str(exc))
    from clover_code.wiring.assemble import build_agent

    return headless.run(args, settings, cwd, build_agent)


def run_generate(args: argparse.Namespace) -> int:
    try:
        _, settings = settings_for("generate", args)
    except ConfigError as exc:
        return _usage(str(exc), "clover-code generate")
    from clover_code.ui.generate import run
    from clover_code.wiring.assemble import build_engine

    return run(args, settings, build_engine)


def run_doctor(args: argparse.Namespace) -> int:
    from clover_code.wiring.doctor import run

    return run(args)


def run_eval(args: argparse.Namespace) -> int:
    from clover_code.eval.main import run

    return run(args)


def run_serve(args: argparse.Namespace) -> int:
    from clover_code.wiring.serve import run_serve as serve

    return serve(args)


def _usage(message: str, prog: str = "clover-code") -> int:
    print(f"{prog}: {message}", file=sys.stderr)
    return EXIT_USAGE
