#!/usr/bin/env bash
# Interop check with the agents people run: real Claude Code (@anthropic-ai/claude-code 2.1.197)
# and real Codex CLI (@openai/codex 0.169.0) drive `clover-code serve --engine scripted:FILE`
# over Messages and Responses (tests/interop/test_agents.py).
#
#   tools/interop_agents.sh          install the agents from npm if missing (once), then run the tests
#
# The agents install into CLOVER_INTEROP_CACHE (default ~/.cache/clover-code/interop). Without
# node and npm this says so and exits 0: nothing here can run.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "interop_agents: node and npm not found; the agents' interop tests are skipped" >&2
  exit 0
fi
if [[ -z "${VIRTUAL_ENV:-}" && -f .venv/bin/activate ]]; then
  source .venv/bin/activate
fi
exec python -m pytest -q -m interop tests/interop/test_agents.py "$@"
