#!/usr/bin/env bash
# The engine at Clover's real shape on a lent GPU, in one call of the device tool:
#
#   bash tools/bench/bench_gpu.sh [bench_gpu.py flags]      # e.g. --layers 32 --prefixes 1024,32768
#   bash tools/bench/bench_gpu.sh --cpu --toy               # seconds on a CPU (CI runs this)
#
# No network there: transformers >= 5.25 (the hybrid cache this engine drives) and, for the
# fast Gated DeltaNet kernels, flash-linear-attention travel as wheels in .whl/ (see
# /work/.library/device/README.md; name .whl in `carry`); without them the torch fallback runs.
# Prints the JSON of tools/bench/bench_gpu.py and writes it to $OUT/bench_gpu.json when OUT is set.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
if compgen -G ".whl/*.whl" >/dev/null; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TRANSFORMERS_VERBOSITY=error
out=()
[ -n "${OUT:-}" ] && out=(--out "$OUT/bench_gpu.json")
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >&2
exec $PY -m tools.bench.bench_gpu "$@" "${out[@]}"
