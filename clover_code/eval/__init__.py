"""`clover-code eval`: the agent on your tasks, once per engine, checked and compared.

One job per module:
    engines.py    `--engine [NAME=]SPEC` -> the flags of a `clover-code --task` run, prices
    tasks.py      a task folder -> Task (auto-detected), malformed folders reported
    sandbox.py    sandbox/ tasks: a repository plus task.toml (prompt, check command)
    exercism.py   Exercism exercises as in Aider's polyglot benchmark (tests stay hidden)
    harbor.py     Terminal-Bench/Harbor task folders, run locally where no Docker is needed
    checks.py     a check command, sandboxed, with a time limit and its output cleaned
    agent_run.py  one try: the real `clover-code --task` process, its events -> figures
    results.py    results.jsonl (one line per task, engine and try) and run.json
    runner.py     units of work (task x engine), tries, --jobs, time limits, Ctrl-C
    live.py       the live table (a terminal) or one line per try (a log)
    stats.py      figures per engine, per task family and per task
    report.py     report.md; plot.py: the PNG (matplotlib, optional)
    machine.py    the machine the results were measured on
    harbor_agent.py  a Harbor installed-agent adapter (run by Harbor, on a machine with Docker)

Layer: a mode, beside wiring (it composes engines and runs the agent as the wiring does, by
starting the `clover-code` process); it imports tools (the sandbox for checks) and the base,
never the agent or an engine: a try is the product exactly as a user's CI runs it.
"""
