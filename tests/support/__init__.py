"""What the tests share, in one package imported as `tests.support.NAME` (pytest's
`pythonpath = ["."]` puts the repository root on the path; nothing edits sys.path):

    agent          scripted tool calls, a recording approver, collecting a turn's events
    tui            the app on a scripted engine under Pilot: ready, send, idle, wait_for, notes
    tmux           the real `clover-code` in tmux
    e2e            sandbox tasks, scripted sessions, session logs of headless runs
    evals          `clover-code eval` runs and their results
    replies        Qwen tool-call markup and the JSONL files `--engine scripted:FILE` replays
    serving        real HTTP servers on 127.0.0.1 (uvicorn apps, raw sockets)
    window_servers OpenAI-compatible servers with small context windows
    reference      a cache-free reference decoder the engine is checked against
    wanting        a denoiser that wants given text (grammar and drafting tests)
    tiny_models    tiny model configs built in memory, random blocks
    grammar        tool schemas and call layouts for the reply grammar
    host_secrets   secret-looking values for the redaction tests
"""
