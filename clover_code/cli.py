"""`clover-code` entry point: TUI | --task (headless) | generate | serve.

Only argparse and the standard library load here; each mode imports what it needs,
so `clover-code --help` stays instant.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from clover_code import __version__
from clover_code.ui.exit_codes import EXIT_INTERRUPTED, EXIT_USAGE, ExitReason

OUTPUT_FORMATS = ("text", "json", "stream-json")


class UsageExit(Exception):
    """Flags argparse rejects; the message says which. Exit 2, with the result object when
    --output-format asks for JSON (scripts parse stdout whatever went wrong)."""

    def __init__(self, message: str, usage: str):
        super().__init__(message)
        self.usage = usage


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageExit(message, self.format_usage())


def _engine_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("engine")
    g.add_argument("--model", help="checkpoint folder (embedded) or model name (remote)")
    g.add_argument("--endpoint", help="OpenAI-compatible base URL, e.g. http://gpu-box:8000/v1")
    g.add_argument("--engine", help="embedded | remote | scripted:FILE (replies in JSONL)")
    g.add_argument("--threshold", type=float, help="confidence to commit a position (default 0.95)")
    g.add_argument("--policy", metavar="NAME[:KNOB]",
                   help="decoding policy: which positions a pass commits (default: the checkpoint's own, else "
                   "threshold at --threshold; also factor, entropy, context, guarded, aligned)")
    g.add_argument("--block-size", type=int, help="tokens per block (default: the checkpoint's)")
    g.add_argument("--max-tokens", type=int, help="tokens per reply (default 4096)")
    g.add_argument("--temperature", type=float, help="0 for greedy (default)")
    g.add_argument("--no-scaffold", dest="scaffold", action="store_false", default=None,
                   help="embedded engine: decode tool calls as plain text, not under the grammar of the tools")


def main_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="clover-code",
        description="A terminal coding assistant on the Clover block-diffusion LM. "
        "Without --task it opens the TUI (with PROMPT sent, if given). Subcommands: doctor, eval, "
        "generate, serve (`clover-code serve --help`).",
    )
    p.add_argument("prompt", nargs="?", metavar="PROMPT",
                   help="a first message for the TUI, sent as soon as the model is ready")
    p.add_argument("--version", action="version", version=f"clover-code {__version__}")
    p.add_argument("--task", help="run headless: TEXT, @FILE, or - for stdin")
    p.add_argument("--cwd", help="workspace directory (default: current)")
    p.add_argument("--approval", choices=["plan", "ask", "auto-edit", "full-auto", "read-only"],
                   help="approval mode (TUI default ask, headless default full-auto); plan reads, "
                        "changes nothing and ends with a plan (read-only: its old name, still accepted)")
    p.add_argument("--max-turns", type=int, help="model requests per task before stopping")
    p.add_argument("--output-format", choices=OUTPUT_FORMATS, default="text",
                   help="headless result format on stdout")
    p.add_argument("--resume", nargs="?", const="last", metavar="ID|last",
                   help="continue a session (default: the last one)")
    p.add_argument("--no-sandbox", action="store_true",
                   help="run shell commands without bubblewrap (not recommended)")
    _engine_flags(p)
    return p


def generate_parser() -> argparse.ArgumentParser:
    p = Parser(prog="clover-code generate",
                                description="Stream one reply from a checkpoint, block by block.")
    p.add_argument("prompt", help="the user message")
    _engine_flags(p)
    p.add_argument("--show-steps", action="store_true", help="print each denoising step")
    return p


def serve_parser() -> argparse.ArgumentParser:
    p = Parser(prog="clover-code serve",
                                description="Serve a checkpoint over HTTP: OpenAI Chat Completions, Anthropic Messages "
                                "(Claude Code) and OpenAI Responses (Codex).")
    p.add_argument("--model", help="checkpoint folder (or CLOVER_MODEL); with --engine remote, the model to ask for")
    p.add_argument("--engine", help="embedded (default) | remote (translate for --endpoint: another server) | "
                   "scripted:FILE (replies in JSONL, one per request: protocol tests without a model)")
    p.add_argument("--endpoint", help="with --engine remote: the OpenAI-compatible base URL to translate for")
    p.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--api-key", help="bearer token clients must send (or CLOVER_SERVE_API_KEY, or serve_api_key "
                   "in your config; never CLOVER_API_KEY, the key clover-code sends to others); "
                   "mandatory on a non-loopback address")
    p.add_argument("--max-queue", type=int, default=16, help="queued requests before 429")
    p.add_argument("--max-connections", type=int, default=256,
                   help="open connections at once; past it the one waiting longest for its headers is closed "
                   "(default 256)")
    p.add_argument("--header-timeout", type=float, default=10.0,
                   help="seconds a connection may wait before sending a request's headers (default 10)")
    p.add_argument("--body-timeout", type=float, default=60.0,
                   help="seconds for a request's body once its headers are in (default 60)")
    p.add_argument("--threshold", type=float)
    p.add_argument("--policy", metavar="NAME[:KNOB]",
                   help="decoding policy (default: the checkpoint's own, else threshold)")
    p.add_argument("--block-size", type=int)
    p.add_argument("--no-scaffold", dest="scaffold", action="store_false", default=None,
                   help="decode tool calls as plain text, not under the grammar of the request's tools")
    return p


def doctor_parser() -> argparse.ArgumentParser:
    p = Parser(prog="clover-code doctor",
               description="Say what this machine can do (sandbox, git, ripgrep, engine, context window, "
               "GPU, config) and how to fix what does not work. Exit 0 when the setup works, 1 otherwise.")
    p.add_argument("--cwd", help="workspace directory whose config to read (default: current)")
    p.add_argument("--model", help="checkpoint folder (embedded) or model name (remote)")
    p.add_argument("--endpoint", help="OpenAI-compatible base URL")
    p.add_argument("--engine", help="embedded | remote | scripted:FILE")
    p.add_argument("--no-sandbox", action="store_true", help="check as if run with --no-sandbox")
    return p


def eval_parser() -> argparse.ArgumentParser:
    p = Parser(prog="clover-code eval",
               description="Run the agent headless on task folders (sandbox/ tasks, Exercism exercises, "
               "Harbor tasks), once per engine; check, compare, and write results.jsonl, report.md and a plot.")
    p.add_argument("tasks", nargs="*", metavar="TASK", help="task folders, or folders of them (e.g. sandbox/*)")
    p.add_argument("--engine", action="append", metavar="[NAME=]SPEC",
                   help="embedded, embedded:DIR, URL[#MODEL], remote, scripted:FILE|DIR; repeat to compare")
    p.add_argument("--price", action="append", metavar="NAME=IN,OUT",
                   help="USD per million input and output tokens of an engine, for the cost estimate")
    p.add_argument("--tries", type=int, help="tries per task; a second one sees the failing check (default 2)")
    p.add_argument("--jobs", type=int, help="tasks at once (default 1; an embedded engine still runs one)")
    p.add_argument("--out", help="results folder (default: a new one under ./clover-eval/)")
    p.add_argument("--resume", action="store_true",
                   help="go on with the run in --out, skipping what is done (its flags unless given again)")
    p.add_argument("--timeout", type=float, help="seconds per try before it is failed (default 900)")
    p.add_argument("--check-timeout", type=float, help="seconds per check (default 180)")
    p.add_argument("--max-turns", type=int, help="model requests per try")
    p.add_argument("--max-tokens", type=int, help="tokens per reply")
    p.add_argument("--keep", action="store_true", help="keep each workspace (its path goes to the logs)")
    p.add_argument("--no-sandbox", action="store_true", help="run the agent's commands and the checks unconfined")
    return p


def headless_request(argv: list[str]) -> tuple[bool, str]:
    """(whether this is a --task run, its output format), read before the full parse so that
    a run the parse or a signal stops still answers in the format asked for."""
    probe = Parser(add_help=False)
    probe.add_argument("--task")
    probe.add_argument("--output-format", choices=OUTPUT_FORMATS, default="text")
    try:
        known, _ = probe.parse_known_args(argv)
    except UsageExit:
        return "--task" in argv, "text"
    return known.task is not None, known.output_format


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    subcommand = argv[:1] in (["generate"], ["serve"], ["doctor"], ["eval"])
    headless, fmt = (False, "text") if subcommand else headless_request(argv)
    if headless:  # Ctrl-C or a CI runner's SIGTERM from here on: exit 130 with the result, never lost
        from clover_code.ui import signal_exit

        signal_exit.catch_signals()
    try:
        return _dispatch(argv)
    except UsageExit as exc:
        print(exc.usage, end="", file=sys.stderr)
        return _early_exit(fmt, EXIT_USAGE, "bad_input", str(exc))
    except KeyboardInterrupt:  # the other modes' start-up
        print("\ninterrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _dispatch(argv: list[str]) -> int:
    from clover_code.wiring import modes

    if argv[:1] == ["generate"]:
        return modes.run_generate(generate_parser().parse_args(argv[1:]))
    if argv[:1] == ["doctor"]:
        return modes.run_doctor(doctor_parser().parse_args(argv[1:]))
    if argv[:1] == ["eval"]:
        return modes.run_eval(eval_parser().parse_args(argv[1:]))
    if argv[:1] == ["serve"]:
        return modes.run_serve(serve_parser().parse_args(argv[1:]))
    parser = main_parser()
    args = parser.parse_args(argv)
    if args.task is not None and args.prompt is not None:
        parser.error(f"a prompt and --task both give a task: --task runs it headless, a prompt alone opens "
                     f"the TUI with it (unexpected {args.prompt!r})")
    return modes.run_headless(args) if args.task is not None else modes.run_tui(args)


def _early_exit(fmt: str, code: int, reason: ExitReason, message: str) -> int:
    if fmt == "text":
        print(f"clover-code: {message}", file=sys.stderr)
        return code
    from clover_code.ui.headless import early_exit

    return early_exit(fmt, code, reason, message)


if __name__ == "__main__":
    sys.exit(main())
