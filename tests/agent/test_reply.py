"""One parse of a reply: the text a reader sees and the calls, in the order written."""

from clover_code.agent.events import TextDelta
from clover_code.agent.reply import CallPart, ReplyReader
from clover_code.engine import Block, ToolCall

RAW = 'Reading it.<tool_call>{"name": "read_file", "arguments": {"path": "a"}}</tool_call> Done.'


def read(*texts: str, finish: str | None = "stop") -> tuple[ReplyReader, list]:
    reply, parts = ReplyReader(), []
    for i, text in enumerate(texts):
        parts += reply.add(Block(text, 1, 1, 0.0, index=i, finish=finish if i == len(texts) - 1 else None))
    return reply, parts + reply.end(max_tokens=100)


def shown(parts: list) -> str:
    return "".join(p.text for p in parts if isinstance(p, TextDelta))


def test_tool_markup_is_hidden_however_the_text_is_cut():
    for size in (1, 2, 3, 7, 11, len(RAW)):
        reply, parts = read(*(RAW[i:i + size] for i in range(0, len(RAW), size)))
        assert shown(parts) == reply.text == "Reading it. Done.", size
        (call,) = [p for p in parts if isinstance(p, CallPart)]
        assert call.parsed.call.name == "read_file" and call.markup in RAW


def test_a_lone_angle_bracket_is_kept():
    _, parts = read("a <", "b")
    assert shown(parts) == "a <b"
    _, parts = read("a <")  # released by the reply's end
    assert shown(parts) == "a <"


def test_text_and_calls_keep_their_order_and_server_calls_have_no_markup():
    server_call = ToolCall("s1", "glob", '{"pattern": "*"}')
    reply = ReplyReader()
    parts = reply.add(Block("x <tool_call>{bad}</tool_call> y", 1, 1, 0.0, tool_calls=(server_call,)))
    assert [type(p).__name__ for p in parts] == ["TextDelta", "CallPart", "TextDelta", "CallPart"]
    assert parts[1].parsed.call is None and parts[1].markup == "<tool_call>{bad}</tool_call>"
    assert parts[3].parsed.call == server_call and parts[3].markup == ""


def test_a_call_cut_by_max_tokens_says_so():
    _, parts = read('<tool_call>{"name": "write_file", "arguments": {"path": "a", "content": "x', finish="length")
    (call,) = parts
    assert call.parsed.call is None and "max_tokens (100)" in call.parsed.error


def test_markup_debris_is_no_part_and_prose_after_a_call_stays():
    raw = RAW.replace(" Done.", '"}}</tool_call>\n}} Done. The {} in f() stays.</tool_response><|im_end|></tool_c')
    for size in (1, 2, 5, 13, len(raw)):
        reply, parts = read(*(raw[i:i + size] for i in range(0, len(raw), size)))
        assert shown(parts) == reply.text == "Reading it.Done. The {} in f() stays.", size
        assert [p.parsed.call.name for p in parts if isinstance(p, CallPart)] == ["read_file"]
