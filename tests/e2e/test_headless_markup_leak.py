"""Headless output shows the agent's parse of a reply: no tool-call markup in the text that
streams to stderr, nor in the TextDelta events of stream-json, for the reply that once leaked
into the TUI (two calls, the second cut by a block boundary: tests/tui/test_tui_markup_leak.py),
nor the markup debris a model may write after a closed call (`"}}</tool_call>}}`)."""

import json

from tests.support.e2e import scripted, write_replies

MARKUP = ("<tool_call", "tool_call>", '"name"', '"arguments"', "*.md", "}", "</")


def words(text: str) -> list[str]:
    return [w for w in text.split() if w != "word"]  # without the filler that places the calls


def run(clover, git_repo, tmp_path, reply, *flags):
    # The scripted engine of `--engine scripted:FILE` commits 32 words a block.
    replies = write_replies(tmp_path / "replies.jsonl", [reply, "Finished."])
    proc = clover("--task", "read the readme", "--cwd", str(git_repo), "--engine", scripted(replies), *flags)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_text_progress_shows_no_markup(clover, git_repo, tmp_path, second_call_cut):
    proc = run(clover, git_repo, tmp_path, second_call_cut(32))
    model_text = "\n".join(line for line in proc.stderr.splitlines()
                           if not line.lstrip().startswith(("✓", "[done]")))  # tool lines, the summary
    assert words(model_text) == ["Reading", "it.", "Then", "Done.", "Finished."], proc.stderr
    assert "✓ read_file README.md" in proc.stderr and "✓ glob *.md" in proc.stderr
    assert not [m for m in MARKUP if m in model_text], proc.stderr
    assert proc.stdout == "Finished.\n"


def test_stream_json_text_deltas_show_no_markup(clover, git_repo, tmp_path, second_call_cut):
    proc = run(clover, git_repo, tmp_path, second_call_cut(32), "--output-format", "stream-json")
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    shown = " ".join(e["text"] for e in events if e["type"] == "TextDelta")
    assert words(shown) == ["Reading", "it.", "Then", "Done.", "Finished."], shown
    assert not [m for m in MARKUP if m in shown], shown
    assert [e["call"]["name"] for e in events if e["type"] == "ToolCallParsed"] == ["read_file", "glob"]


def test_debris_after_a_call_shows_neither_in_text_nor_in_stream_json(clover, git_repo, tmp_path, debris_cut):
    proc = run(clover, git_repo, tmp_path, debris_cut(32))
    model_text = "\n".join(line for line in proc.stderr.splitlines()
                           if not line.lstrip().startswith(("✓", "[done]")))
    assert words(model_text) == ["Reading", "it.", "Then", "done.", "Finished."], proc.stderr
    assert not [m for m in MARKUP if m in model_text], proc.stderr
    proc = run(clover, git_repo, tmp_path, debris_cut(32), "--output-format", "stream-json")
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    shown = " ".join(e["text"] for e in events if e["type"] == "TextDelta")
    assert words(shown) == ["Reading", "it.", "Then", "done.", "Finished."], shown
    assert not [m for m in MARKUP if m in shown], shown
    raw = "".join(e["block"]["text"] for e in events if e["type"] == "BlockCommitted")
    assert '"}}\n</tool_call>}}' in raw  # the log keeps every byte the model wrote
