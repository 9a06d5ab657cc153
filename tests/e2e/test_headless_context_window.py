"""Headless runs against servers with small context windows: the window is learned (from
/props, /v1/models, or the first refusal), every request leaves its reply room, the
conversation is compacted before the window fills, and a window too small for the system
prompt and tools is one clear error."""

from __future__ import annotations

import json

import pytest

from tests.support.window_servers import WindowServer, serve_app

NOTES = "".join(f"note {i}: the quick brown fox jumps over the lazy dog\n" for i in range(40))  # ~600 tokens
READS = [{"name": "read_file", "arguments": {"path": "notes.txt"}}] * 3


def run_task(clover, repo, url: str, *extra: str):
    proc = clover("--task", "read notes.txt three times, then say done", "--cwd", str(repo), "--endpoint", url,
                  "--output-format", "stream-json", *extra, timeout=60)
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    return proc, events, events[-1]


@pytest.mark.parametrize("style, source", [("llama.cpp", "GET /props n_ctx"),
                                           ("vllm", "GET /v1/models max_model_len"),
                                           ("silent", "the server's HTTP 400 answer")])
def test_a_small_window_is_learned_and_never_overrun(style, source, git_repo, clover):
    (git_repo / "notes.txt").write_text(NOTES)
    server = WindowServer(style, 6144, replies=[*READS, "done"])
    with serve_app(server.app()) as url:
        proc, events, result = run_task(clover, git_repo, url)
    assert proc.returncode == 0, proc.stderr
    assert (result["context_window"], result["context_window_source"]) == (6144, source)
    refused = [s for s in server.seen if s.refused]
    if style == "silent":  # it says its window only by refusing the first request; asked once more
        assert server.seen[0].refused and not server.seen[1].refused and len(refused) == 1
        assert server.seen[1].prompt_tokens + server.seen[1].max_tokens == 6144
    else:
        assert refused == []
    accepted = [s for s in server.seen if not s.refused]
    assert all(s.prompt_tokens + s.max_tokens <= 6144 for s in accepted)
    assert sum(s.tools for s in accepted) == 4 and server.replies == []
    # Three reads do not fit beside the system prompt and tools: compacted before the window filled.
    assert any(e["type"] == "Compacted" for e in events), [e["type"] for e in events]
    said = [i for i, e in enumerate(events) if e["type"] == "Notice" and e["text"].startswith("Compacting")]
    assert said and said[0] < [e["type"] for e in events].index("Compacted")  # said while it ran
    assert result["result"] == "done"


@pytest.mark.parametrize("style, flag", [("llama.cpp", "-c/--ctx-size"), ("silent", "--n_ctx")])
def test_a_window_too_small_for_the_system_prompt_is_one_clear_error(style, flag, git_repo, clover):
    server = WindowServer(style, 2048, replies=["never sent"])
    with serve_app(server.app()) as url:
        proc, events, result = run_task(clover, git_repo, url)
    assert proc.returncode == 3 and result["exit_reason"] == "engine_error", proc.stderr
    (prompt,) = {s.prompt_tokens for s in server.seen}
    assert len(server.seen) == 1  # refused once; no second try can fit
    message = result["error"]
    assert f"{prompt:,} tokens" in message and "2,048 tokens" in message and flag in message
    assert "--max-model-len" in message and "num_ctx" in message
    assert [e for e in events if e["type"] == "ErrorEvent"][-1]["message"] == message
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert result["context_window"] == 2048
