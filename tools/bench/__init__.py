"""Benchmarks: `python -m tools.bench.bench_engine` (and bench_tools, bench_agent, bench_remote,
bench_tui, bench_gpu); each prints a table, or JSON with --json."""
