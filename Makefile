# Fresh machine: `make demo` (main job) or `make test` (lint, types, then the suite). Both build .venv first.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin

.PHONY: venv lint test demo bench clean

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# The CPU wheel on local disk; a bare `torch` would pull a multi-GB CUDA build.
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

# Lint and types first (seconds): ruff on the code, the tests and the scripts, mypy strict on
# the package (pyproject.toml's [tool.ruff] and [tool.mypy]).
lint: venv
	$(BIN)/ruff check clover_code tests tools
	$(BIN)/mypy

test: lint
	$(BIN)/python -m pytest -q

demo: venv
	$(BIN)/python -m tools.demo

bench: venv
	$(BIN)/python -m tools.bench.bench_engine

clean:
	rm -rf $(VENV) build *.egg-info
