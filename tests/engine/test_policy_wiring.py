"""A decoding policy travels: `serve` reports its engine's policy and applies a request's
(sent by the remote engine, checked at the door), and every mode builds its engine with the
policy the settings name."""

from __future__ import annotations

import httpx
import pytest
from test_policy_seam import demo_turn

from clover_code.cli import serve_parser
from clover_code.engine import ChatRequest
from clover_code.engine.embedded.engine import EmbeddedEngine
from clover_code.engine.wire.remote import RemoteEngine
from clover_code.engine.wire.server import create_app
from clover_code.models import demo_model
from clover_code.settings import ConfigError, Settings
from clover_code.wiring.assemble import build_engine
from clover_code.wiring.flags import settings_for
from tests.support.serving import serve_app


async def figures(engine, request: ChatRequest) -> tuple[int, int]:
    """Tokens and forward passes (the text differs: a server hands calls over parsed)."""
    blocks = [b async for b in engine.stream(request)]
    return sum(b.tokens for b in blocks), sum(b.forward_passes for b in blocks)


def with_policy(spec: str | None) -> ChatRequest:
    request = demo_turn()
    request.policy = spec
    return request


async def test_serve_applies_a_requests_policy_and_reports_its_own():
    local = EmbeddedEngine(demo_model(), policy="factor:1")
    expected = {spec: await figures(local, with_policy(spec)) for spec in (None, "threshold:0.5")}
    assert expected[None] != expected["threshold:0.5"]
    with serve_app(create_app(EmbeddedEngine(demo_model(), policy="factor:1"), model_name="demo")) as url:
        card = httpx.get(f"{url}/models").json()["data"][0]
        remote = RemoteEngine(url)
        got = {spec: await figures(remote, with_policy(spec)) for spec in (None, "threshold:0.5")}
        bad = httpx.post(f"{url}/chat/completions", json={"messages": [{"role": "user", "content": "hi"}],
                                                           "policy": "factor:zero"})
        await remote.aclose()
    assert card["policy"] == "factor:1" and remote.info.policy == "factor:1"
    assert got == expected  # the server's own policy, and the request's where it names one
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "policy"
    assert "decoding policy 'factor:zero': the knob must be a number" in bad.json()["error"]["message"]


def test_serve_builds_its_engine_with_the_policy_flag(tiny_attention_ckpt, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    args = serve_parser().parse_args(["--model", str(tiny_attention_ckpt), "--policy", "entropy:0.5"])
    _, settings = settings_for("serve", args)
    assert settings.policy == "entropy:0.5"
    assert build_engine(settings).info.policy == "entropy:0.5"
    with pytest.raises(ConfigError, match="--policy: unknown decoding policy 'nope'"):
        settings_for("serve", serve_parser().parse_args(["--model", "x", "--policy", "nope"]))


def test_the_agent_sends_the_settings_policy_with_every_request():
    from clover_code.wiring.assemble import agent_settings

    assert agent_settings(Settings(policy="factor:2")).policy == "factor:2"
