"""Maintainer scripts, not shipped: benchmarks (bench/), checkpoint making and training
(training/), the demo (demo.py). Each runs as a module from the repository root, e.g.
`python -m tools.bench.bench_agent --json`, so it imports `clover_code` and its sibling scripts
as packages, with no edits of sys.path."""
