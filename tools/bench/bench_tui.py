"""How fast the TUI shows committed blocks, next to a bare Textual `Log` on the same machine.

    python -m tools.bench.bench_tui [--json] [--runs 5] [--blocks 120]

For each rate (500 and 2,000 tokens/s, 32-token blocks) and each run, after a warm-up,
side by side (ours, Log, ours, Log, ...):
- ours: the real app from `make_app()` holding a history of 30 long finished messages;
  blocks enter through the same path the agent worker uses (`queue_event`);
- baseline: a bare `Log` receiving the same text at the same moments.
A block's latency runs from its commit (its scheduled time: an engine runs on its own
thread and does not wait for the UI) to the first frame rendered after its text was
written into a widget. Frames are rendered to terminal bytes as a real terminal would
get them (headless apps skip that step; we do it here so it is paid for).
While ours streams, keys are typed into the editor: echo is key to the frame showing it.
Ours runs as in a real turn: the spinner ticks, and with --live-output a command runs beside the
reply, its output landing in its card as often as agent/output_relay.py sends it.
`first_paint_s`: the real `clover-code` in a temp git repository, started on a pty,
until the status bar is drawn (median of the runs).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pty
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from textual import events
from textual._compositor import CompositorUpdate
from textual.app import App, ComposeResult
from textual.widgets import Log

from clover_code.agent.events import (
    BlockCommitted,
    TextDelta,
    ToolCallParsed,
    ToolOutput,
    ToolStarted,
    TurnFinished,
    UserMessage,
)
from clover_code.agent.output_relay import FLUSH_S
from clover_code.engine import Block, EngineError, ToolCall
from clover_code.settings import Settings
from clover_code.ui.tui.app import make_app
from clover_code.ui.tui.widgets.spinner import SpinnerState
from tools.bench.bench_machine import machine_info

BLOCK_TOKENS = 32
SIZE = (120, 40)
KEY_EVERY_S = 0.25
SHELL = ToolCall("bench-shell", "run_shell", '{"command": "make test"}')


def long_reply(n: int) -> str:
    """A long, varied Markdown reply (~5,000 characters)."""
    parts = [f"## Part {n}: what changed\n"]
    for i in range(6):
        parts.append(f"The function `parse_{i}` reads the header, checks the **version** and returns "
                     f"a record; message {n} explains why step {i} matters for the rest of the file.\n")
        parts.append("".join(f"- item {j}: keep `state_{j}` in sync with the cache\n" for j in range(4)))
        parts.append(f"```python\ndef parse_{i}(data):\n    header = data[:16]\n"
                     f"    return Record(header, data[16:])  # step {i}\n```\n")
    return "\n".join(parts)


def stream_pieces(blocks: int) -> list[str]:
    text = "".join(long_reply(100 + i) for i in range(blocks // 30 + 2))
    size = 120  # ~32 tokens of Markdown and code
    return [text[i * size:(i + 1) * size] for i in range(blocks)]


class FrameClock:
    """Hooks an app's `_display`: renders each frame to bytes and timestamps it."""

    def __init__(self, app: App):
        self.app = app
        self.frames: list[float] = []
        self.on_frame = None
        original = app._display

        def display(screen, renderable):
            if renderable is not None and isinstance(renderable, CompositorUpdate):
                renderable.render_segments(app.console)  # what a terminal would be sent
            original(screen, renderable)
            now = time.perf_counter()
            self.frames.append(now)
            if self.on_frame is not None:
                self.on_frame(now)

        app._display = display


class Latencies:
    def __init__(self, n: int):
        self.commit = [0.0] * n
        self.shown: list[float | None] = [None] * n
        self.written = 0  # blocks written into a widget so far
        self.first_unshown = 0

    def frame(self, now: float) -> None:
        for i in range(self.first_unshown, self.written):
            self.shown[i] = now
        self.first_unshown = self.written

    def result(self) -> tuple[list[float], float]:
        ms = [(s - c) * 1000 for c, s in zip(self.commit, self.shown, strict=False) if s is not None]
        wall = (max(s for s in self.shown if s) - self.commit[0]) / (self.commit[-1] - self.commit[0])
        return ms, wall


