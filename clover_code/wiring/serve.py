"""`clover-code serve`: flags, environment and config become a served engine: the embedded one
on a checkpoint, or with --engine a remote server it translates for, or scripted replies."""

from __future__ import annotations

import argparse
import dataclasses
import os
import resource
import sys

from clover_code.config import ENV_VARS, user_config_path
from clover_code.engine import EngineError
from clover_code.settings import ConfigError, Settings
from clover_code.ui.exit_codes import EXIT_ENGINE, EXIT_FAILED, EXIT_OK, EXIT_USAGE
from clover_code.wiring.flags import check_engine, settings_for

# Descriptors besides the connections and the listen backlog: model files, logs, the event loop.
SPARE_DESCRIPTORS = 64


def run_serve(args: argparse.Namespace) -> int:
    from clover_code.engine.wire.server import is_loopback

    if problem := _bad_flags(args) or _descriptor_shortage(args.max_connections):
        return _refuse(problem)
    try:
        _, settings = settings_for("serve", args)
    except ConfigError as exc:
        return _refuse(str(exc))
    # Only a key meant for this server guards it: the client key is this user's to send elsewhere.
    api_key = args.api_key or settings.serve_api_key
    client_key = _client_key_source(settings)
    ignored = (f" ({client_key} is set, but that is the key clover-code sends to other servers; serve never "
               "takes it as its own)") if client_key else ""
    if not is_loopback(args.host) and not api_key:
        return _refuse(f"refusing to listen on {args.host} without an API key: anyone who can reach the port "
                       "could use the model. Pass --api-key KEY or set CLOVER_SERVE_API_KEY (clients then send "
                       f"'Authorization: Bearer KEY'), or keep the default --host 127.0.0.1{ignored}.")
    engine = args.engine or "embedded"  # never the config's endpoint: serve serves a model it runs or names
    if problem := _engine_problem(engine, settings):
        return _refuse(problem)
    if client_key and not api_key:
        print(f"clover-code serve: this server requires no API key{ignored}; to require one, pass --api-key "
              "or set CLOVER_SERVE_API_KEY", file=sys.stderr)
    return _serve(args, dataclasses.replace(settings, engine=engine), api_key)


def _engine_problem(engine: str, settings: Settings) -> str | None:
    """What the chosen engine lacks: embedded a checkpoint, remote an endpoint; else None."""
    try:
        check_engine(engine)
    except ConfigError as exc:
        return str(exc)
    if engine == "embedded" and not settings.model:
        return "pass --model DIR (a local checkpoint folder), set CLOVER_MODEL or `model` in your config"
    if engine == "remote" and not settings.endpoint:
        return ("--engine remote translates for another server: pass --endpoint URL (its OpenAI-compatible base, "
                "e.g. http://gpu-box:30000/v1) or set CLOVER_ENDPOINT")
    return None


def _serve(args: argparse.Namespace, settings: Settings, api_key: str | None) -> int:
    import uvicorn

    from clover_code.engine.wire.http_guard import ConnectionLimits, GuardedConfig
    from clover_code.engine.wire.server import create_app, served_name
    from clover_code.wiring.assemble import build_engine

    for notice in settings.notices:
        print(f"clover-code serve: {notice}", file=sys.stderr)
    try:  # threshold, policy, block size, scaffold and the state budgets as every other mode reads them
        engine = build_engine(settings)
    except EngineError as exc:
        print(f"clover-code serve: {exc}", file=sys.stderr)
        return EXIT_ENGINE
    name = served_name(engine.info.model)
    app = create_app(engine, api_key=api_key, max_queue=args.max_queue, model_name=name,
                     body_timeout=args.body_timeout)
    limits = ConnectionLimits(max_connections=args.max_connections, header_timeout=args.header_timeout)
    print(f"serving {name} at http://{args.host}:{args.port}/v1 (context {engine.info.context_window} "
          f"tokens{', API key required' if api_key else ''}); Ctrl-C stops", file=sys.stderr, flush=True)
    server = uvicorn.Server(GuardedConfig(app, limits=limits, host=args.host, port=args.port, log_level="warning"))
    try:
        server.run()
    except KeyboardInterrupt:  # uvicorn raises the Ctrl-C it held back once it has shut down: a normal stop
        pass
    except SystemExit as exc:  # uvicorn exits when it cannot bind
        print(f"clover-code serve: could not serve on {args.host}:{args.port}", file=sys.stderr)
        return int(exc.code or EXIT_FAILED)
    return EXIT_OK


def _bad_flags(args: argparse.Namespace) -> str | None:
    if args.max_queue < 0 or not 0 <= args.port <= 65535:
        return "--max-queue must be >= 0 and --port 0..65535"
    if args.max_connections < 1:
        return "--max-connections must be 1 or more"
    if not (args.header_timeout > 0 and args.body_timeout > 0):  # NaN fails too
        return "--header-timeout and --body-timeout must be a number of seconds above 0"
    return None


def _descriptor_shortage(max_connections: int) -> str | None:
    """Make room for the connections (and as many waiting in the listen backlog) under the
    process's descriptor limit, raising its soft limit if need be; else say what to change."""
    needed = 2 * max_connections + SPARE_DESCRIPTORS
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return None
    if hard == resource.RLIM_INFINITY or hard >= needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
        return None
    return (f"--max-connections {max_connections} needs about {needed} file descriptors, but this process may "
            f"open {hard} (ulimit -n): lower --max-connections to {max(1, (hard - SPARE_DESCRIPTORS) // 2)} "
            "or raise the limit")


def _client_key_source(settings: Settings) -> str | None:
    """Where the client-side api key comes from, when one is set."""
    if not settings.api_key:
        return None
    return next((var for var in ENV_VARS["api_key"] if os.environ.get(var)), f"api_key in {user_config_path()}")


def _refuse(message: str) -> int:
    print(f"clover-code serve: {message}", file=sys.stderr)
    return EXIT_USAGE
