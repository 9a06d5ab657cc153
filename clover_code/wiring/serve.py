"""`clover-code serve`: flags and environment become a served embedded engine."""

from __future__ import annotations

import argparse
import sys

from clover_code.config import env_setting
from clover_code.engine import EngineError
from clover_code.ui.exit_codes import EXIT_ENGINE, EXIT_FAILED, EXIT_OK, EXIT_USAGE


def run_serve(args: argparse.Namespace) -> int:
    from clover_code.engine.server import is_loopback

    api_key = args.api_key or env_setting("api_key")
    if not is_loopback(args.host) and not api_key:
        return _refuse(f"refusing to listen on {args.host} without an API key: anyone who can reach the port "
                       "could use the model. Pass --api-key KEY or set CLOVER_API_KEY (clients then send "
                       "'Authorization: Bearer KEY'), or keep the default --host 127.0.0.1.")
    if args.max_queue < 0 or not 0 <= args.port <= 65535:
        return _refuse("--max-queue must be >= 0 and --port 0..65535")
    model = args.model or env_setting("model")
    if not model:
        return _refuse("pass --model DIR (a local checkpoint folder) or set CLOVER_MODEL")
    return _serve(args, model, api_key)


def _serve(args: argparse.Namespace, model: str, api_key: str | None) -> int:
    import uvicorn

    from clover_code.engine.embedded import EmbeddedEngine
    from clover_code.engine.server import create_app, served_name

    try:
        engine = EmbeddedEngine(model, threshold=args.threshold, block_size=args.block_size,
                                scaffold=args.scaffold is not False)
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
