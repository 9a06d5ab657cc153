#!/usr/bin/env bash
# Interop check of the MCP client against a real third-party server:
# @modelcontextprotocol/server-filesystem (npm, pinned), over stdio.
#
#   tools/interop_mcp.sh            install what is missing, then run the interop test
#   tools/interop_mcp.sh --install  only install
#
# Needs node and npm; installs under $CLOVER_INTEROP_MCP (default ~/.cache/clover-code/interop-mcp).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${VIRTUAL_ENV:-}" && -f .venv/bin/activate ]]; then
  source .venv/bin/activate
fi
if ! command -v node >/dev/null; then
  echo "interop_mcp: no node here; the test is skipped without it" >&2
  exit 0
fi
prefix="${CLOVER_INTEROP_MCP:-$HOME/.cache/clover-code/interop-mcp}"
if [[ ! -x "$prefix/node_modules/.bin/mcp-server-filesystem" ]]; then
  npm install --prefix "$prefix" @modelcontextprotocol/server-filesystem@2026.8.31
fi

[[ "${1:-}" == "--install" ]] && exit 0
exec python -m pytest -q -m interop tests/interop/test_mcp_filesystem.py "$@"