async def produce(pieces: list[str], interval: float, lat: Latencies, write) -> None:
    start = time.perf_counter() + 0.05
    for i, text in enumerate(pieces):
        due = start + i * interval
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        lat.commit[i] = due
        write(i, text)


async def settle(app: App, lat: Latencies, timeout: float = 30.0) -> None:
    deadline = time.perf_counter() + timeout
    while lat.shown[-1] is None and time.perf_counter() < deadline:
        await asyncio.sleep(0.01)
        app.refresh()


def history_events() -> list:
    out = []
    for n in range(30):
        out += [UserMessage(f"question {n}"), BlockCommitted(Block(long_reply(n), 1200, 40, 1.0, None, 0,
                                                                   finish="stop")),
                TextDelta(long_reply(n)), TurnFinished("done", "")]
    return out


def _no_agent(approver, resume):
    """The bench feeds events itself; nothing runs a model (the app says the load failed)."""
    raise EngineError("bench: no agent, the events are fed to the app directly")


async def run_ours(pieces: list[str], interval: float, live_output: bool = False) -> dict:
    app = make_app(Settings(engine="scripted"), Path.cwd(), agent_factory=_no_agent)
    app._spinner_state = lambda: SpinnerState("Working", 0)  # as in a real turn: it ticks while blocks stream
    lat = Latencies(len(pieces))
    echo: list[float] = []
    async with app.run_test(size=SIZE) as pilot:
        app.apply_events(history_events(), live=False)
        if live_output:  # a command the model started, still running while it writes on
            app.apply_events([ToolCallParsed(SHELL), ToolStarted(SHELL)])
        await pilot.pause(0.5)
        editor = app.query_one("#input")
        editor.focus()
        clock = FrameClock(app)
        original = app.apply_events
        pending_key: list[tuple[float, int]] = []

        def apply_events(evs, live=True):
            original(evs, live)
            lat.written += sum(isinstance(e, BlockCommitted) for e in evs)

        def on_frame(now):
            lat.frame(now)
            while pending_key and len(editor.text) >= pending_key[0][1]:
                echo.append((now - pending_key.pop(0)[0]) * 1000)

        app.apply_events = apply_events
        clock.on_frame = on_frame

        def write(i, text):
            last = i == len(pieces) - 1
            app.queue_event(BlockCommitted(Block(text, BLOCK_TOKENS, 4, i * interval, None, i,
                                                 finish="stop" if last else None)))
            app.queue_event(TextDelta(text))  # as the agent follows each block with the text it shows

        async def typist():
            typed = 0
            while lat.shown[-1] is None:
                await asyncio.sleep(KEY_EVERY_S)
                typed += 1
                pending_key.append((time.perf_counter(), typed))
                app.post_message(events.Key("x", "x"))

        async def command_output():
            line = 0
            while lat.shown[-1] is None:
                await asyncio.sleep(FLUSH_S)  # as often as the agent sends a command's output
                line += 1
                app.queue_event(ToolOutput(SHELL, f"test_module_{line}.py::test_case PASSED [{line % 100}%]\n"))

        keys = asyncio.create_task(typist())
        output = asyncio.create_task(command_output()) if live_output else None
        await produce(pieces, interval, lat, write)
        await settle(app, lat)
        keys.cancel()
        if output is not None:
            output.cancel()
        await pilot.pause(0.2)  # let the last key land before the app closes
    ms, wall = lat.result()
    return {"ms": ms, "wall": wall, "echo": echo}


class LogApp(App):
    def compose(self) -> ComposeResult:
        yield Log()


