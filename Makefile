# Fresh machine: `make demo` (main job) or `make test` (the suite). Both build .venv first.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin

.PHONY: venv test demo bench clean

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# The CPU wheel on local disk; a bare `torch` would pull a multi-GB CUDA build.
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

test: venv
	$(BIN)/python -m pytest -q

demo: venv
	$(BIN)/python tools/demo.py

bench: venv
	$(BIN)/python tools/bench_engine.py

clean:
	rm -rf $(VENV) build *.egg-info
