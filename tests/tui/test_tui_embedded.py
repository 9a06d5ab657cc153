"""The TUI on the real embedded engine (a tiny checkpoint): load progress and live denoise steps."""

from __future__ import annotations

from clover_code.settings import Settings
from clover_code.ui.tui.app import make_app
from clover_code.ui.tui.widgets.denoise_view import DenoiseView
from clover_code.wiring.assemble import build_agent
from tests.support.tui import idle, notes, send, wait_for

SLOW_S = 300.0  # an upper bound for a model load or a reply with both cores busy, not a pace


async def test_loading_progress_and_denoise_steps(repo, tiny_attention_ckpt):
    settings = Settings(model=str(tiny_attention_ckpt), max_tokens=64, max_turns=1, sandbox=False)
    app = make_app(settings, repo, build_agent=build_agent)
    seen: list[float] = []
    async with app.run_test(size=(100, 30)) as pilot:
        show = app.status.show_progress
        app.status.show_progress = lambda fraction, message: seen.append(fraction) or show(fraction, message)
        await pilot.press("f2")
        await wait_for(pilot, lambda: app.agent is not None, timeout=120)
        assert seen and seen[-1] == 1.0  # the bar followed the load
        assert app.status.info.engine == "embedded"
        await send(pilot, "hi")
        await idle(pilot, timeout=60)  # 64 tokens one forward pass at a time, each step drawn: ~8 s on a slow CPU
        view = app.query_one(DenoiseView)
        assert view.last is not None and len(view.last.resolved) == app.agent.engine.info.block_size
        assert "resolved" in str(view.render())
        assert app.ledger.generated.forward_passes > 0


async def test_model_command_loads_another_checkpoint_and_reports_a_bad_one(repo, tiny_attention_ckpt,
                                                                            tiny_hybrid_ckpt):
    settings = Settings(model=str(tiny_attention_ckpt), max_tokens=32, max_turns=1, sandbox=False)
    app = make_app(settings, repo, build_agent=build_agent)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None, timeout=SLOW_S)
        first = app.agent
        app.run_command(f"/model {tiny_hybrid_ckpt}")
        await wait_for(pilot, lambda: app.agent is not None and app.agent is not first, timeout=SLOW_S)
        assert app.agent.engine.info.model == str(tiny_hybrid_ckpt)
        assert app.agent.engine.denoiser.kind == "hybrid"
        assert app.status.info.model == str(tiny_hybrid_ckpt)
        await send(pilot, "hi")
        # Waits for what the screen shows, not for a pace: a busy machine makes them slower only.
        await wait_for(pilot, lambda: app.ledger.finished == 1 and not app.busy, timeout=SLOW_S)
        assert app.ledger.generated.forward_passes > 0  # the new model decoded the reply

        # A bad path keeps the model in use (issue 34): the session never goes without one.
        working = app.agent
        toasts: list[str] = []  # as raised: a toast's own 15 s may run out before a busy machine looks
        say = app.say
        app.say = lambda text, **how: toasts.append(text) or say(text, **how)  # type: ignore[method-assign]
        app.run_command(f"/model {repo / 'no-such-model'}")
        await wait_for(pilot, lambda: "could not load" in notes(app), timeout=SLOW_S)
        assert any("no-such-model" in m for m in toasts) and not any("Traceback" in m for m in toasts)
        assert app.agent is working and app.settings.model == str(tiny_hybrid_ckpt)
        assert app.status.info.state == "ready" and app.status.info.model == str(tiny_hybrid_ckpt)
        await send(pilot, "hi again")
        await wait_for(pilot, lambda: app.ledger.finished == 2 and not app.busy, timeout=SLOW_S)  # the kept model