async def run_log(pieces: list[str], interval: float) -> dict:
    app = LogApp()
    lat = Latencies(len(pieces))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.2)
        log = app.query_one(Log)
        clock = FrameClock(app)
        clock.on_frame = lat.frame

        def write(i, text):
            log.write(text)
            lat.written = i + 1

        await produce(pieces, interval, lat, write)
        await settle(app, lat)
    ms, wall = lat.result()
    return {"ms": ms, "wall": wall}


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


def summary(values: list[float]) -> dict:
    return {"median": round(statistics.median(values), 1), "p99": round(pct(values, 0.99), 1)}


async def bench_rate(rate: int, runs: int, blocks: int, live_output: bool = False) -> dict:
    interval = BLOCK_TOKENS / rate
    pieces = stream_pieces(blocks)
    await run_ours(pieces[:20], interval, live_output)  # warm-up
    await run_log(pieces[:20], interval)
    ours: list[dict] = []
    logs: list[dict] = []
    for _ in range(runs):  # side by side: A B A B ...
        ours.append(await run_ours(pieces, interval, live_output))
        logs.append(await run_log(pieces, interval))
    ours_ms = [m for r in ours for m in r["ms"]]
    log_ms = [m for r in logs for m in r["ms"]]
    return {
        "block_to_screen_ms": summary(ours_ms),
        "baseline_log_ms": summary(log_ms),
        "ratio_to_baseline": round(statistics.median(ours_ms) / statistics.median(log_ms), 2),
        "stream_wall_ratio": round(statistics.median(r["wall"] for r in ours), 3),
        "baseline_wall_ratio": round(statistics.median(r["wall"] for r in logs), 3),
        "keystroke_echo_ms": summary([e for r in ours for e in r["echo"]]),
        "blocks": blocks, "runs": runs, "live_output": live_output,
    }


def first_paint(runs: int) -> float:
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        (repo / "README.md").write_text("hello\n")
        replies = repo / "replies.jsonl"
        replies.write_text('"hi"\n')
        for _ in range(runs + 1):
            times.append(_paint_once(repo, replies))
    return round(statistics.median(times[1:]), 3)


def _paint_once(repo: Path, replies: Path) -> float:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["TERM"] = "xterm-256color"
    start = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(repo)
        os.execve(sys.executable, [sys.executable, "-m", "clover_code.cli", "--engine",
                                   f"scripted:{replies}"], env)
    seen = b""
    try:
        while time.perf_counter() - start < 20:
            ready, _, _ = select.select([fd], [], [], 0.05)
            if ready:
                try:
                    seen += os.read(fd, 65536)
                except OSError:
                    break
                if b"ctx" in seen:  # the status bar is on screen
                    return time.perf_counter() - start
        return float("nan")
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        os.close(fd)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--blocks", type=int, default=120)
    parser.add_argument("--rates", default="500,2000")
    parser.add_argument("--live-output", action="store_true",
                        help="a command's output streams into its card while the reply streams")
    args = parser.parse_args()
    result: dict = {}
    for rate in (int(r) for r in args.rates.split(",")):
        result[str(rate)] = asyncio.run(bench_rate(rate, args.runs, args.blocks, args.live_output))
    result["first_paint_s"] = first_paint(args.runs)
    result["machine"] = machine_info()
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{'rate':>6} {'ours med/p99 ms':>18} {'Log med/p99 ms':>17} {'x Log':>6} {'wall':>6} {'echo med/p99':>14}")
    for rate, r in result.items():
        if not rate.isdigit():
            continue
        o, b, e = r["block_to_screen_ms"], r["baseline_log_ms"], r["keystroke_echo_ms"]
        print(f"{rate:>6} {o['median']:>9}/{o['p99']:<8} {b['median']:>8}/{b['p99']:<8} "
              f"{r['ratio_to_baseline']:>6} {r['stream_wall_ratio']:>6} {e['median']:>7}/{e['p99']:<6}")
    print(f"first paint: {result['first_paint_s']} s   ({result['machine']})")
    return 0




if __name__ == "__main__":
    sys.exit(main())
