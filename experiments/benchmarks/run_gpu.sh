#!/usr/bin/env bash
# The benchmarks' GPU rows (issues #13, #14, #15) as one script, for a lent GPU machine whose
# Python already has jax (CUDA), torch, torchvision and torch_geometric but none of jaxcl's
# pure-Python dependencies, and no network. In priority order, each step under its own
# time limit and all under one deadline, so that a short lease still brings back the most
# important rows:
#
#   1. SimCLR step, ResNet-18, batch 512, bfloat16 vs PyTorch AMP  (#13; target 1.3x)
#   2. fwht / SORF throughput against the GPU's memory bandwidth  (#14; target >= 50 %)
#   3. DACL-GIN pretraining on IMDB-BINARY vs PyTorch Geometric    (#15)
#   4. ESCo and InfoNCE, loss + gradient time and peak memory vs N  (#14)
#   5. SimCLR step, ResNet-50, batch 256, bfloat16 vs PyTorch AMP  (#13)
#   6. m-Mix graph pretraining (MVGRL, mp-mix) on IMDB-BINARY vs PyG  (#15; target 1.3x)
#   7. m-Mix's mixing step (dense / blocked / -wp, N = 2,708 and 20,000) and epochs against
#      MVGRL's on Cora, Citeseer and IMDB-BINARY                      (#15)
#   8. step 1 again with PyTorch's model and loss under torch.compile too (its compilation
#      takes about 90 s on the H200: the step needs about 230 s)
#
# The benchmarks build the trainer's parts themselves. (Until 2026-11-30 `python -m
# jaxcl.main` stopped at its metric writer there, which needed clu and TensorFlow; it now
# needs neither: with `tensorboard` installed it writes event files, without it only logs.)
#
# Step 2 also times implementation='pallas' (the fused kernel) and its launch settings.
# Usage, from the repository root on the GPU machine:
#
#   JAXCL_BENCH_COMMIT=<commit> OUT=<folder> bash experiments/benchmarks/run_gpu.sh \
#       [seconds [step ...]]
#
# with, in the repository root: .whl/ (wheels of optax, chex, ml_collections and jraph for
# Python 3.12: `pip download --no-deps --only-binary=:all: --python-version 3.12 ...`; not
# flax: the machine's flax 0.12.10 suits its jax 0.11.2, flax 0.12.8 does not import there)
# and .gpudata/tu_gin, .gpudata/planetoid (copies of ../shared/data/tu_gin and planetoid). [seconds] is the deadline (default
# 520); naming steps (simclr_r18, fwht_bandwidth, gin, esco, simclr_r50, mmix_graph,
# mmix, simclr_r18_compile) runs those only.
# Writes $OUT/log.txt (everything printed) and $OUT/results.tgz (the JSON and PNG files).
set -u
STEPS="simclr_r18 fwht_bandwidth gin esco simclr_r50 mmix_graph mmix simclr_r18_compile"
budget=${1:-520}
if ! [[ "$budget" =~ ^[0-9]+$ ]]; then
  echo "run_gpu.sh: the first argument is the deadline in seconds, got '$budget'" >&2
  echo "  (steps come after it: run_gpu.sh 520 gin esco; steps: $STEPS)" >&2
  exit 2
fi
for name in "${@:2}"; do
  if [[ " $STEPS " != *" $name "* ]]; then
    echo "run_gpu.sh: unknown step '$name'; steps: $STEPS" >&2
    exit 2
  fi
done
only=" ${*:2} "
start=$(date +%s)
out=${OUT:?set OUT to the folder for the results}
mkdir -p "$out" || exit 1
results=/tmp/gpu_results
rm -rf "$results"  # a rerun on the same machine packs only its own files
mkdir -p "$results" || exit 1
exec > >(tee "$out/log.txt") 2>&1

if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/jaxcl_site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/jaxcl_site:$PWD
else
  export PYTHONPATH=$PWD
fi
export PYTHONUNBUFFERED=1 JAXCL_DATA_DIR=$PWD/.gpudata
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
python3 - <<'EOF' || exit 1
import importlib.metadata as m, jax
print({p: m.version(p) for p in ("jax", "jaxlib", "flax", "optax", "chex", "torch",
                                 "torchvision", "torch_geometric", "numpy")})
print(jax.devices())
import jaxcl, jaxcl.training, jaxcl.methods, jaxcl.random_features  # noqa: E401
EOF

step() {  # step NAME SECONDS COMMAND...: runs COMMAND under min(SECONDS, time left)
  local name=$1 limit=$2
  shift 2
  if [ "$only" != "  " ] && [[ "$only" != *" $name "* ]]; then
    return
  fi
  local left=$((budget - ($(date +%s) - start)))
  [ "$left" -lt "$limit" ] && limit=$left
  if [ "$limit" -lt 20 ]; then
    echo "=== $name: skipped, ${left}s left"
    return
  fi
  echo "=== $name (limit ${limit}s, $(($(date +%s) - start))s in)"
  local t0=$(date +%s)
  timeout "$limit" "$@"
  echo "=== $name: exit $?, $(($(date +%s) - t0))s"
}

b=experiments/benchmarks
# --cpu-convolutions ynnpack: no XLA:CPU flag in XLA_FLAGS (a flag this jaxlib's XLA might not
# know would stop it); the GPU runs no CPU convolutions.
step simclr_r18 150 python3 $b/simclr_step_benchmark.py --precision bfloat16 --batch 512 \
  --steps 10 --warmup 2 --no-torch-compile --cpu-convolutions ynnpack --out "$results"
step fwht_bandwidth 120 python3 $b/fwht_bandwidth_benchmark.py --sweep --out "$results"
step gin 100 python3 $b/gin_benchmark.py --epochs 5 --out "$results"
step esco 100 python3 $b/esco_benchmark.py --ns 100000,1000000 --repeats 3 --time-limit-s 20 \
  --out "$results"
step simclr_r50 130 python3 $b/simclr_step_benchmark.py --precision bfloat16 --depth 50 \
  --batch 256 --steps 5 --warmup 1 --no-torch-compile --cpu-convolutions ynnpack \
  --out "$results"
# On the H200 (1775e7a) both rows together did not finish in 150 s (the mp row alone took
# ~115 s: 38 s compiling its padding budgets), nor mmix_benchmark's three parts in 150 s.
# MMIX_GRAPH_ARGS / MMIX_ARGS: extra arguments (e.g. "--rows mvgrl", "--parts graph").
step mmix_graph 270 python3 $b/mmix_graph_benchmark.py --epochs 3 ${MMIX_GRAPH_ARGS:-} \
  --out "$results"
step mmix 270 python3 $b/mmix_benchmark.py --epochs 5 --graph-epochs 3 ${MMIX_ARGS:-} \
  --out "$results"
step simclr_r18_compile 240 python3 $b/simclr_step_benchmark.py --precision bfloat16 \
  --batch 512 --steps 10 --warmup 2 --torch-compile --cpu-convolutions ynnpack --out "$results"
tar czf "$out/results.tgz" -C "$results" . || exit 1
echo "=== done in $(($(date +%s) - start))s"
