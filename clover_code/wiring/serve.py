"""`clover-code serve`: flags, environment and config become a served embedded engine."""

from __future__ import annotations

import argparse
import dataclasses
import sys

from clover_code.config import env_setting
from clover_code.engine import EngineError
from clover_code.settings import ConfigError, Settings
from clover_code.ui.exit_codes import EXIT_ENGINE, EXIT_FAILED, EXIT_OK, EXIT_USAGE
from clover_code.wiring.flags import settings_for


def run_serve(args: argparse.Namespace) -> int:
    from clover_code.engine.server import is_loopback

    # The key clients must send; the config file's api_key is the one this user sends to others.
    api_key = args.api_key or env_setting("api_key")
    if not is_loopback(args.host) and not api_key:
        return _refuse(f"refusing to listen on {args.host} without an API key: anyone who can reach the port "
                       "could use the model. Pass --api-key KEY or set CLOVER_API_KEY (clients then send "
                       "'Authorization: Bearer KEY'), or keep the default --host 127.0.0.1.")
    if args.max_queue < 0 or not 0 <= args.port <= 65535:
        return _refuse("--max-queue must be >= 0 and --port 0..65535")
    try:
        _, settings = settings_for("serve", args)
    except ConfigError as exc:
        return _refuse(str(exc))
    if not settings.model:
        return _refuse("pass --model DIR (a local checkpoint folder), set CLOVER_MODEL or `model` in your config")
    return _serve(args, dataclasses.replace(settings, engine="embedded"), api_key)


def _serve(args: argparse.Namespace, settings: Settings, api_key: str | None) -> int:
    import uvicorn

    from clover_code.engine.server import create_app, served_name
    from clover_code.wiring.assemble import build_engine

    for notice in settings.notices:
        print(f"clover-code serve: {notice}", file=sys.stderr)
    try:  # threshold, block size, scaffold and the state budgets as every other mode reads them
        engine = build_engine(settings)
    except EngineError as exc:
        print(f"clover-code serve: {exc}", file=sys.stderr)
        return EXIT_ENGINE
    name = served_name(engine.info.model)
    app = create_app(engine, api_key=api_key, max_queue=args.max_queue, model_name=name)
    print(f"serving {name} at http://{args.host}:{args.port}/v1 (context {engine.info.context_window} "
          f"tokens{', API key required' if api_key else ''}); Ctrl-C stops", file=sys.stderr, flush=True)
    try:
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    except SystemExit as exc:  # uvicorn exits when it cannot bind
        print(f"clover-code serve: could not serve on {args.host}:{args.port}", file=sys.stderr)
        return int(exc.code or EXIT_FAILED)
    return EXIT_OK


def _refuse(message: str) -> int:
    print(f"clover-code serve: {message}", file=sys.stderr)
    return EXIT_USAGE
