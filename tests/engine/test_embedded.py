"""EmbeddedEngine on tiny real checkpoints: streaming, prefix reuse, detokenizing, cancel, bad input."""

import asyncio
import json
import threading

import pytest

from clover_code.engine import ChatRequest, EngineError
from clover_code.engine.embedded.detokenizer import Detokenizer
from clover_code.engine.embedded.engine import EmbeddedEngine
from clover_code.engine.embedded.stop_strings import StopStrings


@pytest.fixture(scope="module", params=["attention", "hybrid"])
def engine(request):
    return EmbeddedEngine(request.getfixturevalue(f"tiny_{request.param}_ckpt"))


def chat(*turns: str, **kw) -> ChatRequest:
    roles = ["user", "assistant"]
    return ChatRequest(messages=[{"role": roles[i % 2], "content": t} for i, t in enumerate(turns)], **kw)


async def collect(engine, request):
    return [b async for b in engine.stream(request)]


async def test_streams_blocks_with_stats_and_steps_on_the_loop_thread(engine):
    steps, threads = [], set()

    def on_step(step):
        steps.append(step)
        threads.add(threading.get_ident())

    blocks = await collect(engine, chat("hello", max_tokens=70, on_step=on_step))
    assert [b.tokens for b in blocks] == [32, 32, 6]
    assert [b.index for b in blocks] == [0, 1, 2]
    assert blocks[-1].finish == "length" and blocks[-1].prompt_tokens == engine.count_tokens(chat("hello"))
    assert all(b.finish is None and b.prompt_tokens is None for b in blocks[:-1])
    assert sum(b.forward_passes for b in blocks) >= len(steps) >= 3
    assert all(b.ms > 0 for b in blocks) and blocks[0].seconds_since_start <= blocks[-1].seconds_since_start
    assert threads == {threading.get_ident()}
    assert steps[-1].resolved[:6] == (True,) * 6
    assert len("".join(b.text for b in blocks)) == 70  # the peaked head speaks printable ASCII


async def test_follow_up_reuses_prefix_and_gives_identical_greedy_output(engine):
    first = await collect(engine, chat("write a poem", max_tokens=64))
    reply = "".join(b.text for b in first)
    follow_up = chat("write a poem", reply, "again", max_tokens=96)
    with_reuse = await collect(engine, follow_up)
    reused = engine.reused_tokens
    await engine.aclose()  # drops the cached prefix; the engine stays usable
    without = await collect(engine, follow_up)
    assert reused >= engine.count_tokens(chat("write a poem")) + 32
    assert engine.reused_tokens == 0
    assert [b.text for b in with_reuse] == [b.text for b in without]


async def test_cancel_stops_within_one_step(engine):
    calls = []
    original = engine.denoiser.denoise

    def counted(*a, **kw):
        calls.append(1)
        return original(*a, **kw)

    engine.denoiser.denoise = counted
    try:
        stream = engine.stream(chat("go on", max_tokens=2000))
        await stream.__anext__()
        await stream.aclose()
        at_close = len(calls)
        await asyncio.to_thread(engine.bridge.lock.acquire)  # the worker has wound down
        engine.bridge.lock.release()
        assert len(calls) - at_close <= 1
    finally:
        del engine.denoiser.denoise


def test_a_decode_whose_event_loop_closed_stops_without_a_thread_error(tiny_attention_ckpt, monkeypatch):
    # A TUI that exits mid-reply closes its loop while the decode thread still posts blocks.
    engine = EmbeddedEngine(tiny_attention_ckpt)
    errors = []
    monkeypatch.setattr(threading, "excepthook", errors.append)
    loop = asyncio.new_event_loop()
    stream = engine.stream(chat("go on", max_tokens=2000))
    loop.run_until_complete(stream.__anext__())
    loop.close()
    assert engine.bridge.lock.acquire(timeout=60)  # the worker has wound down
    engine.bridge.lock.release()
    assert errors == []
    asyncio.run(stream.aclose())


async def test_tools_are_rendered_with_the_chat_template(engine):
    tool = {"type": "function", "function": {"name": "read_file", "description": "Read a file",
                                             "parameters": {"type": "object", "properties": {}}}}
    plain = engine.count_tokens(chat("hi"))
    with_tools = engine.count_tokens(chat("hi", tools=[tool]))
    assert with_tools - plain > len(json.dumps(tool))
    text = engine.tokenizer.decode(engine.template.encode(chat("hi", tools=[tool])))
    assert "<tool_call>" in text and '"name": "read_file"' in text


def test_multibyte_characters_split_across_blocks_come_out_whole(tiny_attention_ckpt):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_attention_ckpt)
    text = "héllo → 你好 😀 ok"
    ids = tokenizer.encode(text, add_special_tokens=False)
    assert len(ids) > len(text)  # multi-byte characters really span tokens
    for size in (1, 2, 3, 5):
        detok = Detokenizer(tokenizer, frozenset())
        pieces = [detok.push(ids[i:i + size]) for i in range(0, len(ids), size)] + [detok.flush()]
        assert "".join(pieces) == text
        assert not any("\ufffd" in p for p in pieces)


def test_stop_strings_cut_and_hold_back_partial_matches():
    stop = StopStrings(("</end>",))
    assert stop.feed("abc</e") == ("abc", False)
    assert stop.feed("nd>tail") == ("", True)
    stop = StopStrings(("XY",))
    assert stop.feed("aX") == ("a", False)
    assert stop.feed("b") == ("Xb", False)


def test_bad_input_gets_clear_engine_errors(tmp_path, tiny_attention_ckpt):
    with pytest.raises(EngineError, match="model folder not found"):
        EmbeddedEngine(tmp_path / "nope")
    with pytest.raises(EngineError, match=r"no config\.json"):
        EmbeddedEngine(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    with pytest.raises(EngineError, match=r"unsupported model type 'gpt2'; supported: .*qwen3_5"):
        EmbeddedEngine(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "no_such_model"}))
    with pytest.raises(EngineError, match=r"supported model types: .*qwen3"):
        EmbeddedEngine(tmp_path)
    with pytest.raises(EngineError, match="block size must be >= 1"):
        EmbeddedEngine(tiny_attention_ckpt, block_size=0)
    for bad in (0.0, 1.5, -1.0):
        with pytest.raises(EngineError, match=r"threshold must be in \(0, 1\]"):
            EmbeddedEngine(tiny_attention_ckpt, threshold=bad)


async def test_bad_requests_get_clear_engine_errors(engine):
    with pytest.raises(EngineError, match="context window is 32768 tokens"):
        await collect(engine, chat("x" * 40_000))
    with pytest.raises(EngineError, match=r"threshold must be in \(0, 1\]"):
        await collect(engine, chat("hi", threshold=0.0))


async def test_stop_string_ends_the_reply_before_it(engine):
    full = "".join(b.text for b in await collect(engine, chat("stop test", max_tokens=96)))
    stop = full[40:44]
    cut = full.index(stop)
    blocks = await collect(engine, chat("stop test", max_tokens=96, stop=(stop,)))
    assert "".join(b.text for b in blocks) == full[:cut]
    assert blocks[-1].finish == "stop" and blocks[-1].prompt_tokens


async def test_sampling_with_a_seed_is_reproducible(engine):
    runs = [[b.text for b in await collect(engine, chat("sample", max_tokens=40, temperature=1.0, top_p=0.9,
                                                          seed=7))] for _ in range(2)]
    assert runs[0] == runs[1] and len("".join(runs[0])) == 40
