#!/usr/bin/env bash
# The gpu backend's device check (issue 26 item 6) in one command, for a lent GPU machine whose image has
# CuPy but not all of stencilmap's dependencies: installs the wheels carried in .whl, makes a corpus carried
# in .corpus the tests' ../shared/corpus, then runs the gpu tests (every bundled program on the GPU against
# the reference) and benchmarks/gpu_bench.py, keeping their output under $OUT (else out/gpu).
# How to prepare .whl and .corpus, and the call: docs/guide/host.md, "Checking the gpu backend on a device".
set -u
OUT=${OUT:-out/gpu}
mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD/src:$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
if [ -d .corpus ] && [ ! -e ../shared/corpus ]; then
  mkdir -p ../shared && ln -s "$PWD/.corpus" ../shared/corpus
fi
{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version,persistence_mode,clocks.sm,clocks.max.sm,\
clocks.mem,clocks.max.mem,power.limit --format=csv; python3 -c \
  'import cupy, numpy; print("cupy", cupy.__version__, "numpy", numpy.__version__)'; } 2>&1 | tee "$OUT/device.txt"
python3 -m pytest -q -p no:cacheprovider tests/backends/test_gpu.py 2>&1 | tail -15 | tee "$OUT/tests.txt"
python3 benchmarks/gpu_bench.py --repeat 5 --chunks 1,4,16 --unroll 1,2 --rotate --json "$OUT/gpu_bench.json" \
  --program ../shared/corpus/soda/contrast.soda --shape 8192,8192 --steps 1 2>&1 | tee "$OUT/bench.txt"
